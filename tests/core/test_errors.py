"""Bad arguments are rejected with a TypeError or ValueError that names the argument, before
anything runs (an out= given to a rejected call keeps its NaN poison).

CPU variants are checked everywhere; CUDA variants (with NumPy and with device operands) where a
GPU is present."""

import re

import numpy as np
import pytest

import gpulab as gl
from conftest import CudaView, poisoned, variant_params, variant_where_params

N = 64


def names(excinfo, *args):
    """The error message names each of args as a word."""
    text = str(excinfo.value)
    for arg in args:
        assert re.search(rf"(?<![\w.]){re.escape(arg)}(?!\w)", text), (
            f"{arg!r} not named in: {text}")


def place(where):
    return gl.to_device if where == "device" else (lambda a: a)


def readback(arr):
    return arr.get() if isinstance(arr, gl.DeviceArray) else arr


def vec(dtype=np.float32, n=N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) + 3.0).astype(dtype)


# ---------------------------------------------------------------- saxpy: operands

SAXPY_VW = variant_where_params("saxpy")


@pytest.mark.parametrize("bad", [np.int32, np.float16, np.int64, np.complex64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_saxpy_wrong_dtype(v, where, bad):
    put = place(where)
    with pytest.raises(TypeError) as e:
        gl.saxpy(2.0, put(vec(bad)), put(vec(bad)), variant=v.id)
    names(e, "x")
    for allowed in v.dtypes:  # says what was expected
        assert allowed in str(e.value)
    with pytest.raises(TypeError) as e:
        gl.saxpy(2.0, put(vec()), put(vec(bad)), variant=v.id)
    names(e, "y")


@pytest.mark.parametrize("dtypes", [(np.float32, np.float64), (np.float64, np.float32)],
                         ids=["f32-f64", "f64-f32"])
@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_saxpy_mismatched_dtypes(v, where, dtypes):
    put = place(where)
    out = put(poisoned(N, dtypes[0]))
    with pytest.raises(TypeError) as e:
        gl.saxpy(2.0, put(vec(dtypes[0])), put(vec(dtypes[1])), variant=v.id, out=out)
    names(e, "y")
    assert np.isnan(readback(out)).all(), "a rejected call wrote into out"


@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_saxpy_wrong_ndim(v, where):
    put = place(where)
    for shape in [(N // 8, 8), (2, 4, 8), ()]:
        x = np.full(shape, 1.5, np.float32)
        with pytest.raises(ValueError) as e:
            gl.saxpy(2.0, put(x), put(x.copy()), variant=v.id)
        names(e, "x")
        assert "1-D" in str(e.value)


@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_saxpy_mismatched_shapes(v, where):
    put = place(where)
    out = put(poisoned(N, np.float32))
    with pytest.raises(ValueError) as e:
        gl.saxpy(2.0, put(vec()), put(vec(n=N + 1)), variant=v.id, out=out)
    names(e, "x", "y")
    assert np.isnan(readback(out)).all(), "a rejected call wrote into out"
    with pytest.raises(ValueError):
        gl.saxpy(2.0, put(vec(n=N + 1)), put(vec()), variant=v.id)


@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_saxpy_non_contiguous_numpy(v):
    long = vec(n=2 * N)
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.saxpy(2.0, long[::2], vec(), variant=v.id)
    names(e, "x")
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.saxpy(2.0, vec(), long[::2], variant=v.id)
    names(e, "y")
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.saxpy(2.0, vec()[::-1], vec(), variant=v.id)
    names(e, "x")


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_saxpy_non_contiguous_device(v):
    base = gl.to_device(vec(n=2 * N))
    strided = CudaView(base, (N,), strides=(2 * base.itemsize,))
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.saxpy(2.0, strided, gl.to_device(vec()), variant=v.id)
    names(e, "x")
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.saxpy(2.0, gl.to_device(vec()), strided, variant=v.id)
    names(e, "y")


@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_saxpy_not_an_array(v, where):
    put = place(where)
    for bad in ([1.0] * N, None, 3.0, "x"):
        with pytest.raises(TypeError) as e:
            gl.saxpy(2.0, bad, put(vec()), variant=v.id)
        names(e, "x")
        with pytest.raises(TypeError) as e:
            gl.saxpy(2.0, put(vec()), bad, variant=v.id)
        names(e, "y")


@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_saxpy_a_not_a_real_number(v, where):
    put = place(where)
    for bad in ("2.0", None, [2.0], 1 + 2j, np.complex64(1 + 2j), np.complex128(2), b"2",
                object(), np.array([2.0, 3.0])):
        with pytest.raises(TypeError) as e:
            gl.saxpy(bad, put(vec()), put(vec()), variant=v.id)
        names(e, "a")


# ---------------------------------------------------------------- saxpy: out=


@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_saxpy_bad_out(v, where):
    put = place(where)
    x, y = put(vec()), put(vec())
    with pytest.raises(ValueError) as e:
        gl.saxpy(2.0, x, y, variant=v.id, out=put(poisoned(N + 1, np.float32)))
    names(e, "out")
    with pytest.raises(ValueError) as e:
        gl.saxpy(2.0, x, y, variant=v.id, out=put(poisoned((N // 8, 8), np.float32)))
    names(e, "out")
    with pytest.raises(TypeError) as e:
        gl.saxpy(2.0, x, y, variant=v.id, out=put(poisoned(N, np.float64)))
    names(e, "out")
    with pytest.raises(TypeError) as e:
        gl.saxpy(2.0, x, y, variant=v.id, out=[0.0] * N)
    names(e, "out")


@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_saxpy_read_only_or_strided_out_numpy(v):
    out = poisoned(N, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only") as e:
        gl.saxpy(2.0, vec(), vec(), variant=v.id, out=out)
    names(e, "out")
    assert np.isnan(out).all()
    strided = poisoned(2 * N, np.float32)[::2]
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.saxpy(2.0, vec(), vec(), variant=v.id, out=strided)
    names(e, "out")
    assert np.isnan(strided).all()


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_saxpy_read_only_or_host_out_device(v):
    base = gl.to_device(poisoned(N, np.float32))
    with pytest.raises(ValueError, match="read-only") as e:
        gl.saxpy(2.0, gl.to_device(vec()), gl.to_device(vec()), variant=v.id,
                 out=CudaView(base, (N,), readonly=True))
    names(e, "out")
    assert np.isnan(base.get()).all()
    host_out = poisoned(N, np.float32)
    with pytest.raises(TypeError) as e:  # device operands write device memory only
        gl.saxpy(2.0, gl.to_device(vec()), gl.to_device(vec()), variant=v.id, out=host_out)
    names(e, "out")
    assert np.isnan(host_out).all()


# ---------------------------------------------------------------- variant=, block=, stream=


@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_unknown_variant(v, where):
    put = place(where)
    ids = {w.id for w in gl.variants("saxpy")}
    for bad in (max(ids) + 1, -1, "nope", "", v.name.upper() + "_X"):
        with pytest.raises(ValueError) as e:
            gl.saxpy(2.0, put(vec()), put(vec()), variant=bad)
        names(e, "variant")
        for w in gl.variants("saxpy"):  # lists what exists
            assert w.name in str(e.value)


@pytest.mark.parametrize("v, where", SAXPY_VW)
def test_variant_wrong_type(v, where):
    put = place(where)
    for bad in (float(v.id), True, [v.id], v.name.encode(), {v.id: v.name}):
        with pytest.raises(TypeError) as e:
            gl.saxpy(2.0, put(vec()), put(vec()), variant=bad)
        names(e, "variant")


@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_numpy_integers_pick_variant_and_block(v):
    """Ids and block sizes may be NumPy integers (from np.arange, 2**np.arange, ...)."""
    x, y = vec(), vec()
    if v.backend == "cuda":
        x, y = gl.to_device(x), gl.to_device(y)
    want = readback(gl.saxpy(2.0, x, y, variant=v.id))
    for vid in (np.int64(v.id), np.int32(v.id), np.intp(v.id)):
        assert readback(gl.saxpy(2.0, x, y, variant=vid)).tobytes() == want.tobytes()
    if "block" in v.tunables:
        for b in np.array(v.tunables["block"]["values"]):
            assert readback(gl.saxpy(2.0, x, y, variant=v.id, block=b)).tobytes() == \
                want.tobytes()


def _bad_blocks(values):
    candidates = {0, -32, 1, 16, 48, 96, 100, 2048, 4096, 2 * max(values), min(values) // 2,
                  max(values) + 32}
    return sorted(candidates - set(values))


@pytest.mark.gpu
@pytest.mark.parametrize("v, where",
                         [p for p in SAXPY_VW if "block" in p.values[0].tunables])
def test_block_out_of_range(v, where):
    put = place(where)
    values = v.tunables["block"]["values"]
    out = put(poisoned(N, np.float32))
    for bad in _bad_blocks(values):
        with pytest.raises(ValueError) as e:
            gl.saxpy(2.0, put(vec()), put(vec()), variant=v.id, block=bad, out=out)
        names(e, "block")
        for allowed in values:
            assert str(allowed) in str(e.value)
    assert np.isnan(readback(out)).all(), "a rejected call wrote into out"
    for bad in ("256", 256.0, True):
        with pytest.raises(TypeError) as e:
            gl.saxpy(2.0, put(vec()), put(vec()), variant=v.id, block=bad)
        names(e, "block")


@pytest.mark.parametrize("v", variant_params("saxpy", backend="cpu"))
def test_block_given_to_cpu_variant(v):
    assert "block" not in v.tunables
    blocks = {b for w in gl.variants("saxpy")
              for b in w.tunables.get("block", {}).get("values", [])}
    for block in sorted(blocks) or [256]:
        with pytest.raises(ValueError) as e:
            gl.saxpy(2.0, vec(), vec(), variant=v.id, block=block)
        names(e, "block")


@pytest.mark.parametrize("v", variant_params("saxpy", backend="cpu"))
def test_stream_given_to_cpu_variant(v):
    out = poisoned(N, np.float32)
    with pytest.raises(ValueError) as e:
        gl.saxpy(2.0, vec(), vec(), variant=v.id, stream=0, out=out)
    names(e, "stream")
    assert np.isnan(out).all()


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_stream_wrong_type(v):
    for bad in ("stream", 1.5, object()):
        with pytest.raises(TypeError) as e:
            gl.saxpy(2.0, gl.to_device(vec()), gl.to_device(vec()), variant=v.id, stream=bad)
        names(e, "stream")


# ---------------------------------------------------------------- where the operands live


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("saxpy"))
def test_mixed_numpy_and_device(v):
    host, dev = vec(), gl.to_device(vec())
    for x, y in ((host, dev), (dev, host)):
        with pytest.raises(ValueError, match="mixed") as e:
            gl.saxpy(2.0, x, y, variant=v.id)
        names(e, "x", "y")


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("saxpy", backend="cpu"))
def test_cpu_variant_with_device_operands(v):
    with pytest.raises(TypeError, match="CPU"):
        gl.saxpy(2.0, gl.to_device(vec()), gl.to_device(vec()), variant=v.id)


# ---------------------------------------------------------------- matadd

MATADD_VW = variant_where_params("matadd")


def mat(shape=(8, 12), dtype=np.float32, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) + 3.0).astype(dtype)


@pytest.mark.parametrize("v, where", MATADD_VW)
def test_matadd_wrong_ndim(v, where):
    put = place(where)
    for shape in [(96,), (2, 4, 12), ()]:
        A = np.full(shape, 1.5, np.float32)
        with pytest.raises(ValueError) as e:
            gl.matadd(put(A), put(A.copy()), variant=v.id)
        names(e, "A")
        assert "2-D" in str(e.value)


@pytest.mark.parametrize("v, where", MATADD_VW)
def test_matadd_mismatched(v, where):
    put = place(where)
    out = put(poisoned((8, 12), np.float32))
    with pytest.raises(ValueError) as e:
        gl.matadd(put(mat()), put(mat((12, 8))), variant=v.id, out=out)
    names(e, "A", "B")
    with pytest.raises(TypeError) as e:
        gl.matadd(put(mat()), put(mat(dtype=np.float64)), variant=v.id, out=out)
    names(e, "B")
    with pytest.raises(TypeError) as e:
        gl.matadd(put(mat(dtype=np.int32)), put(mat(dtype=np.int32)), variant=v.id)
    names(e, "A")
    assert np.isnan(readback(out)).all(), "a rejected call wrote into out"


@pytest.mark.parametrize("v", variant_params("matadd"))
def test_matadd_non_contiguous_numpy(v):
    A = mat((8, 24))[:, ::2]
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.matadd(A, mat(), variant=v.id)
    names(e, "A")
    with pytest.raises(ValueError, match="contiguous") as e:  # Fortran order
        gl.matadd(mat(), mat((12, 8)).T, variant=v.id)
    names(e, "B")
    with pytest.raises(ValueError, match="contiguous") as e:
        gl.matadd(mat(), mat(), variant=v.id, out=poisoned((12, 8), np.float32).T)
    names(e, "out")


@pytest.mark.parametrize("v, where", MATADD_VW)
def test_matadd_bad_out(v, where):
    put = place(where)
    with pytest.raises(ValueError) as e:
        gl.matadd(put(mat()), put(mat()), variant=v.id, out=put(poisoned((12, 8), np.float32)))
    names(e, "out")
    with pytest.raises(TypeError) as e:
        gl.matadd(put(mat()), put(mat()), variant=v.id, out=put(poisoned((8, 12), np.float64)))
    names(e, "out")
    with pytest.raises(TypeError) as e:
        gl.matadd([[1.0]], put(mat()), variant=v.id)
    names(e, "A")
