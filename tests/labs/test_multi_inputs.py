"""gl.multi takes what gl takes. Without a GPU: a device array's __cuda_array_interface__ is checked
(ndim, dtype, contiguity, form) before any GPU work, and scaling reports the whole call. On GPUs:
DeviceArrays, CuPy arrays and PyTorch tensors on GPU 0 and on GPU 1 solve to gl.jacobi's u (the
same default variant) bitwise, the result comes back on the input's GPU, the grid never goes
through the host, and the timing has the whole call; scatter, reduce and allreduce take them
too."""

import numpy as np
import pytest

import gpulab as gl
from conftest import GPU

mg = gl.multi
nogpu = pytest.mark.skipif(GPU, reason="checks the behaviour without a GPU")


class FakeCuda:
    """An object that states CUDA memory through __cuda_array_interface__ only (no GPU behind
    it): what gl.multi reads of it before any GPU work."""

    def __init__(self, shape, typestr="<f4", strides=None, **extra):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, strides=strides,
                                             data=(1 << 20, False), version=3, **extra)


F2 = np.zeros((8, 8), np.float32)


# ---------------------------------------------------------------- arguments (no GPU needed)

@pytest.mark.parametrize("call, error, words", [
    (lambda: mg.jacobi(FakeCuda((8, 8), "<i4"), iters=1), TypeError, "f has dtype int32"),
    (lambda: mg.jacobi(FakeCuda((64,)), iters=1), ValueError, "f must be 2-D or 3-D"),
    (lambda: mg.jacobi(FakeCuda((8, 8), strides=(64, 8)), iters=1), ValueError,
     "f must be C-contiguous"),
    (lambda: mg.jacobi(F2, FakeCuda((8, 9)), iters=1), ValueError, "u0 must have f's shape"),
    (lambda: mg.jacobi(FakeCuda((8, 8)), FakeCuda((8, 8), "<f8"), iters=1), ValueError,
     "u0 must have f's shape"),
    (lambda: mg.jacobi(FakeCuda((8, 8), "<zz"), iters=1), TypeError, "unknown typestr"),
    (lambda: mg.jacobi(FakeCuda([8, 8]), iters=1), ValueError, "malformed"),
    (lambda: mg.jacobi("grid", iters=1), TypeError, "or a device array (gpulab.DeviceArray"),
    (lambda: mg.jacobi(FakeCuda((8, 8)), iters=1, gpus=[0, 0]), ValueError,
     "gpus must be distinct"),
    (lambda: mg.scatter(FakeCuda((8,)), gpus=[]), ValueError, "gpus must not be empty"),
    (lambda: mg.allreduce([FakeCuda([3])]), ValueError, "arrays[0] has a malformed"),
    (lambda: mg.reduce(FakeCuda((4,), "<zz")), TypeError, "x: unknown typestr"),
])
def test_device_arrays_are_checked_before_any_gpu_work(call, error, words):
    with pytest.raises(error) as caught:
        call()
    assert words in str(caught.value)


def test_what_counts_as_a_device_array():
    class DLPackOnCuda:
        def __dlpack_device__(self):
            return (2, 1)

    class DLPackOnCpu:
        def __dlpack_device__(self):
            return (1, 0)

    assert mg._is_device(FakeCuda((2, 2))) and mg._is_device(DLPackOnCuda())
    assert not mg._is_device(DLPackOnCpu()) and not mg._is_device(F2)
    assert not mg._is_device([[0.0]])


@nogpu
def test_without_a_gpu_a_well_formed_device_array_raises_nodeviceerror():
    for call in (lambda: mg.jacobi(FakeCuda((8, 8)), iters=1),
                 lambda: mg.jacobi(F2, FakeCuda((8, 8)), iters=1),
                 lambda: mg.scatter(FakeCuda((8,))),
                 lambda: mg.reduce(FakeCuda((8,)))):
        with pytest.raises(gl.NoDeviceError):
            call()


def test_scaling_reports_the_whole_call_beside_the_solve():
    def run(size, gpus):  # two GPUs halve the solve, not the 20 ms of copies around it
        return {"call_ms": 20.0 + 20.0 / gpus, "total_ms": 20.0 / gpus}

    table = mg.scaling(run, [64], gpus=[1, 2], trials=1, warmup=0)
    assert [r["call_ms"] for r in table] == [40.0, 30.0]
    assert [r["call_speedup"] for r in table] == [1.0, 40.0 / 30.0]
    assert [r["speedup"] for r in table] == [1.0, 2.0]

    def solve_only(size, gpus):  # no call_ms: the harness's clock stands in
        return {"total_ms": 1e6}

    table = mg.scaling(solve_only, [64], gpus=[1], trials=1, warmup=0)
    assert 0 <= table[0]["call_ms"] < 1e3 and table[0]["total_ms"] == 1e6


# ---------------------------------------------------------------- on GPUs

def gpu_count():
    return gl._core._multi_device_count() if GPU else 0


def need_two_gpus_with_p2p(what):
    if gpu_count() < 2:
        pytest.skip(f"needs 2 GPUs, {gpu_count()} visible: could not check {what}")
    access = gl.devices().meta["p2p_access"]
    if not (access[0][1] and access[1][0]):
        pytest.skip(f"GPUs 0 and 1 have no peer access: could not check {what}")


