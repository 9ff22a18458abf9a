# Issue 34 research: see docs/notes/compressed-format.md (frames from vat-procgen/examples/dump_frames.rs).
import numpy as np, sys, os, time
from scipy.optimize import nnls
from scipy.cluster.vq import kmeans2
sys.path.insert(0,os.path.dirname(os.path.abspath(__file__))); from load import *
def fit(P, B, iters=12, K=4, seed=1):
    F,V,_=P.shape; rest=P[0]; H=np.hstack([rest,np.ones((V,1))])  # V x 4
    traj=(P-rest).transpose(1,0,2).reshape(V,-1)
    rng=np.random.default_rng(seed)
    _,lab=kmeans2(np.hstack([traj, rest*3]),B,seed=seed,minit='++',iter=30)
    W=np.zeros((V,B)); W[np.arange(V),lab]=1
    for it in range(iters+1):
        # transforms: per frame, G (V x 4B) with G[v,4b:4b+4]=w_vb*H_v ; solve G X = P_f
        G=(W[:,:,None]*H[:,None,:]).reshape(V,4*B)
        pinv=np.linalg.pinv(G, rcond=1e-10)
        M=np.einsum('kv,fvc->fkc',pinv,P)  # F x 4B x 3
        M=M.reshape(F,B,4,3)
        if it==iters: break
        # weights: per vertex
        Tp=np.einsum('fbkc,vk->vbfc',M,H)  # V x B x F x 3 (each bone's prediction)
        err=((Tp-P.transpose(1,0,2)[:,None])**2).sum((2,3))  # V x B
        W=np.zeros((V,B))
        for v in range(V):
            cand=np.argsort(err[v])[:K]
            A=Tp[v,cand].reshape(len(cand),-1).T; y=P[:,v].ravel()
            lam=1e3
            A2=np.vstack([A,lam*np.ones((1,len(cand)))]); y2=np.append(y,lam)
            w,_=nnls(A2,y2); s=w.sum(); w=w/s if s>0 else np.eye(len(cand))[0]
            W[v,cand]=w
    R=np.einsum('vb,fbkc,vk->fvc',W,M,H)
    return W,M,R
for name,Bs in [(a.split(':')[0],[int(x) for x in a.split(':')[1].split(',')]) for a in sys.argv[1:]]:
    P,N=load(os.path.join(os.environ.get('FRAMES_DIR','/tmp/r34'),f'{name}.bin')); F,V,_=P.shape
    for B in Bs:
        t=time.time(); W,M,R=fit(P,B)
        e=np.linalg.norm(R-P,axis=-1); s=stats(e)
        L=M[:,:,:3,:]  # F B 3(in) 3(out)
        Rn=np.einsum('vb,fbkc,vk->fvc',W,L,N[0]); a=angle_deg(Rn,N)
        size=F*B*48 + V*24
        print(f'{name} B={B}: pos max {s["max"]:.3f} p99 {s["p99"]:.3f} mean {s["mean"]:.4f} mm; normal max {a.max():.2f} p99 {np.percentile(a,99):.2f} deg; {size/(V*F):.3f} B/vertex/frame; {time.time()-t:.1f}s', flush=True)
