"""Zero-copy exchange with CuPy and PyTorch: __cuda_array_interface__ (v3) and DLPack, both ways.
Needs a GPU; the CuPy and PyTorch parts skip with a reason when the library is not importable."""

import gc

import numpy as np
import pytest

import gpulab as gl
from conftest import CudaView, variant_params
from references.saxpy import assert_saxpy_close, saxpy_inputs

pytestmark = pytest.mark.gpu

DTYPES = [np.float32, np.float64, np.int8, np.int32, np.uint64, np.float16, np.complex64, np.bool_]


def host_values(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 10 + 20).astype(dtype)


@pytest.fixture
def cp():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy sees no GPU")
    except Exception as e:  # pragma: no cover - depends on the machine
        pytest.skip(f"CuPy cannot use the GPU: {e}")
    return cupy


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch was built without CUDA or sees no GPU")
    return torch


# ---------------------------------------------------------------- what gpulab exports


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cuda_array_interface(dtype):
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        d = gl.to_device(np.zeros(shape, dtype))
        cai = d.__cuda_array_interface__
        assert cai["version"] == 3
        assert cai["shape"] == shape
        assert np.dtype(cai["typestr"]) == np.dtype(dtype)
        assert cai["typestr"] == np.dtype(dtype).str
        assert cai["data"] == (d.ptr, False)
        assert cai["strides"] is None or cai["strides"] == np.zeros(shape, dtype).strides
        assert isinstance(cai["stream"], int) and cai["stream"] != 0  # 0 is forbidden in v3
        assert "mask" not in cai or cai["mask"] is None


def test_dlpack_device():
    assert gl.to_device(np.ones(3)).__dlpack_device__() == (2, 0)  # (kDLCUDA, device 0)


def test_import_refuses_host_memory():
    with pytest.raises(TypeError):
        gl.from_dlpack(np.ones(3))
    with pytest.raises(TypeError):
        gl.as_device(np.ones(3))
    with pytest.raises(TypeError):
        gl.as_device([1.0, 2.0])


def test_as_device_of_a_device_array_is_itself():
    d = gl.to_device(np.ones(3))
    assert gl.as_device(d) is d and gl.from_dlpack(d) is d


# ---------------------------------------------------------------- CuPy


def test_cupy_asarray_shares_memory(cp):
    host = host_values(1000, np.float32)
    d = gl.to_device(host)
    c = cp.asarray(d)
    assert c.data.ptr == d.ptr and c.shape == d.shape and c.dtype == d.dtype
    np.testing.assert_array_equal(cp.asnumpy(c), host)
    c *= 2
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(d.get(), host * 2)


def test_cupy_from_dlpack_shares_memory(cp):
    host = host_values(1000, np.float64)
    d = gl.to_device(host)
    c = cp.from_dlpack(d)
    assert c.data.ptr == d.ptr
    np.testing.assert_array_equal(cp.asnumpy(c), host)
    c[:10] = -1.0
    cp.cuda.get_current_stream().synchronize()
    back = d.get()
    assert (back[:10] == -1.0).all()
    np.testing.assert_array_equal(back[10:], host[10:])


def test_gl_from_dlpack_of_cupy_shares_memory(cp):
    c = cp.asarray(host_values(1000, np.float32))
    d = gl.from_dlpack(c)
    assert isinstance(d, gl.DeviceArray)
    assert d.ptr == c.data.ptr and d.shape == c.shape and d.dtype == c.dtype
    np.testing.assert_array_equal(d.get(), cp.asnumpy(c))
    a = gl.as_device(c)
    assert a.ptr == c.data.ptr


@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_saxpy_on_cupy_arrays(cp, v):
    for n in (1, 1025, 1_000_003):
        a, x, y = saxpy_inputs(n, np.float32)
        cx, cy = cp.asarray(x), cp.asarray(y)
        got = gl.saxpy(a, cx, cy, variant=v.id)
        assert isinstance(got, gl.DeviceArray)
        assert_saxpy_close(got.get(), a, x, y)
        cout = cp.full(n, cp.nan, dtype=cp.float32)
        got = gl.saxpy(a, cx, cy, variant=v.id, out=cout)
        assert got.ptr == cout.data.ptr  # written in place, no copy
        gl.synchronize()
        assert_saxpy_close(cp.asnumpy(cout), a, x, y)