def problem(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


def single_gpu(f, u0, h, iters, check_every):
    """gl.jacobi on device 0, its default variant as gl.multi.jacobi's: the reference, bitwise."""
    return gl.jacobi(gl.to_device(f), gl.to_device(u0), h=h, iters=iters,
                     check_every=check_every).get()


def on_device(kind, x, device):
    """x (NumPy) as a `kind` device array on GPU `device`."""
    if kind == "DeviceArray":
        return mg.to_device(x, device)
    if kind == "cupy":
        cupy = pytest.importorskip("cupy")
        with cupy.cuda.Device(device):
            return cupy.asarray(x)
    torch = pytest.importorskip("torch")
    return torch.from_numpy(x).to(f"cuda:{device}")


def no_host_copies(monkeypatch):
    """Makes every device-to-host copy of gl.multi's own raise."""
    def refuse(*_):
        raise AssertionError("the grid went through the host (gl.multi.to_host)")
    monkeypatch.setattr(mg, "to_host", refuse)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["DeviceArray", "cupy", "torch"])
@pytest.mark.parametrize("device", [0, 1])
@pytest.mark.parametrize("given_u0", [True, False])
def test_device_inputs_on_either_gpu_match_one_gpu_bitwise_without_the_host(
        kind, device, given_u0, monkeypatch):
    need_two_gpus_with_p2p(f"{kind} input on GPU {device}")
    f, u0 = problem((37, 68), np.float32, seed=device)  # uneven slabs, the vector sweep
    if not given_u0:
        u0 = np.zeros_like(u0)
    ref = single_gpu(f, u0, 0.5, iters=7, check_every=5)
    df = on_device(kind, f, device)
    du0 = on_device(kind, u0, device) if given_u0 else None
    with monkeypatch.context() as m:
        no_host_copies(m)
        got = mg.jacobi(df, du0, h=0.5, iters=7, check_every=5, gpus=[0, 1])
    assert isinstance(got.u, gl.DeviceArray) and got.u.device == device
    assert got.sweeps == ref.sweeps and got.residuals.tobytes() == ref.residuals.tobytes()
    assert mg.to_host(got.u).tobytes() == ref.u.tobytes()
    t = got.timing
    assert t["call_ms"] >= t["scatter_ms"] + t["total_ms"] + t["gather_ms"]
    assert t["call_ms"] >= t["total_ms"] > 0 and t["scatter_ms"] > 0 and t["gather_ms"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(37, 67), (19, 10, 13)])
def test_a_device_f_read_in_place_and_a_host_u0_match_one_gpu_bitwise(shape):
    need_two_gpus_with_p2p("a DeviceArray f with a NumPy u0")
    f, u0 = problem(shape, np.float64, seed=5)
    got = mg.jacobi(mg.to_device(f, 1), u0, iters=6, check_every=4, gpus=[1, 0])
    assert got.u.device == 1
    assert mg.to_host(got.u).tobytes() == single_gpu(f, u0, 1.0, 6, 4).u.tobytes()


@pytest.mark.gpu
def test_a_numpy_f_without_u0_matches_one_gpu_bitwise_and_reports_the_call():
    need_two_gpus_with_p2p("a NumPy f with zeros made on the GPUs")
    f, _ = problem((41, 36), np.float32, seed=2)
    got = mg.jacobi(f, iters=9, check_every=4, gpus=[0, 1])
    assert isinstance(got.u, np.ndarray)
    assert got.u.tobytes() == single_gpu(f, np.zeros_like(f), 1.0, 9, 4).u.tobytes()
    t = got.timing
    assert t["call_ms"] >= t["scatter_ms"] + t["total_ms"] + t["gather_ms"] > 0
    assert "call_ms=" in repr(got)


@pytest.mark.gpu
def test_a_device_input_on_one_gpu_comes_back_there():
    f, u0 = problem((21, 32), np.float32, seed=4)
    for device in range(min(gpu_count(), 2)):
        got = mg.jacobi(mg.to_device(f, device), mg.to_device(u0, device), iters=4,
                        check_every=2, gpus=[device])
        assert got.u.device == device
        assert mg.to_host(got.u).tobytes() == single_gpu(f, u0, 1.0, 4, 2).u.tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["DeviceArray", "cupy", "torch"])
def test_scatter_reduce_and_allreduce_take_device_arrays_on_any_gpu(kind, monkeypatch):
    need_two_gpus_with_p2p(f"{kind} arrays in scatter, reduce and allreduce")
    x = np.arange(1001, dtype=np.float32)
    with monkeypatch.context() as m:
        no_host_copies(m)
        parts = mg.scatter(on_device(kind, x, 1), gpus=[0, 1])
    assert [p.device for p in parts] == [0, 1]
    assert np.array_equal(np.concatenate([mg.to_host(p) for p in parts]), x)
    assert mg.reduce(on_device(kind, x, 1), op="max") == 1000.0
    try:
        mg.load_nccl()
    except mg.NcclNotFoundError as e:
        pytest.skip(f"no NCCL, could not check allreduce of {kind} arrays: {e}")
    a, b = on_device(kind, x, 0), on_device(kind, 2 * x, 1)
    mg.allreduce([a, b], op="sum")  # in place, in the callers' own arrays
    for y in (a, b):
        assert np.array_equal(mg.to_host(mg._as_device(y, "y")), 3 * x)
