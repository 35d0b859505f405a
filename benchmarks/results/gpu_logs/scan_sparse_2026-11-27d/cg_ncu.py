# ncu target: 3 iterations of cg fused and dia_fused on poisson2d(4096) float64, no M
import numpy as np, gpulab as gl, cupy
A = gl.sparse.poisson2d(4096)
dA = A.to_device()
b = gl.to_device(np.random.default_rng(5).standard_normal(A.shape[0]))
for v in ("fused", "dia_fused"):
    gl.cg(dA, b, rtol=0.0, maxiter=3, M=None, variant=v)
cupy.cuda.profiler.start()
for v in ("fused", "dia_fused"):
    gl.cg(dA, b, rtol=0.0, maxiter=3, M=None, variant=v)
cupy.cuda.profiler.stop()
