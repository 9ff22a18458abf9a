# Issue 34 research: see docs/notes/compressed-format.md (frames from vat-procgen/examples/dump_frames.rs).
# Quantized residual on top of a saved rigid decomposition (rigid.py --save DIR): per-vertex steps
# (a static f16 per vertex for positions, one for normals), the derived bounds, the packed size.
#  position: r = p - skin(p); q = round(r / s_v), |q| <= 2^(b-1)-1, s_v = max|r_v| / (2^(b-1)-1) rounded
#            up to f16; decode p = skin + s_v q; bound |p - p'| <= sqrt(3)/2 s_v (plus f32 evaluation).
#  normal:   tangent-plane (gnomonic) residual around the skinned normal m: n ~ m + a t1 + b t2 with
#            (t1, t2) a fixed orthonormal basis of m (Frisvad/Duff branchless); a, b quantized like r;
#            decode n = normalize(m + s_n (qa t1 + qb t2)); bound angle <= |da, db| <= s_n / sqrt(2) rad
#            (the central projection from the tangent plane to the sphere is 1-Lipschitz).
# Size: bones 16 B per bone per frame (quaternion 4 x snorm16 + translation 3 x unorm16 over the clip's
# bounds, one rgba32uint texel), static 28 B per vertex (rest position 3 x f32, rest normal 2 x unorm16
# octahedral, 4 x u8 bone indices, 4 x u8 weights, 2 x f16 steps), residual packed floor(128 / bits)
# vertices per rgba32uint texel (one fetch per vertex, no straddling).
# usage: resid.py NAME FIT.npz [--bones16]
import numpy as np, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from load import *
from rigid import oct_enc, oct_dec

def onb(n):
    # Duff et al. 2017 branchless orthonormal basis
    s = np.where(n[..., 2] >= 0, 1.0, -1.0); a = -1.0 / (s + n[..., 2]); b = n[..., 0] * n[..., 1] * a
    t1 = np.stack([1 + s * n[..., 0] ** 2 * a, s * b, -s * n[..., 0]], -1)
    t2 = np.stack([b, s + n[..., 1] ** 2 * a, -n[..., 1]], -1)
    return t1, t2

def f16_up(x):
    h = x.astype(np.float16); return np.where(h.astype(np.float64) < x, np.nextafter(h, np.float16(np.inf)), h).astype(np.float64)

def qv(r, bits):
    """r: F x V x C, per-vertex step. Returns quantized r and per-vertex step."""
    if bits == 0: return np.zeros_like(r), np.abs(r).max((0, 2))
    L = 2 ** (bits - 1) - 1
    s = f16_up(np.maximum(np.abs(r).max((0, 2)) / L, 1e-7))
    return np.clip(np.round(r / s[None, :, None]), -L, L) * s[None, :, None], s

