"""The kernels behind gl.ceilings() at small sizes: the L2-resident copy (16-byte vectors,
grid-stride over a buffer that is not a whole number of waves, 0, 1 and 3 passes, several
grids) and the FP32 and FP64 FMA loops (grids that end exactly on a block and ones that do not
fill a wave). Each copy checked byte for byte, each FMA sink checked finite. See _common.py.

    python3 tools/sanitize/ceilings.py [--inputs both|device]
"""

import numpy as np

from _common import gl, require, settle, start

_core = gl._core


def main():
    _, rng = start(__doc__)
    calls = 0
    for nbytes in (16, 4096 * 3 + 16, 1 << 16):
        src = rng.integers(0, 255, nbytes, dtype=np.uint8)
        for passes, blocks, threads in ((0, 1, 32), (1, 1, 32), (3, 3, 64), (2, 8, 256)):
            d_src, d_dst = gl.to_device(src), gl.zeros(nbytes, dtype=np.uint8)
            _core._l2_copy(d_dst, d_src, passes, blocks, threads)
            settle()
            want = src if passes else np.zeros(nbytes, dtype=np.uint8)
            require(np.array_equal(d_dst.get(), want),
                    f"_l2_copy {nbytes} B, {passes} passes, {blocks}x{threads}")
            calls += 1
    for loop, dtype in ((_core._fma_loop, np.float32), (_core._fma64_loop, np.float64)):
        for blocks, threads, iterations in ((1, 32, 1), (3, 96, 5), (7, 256, 16)):
            sink = gl.zeros(blocks * threads, dtype=dtype)
            flops = loop(blocks, threads, iterations, sink)
            settle()
            require(flops > 0 and np.all(np.isfinite(sink.get())),
                    f"{loop.__name__} {blocks}x{threads}x{iterations}")
            calls += 1
    print(f"sanitize/ceilings: {calls} CUDA calls checked in exact allocation mode")


if __name__ == "__main__":
    main()
