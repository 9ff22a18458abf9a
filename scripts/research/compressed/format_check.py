# Issue 34 research: see docs/notes/compressed-format.md. An end-to-end check of the recommended layout
# on a saved fit (rigid.py --save) or the own skin (ownskin.py's inputs): builds the actual buffers
# (16-bit bone texels, 32-byte vertex records, the padded u32 residual stream), decodes them the way
# the WGSL sketch does (f32 arithmetic, the branch-free 32-bit window, extractBits sign extension),
# and checks every vertex of every frame against the stated bounds. Sizes come from the buffers.
# usage: format_check.py NAME FIT.npz|own [BOUND_MM] [BOUND_DEG]
import numpy as np, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from load import *
from rigid import oct_enc, oct_dec
from scipy.spatial.transform import Rotation
f32 = np.float32

def quat_to_rows(q):
    """WGSL-style quaternion (x, y, z, w) to rotation matrix, in f32."""
    x, y, z, w = (q[..., i] for i in range(4))
    x2, y2, z2 = x + x, y + y, z + z
    xx, xy, xz, yy, yz, zz = x * x2, x * y2, x * z2, y * y2, y * z2, z * z2
    wx, wy, wz = w * x2, w * y2, w * z2
    one = f32(1)
    return np.stack([np.stack([one - (yy + zz), xy - wz, xz + wy], -1),
                     np.stack([xy + wz, one - (xx + zz), yz - wx], -1),
                     np.stack([xz - wy, yz + wx, one - (xx + yy)], -1)], -2)

def onb(m):
    s = np.where(m[..., 2] >= 0, f32(1), f32(-1)); a = f32(-1) / (s + m[..., 2]); b = m[..., 0] * m[..., 1] * a
    return (np.stack([f32(1) + s * m[..., 0] * m[..., 0] * a, s * b, -s * m[..., 0]], -1),
            np.stack([b, s + m[..., 1] * m[..., 1] * a, -m[..., 1]], -1))

def nrm(v): return v / np.sqrt((v * v).sum(-1, keepdims=True))