if __name__ == '__main__':
    name, fit = [a for a in sys.argv[1:] if not a.startswith('--')][:2]
    P, N = load(os.path.join(os.environ.get('FRAMES_DIR', '/tmp/r34'), f'{name}.bin')); F, V, _ = P.shape
    f = np.load(fit); res = f['res']; m = f['n0']; B = f['W'].shape[1]
    if '--bones16' in sys.argv:
        # the layout's bone texel instead of f32: quaternion 4 x snorm16, translation 3 x unorm16 over the
        # translations' bounds, rest normal octahedral 2 x unorm16; the residual is retaken against it
        from scipy.spatial.transform import Rotation
        from rigid import predict, normals_from, oct_enc, oct_dec
        R, t, W, X = f['R'], f['t'], f['W'], f['X']
        q = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat()
        q = np.round(np.clip(q, -1, 1) * 32767) / 32767; q /= np.linalg.norm(q, axis=1, keepdims=True)
        R = Rotation.from_quat(q).as_matrix().reshape(R.shape)
        lo = t.reshape(-1, 3).min(0); ext = np.maximum(np.ptp(t.reshape(-1, 3), 0), 1e-9)
        t = lo + np.round((t - lo) / ext * 65535) / 65535 * ext
        res = P - predict(W, R, t, X)
        _, Nrest = normals_from(W, R, N)
        Nrest = oct_dec(np.round((oct_enc(Nrest) + 1) / 2 * 65535) / 65535 * 2 - 1)
        m, _ = normals_from(W, R, N, Nrest)
        print('  (bones rounded to the 16-bit texel, rest normal to 2 x unorm16)')
    t1, t2 = onb(m); c = (N * m).sum(-1)
    ab = np.stack([(N * t1).sum(-1) / c, (N * t2).sum(-1) / c], -1)
    a0 = angle_deg(m, N)
    over = (16 * B * F + 28 * V) / (V * F)
    print(f'{name} {fit}: {B} bones, {F} frames x {V} vertices; overhead {over:.3f} B/v/f; |r| max {np.abs(res).max()*1e3:.2f} mm; '
          f'skinned normals max {a0.max():.2f} p99 {np.percentile(a0, 99):.2f} deg, min n.m {c.min():.3f}')
    for pb, nb in [(4, 0), (4, 1), (4, 2), (5, 0), (4, 3), (5, 2), (6, 0), (6, 2)]:
        rq, s = qv(res, pb); e = np.linalg.norm(res - rq, axis=-1); st = stats(e)
        bound = np.sqrt(3) / 2 * s.max()
        if nb == 0:
            a = a0; nbound = float('nan')
        elif nb == 1:
            # one bit per component is no quantizer (levels {0}); skip
            continue
        else:
            abq, sn = qv(ab, nb); n = m + abq[..., :1] * t1 + abq[..., 1:] * t2
            a = angle_deg(n, N); nbound = np.degrees(sn.max() / np.sqrt(2))
        bits = 3 * pb + 2 * nb; per = 128 // bits
        size = over + 16 / per
        print(f'  {pb}b x3 + {nb}b x2 = {bits} bits ({per}/texel): pos bound {bound*1e3:.3f} mm, max {st["max"]:.3f} p99 {st["p99"]:.3f} mean {st["mean"]:.4f} mm; '
              f'normal bound {nbound:.2f}, max {a.max():.2f} p99 {np.percentile(a, 99):.2f} deg; {size:.3f} B/v/f', flush=True)
    # Variable rate per vertex (fixed over frames): each vertex gets the fewest bits per component that
    # meet a stated bound (0 bits when the skin alone is within it); a static per-vertex bit offset
    # addresses a u32 stream (frame f of vertex v at base_v + f * bits_v: one or two u32 reads).
    def bits_for(rmax, step):
        L = np.ceil(rmax / step - 0.5)                 # levels needed on each side: |r - s q| <= s / 2
        return np.where(L <= 0, 0, np.ceil(np.log2(2 * L + 1))).astype(int), L
    for pbound, nbound in [(0.5e-3, 1.0), (0.75e-3, 1.0), (0.75e-3, 1.5), (1.0e-3, 1.5), (0.75e-3, 2.0)]:
        sp = 2 * pbound / np.sqrt(3); bp, Lp = bits_for(np.abs(res).max((0, 2)), sp)
        rq = np.clip(np.round(res / sp), -Lp[None, :, None], Lp[None, :, None]) * sp
        e = np.linalg.norm(res - rq, axis=-1); st = stats(e)
        sn = np.sqrt(2) * np.radians(nbound); bn, Ln = bits_for(np.abs(ab).max((0, 2)), sn)
        abq = np.clip(np.round(ab / sn), -Ln[None, :, None], Ln[None, :, None]) * sn
        a = angle_deg(m + abq[..., :1] * t1 + abq[..., 1:] * t2, N)
        # fallback where the tangent-plane residual is undefined (n.m <= 0 in some frame) or dearer:
        # the absolute octahedral code, step s_o = sqrt(2) B_n / 3 over [-1, 1] (the octahedral decode
        # is 3-Lipschitz: |dv| <= sqrt(3) |de|, |v| >= 1/sqrt(3)), so angle <= 3 s_o / sqrt(2) = B_n
        so = np.sqrt(2) * np.radians(nbound) / 3; babs = int(np.ceil(np.log2(2 / so + 1)))
        flag = (c.min(0) <= 0) | (bn > babs)
        if flag.any():
            e_oct = oct_enc(N[:, flag]); dec = oct_dec(np.clip(np.round(e_oct / so) * so, -1, 1))
            a[:, flag] = angle_deg(dec, N[:, flag]); bn = np.where(flag, babs, bn)
        bits = 3 * bp + 2 * bn
        size = (16 * B * F + 32 * V) / (V * F) + bits.mean() / 8
        print(f'  variable rate, bounds {pbound*1e3:.2f} mm / {nbound:.1f} deg: mean {bits.mean():.2f} bits/v/f (pos {3*bp.mean():.2f}, normal {2*bn.mean():.2f}; '
              f'max {bits.max()}, {np.mean(bits == 0)*100:.0f}% of vertices 0 bits, {flag.sum()} absolute-octahedral): pos max {st["max"]:.3f} p99 {st["p99"]:.3f} mean {st["mean"]:.4f} mm; '
              f'normal max {a.max():.2f} p99 {np.percentile(a, 99):.2f} deg; {size:.3f} B/v/f', flush=True)
