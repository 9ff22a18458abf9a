# Issue 34 research: see docs/notes/compressed-format.md (frames from vat-procgen/examples/dump_frames.rs).
# Block-compressed candidate: positions in BC6H (UF16), octahedral normals in BC5 (UNORM), value-exact
# emulation of the decoders (Vulkan spec / D3D11 BC6H: modes 11 (10.10 one region, untransformed),
# 12 (11.9), 13 (12.8) and 14 (16.4) (one region, endpoint B stored as a signed delta from A), 4-bit
# indices; BC4 8-level and 6-level palettes). The encoder is simplified: it tries only the one-region
# modes (a full encoder also has the ten two-region modes; it can only lower a block's error).
# Positions: each channel mapped linearly from the clip's bounds to the half-float *bit pattern*
# range [0x0400, 0x7BFF] (the shader recovers the pattern with pack2x16float, exactly), so BC6H acts
# as a ~15-bit linear codec. Texture: one texel per vertex per frame, width = vertices (in the order
# chosen), height = frames; a 4x4 block = 4 vertices x 4 frames ('4x4'), or 16 vertices x 1 frame ('16x1').
# usage: bc.py NAME [--residual FIT.npz]
import numpy as np, sys, os, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from load import *
from rigid import oct_enc, oct_dec

W16 = np.array([0, 4, 9, 13, 17, 21, 26, 30, 34, 38, 43, 47, 51, 55, 60, 64])
HLO, HHI = 0x0400, 0x7BFF

def unq(e, prec):
    e = e.astype(np.int64)
    if prec >= 15: return e
    out = ((e << 16) + 0x8000) >> prec
    out = np.where(e == 0, 0, out); out = np.where(e == (1 << prec) - 1, 0xFFFF, out)
    return out

def bc6h_mode(blk, scale, prec, dbits):
    """blk: n x 16 x 3 target half patterns (float). Returns decoded patterns and squared error (metres^2)."""
    U = blk * 64.0 / 31.0                                           # the interpolation domain
    mu = U.mean(1, keepdims=True); C = U - mu
    cov = np.einsum('nti,ntj->nij', C * scale, C * scale)
    ax = np.linalg.eigh(cov)[1][:, :, -1] / scale[None]             # principal axis in U units
    ax /= np.maximum(np.linalg.norm(ax, axis=1, keepdims=True), 1e-12)
    proj = np.einsum('nti,ni->nt', C, ax)
    best = None
    for shrink in (0.0, 0.03, 0.06):
        lo = proj.min(1) * (1 - shrink); hi = proj.max(1) * (1 - shrink)
        E0 = mu[:, 0] + lo[:, None] * ax; E1 = mu[:, 0] + hi[:, None] * ax
        mx = (1 << prec) - 1
        e0 = np.clip(np.floor(E0 * (1 << prec) / 65536.0), 0, mx).astype(np.int64)
        e1 = np.clip(np.floor(E1 * (1 << prec) / 65536.0), 0, mx).astype(np.int64)
        if dbits:
            lim = 1 << (dbits - 1)
            d = np.clip(e1 - e0, -lim, lim - 1)                          # a delta out of range is clamped (valid, worse)
            e1 = (e0 + d) & mx
        a = unq(e0, prec); b = unq(e1, prec)
        pal = ((64 - W16)[None, :, None] * a[:, None] + W16[None, :, None] * b[:, None] + 32) >> 6
        pal = (pal * 31) >> 6                                           # finish_unquantize (UF16): the half pattern
        d2 = (((blk[:, :, None, :] - pal[:, None, :, :]) * scale) ** 2).sum(-1)   # n x 16 texels x 16 entries
        idx = d2.argmin(2); err = np.take_along_axis(d2, idx[..., None], 2)[..., 0]
        dec = np.take_along_axis(pal, idx[..., None].repeat(3, 2), 1)
        # anchor texel 0 must use an index < 8: swapping the endpoints mirrors the weights exactly
        # (w[15-i] = 64 - w[i]); for delta modes the mirrored delta is checked to fit, else the block is invalid
        if dbits:
            bad = ((idx[:, 0] >= 8) & np.any((e0 - e1) > lim - 1, axis=1)) | ((idx[:, 0] >= 8) & np.any((e0 - e1) < -lim, axis=1))
            err = np.where(bad[:, None], np.inf, err)
        tot = err.sum(1)
        if best is None: best = (dec.astype(float), err, tot)
        else:
            m = tot < best[2]
            best = (np.where(m[:, None, None], dec, best[0]), np.where(m[:, None], err, best[1]), np.where(m, tot, best[2]))
    return best

