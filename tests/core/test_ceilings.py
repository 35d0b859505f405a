"""gl.ceilings(): the keys every result file and the roofline read, the L2 copy's sizing, and on
the GPU the kernels behind the L2 and FP64 figures."""

import numpy as np
import pytest

import gpulab as gl
from gpulab import _core
from gpulab.ceilings import L2_COPY_THREADS, _l2_copy_plan

CPU_KEYS = ("where", "device", "copy_gbps", "copy_bytes", "fma_gflops", "fma64_gflops",
            "threads", "method")
GPU_KEYS = ("where", "device", "copy_gbps", "copy_bytes", "l2_copy_gbps", "l2_copy_bytes",
            "l2_copy_passes", "fma_gflops", "fma64_gflops", "peak_bandwidth_gbps",
            "peak_fp32_gflops", "method")

H100 = {"multiprocessors": 132, "max_threads_per_sm": 2048, "l2_cache_bytes": 50 << 20}


def test_cpu_ceilings_keys():
    c = gl.ceilings("cpu")
    assert set(CPU_KEYS) <= set(c)
    assert c["where"] == "cpu" and c["fma64_gflops"] > 0 and c["fma_gflops"] > 0
    assert "FP64" in c["method"]
    # no L2 figure on the CPU: its caches are per core, not one level shared by every thread
    assert "l2_copy_gbps" not in c


def test_the_cached_ceilings_are_a_copy():
    c = gl.ceilings("cpu")
    c["copy_gbps"] = -1.0
    assert gl.ceilings("cpu")["copy_gbps"] > 0


@pytest.mark.parametrize("info", [
    H100,
    {"multiprocessors": 108, "max_threads_per_sm": 2048, "l2_cache_bytes": 40 << 20},  # A100
    {"multiprocessors": 128, "max_threads_per_sm": 1536, "l2_cache_bytes": 72 << 20},  # 4090
    {"multiprocessors": 20, "max_threads_per_sm": 1536, "l2_cache_bytes": 2 << 20},
    {"multiprocessors": 2, "max_threads_per_sm": 1024, "l2_cache_bytes": 1 << 16},
], ids=["h100", "a100", "ada", "small-l2", "tiny"])
def test_l2_copy_plan_fits_an_eighth_of_l2_in_whole_waves(info):
    nbytes, blocks = _l2_copy_plan(info)
    assert 0 < nbytes <= info["l2_cache_bytes"] // 8 and nbytes % 16 == 0
    assert 1 <= blocks <= info["multiprocessors"] * info["max_threads_per_sm"] // L2_COPY_THREADS
    # every thread moves the same number of 16-byte vectors per pass
    assert nbytes % (blocks * L2_COPY_THREADS * 16) == 0
    if blocks >= info["multiprocessors"]:
        assert blocks % info["multiprocessors"] == 0


def test_l2_copy_plan_on_the_h100():
    nbytes, blocks = _l2_copy_plan(H100)
    # a full wave (132 SMs x 8 blocks x 256 threads) of 16-byte vectors: 4.125 MiB a buffer,
    # the pair 16.5% of the 50 MiB L2
    assert blocks == 132 * 8 and nbytes == 132 * 2048 * 16


@pytest.mark.skipif(gl.cuda_available(), reason="checks the refusal without a GPU")
def test_gpu_ceiling_kernels_refuse_without_a_gpu():
    for call in (lambda: _core._fma64_loop(1, 32, 1, None),
                 lambda: _core._l2_copy(None, None, 1, 1, 32)):
        with pytest.raises(gl.NoDeviceError):
            call()


@pytest.mark.gpu
def test_gpu_ceilings_keys():
    c = gl.ceilings("gpu")
    assert set(GPU_KEYS) <= set(c)
    info = gl.device_info()
    assert c["l2_copy_bytes"] <= info["l2_cache_bytes"] // 8 and c["l2_copy_passes"] >= 1
    # a resident copy is served faster than one from main memory
    assert c["l2_copy_gbps"] > c["copy_gbps"]
    # FP64 runs at most at the FP32 rate (1:2 on the H100, 1:64 on consumer parts)
    assert 0 < c["fma64_gflops"] <= 1.05 * c["fma_gflops"]
    assert c["fma_gflops"] <= 1.05 * c["peak_fp32_gflops"]


@pytest.mark.gpu
@pytest.mark.parametrize("passes", [0, 1, 3])
def test_l2_copy_copies(passes):
    n = 4096 * 3 + 16  # not a whole number of the grid's waves: the grid-stride tail
    src = np.random.default_rng(7).integers(0, 255, n, dtype=np.uint8)
    d_src, d_dst = gl.to_device(src), gl.zeros(n, dtype=np.uint8)
    _core._l2_copy(d_dst, d_src, passes, 3, 64)
    expected = src if passes else np.zeros(n, dtype=np.uint8)
    np.testing.assert_array_equal(d_dst.get(), expected)


@pytest.mark.gpu
def test_l2_copy_refuses_bad_arguments():
    a, b = gl.zeros(64, dtype=np.uint8), gl.zeros(64, dtype=np.uint8)
    with pytest.raises(ValueError, match="differ in size"):
        _core._l2_copy(a, gl.zeros(48, dtype=np.uint8), 1, 1, 32)
    with pytest.raises(ValueError, match="multiple of 16"):
        _core._l2_copy(gl.zeros(40, dtype=np.uint8), gl.zeros(40, dtype=np.uint8), 1, 1, 32)
    with pytest.raises(ValueError, match="passes"):
        _core._l2_copy(a, b, -1, 1, 32)
    with pytest.raises(ValueError, match="blocks"):
        _core._l2_copy(a, b, 1, 0, 32)
    with pytest.raises(ValueError, match="threads"):
        _core._l2_copy(a, b, 1, 1, 2048)
    with pytest.raises(TypeError, match="dst"):
        _core._l2_copy(np.zeros(64, dtype=np.uint8), b, 1, 1, 32)


@pytest.mark.gpu
def test_fma64_loop_refuses_a_float32_sink():
    with pytest.raises(ValueError, match="float64"):
        _core._fma64_loop(1, 32, 8, gl.zeros(32, dtype=np.float32))
