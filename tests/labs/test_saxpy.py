"""saxpy against a float64 NumPy reference: every variant of the registry, NumPy and device
operands, every block size a variant allows, user streams, in-place calls, determinism."""

import numpy as np
import pytest

import gpulab as gl
from conftest import DTYPES, SIZES, CudaView, block_params, poisoned, variant_params
from references.saxpy import assert_saxpy_close, saxpy_inputs

DTYPE_IDS = [np.dtype(d).name for d in DTYPES]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_numpy_in_numpy_out(v, n, dtype):
    """NumPy in, NumPy out; a CUDA variant stages through the GPU. Picked by id and by name."""
    assert np.dtype(dtype).name in v.dtypes
    a, x, y = saxpy_inputs(n, dtype)
    x0, y0 = x.copy(), y.copy()
    out = poisoned(n, dtype)
    got = gl.saxpy(a, x, y, variant=v.id, out=out)
    assert got is out
    assert_saxpy_close(out, a, x, y)
    fresh = gl.saxpy(a, x, y, variant=v.name)
    assert fresh is not x and fresh is not y
    assert_saxpy_close(fresh, a, x, y)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_device_in_device_out(v, n, dtype):
    a, x, y = saxpy_inputs(n, dtype)
    dx, dy = gl.to_device(x), gl.to_device(y)
    dout = gl.to_device(poisoned(n, dtype))
    got = gl.saxpy(a, dx, dy, variant=v.id, out=dout)
    assert got is dout
    assert_saxpy_close(dout.get(), a, x, y)
    fresh = gl.saxpy(a, dx, dy, variant=v.name)
    assert isinstance(fresh, gl.DeviceArray)
    assert fresh.shape == (n,) and fresh.dtype == np.dtype(dtype)
    assert_saxpy_close(fresh.get(), a, x, y)
    np.testing.assert_array_equal(dx.get(), x)
    np.testing.assert_array_equal(dy.get(), y)


BLOCK_SIZES = [1, 31, 33, 255, 257, 1025, 1_000_003]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("v, block", block_params("saxpy"))
def test_every_block_size(v, block, dtype):
    for n in BLOCK_SIZES:
        a, x, y = saxpy_inputs(n, dtype, seed=block)
        dout = gl.to_device(poisoned(n, dtype))
        gl.saxpy(a, gl.to_device(x), gl.to_device(y), variant=v.id, block=block, out=dout)
        assert_saxpy_close(dout.get(), a, x, y)
        out = poisoned(n, dtype)
        gl.saxpy(a, x, y, variant=v.id, block=block, out=out)
        assert_saxpy_close(out, a, x, y)


@pytest.mark.gpu
@pytest.mark.parametrize("non_blocking", [True, False])
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_user_stream(v, non_blocking):
    stream = gl.Stream(non_blocking=non_blocking)
    for n in (33, 1_000_003):
        a, x, y = saxpy_inputs(n, np.float32)
        dx, dy = gl.to_device(x, stream=stream), gl.to_device(y, stream=stream)
        dout = gl.to_device(poisoned(n, np.float32), stream=stream)
        got = gl.saxpy(a, dx, dy, variant=v.id, out=dout, stream=stream)
        # the array says which stream its pending work is on, for consumers to wait on
        assert got.__cuda_array_interface__["stream"] == stream.handle
        stream.synchronize()
        assert_saxpy_close(got.get(), a, x, y)
        fresh = gl.saxpy(a, dx, dy, variant=v.id, stream=stream)
        assert_saxpy_close(fresh.get(), a, x, y)
        out = poisoned(n, np.float32)
        gl.saxpy(a, x, y, variant=v.id, out=out, stream=stream)  # NumPy in: waits itself
        assert_saxpy_close(out, a, x, y)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("target", ["x", "y"])
@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_in_place_numpy(v, target, dtype):
    """out=y (and out=x): the classic in-place axpy."""
    for n in (1, 33, 1025, 1_000_003):
        a, x, y = saxpy_inputs(n, dtype)
        x0, y0 = x.copy(), y.copy()
        out = x if target == "x" else y
        assert gl.saxpy(a, x, y, variant=v.id, out=out) is out
        assert_saxpy_close(out, a, x0, y0)


@pytest.mark.gpu
@pytest.mark.parametrize("target", ["x", "y"])
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_in_place_device(v, target):
    for dtype in DTYPES:
        for n in (1, 33, 1025, 1_000_003):
            a, x, y = saxpy_inputs(n, dtype)
            dx, dy = gl.to_device(x), gl.to_device(y)
            out = dx if target == "x" else dy
            assert gl.saxpy(a, dx, dy, variant=v.id, out=out) is out
            assert_saxpy_close(out.get(), a, x, y)


