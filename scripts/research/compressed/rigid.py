# Issue 34 research: see docs/notes/compressed-format.md (frames from vat-procgen/examples/dump_frames.rs).
# Rigid skinning decomposition (SSDR, Le & Deng 2012: rigid bone transforms by weighted Procrustes,
# four non-negative weights per vertex summing to 1) plus a per-vertex-per-frame quantized residual.
# Normals: cof(sum w R) applied to a per-vertex "rest" normal refitted by least squares over all frames
# (static, like the rest position), optionally plus a quantized residual.
# usage: rigid.py NAME:B[,B...] [--iters N] [--save DIR]   (writes DIR/NAME-B.npz for bc.py)
import numpy as np, sys, os, time
from scipy.optimize import nnls
from scipy.cluster.vq import kmeans2
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from load import *

def kabsch(X, Q, w):
    """Bone transform per frame minimising sum_v |Q_fv - w_v (R_f X_v + t_f)|^2 (X: n x 3, Q: F x n x 3)."""
    w2 = (w * w).sum()
    rbar = (w[:, None] ** 2 * X).sum(0) / w2                      # 3
    qbar = np.einsum('v,fvc->fc', w, Q) / w2                       # F x 3
    Xc = w[:, None] * (X - rbar)                                   # n x 3
    Qc = Q - w[None, :, None] * qbar[:, None, :]                   # F x n x 3
    H = np.einsum('vi,fvj->fij', Xc, Qc)
    U, S, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(np.einsum('fij,fjk->fik', U, Vt)))
    D = np.ones((len(H), 3)); D[:, 2] = d
    R = np.einsum('fji,fj,fkj->fik', Vt, D, U)                     # V diag U^T
    t = qbar - np.einsum('fij,j->fi', R, rbar)
    return R, t

def predict(W, R, t, X):
    # F x V x 3
    out = np.zeros((R.shape[0], X.shape[0], 3))
    for b in np.nonzero(W.any(0))[0]:
        v = np.nonzero(W[:, b])[0]
        out[:, v] += W[v, b][None, :, None] * (np.einsum('fij,vj->fvi', R[:, b], X[v]) + t[:, b][:, None])
    return out

def fit(P, B, iters=20, K=4, seed=1, rest_frame=0, init_iters=0):
    F, V, _ = P.shape; X = P[rest_frame]
    traj = (P - X).transpose(1, 0, 2).reshape(V, -1)
    _, lab = kmeans2(np.hstack([traj, X * 3]), B, seed=seed, minit='++', iter=30)
    W = np.zeros((V, B)); W[np.arange(V), lab] = 1
    R = np.tile(np.eye(3), (F, B, 1, 1)); t = np.zeros((F, B, 3))
    for k in range(init_iters + 1):
        # rigid k-means (init): one transform per cluster, each vertex to the bone that moves it best;
        # a cluster left with < 3 vertices is reseeded at the worst-fitted vertices
        for b in range(B):
            v = lab == b
            if v.sum() >= 3: R[:, b], t[:, b] = kabsch(X[v], P[:, v], np.ones(v.sum()))
        if k == init_iters: break
        err = np.stack([((np.einsum('fij,vj->fvi', R[:, b], X) + t[:, b][:, None] - P) ** 2).sum((0, 2)) for b in range(B)], 1)
        lab = err.argmin(1); worst = np.argsort(-err.min(1))
        for b in range(B):
            if (lab == b).sum() < 3:
                seed = worst[0]; worst = worst[1:]
                d = np.linalg.norm(X - X[seed], axis=1); lab[np.argsort(d)[:8]] = b
    W = np.zeros((V, B)); W[np.arange(V), lab] = 1
    for it in range(iters):
        # weights: per vertex, best K single bones, then NNLS with a soft sum-to-one row
        err = np.zeros((V, B))
        for b in range(B):
            err[:, b] = ((np.einsum('fij,vj->fvi', R[:, b], X) + t[:, b][:, None] - P) ** 2).sum((0, 2))
        W = np.zeros((V, B))
        for v in range(V):
            cand = np.argsort(err[v])[:K]
            A = (np.einsum('fcij,j->fci', R[:, cand], X[v]) + t[:, cand]).transpose(0, 2, 1).reshape(-1, K)
            lam = 10.0
            w, _ = nnls(np.vstack([A, lam * np.ones((1, K))]), np.append(P[:, v].ravel(), lam))
            s = w.sum(); w = w / s if s > 0 else np.eye(K)[0]
            W[v, cand] = w
        # transforms: block coordinate descent over bones (weighted Procrustes)
        pred = predict(W, R, t, X)
        for b in range(B):
            v = np.nonzero(W[:, b] > 1e-6)[0]
            if len(v) < 3: continue
            w = W[v, b]
            own = w[None, :, None] * (np.einsum('fij,vj->fvi', R[:, b], X[v]) + t[:, b][:, None])
            Q = P[:, v] - (pred[:, v] - own)
            R[:, b], t[:, b] = kabsch(X[v], Q, w)
            pred[:, v] += w[None, :, None] * (np.einsum('fij,vj->fvi', R[:, b], X[v]) + t[:, b][:, None]) - own
    return W, R, t, X

def quat_round(R):
    """Round each rotation through a unit quaternion stored as f32 (what a bone texel would hold)."""
    from scipy.spatial.transform import Rotation
    sh = R.shape[:-2]; q = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat().astype(np.float32)
    return Rotation.from_quat(q.astype(np.float64)).as_matrix().reshape(*sh, 3, 3)

