# Issue 34 research: see docs/notes/compressed-format.md (frames from vat-procgen/examples/dump_frames.rs).
# Small-K PCA predictor (one basis per asset, f16 basis, f32 coefficients; positions and normals each)
# plus the variable-rate per-vertex residual of resid.py (the same bounds and the same decode; the
# predictor is the only change). Shows whether a PCA basis is a better predictor than bones for the
# sources that a rigid decomposition fits badly (cloth).
# usage: pcares.py NAME K[,K...]
import numpy as np, sys, os, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from load import *
from resid import onb

def bits_for(rmax, step):
    L = np.ceil(rmax / step - 0.5)
    return np.where(L <= 0, 0, np.ceil(np.log2(2 * L + 1))).astype(int), L

def pca(X, K):
    mu = X.mean(0); U, S, Vt = np.linalg.svd(X - mu, full_matrices=False)
    B = Vt[:K].astype(np.float16).astype(np.float64); mu = mu.astype(np.float32).astype(np.float64)
    C = ((X - mu) @ B.T).astype(np.float32).astype(np.float64)   # least squares on the rounded basis would be better
    return C @ B + mu

if __name__ == '__main__':
    name = sys.argv[1]; Ks = [int(k) for k in sys.argv[2].split(',')]
    P, N = load(os.path.join(os.environ.get('FRAMES_DIR', '/tmp/r34'), f'{name}.bin')); F, V, _ = P.shape
    for K in Ks:
        t0 = time.time()
        pred = pca(P.reshape(F, -1), K).reshape(F, V, 3)
        m = pca(N.reshape(F, -1), K).reshape(F, V, 3); m /= np.linalg.norm(m, axis=-1, keepdims=True)
        tf = time.time() - t0
        res = P - pred; t1, t2 = onb(m); c = (N * m).sum(-1)
        ab = np.stack([(N * t1).sum(-1) / c, (N * t2).sum(-1) / c], -1)
        a0 = angle_deg(m, N); e0 = stats(np.linalg.norm(res, axis=-1))
        over = (2 * (K * V * 3 * 2 + V * 12) + 2 * F * K * 4 + 12 * V) / (V * F)   # bases f16, means f32, coefficients f32, static 12 B/vertex
        print(f'{name} PCA K={K} (+{K} for normals), fit {tf:.1f}s: predictor alone pos max {e0["max"]:.2f} p99 {e0["p99"]:.2f} mm, normal max {a0.max():.1f} deg, '
              f'min n.m {c.min():.3f}; overhead {over:.3f} B/v/f; fetches {2*K} basis texels + residual', flush=True)
        for pbound, nbound in [(0.5e-3, 1.0), (0.75e-3, 2.0)]:
            sp = 2 * pbound / np.sqrt(3); bp, Lp = bits_for(np.abs(res).max((0, 2)), sp)
            rq = np.clip(np.round(res / sp), -Lp[None, :, None], Lp[None, :, None]) * sp
            st = stats(np.linalg.norm(res - rq, axis=-1))
            sn = np.sqrt(2) * np.radians(nbound); bn, Ln = bits_for(np.abs(ab).max((0, 2)), sn)
            abq = np.clip(np.round(ab / sn), -Ln[None, :, None], Ln[None, :, None]) * sn
            a = angle_deg(m + abq[..., :1] * t1 + abq[..., 1:] * t2, N)
            bits = 3 * bp + 2 * bn
            print(f'  bounds {pbound*1e3:.2f} mm / {nbound:.1f} deg: mean {bits.mean():.2f} bits/v/f (max {bits.max()}): pos max {st["max"]:.3f} p99 {st["p99"]:.3f} mean {st["mean"]:.4f} mm; '
                  f'normal max {a.max():.2f} p99 {np.percentile(a, 99):.2f} deg; {over + bits.mean() / 8:.3f} B/v/f', flush=True)
