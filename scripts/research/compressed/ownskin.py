# Issue 34 research: see docs/notes/compressed-format.md. The skeletal path: the source's own skin
# (bones and weights from the rig, no fit) as the predictor, with the variable-rate residual of resid.py.
# Reads the frames dump (dump_frames) and a skin dump written by a scratch program (skindump.rs here:
# build it as a one-file crate outside the workspace, see the note), both in FRAMES_DIR.
# usage: ownskin.py NAME      (NAME.bin and NAME.skin)
import numpy as np, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from load import *
from resid import onb
from rigid import oct_enc, oct_dec
from scipy.spatial.transform import Rotation

def load_skin(path):
    h = np.fromfile(path, dtype='<u4', count=3); V, B, F = (int(x) for x in h); o = 12
    jw = np.fromfile(path, dtype='<u4', count=V * 8, offset=o).reshape(V, 8); o += V * 32
    J = jw[:, :4].astype(int); W = jw[:, 4:].view('<f4').astype(np.float64)
    PN = np.fromfile(path, dtype='<f4', count=V * 6, offset=o).reshape(2, V, 3).astype(np.float64); o += V * 24
    M = np.fromfile(path, dtype='<f4', count=F * B * 12, offset=o).reshape(F, B, 3, 4).astype(np.float64)
    return J, W, PN[0], PN[1], M

def skin(J, W, X, Nr, M):
    Wd = np.zeros((len(X), M.shape[1])); np.add.at(Wd, (np.arange(len(X))[:, None].repeat(4, 1), J), W)
    A = np.einsum('vb,fbij->fvij', Wd, M)                            # blended 3x4 per vertex per frame
    p = np.einsum('fvij,vj->fvi', A[..., :3], X) + A[..., 3]
    c0, c1, c2 = A[..., :, 0], A[..., :, 1], A[..., :, 2]
    C = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], -1)
    det = (c0 * np.cross(c1, c2)).sum(-1)
    n = np.einsum('fvij,vj->fvi', C, Nr) * np.sign(det)[..., None]
    return p, n / np.linalg.norm(n, axis=-1, keepdims=True)

def bits_for(rmax, step):
    L = np.ceil(rmax / step - 0.5)
    return np.where(L <= 0, 0, np.ceil(np.log2(2 * L + 1))).astype(int), L

if __name__ == '__main__':
    name = sys.argv[1]; d = os.environ.get('FRAMES_DIR', '/tmp/r34')
    P, N = load(os.path.join(d, f'{name}.bin')); F, V, _ = P.shape
    J, W, X, Nr, M = load_skin(os.path.join(d, f'{name}.skin')); B = M.shape[1]
    L3 = M[..., :3]; orth = np.abs(np.einsum('fbij,fbkj->fbik', L3, L3) - np.eye(3)).max()
    p, n = skin(J, W, X, Nr, M)
    print(f'{name}: {B} bones, {F} frames x {V} vertices; bone matrices rigid to {orth:.1e}; own skin in f64 against the dump: '
          f'pos max {np.linalg.norm(p - P, axis=-1).max()*1e3:.5f} mm, normal max {angle_deg(n, N).max():.4f} deg')
    variants = {}
    variants['bone mode data (f32 3x4 rows, f32 weights), 48 B/bone/frame'] = (skin(J, W, X, Nr, M), 48)
    # the layout's 16-bit texel: quaternion snorm16, translation unorm16 over the bounds; weights u8
    q = Rotation.from_matrix(L3.reshape(-1, 3, 3)).as_quat()
    q = np.round(q * 32767) / 32767; q /= np.linalg.norm(q, axis=1, keepdims=True)
    R = Rotation.from_quat(q).as_matrix().reshape(F, B, 3, 3)
    t = M[..., 3]; lo = t.reshape(-1, 3).min(0); ext = np.maximum(np.ptp(t.reshape(-1, 3), 0), 1e-9)
    t = lo + np.round((t - lo) / ext * 65535) / 65535 * ext
    Wq = np.round(W * 255); Wq /= Wq.sum(1, keepdims=True)
    Nq = oct_dec(np.round((oct_enc(Nr) + 1) / 2 * 65535) / 65535 * 2 - 1)
    variants['16-bit texel (quaternion snorm16, translation unorm16), weights u8, oct16 rest normal, 16 B/bone/frame'] = (
        skin(J, Wq, X.astype(np.float32).astype(np.float64), Nq, np.concatenate([R, t[..., None]], -1)), 16)
    for label, ((pp, m), bb) in variants.items():
        res = P - pp; a0 = angle_deg(m, N)
        t1, t2 = onb(m); c = (N * m).sum(-1)
        ab = np.stack([(N * t1).sum(-1) / c, (N * t2).sum(-1) / c], -1)
        print(f' {label}: predictor alone pos max {np.linalg.norm(res, axis=-1).max()*1e3:.4f} mm, normal max {a0.max():.3f} deg')
        for pbound, nbound in [(0.5e-3, 1.0), (0.1e-3, 0.25)]:
            sp = 2 * pbound / np.sqrt(3); bp, Lp = bits_for(np.abs(res).max((0, 2)), sp)
            rq = np.clip(np.round(res / sp), -Lp[None, :, None], Lp[None, :, None]) * sp
            st = stats(np.linalg.norm(res - rq, axis=-1))
            sn = np.sqrt(2) * np.radians(nbound); bn, Ln = bits_for(np.abs(ab).max((0, 2)), sn)
            abq = np.clip(np.round(ab / sn), -Ln[None, :, None], Ln[None, :, None]) * sn
            a = angle_deg(m + abq[..., :1] * t1 + abq[..., 1:] * t2, N)
            bits = 3 * bp + 2 * bn
            size = (bb * B * F + 32 * V) / (V * F) + bits.mean() / 8
            print(f'   bounds {pbound*1e3:.2f} mm / {nbound:.2f} deg: mean {bits.mean():.3f} bits/v/f (max {bits.max()}, {np.mean(bits == 0)*100:.0f}% at 0): '
                  f'pos max {st["max"]:.4f} p99 {st["p99"]:.4f} mean {st["mean"]:.5f} mm; normal max {a.max():.3f} p99 {np.percentile(a, 99):.3f} deg; {size:.3f} B/v/f', flush=True)