def test_saxpy_on_cupy_stream_and_views(cp):
    a, x, y = saxpy_inputs(100_003, np.float64)
    cx, cy = cp.asarray(x), cp.asarray(y)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        got = gl.saxpy(a, cx[1:], cy[:-1], stream=stream)
    stream.synchronize()
    assert_saxpy_close(got.get(), a, x[1:], y[:-1])
    with pytest.raises(ValueError, match="contiguous"):
        gl.saxpy(a, cx[::2], cy[::2])


def test_cupy_keeps_gpulab_memory_alive(cp):
    host = host_values(1 << 16, np.float32)
    c = cp.asarray(gl.to_device(host))  # the DeviceArray itself is dropped here
    gc.collect()
    for _ in range(3):
        gl.to_device(np.zeros(1 << 16, np.float32))  # churn the pool
    np.testing.assert_array_equal(cp.asnumpy(c), host)


# ---------------------------------------------------------------- PyTorch


def test_torch_as_tensor_shares_memory(torch):
    host = host_values(1000, np.float32)
    d = gl.to_device(host)
    gl.synchronize()  # PyTorch does not wait on the CAI stream it is handed
    t = torch.as_tensor(d, device="cuda")
    assert t.data_ptr() == d.ptr and tuple(t.shape) == d.shape
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    t.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(d.get(), host * 2)


def test_torch_from_dlpack_shares_memory(torch):
    host = host_values(1000, np.float64)
    d = gl.to_device(host)
    t = torch.from_dlpack(d)
    assert t.data_ptr() == d.ptr and t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    t[:10] = -1.0
    torch.cuda.synchronize()
    back = d.get()
    assert (back[:10] == -1.0).all()
    np.testing.assert_array_equal(back[10:], host[10:])


def test_gl_as_device_of_torch_shares_memory(torch):
    t = torch.arange(1000, dtype=torch.float32, device="cuda") + 0.5
    d = gl.as_device(t)
    assert isinstance(d, gl.DeviceArray)
    assert d.ptr == t.data_ptr() and d.shape == (1000,) and d.dtype == np.float32
    np.testing.assert_array_equal(d.get(), np.arange(1000, dtype=np.float32) + 0.5)
    e = gl.from_dlpack(t)
    assert e.ptr == t.data_ptr()
    del t
    gc.collect()
    torch.cuda.empty_cache()
    np.testing.assert_array_equal(d.get(), np.arange(1000, dtype=np.float32) + 0.5)


@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_saxpy_on_torch_tensors(torch, v):
    for n in (1, 1025, 1_000_003):
        a, x, y = saxpy_inputs(n, np.float32)
        tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        tout = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()  # (test_pending_torch_work_is_ordered checks without it)
        got = gl.saxpy(a, tx, ty, variant=v.id)
        assert isinstance(got, gl.DeviceArray)
        assert_saxpy_close(got.get(), a, x, y)
        got = gl.saxpy(a, tx, ty, variant=v.id, out=tout)
        assert got.ptr == tout.data_ptr()
        gl.synchronize()
        assert_saxpy_close(tout.cpu().numpy(), a, x, y)


def test_saxpy_on_torch_stream(torch):
    a, x, y = saxpy_inputs(100_003, np.float32)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    stream = torch.cuda.Stream()
    tout = torch.full_like(tx, float("nan"))
    torch.cuda.synchronize()
    gl.saxpy(a, tx, ty, out=tout, stream=stream)
    stream.synchronize()
    assert_saxpy_close(tout.cpu().numpy(), a, x, y)


def test_torch_result_round_trip(torch):
    """A gpulab result handed to PyTorch, worked on there, and read back."""
    a, x, y = saxpy_inputs(4096, np.float32)
    got = gl.saxpy(a, gl.to_device(x), gl.to_device(y))
    t = torch.from_dlpack(got)
    total = float(t.double().sum())
    ref = (a * x.astype(np.float64) + y).sum()
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert abs(total - ref) <= 2 * np.finfo(np.float32).eps * (np.abs(a * x64) + np.abs(y64)).sum()
    t.zero_()
    torch.cuda.synchronize()
    assert not got.get().any()