def bc6h(blk, scale):
    out = None
    for prec, dbits in [(10, 0), (11, 9), (12, 8), (16, 4)]:
        dec, err, tot = bc6h_mode(blk, scale, prec, dbits)
        if out is None: out = (dec, tot, np.full(len(blk), prec))
        else:
            m = tot < out[1]
            out = (np.where(m[:, None, None], dec, out[0]), np.where(m, tot, out[1]), np.where(m, prec, out[2]))
    return out

def bc4(x):
    """x: n x 16 in [0,1]; BC4 UNORM: endpoints 8 bit, 3-bit indices, both palette modes, small endpoint search."""
    lo0 = np.round(x.min(1) * 255).astype(int); hi0 = np.round(x.max(1) * 255).astype(int)
    best_dec = None; best_t = None
    for dl in (-1, 0, 1, 2):
        for dh in (-2, -1, 0, 1):
            r0 = np.clip(hi0 + dh, 0, 255); r1 = np.clip(lo0 + dl, 0, 255)
            # 8-level mode needs r0 > r1; when r0 <= r1 the 6-level palette (plus 0 and 1) applies
            k = np.arange(8)
            p8 = ((7 - k[1:7]) [None] * r0[:, None] + k[1:7][None] * r1[:, None]) / 7.0
            p8 = np.concatenate([r0[:, None], r1[:, None], p8], 1) / 255.0
            p6 = np.concatenate([r0[:, None], r1[:, None], ((5 - k[1:5])[None] * r0[:, None] + k[1:5][None] * r1[:, None]) / 5.0,
                                 np.zeros((len(x), 1)), np.full((len(x), 1), 255.0)], 1) / 255.0
            pal = np.where((r0 > r1)[:, None], p8, p6)
            d = np.abs(x[:, :, None] - pal[:, None, :]); idx = d.argmin(2)
            dec = np.take_along_axis(pal, idx, 1); t = ((dec - x) ** 2).sum(1)
            if best_dec is None: best_dec, best_t = dec, t
            else:
                m = t < best_t; best_dec = np.where(m[:, None], dec, best_dec); best_t = np.where(m, t, best_t)
    return best_dec

def morton_order(X):
    q = ((X - X.min(0)) / np.ptp(X, 0).max() * 1023).astype(np.int64)
    def spread(v):
        v = (v | (v << 16)) & 0x030000FF; v = (v | (v << 8)) & 0x0300F00F
        v = (v | (v << 4)) & 0x030C30C3; v = (v | (v << 2)) & 0x09249249; return v
    return np.argsort(spread(q[:, 0]) | (spread(q[:, 1]) << 1) | (spread(q[:, 2]) << 2), kind='stable')

def greedy_order(X, group=4):
    """Groups of `group` nearest vertices (seeded in Morton order): compact 4-vertex block columns."""
    from scipy.spatial import cKDTree
    mo = morton_order(X); used = np.zeros(len(X), bool); out = []; tree = cKDTree(X)
    for s in mo:
        if used[s]: continue
        k = min(len(X), 64)
        while True:
            _, nb = tree.query(X[s], k=k); nb = [n for n in np.atleast_1d(nb) if not used[n]]
            if len(nb) >= group or k >= len(X): break
            k = min(len(X), k * 4)
        g = nb[:group]; used[g] = True; out.extend(g)
    return np.array(out)

