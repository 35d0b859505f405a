"""Bad arguments are rejected with a TypeError or ValueError that names the argument, before
anything runs (an out= given to a rejected call keeps its NaN poison); so are stream handles that
can never be a CUDA stream.

CPU variants are checked everywhere; CUDA variants (with NumPy and with device operands) where a
GPU is present."""

import re

import numpy as np
import pytest

import gpulab as gl
from conftest import (GPU, CudaView, poisoned, to_device_args, variant_params,
                      variant_where_params)
from gpulab._op import OPS, example_for

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


# ---------------------------------------------------------------- stream=: impossible handles
#
# An int stream is trusted as a cudaStream_t, but one below 0 or from 2**47 up (past the user
# address space) can never be one, and CUDA would dereference it: gl_stream_arg refuses it with
# a ValueError that names stream, before any CUDA call. Every entry checks for a GPU before it
# reads stream=, so without a GPU those entries raise NoDeviceError first, and CPU variants
# refuse any stream; gl._core._stream_handle runs the parser alone, on every machine.

# 2**64 and -2**63 - 1 overflow 64 bits on their way in and -2**63 only just fits: for these
# three an OverflowError that names stream would do as well.
REFUSED_STREAM_INTS = [-1, -5, 2**47, 2**64 - 1, 2**64, -2**63, -2**63 - 1]


def refusal(bad):
    """What a refused int raises; where it overflows 64 bits OverflowError is fine too."""
    return ValueError if -2**63 < bad < 2**64 else (ValueError, OverflowError)


class TorchLikeStream:
    def __init__(self, handle):
        self.cuda_stream = handle


class CupyLikeStream:
    def __init__(self, handle):
        self.ptr = handle


STREAM_FORMS = {"int": lambda h: h, "torch": TorchLikeStream, "cupy": CupyLikeStream}


def refused_streams():
    """(stream, what it raises) for every refused int, as an int and inside PyTorch- and
    CuPy-style stream objects."""
    return [(form(bad), refusal(bad)) for bad in REFUSED_STREAM_INTS
            for form in STREAM_FORMS.values()]


@pytest.mark.parametrize("form", STREAM_FORMS)
@pytest.mark.parametrize("bad", REFUSED_STREAM_INTS, ids=str)
def test_stream_parser_refuses_impossible_handles(bad, form):
    with pytest.raises(refusal(bad)) as e:
        gl._core._stream_handle(STREAM_FORMS[form](bad))
    names(e, "stream")
    if e.type is ValueError:
        assert "trusted" in str(e.value)  # says which ints it takes on trust


@pytest.mark.parametrize("form", STREAM_FORMS)
def test_stream_parser_keeps_possible_handles(form):
    for handle in (0, 1, 2, 0x7F12_3456_7000, 2**47 - 1):
        assert gl._core._stream_handle(STREAM_FORMS[form](handle)) == handle


def test_stream_parser_wrong_types():
    for bad in ("stream", 1.5, object(), np.int64(0), [0], TorchLikeStream("x"),
                CupyLikeStream(1.5)):
        with pytest.raises(TypeError) as e:
            gl._core._stream_handle(bad)
        names(e, "stream")
        assert "trusted" in str(e.value)


STREAM_OPS = [*OPS, "nbody_step", "nbody_energy"]


def stream_op(name):
    """(function, NumPy arguments of a small valid call, the ladder its variant= picks from)."""
    if name in OPS:
        args = OPS[name].__gpulab_op__.example(33, np.random.default_rng(0))
        return OPS[name], args, name
    pos, vel, mass = gl.plummer(33, seed=1)
    if name == "nbody_step":
        return gl.nbody_step, (pos, vel, mass, 1e-3, 0.05), "nbody_accel"
    return gl.nbody_energy, (pos, vel, mass, 0.05), None


@pytest.mark.parametrize("name", STREAM_OPS)
def test_impossible_stream_default_variant(name):
    """gl.norm2(np.ones(33, np.float32), stream=-5) and its like: a ValueError on every
    machine (the CUDA variant refuses the handle; without a GPU, the CPU variant any stream)."""
    fn, args, _ = stream_op(name)
    for stream, error in refused_streams():
        with pytest.raises(error) as e:
            fn(*args, stream=stream)
        names(e, "stream")


