# Issue 34 research: see docs/notes/compressed-format.md (frames from vat-procgen/examples/dump_frames.rs).
import numpy as np, sys, os
sys.path.insert(0,os.path.dirname(os.path.abspath(__file__))); from load import *
for name in sys.argv[1:]:
    P,N=load(os.path.join(os.environ.get('FRAMES_DIR','/tmp/r34'),f'{name}.bin')); F,V,_=P.shape
    X=P.reshape(F,-1); mu=X.mean(0); U,S,Vt=np.linalg.svd(X-mu,full_matrices=False)
    Y=N.reshape(F,-1); nu=Y.mean(0); Un,Sn,Vtn=np.linalg.svd(Y-nu,full_matrices=False)
    ext=np.ptp(P.reshape(-1,3),0)
    print(f'{name}: {F} frames x {V} vertices, extent {ext.round(2)} m')
    for K in [8,16,32,64,128]:
        if K>=F: break
        # basis stored f16 (error of f16 basis small relative), coefficients f32
        B=Vt[:K]; C=(X-mu)@B.T
        R=(C@B+mu).reshape(F,V,3); e=np.linalg.norm(R-P,axis=-1)
        Bn=Vtn[:K]; Cn=(Y-nu)@Bn.T; Rn=(Cn@Bn+nu).reshape(F,V,3); a=angle_deg(Rn,N)
        size=(2*K*3*V+4*3*V+4*F*K)*2  # positions+normals
        s=stats(e)
        print(f'  K={K:4d}: pos max {s["max"]:.3f} p99 {s["p99"]:.3f} mean {s["mean"]:.4f} mm; normal max {a.max():.2f} p99 {np.percentile(a,99):.2f} deg; {size/(V*F):.2f} B/vertex/frame; decode {K} fetches x2')
