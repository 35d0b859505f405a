import numpy as np, gpulab as gl, cupy
n = 1 << 28
rng = np.random.default_rng(1)
x = gl.to_device(rng.standard_normal(n).astype(np.float32))
m = gl.to_device(rng.random(n) < 0.5)
for v in (4, 2):
    gl.compact(x, m, variant=v); gl.synchronize()
cupy.cuda.profiler.start()
for v in (4, 2):
    gl.compact(x, m, variant=v); gl.synchronize()
cupy.cuda.profiler.stop()