@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_accepts_any_real_scalar(v):
    """a may be a Python int, a Python float, or a NumPy scalar."""
    _, x, y = saxpy_inputs(257, np.float64)
    for a in (3, -2.5, np.float32(1.5), np.float64(0.25), np.int64(-7)):
        assert_saxpy_close(gl.saxpy(a, x, y, variant=v.id), float(a), x, y)


def test_default_variant_numpy():
    """variant=None, NumPy in: the best variant where it runs; the result is right either way."""
    for dtype in DTYPES:
        a, x, y = saxpy_inputs(1025, dtype)
        out = poisoned(1025, dtype)
        assert gl.saxpy(a, x, y, out=out) is out
        assert_saxpy_close(out, a, x, y)


@pytest.mark.gpu
def test_default_variant_device():
    a, x, y = saxpy_inputs(1025, np.float32)
    got = gl.saxpy(a, gl.to_device(x), gl.to_device(y))
    assert isinstance(got, gl.DeviceArray)
    assert_saxpy_close(got.get(), a, x, y)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_offset_views(v, dtype):
    """Operands that start at different element offsets (so not 16-byte aligned, and not
    aligned alike), as views of other libraries' arrays are: still every element right."""
    item = np.dtype(dtype).itemsize
    for n in (1, 5, 33, 1025, 100_003):
        for ox, oy, oo in ((1, 0, 0), (0, 1, 2), (3, 3, 3), (1, 2, 3)):
            a, x, y = saxpy_inputs(n + 4, dtype, seed=ox * 16 + oy * 4 + oo)
            bx, by = gl.to_device(x), gl.to_device(y)
            bo = gl.to_device(poisoned(n + 4, dtype))
            got = gl.saxpy(a, CudaView(bx, (n,), offset=ox * item),
                           CudaView(by, (n,), offset=oy * item), variant=v.id,
                           out=CudaView(bo, (n,), offset=oo * item))
            gl.synchronize()
            full = bo.get()
            assert_saxpy_close(full[oo:oo + n], a, x[ox:ox + n], y[oy:oy + n])
            assert np.isnan(np.delete(full, np.s_[oo:oo + n])).all(), "wrote outside out"
            assert_saxpy_close(got.get(), a, x[ox:ox + n], y[oy:oy + n])


@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_concurrent_calls_from_threads(v):
    """Calls from several Python threads at once (sweeps, notebooks) each get their own right
    answer: the staging buffers and the library stream are shared safely."""
    from concurrent.futures import ThreadPoolExecutor

    def task(i):
        n = (1001, 300_007)[i % 2]  # small calls and staged ones, interleaved
        a, x, y = saxpy_inputs(n, DTYPES[i % 2], seed=i)
        out = poisoned(n, x.dtype)
        for _ in range(5):
            gl.saxpy(a, x, y, variant=v.id, out=out)
        return a, x, y, out

    with ThreadPoolExecutor(max_workers=4) as pool:
        for a, x, y, out in pool.map(task, range(16)):
            assert_saxpy_close(out, a, x, y)


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_more_than_2_to_the_31_elements(v):
    """64-bit indexing: 2^31 + 13 float32 elements (8.6 GB per array), made and checked on the
    device with PyTorch, in chunks against a float64 reference."""
    torch = pytest.importorskip("torch")
    n = (1 << 31) + 13
    if torch.cuda.mem_get_info()[0] < 4 * n * 4:
        pytest.skip("needs about 35 GB of free device memory")
    a = -1.75
    x = torch.arange(n, dtype=torch.float32, device="cuda").remainder_(1021).sub_(510)
    y = torch.arange(n, dtype=torch.float32, device="cuda").remainder_(997).mul_(0.25)
    out = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
    gl.saxpy(a, x, y, variant=v.id, out=out)
    gl.synchronize()
    eps = float(np.finfo(np.float32).eps)
    chunk = 1 << 28
    for start in range(0, n, chunk):
        xs, ys = x[start:start + chunk].double(), y[start:start + chunk].double()
        got = out[start:start + chunk].double()
        bound = 2 * eps * (xs.mul(a).abs() + ys.abs())
        assert not torch.isnan(got).any(), f"unwritten elements in [{start}, {start + chunk})"
        assert bool(((got - (a * xs + ys)).abs() <= bound).all()), f"wrong in [{start}, +{chunk})"
    del x, y, out
    torch.cuda.empty_cache()
