"""gl.ceilings(): the keys every result file and the roofline read, the L2 copy's sizing, the
tensor-core ceilings (None where wgmma does not run), and on the GPU the kernels behind the L2,
FP64 and tensor-core figures."""

import numpy as np
import pytest

import gpulab as gl
from gpulab import _core
from gpulab.ceilings import (CUDA_ERROR_NOT_SUPPORTED, L2_COPY_THREADS, TENSOR_KEYS,
                             _gpu_tensor_gflops, _l2_copy_plan)

CPU_KEYS = ("where", "device", "copy_gbps", "copy_bytes", "fma_gflops", "fma64_gflops",
            "threads", "method")
GPU_KEYS = ("where", "device", "copy_gbps", "copy_bytes", "l2_copy_gbps", "l2_copy_bytes",
            "l2_copy_passes", "fma_gflops", "fma64_gflops", "tensor_f16_gflops",
            "tensor_bf16_gflops", "tensor_tf32_gflops", "peak_bandwidth_gbps",
            "peak_fp32_gflops", "method")
# Hopper's dense tensor-core flops a cycle an SM for float16 and bfloat16 (TF32: half): the
# H100/H200 SXM datasheet's 989.4 TFLOP/s is 132 SMs x 4096 x 1.83 GHz
HOPPER_F16_FLOPS_PER_SM_CYCLE = 4096

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
                 lambda: _core._l2_copy(None, None, 1, 1, 32),
                 lambda: _core._tensor_peak("float16")):
        with pytest.raises(gl.NoDeviceError):
            call()


@pytest.mark.parametrize("args, match", [
    (("float32",), "dtype"), (("float16", 4), "warpgroups"), (("float16", -1), "warpgroups"),
    (("float16", 0, -1), "slices"), (("float16", 0, 0, 65), "repeats"),
])
def test_tensor_peak_refuses_bad_arguments_before_the_gpu(args, match):
    with pytest.raises(ValueError, match=match):
        _core._tensor_peak(*args)


def cuda_error(code):
    e = gl.CudaError(f"tensor_peak_kernel(sm_90a build, compute capability 9.0) failed: "
                     f"(code {code})")
    e.code = code
    return e


def test_tensor_ceilings_come_from_the_kernel(monkeypatch):
    rates = {"float16": 901000.0, "bfloat16": 899000.0, "tf32": 451000.0}
    asked = []
    monkeypatch.setattr(_core, "_tensor_peak",
                        lambda operand: asked.append(operand) or (rates[operand], 1.7))
    values, method = _gpu_tensor_gflops()
    assert asked == ["float16", "bfloat16", "tf32"]
    assert values == {"tensor_f16_gflops": 901000.0, "tensor_bf16_gflops": 899000.0,
                      "tensor_tf32_gflops": 451000.0}
    assert "wgmma.mma_async m64n256k16" in method and "m64n256k8 (tf32)" in method


def test_tensor_ceilings_are_none_where_wgmma_does_not_run(monkeypatch):
    def refuse(operand):
        raise cuda_error(CUDA_ERROR_NOT_SUPPORTED)
    monkeypatch.setattr(_core, "_tensor_peak", refuse)
    values, method = _gpu_tensor_gflops()
    assert values == dict.fromkeys(key for key, _ in TENSOR_KEYS)
    assert method.startswith("tensor-core rates not measured (tensor_peak_kernel(sm_90a build")
    assert "FP32 FMA roof" in method


def test_other_tensor_peak_failures_are_raised(monkeypatch):
    def fail(operand):
        raise cuda_error(700)  # cudaErrorIllegalAddress: a fault, not a missing feature
    monkeypatch.setattr(_core, "_tensor_peak", fail)
    with pytest.raises(gl.CudaError):
        _gpu_tensor_gflops()


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


def wgmma_runs_here():
    return tuple(gl.device_info()["compute_capability"]) == (9, 0)


@pytest.mark.gpu
def test_tensor_ceilings_on_the_gpu():
    """Positive and within the tensor cores' own bound where wgmma runs (compute capability
    9.0): float16 and bfloat16 at most 4096 flops a cycle an SM at the peak SM clock, 1.05x for
    the clock's reporting (on an H200: 1070 TFLOP/s, 1.08x the datasheet's 989.4), bfloat16
    within 10% of float16 and TF32 about half of it; None elsewhere, and the method says why."""
    c = gl.ceilings("gpu")
    f16, bf16, tf32 = (c[key] for key, _ in TENSOR_KEYS)
    if not wgmma_runs_here():
        assert f16 is None and bf16 is None and tf32 is None
        assert "tensor-core rates not measured" in c["method"]
        pytest.skip("no wgmma on this device: the tensor-core ceilings are None, as they must")
    info = gl.device_info()
    cycles_per_s = info["multiprocessors"] * info["clock_mhz"] * 1e6
    bound = 1.05 * HOPPER_F16_FLOPS_PER_SM_CYCLE * cycles_per_s / 1e9
    assert 0.25 * bound < f16 < bound, (f16, bound)
    assert 0.9 < bf16 / f16 < 1.1, (bf16, f16)
    assert 0.4 < tf32 / f16 < 0.6, (tf32, f16)
    # far above the FP32 FMA roof (the H100's is 60 TFLOP/s against 989 for f16)
    assert f16 > 4 * c["fma_gflops"]
    assert "wgmma" in c["method"]


@pytest.mark.gpu
def test_tensor_peak_warpgroups_and_slices():
    """Fewer warpgroups and a shorter loop run too; a shorter loop takes less time."""
    if not wgmma_runs_here():
        with pytest.raises(gl.CudaError) as e:
            _core._tensor_peak("float16")
        assert e.value.code == CUDA_ERROR_NOT_SUPPORTED
        pytest.skip("no wgmma on this device: refused with cudaErrorNotSupported, as it must")
    for operand in ("float16", "bfloat16", "tf32"):
        for warpgroups in (1, 2, 3):
            gflops, ms = _core._tensor_peak(operand, warpgroups, 256, 3)
            assert gflops > 0 and ms > 0
    _, short_ms = _core._tensor_peak("float16", 3, 256, 3)
    _, long_ms = _core._tensor_peak("float16", 3, 2048, 3)
    assert short_ms < long_ms


@pytest.mark.gpu
def test_the_tensor_core_rungs_stay_under_their_ceilings():
    """The best float16 rung and cuBLASLt at 4096^3 and cuBLAS's TF32 SGEMM run below the
    measured tensor-core ceilings (operands of random data, where the ceiling's are zeros)."""
    c = gl.ceilings("gpu")
    if not wgmma_runs_here():
        pytest.skip("no wgmma on this device, so no tensor-core ceilings to hold the rungs to")
    rng = np.random.default_rng(34)
    s = 4096
    A16, B16 = (gl.to_device(rng.standard_normal((s, s)).astype(np.float16)) for _ in range(2))
    for variant in (None, "cublaslt"):
        r = gl.bench(gl.matmul, A16, B16, variant=variant, repeat=5, flush_l2=False)
        assert 0 < r.gflops < c["tensor_f16_gflops"], (r.variant_name, r.gflops)
    A32, B32 = (gl.to_device(rng.standard_normal((s, s)).astype(np.float32)) for _ in range(2))
    r = gl.bench(gl.matmul, A32, B32, variant="cublas_tf32", repeat=5, flush_l2=False)
    assert 0 < r.gflops < c["tensor_tf32_gflops"], (r.variant_name, r.gflops)


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