if __name__ == '__main__':
    name, src = sys.argv[1], sys.argv[2]
    Bp = float(sys.argv[3]) * 1e-3 if len(sys.argv) > 3 else 0.5e-3
    Bn = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    d = os.environ.get('FRAMES_DIR', '/tmp/r34')
    P, N = load(os.path.join(d, f'{name}.bin')); F, V, _ = P.shape
    if src == 'own':
        from ownskin import load_skin
        J, Wf, X, Nr, M = load_skin(os.path.join(d, f'{name}.skin')); B = M.shape[1]
        R = M[..., :3]; t = M[..., 3]
    else:
        fz = np.load(src); Wd, R, t, X = fz['W'], fz['R'], fz['t'], fz['X']; B = Wd.shape[1]
        J = np.argsort(-Wd, 1)[:, :4]; Wf = np.take_along_axis(Wd, J, 1); Nr = None
    # --- encode: bone texels -------------------------------------------------------------------
    q = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat()                 # x, y, z, w
    q16 = np.round(np.clip(q, -1, 1) * 32767).astype(np.int16)
    lo = t.reshape(-1, 3).min(0).astype(f32); ext = np.maximum(np.ptp(t.reshape(-1, 3), 0), 1e-9).astype(f32)
    t16 = np.round((t.reshape(-1, 3) - lo) / ext * 65535).astype(np.uint16)
    bone_bytes = B * F * 16
    # decode the bones as the shader does (f32)
    qd = q16.astype(f32) / f32(32767); qd = (qd / np.sqrt((qd * qd).sum(-1, keepdims=True))).astype(f32)
    Rd = quat_to_rows(qd).reshape(F, B, 3, 3); td = (lo + ext * (t16.astype(f32) / f32(65535))).reshape(F, B, 3)
    # weights: 4 x u8 summing to 255
    w8 = np.round(Wf / Wf.sum(1, keepdims=True) * 255).astype(int)
    w8[np.arange(V), w8.argmax(1)] += 255 - w8.sum(1)
    wd = (w8.astype(f32) / f32(255))
    Xd = X.astype(f32)
    # blended rows per vertex per frame (f32), position and cofactor normal
    Mb = np.zeros((F, V, 3, 4), f32)
    for k in range(4):
        Mb += wd[None, :, k, None, None] * np.concatenate([Rd[:, J[:, k]], td[:, J[:, k], :, None]], -1)
    pred = (Mb[..., :3] @ Xd[None, :, :, None])[..., 0] + Mb[..., 3]
    c0, c1, c2 = Mb[..., :, 0], Mb[..., :, 1], Mb[..., :, 2]
    C = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], -1).astype(f32)
    if Nr is None:   # refit the rest normal (least squares over all frames), as rigid.py does
        A = C.astype(np.float64).transpose(1, 0, 2, 3).reshape(V, -1, 3); y = N.transpose(1, 0, 2).reshape(V, -1)
        Nr = np.stack([np.linalg.lstsq(A[v], y[v], rcond=None)[0] for v in range(V)])
    o16 = np.round((oct_enc(nrm(Nr)) + 1) / 2 * 65535).astype(np.uint16)
    Nrd = oct_dec(o16.astype(np.float64) / 65535 * 2 - 1).astype(f32)
    m = nrm((C @ Nrd[None, :, :, None])[..., 0] * np.sign((c0 * np.cross(c1, c2)).sum(-1))[..., None]).astype(f32)
    # --- encode: residual ----------------------------------------------------------------------
    sp = f32(2 * Bp / np.sqrt(3)); sn = f32(np.sqrt(2) * np.radians(Bn))
    r = P - pred.astype(np.float64)
    t1, t2 = onb(m); c = (N * m).sum(-1)
    ab = np.stack([(N * t1).sum(-1) / c, (N * t2).sum(-1) / c], -1)
    def width(rmax, s):
        L = np.ceil(rmax / s - 0.5); return np.where(L <= 0, 0, np.ceil(np.log2(2 * L + 1))).astype(int)
    bp = width(np.abs(r).max((0, 2)), float(sp)); bn = width(np.abs(ab).max((0, 2)), float(sn))
    assert (c.min(0) > 0).all(), 'octahedral fallback needed (not in this check)'
    wv = 3 * bp + 2 * bn
    assert wv.max() <= 32, f'a vertex needs {wv.max()} bits: second window needed'
    qp = np.round(r / float(sp)).astype(np.int64); qn = np.round(ab / float(sn)).astype(np.int64)
    base = np.concatenate([[0], np.cumsum(wv * F)[:-1]]).astype(np.int64); total = int((wv * F).sum())
    bits = np.zeros(total + 96, np.uint8)
    for v in np.nonzero(wv)[0]:
        fields = [(qp[:, v, 0], bp[v]), (qp[:, v, 1], bp[v]), (qp[:, v, 2], bp[v]), (qn[:, v, 0], bn[v]), (qn[:, v, 1], bn[v])]
        cols = [((val[:, None] & ((1 << b) - 1)) >> np.arange(b)) & 1 for val, b in fields if b]
        bits[base[v]: base[v] + F * wv[v]] = np.concatenate(cols, 1).ravel()
    words = np.packbits(bits[: ((total + 31) // 32 + 1) * 32 + 32 * (total == 0)], bitorder='little').view('<u4')   # padded by a word
    # --- decode as the WGSL sketch --------------------------------------------------------------
    fr = np.arange(F)[:, None]; o = base[None, :] + fr * wv[None, :]
    i = (o >> 5).astype(np.int64); sh = (o & 31).astype(np.uint64)
    w0 = words[i].astype(np.uint64); w1 = words[i + 1].astype(np.uint64)
    x = ((w0 >> sh) | np.where(sh != 0, (w1 << ((32 - sh) & 31)), 0)) & 0xFFFFFFFF
    def ext_bits(x, off, cnt):   # WGSL extractBits on i32: sign-extended, 0 for cnt 0
        cnt = np.broadcast_to(cnt, x.shape).astype(np.uint64); off = np.broadcast_to(off, x.shape).astype(np.uint64)
        raw = (x >> off) & ((np.uint64(1) << cnt) - np.uint64(1))
        sign = np.where(cnt > 0, (raw >> np.maximum(cnt, 1) - np.uint64(1)) & np.uint64(1), 0)
        return np.where(cnt > 0, raw.astype(np.int64) - (sign.astype(np.int64) << cnt.astype(np.int64)), 0)
    BP = bp[None, :]; BN = bn[None, :]
    rq = np.stack([ext_bits(x, 0, BP), ext_bits(x, BP, BP), ext_bits(x, 2 * BP, BP)], -1).astype(f32)
    nq = np.stack([ext_bits(x, 3 * BP, BN), ext_bits(x, 3 * BP + BN, BN)], -1).astype(f32)
    pos = pred + sp * rq
    nor = nrm(m + sn * (nq[..., :1] * t1 + nq[..., 1:] * t2))
    e = np.linalg.norm(pos.astype(np.float64) - P, axis=-1); a = angle_deg(nor.astype(np.float64), N)
    size = bone_bytes + V * 32 + words.nbytes + 64
    st = stats(e)
    print(f'{name} ({src}): {B} bones; buffers: bones {bone_bytes} B, records {V*32} B, stream {words.nbytes} B '
          f'({total / (V * F):.2f} bits/v/f), header 64 B -> {size / (V * F):.3f} B/v/f (packed64: 8)')
    print(f'  stated bounds {Bp*1e3:.3f} mm + 1 um, {Bn:.2f} deg; decoded: position max {st["max"]:.4f} p99 {st["p99"]:.4f} mean {st["mean"]:.5f} mm, '
          f'normal max {a.max():.4f} p99 {np.percentile(a, 99):.4f} deg; '
          f'{"WITHIN" if e.max() <= Bp + 1e-6 and a.max() <= Bn + 1e-3 else "OUTSIDE"} the bounds; widest vertex {wv.max()} bits')