# ---------------------------------------------------------------- stream ordering with peers
# Work the peer has queued but not finished must be waited for: gpulab runs on its own
# non-blocking stream. A long spin queued first makes a missing wait show every time.

SPIN_MS = 50


def _spin_cycles():
    return int(gl.device_info()["clock_mhz"] * 1e3 * SPIN_MS)


def _cupy_spin(cp, cycles):
    """A one-thread kernel that spins `cycles` clocks, queued on CuPy's current stream."""
    spin = cp.RawKernel(r"""
        extern "C" __global__ void spin(long long cycles) {
            long long start = clock64();
            while (clock64() - start < cycles) {}
        }""", "spin")
    spin((1,), (1,), (np.int64(cycles),))


def test_pending_cupy_work_is_ordered(cp):
    n = 1 << 20
    x = cp.full(n, -7.0, dtype=cp.float32)
    y = cp.full(n, 0.25, dtype=cp.float32)
    cp.cuda.get_current_stream().synchronize()
    _cupy_spin(cp, _spin_cycles())
    x.fill(1.5)  # queued behind the spin on CuPy's stream
    got = gl.saxpy(2.0, x, y).get()
    assert (got == np.float32(3.25)).all(), "gpulab read x before CuPy had written it"


def test_pending_torch_work_is_ordered(torch):
    n = 1 << 20
    x = torch.full((n,), -7.0, dtype=torch.float32, device="cuda")
    y = torch.full((n,), 0.25, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(_spin_cycles())
    x.fill_(1.5)  # queued behind the sleep on PyTorch's stream
    got = gl.saxpy(2.0, x, y).get()
    assert (got == np.float32(3.25)).all(), "gpulab read x before PyTorch had written it"


def test_pending_torch_work_on_a_side_stream_is_ordered(torch):
    """The stream ordered first is PyTorch's current one, whichever the user made current."""
    n = 1 << 20
    x = torch.full((n,), -7.0, dtype=torch.float32, device="cuda")
    y = torch.full((n,), 0.25, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(_spin_cycles())
        x.fill_(1.5)
        got = gl.saxpy(2.0, x, y).get()
    assert (got == np.float32(3.25)).all(), "gpulab read x before PyTorch's side stream wrote it"


@pytest.mark.parametrize("first", ["cupy", "torch"])
@pytest.mark.parametrize("slow", ["cupy", "torch"])
def test_pending_work_on_cupy_and_torch_streams_is_ordered(cp, torch, first, slow):
    """One call's operands from two producers' streams are each waited for, whichever comes
    first and whichever stream is slower: the event that orders a first operand's stream is
    reused only for a second operand from that same stream (PyTorch's default stream is the
    legacy one, a NULL handle, which is a stream like any other here)."""
    n = 1 << 20
    x = cp.full(n, -7.0, dtype=cp.float32)
    y = torch.full((n,), -9.0, dtype=torch.float32, device="cuda")
    cp.cuda.Device().synchronize()
    torch.cuda.synchronize()
    short, long = _spin_cycles() // 4, 2 * _spin_cycles()
    with cp.cuda.Stream(non_blocking=True):
        _cupy_spin(cp, long if slow == "cupy" else short)
        x.fill(1.5)  # on CuPy's side stream
        torch.cuda._sleep(long if slow == "torch" else short)
        y.fill_(0.25)  # on PyTorch's current stream
        got = (gl.saxpy(2.0, x, y) if first == "cupy" else gl.saxpy(0.5, y, x)).get()
    want = 3.25 if first == "cupy" else 1.625
    assert (got == np.float32(want)).all(), f"gpulab read an operand before {slow} wrote it"


def test_torch_tensors_are_read_without_their_python_protocols(torch, monkeypatch):
    """A plain CUDA tensor is read through its C accessors: torch's __cuda_array_interface__ and
    __dlpack__ (Python, tens of us a call) are not called, for views and offsets alike."""
    def refused(*args, **kwargs):
        raise AssertionError("gpulab called a torch protocol")

    monkeypatch.setattr(torch.Tensor, "__cuda_array_interface__", property(refused))
    monkeypatch.setattr(torch.Tensor, "__dlpack__", refused)
    monkeypatch.setattr(torch.Tensor, "__dlpack_device__", refused)
    rng = np.random.default_rng(5)
    a, x, y = saxpy_inputs(1 << 12, np.float32)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    assert_saxpy_close(gl.saxpy(a, tx[7:], ty[7:]).get(), a, x[7:], y[7:])
    d = gl.as_device(tx[3:])
    assert d.ptr == tx.data_ptr() + 12 and d.shape == (x.size - 3,)
    A = rng.standard_normal((67, 45)).astype(np.float32)
    B = rng.standard_normal((67, 33)).astype(np.float32)
    tA, tB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
    got = gl.matmul(tA.t(), tB).get()  # A.T: F-contiguous, strides in elements become bytes
    np.testing.assert_allclose(got, A.T.astype(np.float64) @ B, rtol=1e-5, atol=1e-4)
    h = torch.from_numpy(rng.standard_normal((64, 64)).astype(np.float32)).cuda()
    hb = h.to(torch.bfloat16)
    got = gl.matmul(hb, hb, out_dtype=np.float32).get()
    ref = hb.float().double().cpu().numpy()
    np.testing.assert_allclose(got, ref @ ref, rtol=1e-5, atol=1e-4)


def test_torch_tensors_the_fast_path_leaves_to_the_protocols(torch):
    """What the C accessors do not read goes the protocols' way, with torch's own refusals."""
    t = torch.ones(16, device="cuda", requires_grad=True)
    with pytest.raises((RuntimeError, BufferError), match="gradient"):  # as torch words it
        gl.reduce(t)
    assert float(gl.reduce(t.detach()).item()) == 16.0
    with pytest.raises(TypeError, match="NumPy array or a device array|device array"):
        gl.saxpy(2.0, torch.ones(4), torch.ones(4, device="cuda"))


def test_gpulab_results_are_ordered_for_torch(torch):
    """torch.from_dlpack waits for gpulab's pending work (the DLPack stream handshake)."""
    n = 1 << 22
    x = gl.to_device(np.full(n, 1.5, np.float32))
    y = gl.to_device(np.full(n, 0.25, np.float32))
    gl.synchronize()
    got = x
    for _ in range(50):  # a queue of work on gpulab's stream
        got = gl.saxpy(1.0, got, y)
    t = torch.from_dlpack(got)
    assert float(t[-1]) == 1.5 + 50 * 0.25


# ---------------------------------------------------------------- what a foreign interface says


def test_foreign_interface_with_a_negative_dimension_is_refused():
    """Found by the GPU fuzz: a shape of (-1,) was taken as a huge array, and the kernel's
    illegal address ended CUDA for the process."""
    base = gl.to_device(np.ones(64, np.float32))
    for shape in ((-1,), (4, -2)):
        with pytest.raises(ValueError, match="negative dimension"):
            gl.reduce(CudaView(base, shape))
    assert float(gl.reduce(base).item()) == 64.0  # the context still works


def test_foreign_interface_starting_inside_an_element_is_refused():
    """Found by the GPU fuzz: a view one byte into a float32 array reached the kernel's own
    alignment check, which raised CudaError instead of the ValueError bad input gets."""
    x, y = gl.to_device(np.ones(17, np.float32)), gl.to_device(np.ones(17, np.float32))
    for v in gl.variants("saxpy"):
        if v.backend == "cuda":
            with pytest.raises(ValueError, match="y starts at .* not aligned"):
                gl.saxpy(2.0, x, CudaView(y, (16,), offset=1), variant=v.id)
    with pytest.raises(ValueError, match="x starts at .* not aligned"):
        gl.reduce(CudaView(x, (16,), offset=2))


def test_foreign_interface_with_an_impossible_stream_is_refused():
    base = gl.to_device(np.ones(8, np.float32))
    view = CudaView(base, (8,))
    view.__cuda_array_interface__["stream"] = -5
    with pytest.raises(ValueError, match="stream"):
        gl.reduce(view)
