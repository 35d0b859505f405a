# ncu target: the power-law SpMV (2^22 rows, mean 15) by merge path, subwarp (rule), scalar,
# and cuSPARSE, float32/int32, each once after a warm-up, inside a profiler range.
import sys
import numpy as np, gpulab as gl, cupy
A = gl.sparse.powerlaw(1 << 22, 15, seed=0, dtype=np.float32)
dA = A.to_device()
x = gl.to_device(np.random.default_rng(3).standard_normal(A.shape[1]).astype(np.float32))
ids = [int(v) for v in sys.argv[1:]] or [2, 8, 0, 7]
for v in ids:
    gl.spmv(dA, x, variant=v); gl.synchronize()
cupy.cuda.profiler.start()
for v in ids:
    gl.spmv(dA, x, variant=v); gl.synchronize()
cupy.cuda.profiler.stop()
