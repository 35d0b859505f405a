# power-law SpMV timings: merge path, scalar, vector, subwarp (rule and each lanes), cuSPARSE
import numpy as np, gpulab as gl, time
t = time.time()
A = gl.sparse.powerlaw(1 << 22, 15, seed=0, dtype=np.float32)
print("matrix", A.shape, A.nnz, "max_row", A.max_row, f"{time.time()-t:.1f}s", flush=True)
dA = A.to_device()
x = gl.to_device(np.random.default_rng(3).standard_normal(A.shape[1]).astype(np.float32))
for v, kw in [(7, {}), (2, {}), (0, {}), (1, {}), (8, {})] + [(8, {"lanes": L}) for L in (2, 4, 8, 16, 32)] + [(5, {}), (6, {}), (7, {})]:
    r = gl.bench(gl.spmv, dA, x, variant=v, repeat=10, **kw)
    print(f"{r.variant_name:16s} {kw} {r.median_ms:.4f} ms  {r.gbps:.0f} GB/s", flush=True)