def normals_from(W, R, N, Nrest=None):
    M = np.einsum('vb,fbij->fvij', W, R)                           # blended 3x3 per vertex per frame
    # cofactor matrix cof(M) = det(M) M^-T; rows are cross products of the columns
    c0, c1, c2 = M[..., :, 0], M[..., :, 1], M[..., :, 2]
    C = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], -1)   # columns
    if Nrest is None:
        # per-vertex least squares: C_fv n ~= N_fv over all frames (static, fitted once)
        A = C.transpose(1, 0, 2, 3).reshape(C.shape[1], -1, 3); y = N.transpose(1, 0, 2).reshape(N.shape[1], -1)
        Nrest = np.stack([np.linalg.lstsq(A[v], y[v], rcond=None)[0] for v in range(len(A))])
        Nrest /= np.linalg.norm(Nrest, axis=1, keepdims=True)
    n = np.einsum('fvij,vj->fvi', C, Nrest)
    return n / np.linalg.norm(n, axis=-1, keepdims=True), Nrest

def oct_enc(n):
    n = n / np.abs(n).sum(-1, keepdims=True)
    x, y, z = n[..., 0], n[..., 1], n[..., 2]
    ox = np.where(z >= 0, x, (1 - np.abs(y)) * np.sign(x + (x == 0)))
    oy = np.where(z >= 0, y, (1 - np.abs(x)) * np.sign(y + (y == 0)))
    return np.stack([ox, oy], -1)

def oct_dec(e):
    x, y = e[..., 0], e[..., 1]; z = 1 - np.abs(x) - np.abs(y)
    tt = np.clip(-z, 0, None)
    x = x - tt * np.sign(x + (x == 0)); y = y - tt * np.sign(y + (y == 0))
    n = np.stack([x, y, z], -1); return n / np.linalg.norm(n, axis=-1, keepdims=True)

def quant(r, bits, m=None):
    """Symmetric fixed point: levels -(2^(b-1)-1)..(2^(b-1)-1), step from the largest |component|."""
    if bits == 0: return np.zeros_like(r), 0.0
    m = np.abs(r).max() if m is None else m
    s = m / (2 ** (bits - 1) - 1) if m > 0 else 1.0
    return np.round(r / s) * s, s

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    iters = int(sys.argv[sys.argv.index('--iters') + 1]) if '--iters' in sys.argv else 20
    init = int(sys.argv[sys.argv.index('--init') + 1]) if '--init' in sys.argv else 0
    if '--init' in sys.argv: args = [a for a in args if a != str(init)]
    save = sys.argv[sys.argv.index('--save') + 1] if '--save' in sys.argv else None
    if save: args = [a for a in args if a != save]
    if '--iters' in sys.argv: args = [a for a in args if a != str(iters)]
    for name, Bs in [(a.split(':')[0], [int(x) for x in a.split(':')[1].split(',')]) for a in args]:
        P, N = load(os.path.join(os.environ.get('FRAMES_DIR', '/tmp/r34'), f'{name}.bin')); F, V, _ = P.shape
        for B in Bs:
            t0 = time.time(); W, R, t, X = fit(P, B, iters=iters, init_iters=init); tf = time.time() - t0
            # what the texture holds: weights as 4 x u8 (renormalised), quaternion + translation f32, rest f32
            Wq = np.round(W * 255) ; Wq /= np.maximum(Wq.sum(1, keepdims=True), 1)
            Rq = quat_round(R); tq = t.astype(np.float32).astype(np.float64); Xq = X.astype(np.float32).astype(np.float64)
            pred = predict(Wq, Rq, tq, Xq); res = P - pred
            e0 = np.linalg.norm(res, axis=-1); s0 = stats(e0)
            n0, Nrest = normals_from(Wq, Rq, N); a0 = angle_deg(n0, N)
            bones = F * B * 32; static = V * 24   # per bone per frame: quat + translation (2 x rgba32f); per vertex: rest xyz f32, oct normal 2xu16, 4 x u8 index, 4 x u8 weight
            base = (bones + static) / (V * F)
            print(f'{name} B={B} rigid, {init} init + {iters} it, fit {tf:.1f}s (numpy): no residual: pos max {s0["max"]:.3f} p99 {s0["p99"]:.3f} mean {s0["mean"]:.4f} mm; '
                  f'normal max {a0.max():.2f} p99 {np.percentile(a0, 99):.2f} deg; {base:.3f} B/v/f; |res| component max {np.abs(res).max()*1e3:.2f} mm', flush=True)
            # residual in the normal's octahedral coordinates (difference of oct codes)
            dn = oct_enc(N) - oct_enc(n0)
            for pb, nb in [(4, 0), (5, 0), (4, 2), (3, 2), (4, 4), (5, 3), (6, 0)]:
                rq, s = quant(res, pb); e = np.linalg.norm(res - rq, axis=-1); st = stats(e)
                if nb:
                    dq, sn = quant(dn, nb); nr = oct_dec(oct_enc(n0) + dq); a = angle_deg(nr, N)
                else:
                    a = a0; sn = 0
                bits = 3 * pb + 2 * nb
                print(f'   residual {pb}b x3 pos + {nb}b x2 oct normal ({bits} bits): step {s*1e3:.3f} mm, bound {np.sqrt(3)*s/2*1e3:.3f} mm; '
                      f'pos max {st["max"]:.3f} p99 {st["p99"]:.3f} mean {st["mean"]:.4f} mm; normal max {a.max():.2f} p99 {np.percentile(a, 99):.2f} deg; '
                      f'{base + bits / 8:.3f} B/v/f', flush=True)
            if save:
                np.savez(os.path.join(save, f'{name}-{B}.npz'), res=res, n0=n0, W=Wq, R=Rq, t=tq, X=Xq)