def stream_variant_params(backend):
    """(op name, variant) for every variant of the backend of every op that has variants."""
    return [pytest.param(name, v, id=f"{name}-{v.id}-{v.name}")
            for name in STREAM_OPS if stream_op(name)[2]
            for v in gl.variants(stream_op(name)[2]) if v.backend == backend]


@pytest.mark.parametrize("name, v", stream_variant_params("cpu"))
def test_impossible_stream_cpu_variant(name, v):
    fn, args, _ = stream_op(name)
    for stream, _ in refused_streams():
        with pytest.raises(ValueError) as e:
            fn(*args, variant=v.id, stream=stream)
        names(e, "stream")


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["numpy", "device"])
@pytest.mark.parametrize("name, v", stream_variant_params("cuda"))
def test_impossible_stream_cuda_variant(name, v, where):
    fn, args, _ = stream_op(name)
    if name in OPS:  # in a dtype the variant takes (matmul's half-precision rungs)
        args = example_for(OPS[name].__gpulab_op__, v, 33, np.random.default_rng(0))
    args = to_device_args(args) if where == "device" else args
    for stream, error in refused_streams():
        with pytest.raises(error) as e:
            fn(*args, variant=v.id, stream=stream)
        names(e, "stream")
    fn(*args, variant=v.id)  # and the library still works
    gl.synchronize()


def stream_entries():
    """Every entry besides the ops that takes a stream: name -> call(stream)."""
    x = vec()
    return {
        "Event.record": lambda s: gl.Event().record(stream=s),
        "synchronize": lambda s: gl.synchronize(s),  # it takes no keywords (yet)
        "to_device": lambda s: gl.to_device(x, stream=s),
        "empty": lambda s: gl.empty((4,), stream=s),
        "zeros": lambda s: gl.zeros((4,), stream=s),
        "DeviceArray.get": lambda s: gl.to_device(x).get(stream=s),
        "as_device": lambda s: gl.as_device(gl.to_device(x), stream=s),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("entry", list(stream_entries()))
def test_impossible_stream_other_entries(entry):
    call = stream_entries()[entry]
    for stream, error in refused_streams():
        with pytest.raises(error) as e:
            call(stream)
        names(e, "stream")
    call(None)
    gl.synchronize()


@pytest.mark.skipif(GPU, reason="what a machine without a GPU shows")
@pytest.mark.parametrize("entry", list(stream_entries()))
def test_impossible_stream_without_gpu(entry):
    """The GPU check comes first, so nothing reaches CUDA: NoDeviceError."""
    for stream, _ in refused_streams():
        with pytest.raises(gl.NoDeviceError):
            stream_entries()[entry](stream)


@pytest.mark.skipif(GPU, reason="what a machine without a GPU shows")
@pytest.mark.parametrize("name", [n for n in STREAM_OPS if stream_op(n)[2]])
def test_impossible_stream_cuda_variant_without_gpu(name):
    fn, args, ladder = stream_op(name)
    v = next(v for v in gl.variants(ladder) if v.backend == "cuda")
    for stream, _ in refused_streams():
        with pytest.raises(gl.NoDeviceError):
            fn(*args, variant=v.id, stream=stream)


@pytest.mark.gpu
def test_possible_streams_still_work():
    s = gl.Stream()
    x, y = vec(seed=1), vec(seed=2)
    want = gl.saxpy(2.0, x, y)
    dx, dy = gl.to_device(x), gl.to_device(y)
    for stream in (0, 1, 2, s, s.handle, TorchLikeStream(s.handle), CupyLikeStream(s.handle)):
        got = gl.saxpy(2.0, dx, dy, stream=stream)
        gl.synchronize(stream)
        assert got.get().tobytes() == want.tobytes()
    # A handle is trusted, and these stand-ins keep no stream alive: free the arrays last used
    # on s before s goes (frame teardown would destroy s first and free them on a dead stream).
    del got, dx, dy
    s.synchronize()