def to_blocks(A, order, layout):
    """A: F x V x C -> n x 16 x C blocks (padding by repetition) and the inverse map."""
    F, V, C = A.shape; A = A[:, order]
    if layout == '4x4':
        Fp = -(-F // 4) * 4; Vp = -(-V // 4) * 4
        A = np.concatenate([A, A[-1:].repeat(Fp - F, 0)], 0); A = np.concatenate([A, A[:, -1:].repeat(Vp - V, 1)], 1)
        blk = A.reshape(Fp // 4, 4, Vp // 4, 4, C).transpose(0, 2, 1, 3, 4).reshape(-1, 16, C)
        def back(b):
            return b.reshape(Fp // 4, Vp // 4, 4, 4, C).transpose(0, 2, 1, 3, 4).reshape(Fp, Vp, C)[:F, :V]
    else:  # 16 vertices of one frame
        Vp = -(-V // 16) * 16; A = np.concatenate([A, A[:, -1:].repeat(Vp - V, 1)], 1)
        blk = A.reshape(F * Vp // 16, 16, C)
        def back(b): return b.reshape(F, Vp, C)[:, :V]
    inv = np.argsort(order)
    return blk, (lambda b: back(b)[:, inv])

def run_pos(P, X, order, layout, label):
    lo = P.reshape(-1, 3).min(0); hi = P.reshape(-1, 3).max(0); ext = np.maximum(hi - lo, 1e-9)
    h = HLO + (P - lo) / ext * (HHI - HLO)                          # the ideal (unrounded) patterns
    scale = ext / (HHI - HLO)                                      # metres per pattern unit
    blk, back = to_blocks(h, order, layout)
    t = time.time(); dec, _, prec = bc6h(blk, scale); te = time.time() - t
    Pd = lo + (back(dec) - HLO) * scale
    e = np.linalg.norm(Pd - P, axis=-1); s = stats(e)
    modes = {p: int((prec == p).sum()) for p in (10, 11, 12, 16)}
    print(f'  BC6H {label}: pos max {s["max"]:.3f} p99 {s["p99"]:.3f} mean {s["mean"]:.4f} mm (1 B/v/f; blocks by endpoint precision {modes}; encode {te:.1f}s numpy)', flush=True)
    return e

def run_nrm(N, order, layout, label):
    o = (oct_enc(N) + 1) / 2
    blk, back = to_blocks(o, order, layout)
    dec = np.stack([bc4(blk[..., 0]), bc4(blk[..., 1])], -1)
    a = angle_deg(oct_dec(back(dec) * 2 - 1), N)
    # for reference: plain 8-bit oct (what BC5 endpoints alone can hold)
    print(f'  BC5 {label}: normal max {a.max():.2f} p99 {np.percentile(a, 99):.2f} mean {a.mean():.3f} deg (1 B/v/f)', flush=True)
    return a

if __name__ == '__main__':
    name = sys.argv[1]
    P, N = load(os.path.join(os.environ.get('FRAMES_DIR', '/tmp/r34'), f'{name}.bin')); F, V, _ = P.shape
    X = P[0]
    orders = {'index': np.arange(V), 'morton': morton_order(X), 'groups4': greedy_order(X, 4), 'groups16': greedy_order(X, 16)}
    print(f'{name}: {F} frames x {V} vertices')
    if '--residual' in sys.argv:
        f = np.load(sys.argv[sys.argv.index('--residual') + 1]); res = f['res']
        print(f' positions = rigid decomposition + BC6H residual ({sys.argv[sys.argv.index("--residual") + 1]}), |res| max {np.abs(res).max()*1e3:.2f} mm')
        for on, lay in [('groups4', '4x4'), ('groups16', '16x1')]:
            # error of the reconstruction = error of the coded residual
            run_pos(res, X, orders[on], lay, f'residual {lay} order {on}')
        sys.exit(0)
    for on, lay in [('index', '4x4'), ('morton', '4x4'), ('groups4', '4x4'), ('morton', '16x1'), ('groups16', '16x1')]:
        run_pos(P, X, orders[on], lay, f'{lay} order {on}')
        run_nrm(N, orders[on], lay, f'{lay} order {on}')

def line_floor(P, order, layout):
    """Per block, the root-mean-square distance of its 16 texels to their least-squares line (metres).
    The least-squares line minimises the sum of squared distances over all lines, and a one-region
    BC6H block decodes every texel onto one segment, so no one-region encoding of that block has a
    smaller RMS error, nor a smaller max error (max >= RMS): a floor for every one-region encoder."""
    blk, _ = to_blocks(P, order, layout)
    C = blk - blk.mean(1, keepdims=True); ev = np.linalg.eigvalsh(np.einsum('nti,ntj->nij', C, C))
    return np.sqrt(np.maximum(ev[:, 0] + ev[:, 1], 0) / 16)
