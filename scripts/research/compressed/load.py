# Issue 34 research: see docs/notes/compressed-format.md (frames from vat-procgen/examples/dump_frames.rs).
import numpy as np
def load(path):
    raw=np.fromfile(path,dtype='<u4',count=2); F,V=int(raw[0]),int(raw[1])
    d=np.fromfile(path,dtype='<f4',offset=8).reshape(F,2,V,3)
    return d[:,0].astype(np.float64), d[:,1].astype(np.float64)
def stats(err):
    e=err.ravel(); return dict(max=e.max()*1e3, p99=np.percentile(e,99)*1e3, mean=e.mean()*1e3)
def angle_deg(n1,n2):
    a=n1/np.linalg.norm(n1,axis=-1,keepdims=True); b=n2/np.linalg.norm(n2,axis=-1,keepdims=True)
    return np.degrees(np.arccos(np.clip((a*b).sum(-1),-1,1)))
