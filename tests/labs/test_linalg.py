"""The linalg lab: every variant of matvec, matmul and transpose against float64 NumPy on awkward
shapes (0, 1, odd, just over a tile, tall and skinny, short and wide), from NumPy and from device
inputs, with every tunable value; S2's -O0..-O3 matvec variants against each other; the errors,
which name their argument; and the name -> id numbering of cuda/linalg/linalg.h."""

import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from gpulab.labs.linalg import matmul_configurations
from conftest import (CudaView, child_env, emulator, fetched, rng_for, variant_params,
                      variant_where_params)
from references import linalg as ref

MATVEC_VW = variant_where_params("matvec")
MATMUL_VW = variant_where_params("matmul")
TRANSPOSE_VW = variant_where_params("transpose")

# (M, N): empty both ways, one, odd, just over a warp, a block (256) and a 16-byte vector,
# tall and skinny, short and wide
MATVEC_SHAPES = [(0, 0), (0, 5), (5, 0), (1, 1), (7, 3), (33, 33), (3, 257), (2, 1025),
                 (1000, 3), (3, 4099), (257, 129)]
# (M, K, N): empty along each dimension, one, odd, a tile (8, 16, 32), just over a tile and
# over the 128-wide block tiles, tall and skinny, short and wide, a long K
MATMUL_SHAPES = [(0, 3, 4), (3, 0, 4), (3, 4, 0), (1, 1, 1), (7, 5, 3), (32, 32, 32),
                 (33, 33, 33), (17, 9, 65), (129, 65, 131), (1000, 3, 2), (2, 3, 1000),
                 (1, 517, 1), (257, 8, 129)]
# (rows, cols): empty, one, odd, a tile of 16, 32 and 64 and one past it, tall, wide
TRANSPOSE_SHAPES = [(0, 0), (0, 7), (7, 0), (1, 1), (1, 9), (9, 1), (31, 33), (32, 32),
                    (33, 65), (64, 64), (65, 64), (64, 68), (1000, 3), (3, 1000), (129, 257)]


def put(where, *arrays):
    return [gl.to_device(a) if where == "device" else a for a in arrays]



def normal(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def bfloat16():
    """NumPy's bfloat16 (ml_dtypes'), or None where ml_dtypes is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def dtypes_of(v):
    """v's dtypes as NumPy dtypes; bfloat16 only where ml_dtypes gives NumPy one."""
    return [np.dtype(d) if d != "bfloat16" else bfloat16() for d in v.dtypes
            if d != "bfloat16" or bfloat16() is not None]


# ---------------------------------------------------------------- matvec


@pytest.mark.parametrize("v, where", MATVEC_VW)
def test_matvec_shapes(v, where):
    for dtype in dtypes_of(v):
        for m, n in MATVEC_SHAPES:
            rng = rng_for("matvec", v.id, m, n)
            A, x = normal(rng, (m, n), dtype), normal(rng, n, dtype)
            got = fetched(where, gl.matvec(*put(where, A, x), variant=v.id))
            ref.check_matvec(got, A, x)


@pytest.mark.parametrize("v", [p for p in variant_params("matvec", backend="cuda")
                               if "block" in p.values[0].tunables])
def test_matvec_every_block(v):
    for block in v.tunables["block"]["values"]:
        for m, n in [(33, 1025), (1, 5), (300, 4)]:
            rng = rng_for("matvec-block", v.id, block, m, n)
            A, x = normal(rng, (m, n), np.float32), normal(rng, n, np.float32)
            ref.check_matvec(gl.matvec(A, x, variant=v.id, block=block), A, x)


def test_matvec_optimization_levels_agree():
    """S2's loop at -O0, -O1, -O2 and -O3 (and the contiguous and row-pointer variants, the same
    loop at -O3): one order of summation, no reassociation, no contraction on the baseline
    x86-64 or the build's flags -- the same sums, bit for bit."""
    names = ("row_pointers", "contiguous", "O0", "O1", "O2", "O3")
    for dtype in (np.float32, np.float64):
        rng = rng_for("levels", np.dtype(dtype).name)
        A, x = normal(rng, (67, 1031), dtype), normal(rng, 1031, dtype)
        runs = {name: gl.matvec(A, x, variant=name) for name in names}
        for name in names:
            ref.check_matvec(runs[name], A, x)
            assert runs[name].tobytes() == runs["O0"].tobytes(), name


def test_matvec_unrolled_remainders():
    """Every remainder of the unrolled loops (N mod 4 = 0..3, and N below the unroll), against
    the bound: S2's version left the remainder's index uninitialized."""
    for name in ("unroll2", "unroll4"):
        for n in range(0, 12):
            rng = rng_for("unroll", name, n)
            A, x = normal(rng, (5, n), np.float64), normal(rng, n, np.float64)
            ref.check_matvec(gl.matvec(A, x, variant=name), A, x)


# ---------------------------------------------------------------- matmul


def tunable_grid(v):
    """Every combination of v's tunable values that matmul accepts: each is its own compiled
    instantiation (the SGEMM rungs' bm x bn x bk, multistage's warps x bk x stages x bm)."""
    return matmul_configurations(v)


def tunable_grid_params(op):
    """(variant, tunables) for every combination of every tunable CUDA variant of op."""
    return [pytest.param(p.values[0], kw, marks=p.marks,
                         id=f"{p.id}-" + "-".join(f"{k}{x}" for k, x in kw.items()))
            for p in variant_params(op, backend="cuda") if p.values[0].tunables
            for kw in tunable_grid(p.values[0])]


@pytest.mark.parametrize("v, where", MATMUL_VW)
def test_matmul_shapes(v, where):
    for dtype in dtypes_of(v):
        for m, k, n in MATMUL_SHAPES:
            rng = rng_for("matmul", v.id, m, k, n)
            A, B = normal(rng, (m, k), dtype), normal(rng, (k, n), dtype)
            got = fetched(where, gl.matmul(*put(where, A, B), variant=v.id))
            ref.check_matmul(got, A, B, variant=v)


# (M, K, N) for every tunable combination: a partial tile both ways, one slice and a slice plus one
# (k = 8, 9, 16, 17: fewer slices than multistage's stages), a k that wraps the stages many times
# (1000 / 8 = 125 slices), n not a multiple of 4 (the scalar paths of B and C), whole 128 x 128
# tiles, and a single row and column; for multistage's 256-row tiles, one row past a tile and a
# tile half full (128 rows, which a 128-row tile's whole-tile test would take for full)
MATMUL_GRID_SHAPES = [(33, 17, 65), (129, 8, 257), (1, 300, 2), (130, 9, 131), (256, 16, 256),
                      (127, 1000, 129), (200, 33, 388), (5, 1, 7), (257, 24, 130), (384, 8, 132)]


@pytest.mark.parametrize("v, kw", tunable_grid_params("matmul"))
def test_matmul_every_tunable(v, kw):
    dtype = dtypes_of(v)[0]  # float32, or the tensor-core rungs' float16
    for m, k, n in MATMUL_GRID_SHAPES:
        rng = rng_for("matmul-tunable", v.id, repr(kw), m, k, n)
        A, B = normal(rng, (m, k), dtype), normal(rng, (k, n), dtype)
        ref.check_matmul(gl.matmul(A, B, variant=v.id, **kw), A, B, variant=v)


@pytest.mark.gpu
@pytest.mark.parametrize("v, kw", [p for p in tunable_grid_params("matmul")
                                   if "stages" in p.values[0].tunables
                                   and "float32" in p.values[0].dtypes])
def test_multistage_off_the_16_byte_grain(v, kw):
    """A and B one element past a 16-byte boundary with n % 4 == 0: B's 16-byte copies fall back
    to 4-byte ones (A always takes 4-byte copies, to transpose them)."""
    m, k, n = 131, 40, 132
    rng = rng_for("multistage-view", v.id, repr(kw))
    A, B = normal(rng, m * k + 1, np.float32), normal(rng, k * n + 1, np.float32)
    got = gl.matmul(CudaView(gl.to_device(A), (m, k), offset=4),
                    CudaView(gl.to_device(B), (k, n), offset=4), variant=v.id, **kw).get()
    ref.check_matmul(got, A[1:].reshape(m, k), B[1:].reshape(k, n), variant=v)


@pytest.mark.gpu
@pytest.mark.parametrize("v, kw", [p for p in tunable_grid_params("matmul")
                                   if p.values[1].get("bm") == 256])
def test_multistage_256_row_tiles(v, kw):
    """The 256 x 128 tiles (8 warps of 16 x 8 results, one block an SM) on the ladder's awkward
    shapes (0, 1, odd, just over a tile) and on whole tiles: two 256-row tiles exactly, a k that
    wraps the stages many times, and three row tiles with the last one a row deep."""
    shapes = MATMUL_SHAPES + [(512, 16, 256), (512, 1000, 384), (513, 40, 129)]
    for m, k, n in shapes:
        rng = rng_for("multistage-256", repr(kw), m, k, n)
        A, B = normal(rng, (m, k), np.float32), normal(rng, (k, n), np.float32)
        ref.check_matmul(gl.matmul(A, B, variant=v.id, **kw), A, B, variant=v)


def test_multistage_configurations_are_the_compiled_ones():
    """matmul_configurations (what the tests, the benchmark grid, the sanitizers and the emulator
    run) is the table's product less the one pair that does not compile: 256-row tiles at 4
    warps, which matmul refuses by name before anything runs."""
    v = next(v for v in gl.variants("matmul") if v.name == "multistage")
    configs = matmul_configurations(v)
    assert len(configs) == 2 * 2 * 3 + 2 * 3
    assert {(kw["bm"], kw["warps"]) for kw in configs} == {(128, 4), (128, 8), (256, 8)}
    assert all(v.tunables[name]["default"] == x for name, x in
               {"warps": 4, "bk": 8, "stages": 2, "bm": 128}.items())
    A = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="bm=256 with warps=8 only, not warps=4"):
        gl.matmul(A, A.T.copy(), variant="multistage", bm=256, warps=4)
    with pytest.raises(ValueError, match="bm=64 is out of range"):
        gl.matmul(A, A.T.copy(), variant="multistage", bm=64)


EMULATOR, needs_toolchain = emulator("multistage.py")


@needs_toolchain
def test_multistage_kernel_emulated_on_the_cpu():
    """The multistage kernel's own source, every configuration it compiles (128- and 256-row
    tiles), run on the CPU by tools/emulate/multistage.py (threads as std::threads, cp.async
    copies landing at issue or only at their wait, shared memory poisoned with NaN): its
    indexing, guards and pipeline order against float64 on awkward shapes, without a GPU."""
    done = subprocess.run([sys.executable, EMULATOR], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "ALL OK" in done.stdout, done.stdout[-2000:] + done.stderr
    v = next(v for v in gl.variants("matmul") if v.name == "multistage")
    for kw in matmul_configurations(v):
        assert f"<{kw['bm']},{kw['warps']},{kw['bk']},{kw['stages']}> 384x8x132" in done.stdout


def test_the_bound_is_tight_enough_to_catch_a_dropped_term():
    """The matmul bound is about K eps |A||B|: one term of K left out is far outside it."""
    rng = rng_for("dropped")
    A, B = normal(rng, (40, 300), np.float32), normal(rng, (300, 30), np.float32)
    C = (A[:, 1:].astype(np.float64) @ B[1:].astype(np.float64)).astype(np.float32)
    with pytest.raises(AssertionError):
        ref.check_matmul(C, A, B)


def test_matmul_blocked_does_not_over_accumulate():
    """S0's blocked version added into C at every pass without clearing it; here C starts
    poisoned (NaN) in NumPy's allocator and a second call on the same sizes gives the same
    bits."""
    rng = rng_for("blocked")
    A, B = normal(rng, (130, 200), np.float32), normal(rng, (200, 70), np.float32)
    for name in ("blocked", "blocked_openmp", "ikj"):
        first = gl.matmul(A, B, variant=name)
        ref.check_matmul(first, A, B)
        assert gl.matmul(A, B, variant=name).tobytes() == first.tobytes()


def test_fp32_variants_are_not_tf32():
    """Inputs whose products TF32 would round: 1 + 2^-20 has bits below TF32's mantissa. An FP32
    variant gives (1 + 2^-20)^2 rounded to FP32; TF32 would give exactly 1."""
    a = np.float32(1 + 2.0 ** -20)
    A = np.full((4, 1), a, np.float32)
    B = np.full((1, 4), a, np.float32)
    for v in gl.variants("matmul"):
        if v.backend == "cpu" or gl.cuda_available():
            if "tf32" in v.name or "float32" not in v.dtypes:
                continue
            got = gl.matmul(A, B, variant=v.id)
            assert (got == np.float32(np.float64(a) * np.float64(a))).all(), v.name


# ---------------------------------------------------------------- float16 and bfloat16

# Every matmul variant that takes float16 (the tensor-core rungs and the CPU's blocked_openmp),
# with the dtypes it can be given here (bfloat16 needs ml_dtypes' NumPy dtype).
HALF_VW = [p for p in MATMUL_VW if "float16" in p.values[0].dtypes]
HALF_DTYPES = [np.dtype(np.float16)] + ([bfloat16()] if bfloat16() is not None else [])
# (M, K, N): empty, one, the 16 x 16 x 16 fragment and one either side, the 64- and 128-wide
# block tiles one either side, the bk = 16/32 slices one either side, odd everywhere
HALF_SHAPES = [(0, 16, 16), (16, 0, 16), (16, 16, 0), (1, 1, 1), (15, 15, 15), (16, 16, 16),
               (17, 17, 17), (127, 31, 129), (129, 33, 127), (63, 16, 65), (65, 32, 63),
               (33, 47, 65), (128, 64, 128), (2, 300, 3)]


def half_inputs(rng, m, k, n, dtype):
    return normal(rng, (m, k), dtype), normal(rng, (k, n), dtype)


@pytest.mark.parametrize("v, where", HALF_VW)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: d.name)
def test_half_matmul_shapes(v, where, dtype):
    if dtype.name not in v.dtypes:
        pytest.skip(f"{v.name} takes {v.dtypes}")
    for m, k, n in HALF_SHAPES:
        A, B = half_inputs(rng_for("half", v.id, dtype.name, m, k, n), m, k, n, dtype)
        got = fetched(where, gl.matmul(*put(where, A, B), variant=v.id))
        assert got.dtype == dtype  # the operands' dtype unless out_dtype says otherwise
        ref.check_matmul(got, A, B, variant=v)
        got = fetched(where, gl.matmul(*put(where, A, B), variant=v.id, out_dtype=np.float32))
        assert got.dtype == np.float32
        ref.check_matmul(got, A, B, variant=v)


def adversarial(name, dtype, rng):
    """(A, B) that random data does not give: a large dynamic range (rows of A and columns of B
    scaled by powers of two across the dtype's range, C still finite), all elements equal, and
    float16 subnormals in A."""
    m, k, n = 37, 70, 45
    if name == "range":
        top = 4 if dtype.name == "float16" else 60
        rows = 2.0 ** rng.integers(-top - 8, top, (m, 1))
        cols = 2.0 ** rng.integers(-top - 8, top, (1, n))
        return ((rng.standard_normal((m, k)) * rows).astype(dtype),
                (rng.standard_normal((k, n)) * cols).astype(dtype))
    if name == "equal":
        return np.full((m, k), 1.5, dtype), np.full((k, n), -0.3, dtype)
    # float16 subnormals (below 2^-14) times values near 1: products are normal in FP32, sums
    # land in float16's subnormal range or just above it
    A = (rng.standard_normal((m, k)) * 2.0 ** -20).astype(dtype)
    assert (np.abs(A.astype(np.float64)) < 2.0 ** -14).any()
    return A, normal(rng, (k, n), dtype)


@pytest.mark.parametrize("v, where", HALF_VW)
@pytest.mark.parametrize("name", ["range", "equal", "subnormal"])
def test_half_matmul_adversarial(v, where, name):
    for dtype in HALF_DTYPES:
        if dtype.name not in v.dtypes or (name == "subnormal" and dtype.name != "float16"):
            continue
        A, B = adversarial(name, dtype, rng_for("half-adversarial", v.id, name, dtype.name))
        for out in (None, np.float32):
            got = fetched(where, gl.matmul(*put(where, A, B), variant=v.id, out_dtype=out))
            ref.check_matmul(got, A, B, variant=v)


def test_half_bound_catches_a_dropped_term():
    """The half bound is tight enough to see one of K products left out, and FP32 rounding of
    the sums (out_dtype float32) is inside it."""
    rng = rng_for("half-dropped")
    A, B = half_inputs(rng, 40, 300, 30, np.float16)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    ref.check_matmul(exact.astype(np.float32), A, B)
    ref.check_matmul(exact.astype(np.float16), A, B)
    dropped = A[:, 1:].astype(np.float64) @ B[1:].astype(np.float64)
    for out in (np.float16, np.float32):
        with pytest.raises(AssertionError):
            ref.check_matmul(dropped.astype(out), A, B)


def test_half_default_variant():
    """variant=None on float16: the CPU's blocked_openmp without a GPU, else the tensor-core rung
    flagged best_for_dtypes; float32 keeps its own default."""
    rng = rng_for("half-default")
    A, B = half_inputs(rng, 33, 47, 65, np.float16)
    got = gl.matmul(A, B)
    assert got.dtype == np.float16
    ref.check_matmul(got, A, B)
    backend = "cuda" if gl.cuda_available() else "cpu"
    picked = gl.registry.best("matmul", backend, np.float16)
    assert "float16" in picked.dtypes
    assert picked.best if backend == "cpu" else picked.best_for_dtypes
    assert gl.registry.best("matmul", backend, np.float32).best
    assert got.tobytes() == gl.matmul(A, B, variant=picked.id).tobytes()
    r = gl.bench(gl.matmul, A, B, repeat=1, warmup=0)
    assert (r.variant, r.backend) == (picked.id, backend)


def test_half_matmul_errors():
    A16 = np.ones((4, 3), np.float16)
    with pytest.raises(TypeError, match="B must have A's dtype float16, got float32"):
        gl.matmul(A16, np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match="B must have A's dtype float32, got float16"):
        gl.matmul(np.ones((4, 3), np.float32), np.ones((3, 2), np.float16))
    with pytest.raises(ValueError, match="out_dtype: float32 products are float32"):
        gl.matmul(np.ones((4, 3), np.float32), np.ones((3, 2), np.float32), out_dtype=np.float16)
    with pytest.raises(ValueError, match="out_dtype: float64"):
        gl.matmul(np.ones((4, 3)), np.ones((3, 2)), variant="ijk", out_dtype=np.float32)
    with pytest.raises(ValueError, match="out_dtype: float16 products are float16"):
        gl.matmul(A16, np.ones((3, 2), np.float16), out_dtype=np.float64)
    with pytest.raises(TypeError, match="out_dtype"):
        gl.matmul(A16, np.ones((3, 2), np.float16), out_dtype=np.int8)
    # out_dtype of the inputs' own dtype is the default, spelled out
    got = gl.matmul(np.ones((4, 3), np.float32), np.ones((3, 2), np.float32), out_dtype="float32")
    assert got.dtype == np.float32 and (got == 3).all()
    # the CPU ladder's other rungs and the SGEMM rungs refuse half types, naming what they take
    with pytest.raises(TypeError, match="A has dtype float16; expected one of: float32, float64"):
        gl.matmul(A16, np.ones((3, 2), np.float16), variant="ijk")
    # and the tensor-core rungs refuse float32 (without a GPU, NoDeviceError comes first)
    if gl.cuda_available():
        with pytest.raises(TypeError, match="A has dtype float32; expected one of: float16"):
            gl.matmul(np.ones((4, 3), np.float32), np.ones((3, 2), np.float32), variant="wmma")
    # every other op leaves half types out
    with pytest.raises(TypeError, match="float16"):
        gl.matvec(A16, np.ones(3, np.float16))
    with pytest.raises(TypeError, match="float16"):
        gl.transpose(A16)


def test_half_tunables_are_refused_by_name():
    A, B = np.ones((4, 3), np.float16), np.ones((3, 2), np.float16)
    with pytest.raises(ValueError, match="bm=32 is out of range for variant 13"):
        gl.matmul(A, B, variant="wmma", bm=32)
    with pytest.raises(ValueError, match="stages"):
        gl.matmul(A, B, variant="wmma", stages=3)
    with pytest.raises(ValueError, match="stages=5 is out of range for variant 14"):
        gl.matmul(A, B, variant="wmma_multistage", stages=5)
    with pytest.raises(ValueError, match="bk"):
        gl.matmul(A, B, variant="cublaslt", bk=16)


@pytest.mark.skipif(bfloat16() is None, reason="NumPy's bfloat16 needs ml_dtypes")
def test_bfloat16_on_the_cpu():
    bf16 = bfloat16()
    A, B = half_inputs(rng_for("bf16-cpu"), 65, 129, 33, bf16)
    got = gl.matmul(A, B, variant="blocked_openmp")
    assert got.dtype == bf16
    ref.check_matmul(got, A, B)
    ref.check_matmul(gl.matmul(A, B, out_dtype=np.float32), A, B)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: d.name)
def test_half_device_arrays_round_trip(dtype):
    """DeviceArrays of float16 and bfloat16: upload, download, repr; float16's CUDA Array
    Interface typestr is '<f2'; bfloat16 has none (AttributeError) and goes by DLPack."""
    A = normal(rng_for("half-roundtrip", dtype.name), (5, 7), dtype)
    d = gl.to_device(A)
    assert d.dtype == dtype and d.get().tobytes() == A.tobytes()
    assert dtype.name in repr(d)
    if dtype.name == "float16":
        assert d.__cuda_array_interface__["typestr"] == "<f2"
    else:
        assert not hasattr(d, "__cuda_array_interface__")
    assert gl.from_dlpack(d).get().tobytes() == A.tobytes()
    assert gl.empty((2, 3), dtype=dtype).dtype == dtype


@pytest.mark.gpu
@pytest.mark.parametrize("v", [p for p in variant_params("matmul", backend="cuda")
                               if "float16" in p.values[0].dtypes])
def test_half_matmul_off_the_16_byte_grain(v):
    """Operands and C one element past a 16-byte boundary: the 16-byte copies and stores fall
    back to element-wise ones (cuBLASLt to an algorithm for 2-byte alignment)."""
    m, k, n = 67, 40, 72  # k and n multiples of 8, so only the offset stops the vector paths
    rng = rng_for("half-view", v.id)
    A, B = normal(rng, m * k + 1, np.float16), normal(rng, k * n + 1, np.float16)
    got = gl.matmul(CudaView(gl.to_device(A), (m, k), offset=2),
                    CudaView(gl.to_device(B), (k, n), offset=2), variant=v.id).get()
    ref.check_matmul(got, A[1:].reshape(m, k), B[1:].reshape(k, n), variant=v)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_matmul_takes_torch_tensors(dtype):
    """PyTorch's float16 (CUDA Array Interface or DLPack) and bfloat16 (DLPack only)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    if dtype == "bfloat16" and bfloat16() is None:
        pytest.skip("NumPy's bfloat16 (the DeviceArray's dtype) needs ml_dtypes")
    tdtype = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn((65, 47), device="cuda", dtype=tdtype, generator=g)
    B = torch.randn((47, 33), device="cuda", dtype=tdtype, generator=g)
    got = gl.matmul(A, B)
    assert isinstance(got, gl.DeviceArray) and got.dtype.name == dtype
    back = torch.from_dlpack(got)
    assert back.dtype == tdtype
    a64, b64 = A.double().cpu().numpy(), B.double().cpu().numpy()
    host = np.dtype(np.float16) if dtype == "float16" else bfloat16()
    ref.check_matmul(got.get(), a64.astype(host), b64.astype(host))


@pytest.mark.gpu
def test_half_matmul_takes_cupy_arrays():
    cp = pytest.importorskip("cupy")
    rng = rng_for("half-cupy")
    A, B = half_inputs(rng, 33, 65, 47, np.float16)
    got = gl.matmul(cp.asarray(A), cp.asarray(B), out_dtype=np.float32)
    assert isinstance(got, gl.DeviceArray) and got.dtype == np.float32
    ref.check_matmul(got.get(), A, B)


HALF_CUBLASLT_MISSING = """
import numpy as np, gpulab as gl
A, B = np.ones((5, 3), np.float16), np.ones((3, 4), np.float16)
try:
    gl.matmul(A, B, variant="cublaslt")
except gl.CudaError as e:
    assert e.code == 301 and "GPULAB_CUBLASLT's library not found" in str(e), e
    assert not e.sticky
    print("refused")
assert (gl.matmul(A, B, variant="wmma") == 3).all()
print("others run")
"""


@pytest.mark.gpu
def test_a_missing_cublaslt_fails_only_its_variant():
    done = subprocess.run([sys.executable, "-c", HALF_CUBLASLT_MISSING],
                          env=child_env(GPULAB_CUBLASLT="/nonexistent/libcublasLt.so.13"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "refused" in done.stdout and "others run" in done.stdout


# ---------------------------------------------------------------- transpose


@pytest.mark.parametrize("v, where", TRANSPOSE_VW)
def test_transpose_shapes(v, where):
    for dtype in dtypes_of(v):
        for rows, cols in TRANSPOSE_SHAPES:
            A = np.arange(rows * cols).reshape(rows, cols).astype(dtype)
            ref.check_transpose(fetched(where, gl.transpose(*put(where, A), variant=v.id)), A)


@pytest.mark.parametrize("v", [p for p in variant_params("transpose", backend="cuda")
                               if "tile" in p.values[0].tunables])
def test_transpose_every_tile(v):
    for tile in v.tunables["tile"]["values"]:
        for rows, cols in [(31, 33), (65, 17), (100, 100)]:
            A = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
            ref.check_transpose(gl.transpose(A, variant=v.id, tile=tile), A)


def test_transpose_moves_bits():
    """NaN payloads and -0.0 come through unchanged: the check compares bits."""
    A = np.array([[np.nan, -0.0, 1.0], [np.inf, -np.inf, 2.0]], np.float32)
    A.view(np.uint32)[0, 0] = 0x7FC00123
    got = gl.transpose(A, variant="blocked")
    ref.check_transpose(got, A)
    assert got.view(np.uint32)[0, 0] == 0x7FC00123
    broken = got.copy()
    broken[1, 0] = 0.0  # was -0.0: equal as values, not as bits
    with pytest.raises(AssertionError):
        ref.check_transpose(broken, A)


# ---------------------------------------------------------------- on the GPU only


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("matvec", backend="cuda") +
                         variant_params("transpose", backend="cuda"))
def test_views_off_the_16_byte_grain(v):
    """Operands one element past a 16-byte boundary: the vectorized paths fall back to scalar."""
    rng = rng_for("view", v.op, v.id)
    if v.op == "matvec":
        m, n = 37, 64
        A = normal(rng, m * n + 1, np.float32)
        x = normal(rng, n + 1, np.float32)
        dA, dx = gl.to_device(A), gl.to_device(x)
        got = gl.matvec(CudaView(dA, (m, n), offset=4), CudaView(dx, (n,), offset=4),
                        variant=v.id).get()
        ref.check_matvec(got, A[1:].reshape(m, n), x[1:])
    else:
        rows, cols = 128, 64
        A = np.arange(rows * cols + 1, dtype=np.float32)
        got = gl.transpose(CudaView(gl.to_device(A), (rows, cols), offset=4), variant=v.id).get()
        ref.check_transpose(got, A[1:].reshape(rows, cols))


@pytest.mark.gpu
def test_misaligned_elements_are_refused():
    A = gl.to_device(np.zeros(65, np.float32))
    with pytest.raises(ValueError, match="A starts at .*not aligned to its 4-byte elements"):
        gl.transpose(CudaView(A, (8, 8), offset=2), variant="wide")


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("matmul", backend="cuda"))
def test_matmul_on_a_user_stream(v):
    rng = rng_for("stream", v.id)
    dtype = dtypes_of(v)[0]
    A, B = normal(rng, (65, 33), dtype), normal(rng, (33, 17), dtype)
    s = gl.Stream()
    got = gl.matmul(gl.to_device(A), gl.to_device(B), variant=v.id, stream=s)
    s.synchronize()
    ref.check_matmul(got.get(), A, B, variant=v)


@pytest.mark.gpu
def test_mixed_placement_is_refused():
    A = np.ones((3, 3), np.float32)
    with pytest.raises(ValueError, match="B"):
        gl.matmul(gl.to_device(A), A)
    with pytest.raises(TypeError, match="CPU"):
        gl.matvec(gl.to_device(A), gl.to_device(A[0]), variant="contiguous")


CUBLAS_MISSING = """
import numpy as np, gpulab as gl
A = np.ones((5, 3), np.float32)
B = np.ones((3, 4), np.float32)
for op, args in (("matmul", (A, B)), ("matvec", (A, B[:, 0].copy()))):
    for v in gl.variants(op):
        if v.library and v.library.startswith("cuBLAS ") and "float32" in v.dtypes:
            try:
                getattr(gl, op)(*args, variant=v.id)
            except gl.CudaError as e:
                assert e.code == 301 and "GPULAB_CUBLAS's library not found" in str(e), e
                assert not e.sticky
                print("refused", op, v.name)
            else:
                raise AssertionError(f"{op} {v.name} ran without cuBLAS")
# every other rung still runs
assert np.array_equal(gl.matmul(A, B, variant="shared_tiles"), np.full((5, 4), 3, np.float32))
print("others run")
"""


@pytest.mark.gpu
def test_a_missing_cublas_fails_only_its_variants():
    """libcublas is opened on first use: where it is missing (here GPULAB_CUBLAS names a file
    that does not exist), the cuBLAS variants raise CudaError (cudaErrorFileNotFound, not
    sticky) naming the library, and every other variant runs."""
    done = subprocess.run([sys.executable, "-c", CUBLAS_MISSING],
                          env=child_env(GPULAB_CUBLAS="/nonexistent/libcublas.so.13"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("refused") == 3 and "others run" in done.stdout


# ---------------------------------------------------------------- errors


def test_bad_arguments_name_themselves():
    A = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="x must have A's 3 columns"):
        gl.matvec(A, np.ones(4, np.float32), variant="contiguous")
    with pytest.raises(ValueError, match="B must have as many rows as A has columns"):
        gl.matmul(A, A, variant="ijk")
    with pytest.raises(TypeError, match="B must have A's dtype float32"):
        gl.matmul(A, A.T.astype(np.float64).copy(), variant="ijk")
    with pytest.raises(TypeError, match="x must have A's dtype"):
        gl.matvec(A, np.ones(3, np.float64), variant="contiguous")
    with pytest.raises(TypeError, match="A"):
        gl.matvec(A.astype(np.int32), np.ones(3, np.int32), variant="contiguous")
    with pytest.raises(TypeError, match="A"):
        gl.transpose(A.astype(np.uint8), variant="blocked")
    with pytest.raises(ValueError, match="A must be C-contiguous"):
        gl.transpose(np.ones((4, 6), np.float32)[:, ::2], variant="blocked")
    with pytest.raises(ValueError, match="A"):
        gl.matmul(np.ones(3, np.float32), A, variant="ijk")  # 1-D A
    with pytest.raises(ValueError, match="x"):
        gl.matvec(A, np.ones((3, 1), np.float32), variant="contiguous")  # 2-D x
    with pytest.raises(TypeError, match="A"):
        gl.matvec([[1.0]], np.ones(1), variant="contiguous")
    with pytest.raises(ValueError, match="tile"):
        gl.matmul(A, A.T.copy(), variant="ijk", tile=16)
    with pytest.raises(ValueError, match="tn"):
        gl.matmul(A, A.T.copy(), variant="ijk", tn=4)
    with pytest.raises(ValueError, match="stages"):
        gl.matmul(A, A.T.copy(), variant="ijk", stages=3)
    with pytest.raises(ValueError, match="tile"):
        gl.transpose(A, variant="blocked", tile=32)
    with pytest.raises(ValueError, match="block"):
        gl.matvec(A, np.ones(3, np.float32), variant="contiguous", block=64)
    with pytest.raises(ValueError, match="stream"):
        gl.matvec(A, np.ones(3, np.float32), variant="contiguous",
                  stream=gl.Stream() if gl.cuda_available() else 0)
    with pytest.raises(ValueError, match="variant"):
        gl.matmul(A, A.T.copy(), variant="no_such_variant")


@pytest.mark.gpu
def test_bad_tunable_values_are_refused_before_launch():
    A = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="tile=12 is out of range"):
        gl.matmul(A, A.T.copy(), variant="shared_tiles", tile=12)
    with pytest.raises(ValueError, match="bk=32 is out of range"):
        gl.matmul(A, A.T.copy(), variant="register_2d", bk=32)
    with pytest.raises(ValueError, match="stages=5 is out of range"):
        gl.matmul(A, A.T.copy(), variant="multistage", stages=5)
    with pytest.raises(ValueError, match="warps=2 is out of range"):
        gl.matmul(A, A.T.copy(), variant="multistage", warps=2)
    with pytest.raises(ValueError, match="stages"):
        gl.matmul(A, A.T.copy(), variant="double_buffered", stages=3)
    with pytest.raises(ValueError, match="block=48 is out of range"):
        gl.matvec(A, np.ones(3, np.float32), variant="warp_per_row", block=48)
    with pytest.raises(TypeError, match="A"):
        gl.matmul(A.astype(np.float64), A.T.astype(np.float64).copy(), variant="naive")


def test_ladder_order_and_ids():
    """cuda/linalg/linalg.h's numbering, which the notebook, the benchmarks and
    docs/labs/linalg.md cite."""
    def ids(op):
        return [(v.id, v.name) for v in gl.variants(op)]

    assert ids("matvec") == [
        (0, "thread_per_row"), (1, "warp_per_row"), (2, "block_per_row"), (3, "vectorized"),
        (4, "cublas"), (100, "row_pointers"), (101, "contiguous"), (102, "O0"), (103, "O1"),
        (104, "O2"), (105, "O3"), (106, "unroll2"), (107, "unroll4"), (108, "openmp_simd")]
    assert ids("matmul") == [
        (0, "naive"), (1, "coalesced"), (2, "shared_tiles"), (3, "padded_tiles"),
        (4, "register_1d"), (5, "register_2d"), (6, "vectorized"), (7, "warp_tiling"),
        (8, "double_buffered"), (12, "multistage"), (9, "cublas"), (10, "tf32_wmma"),
        (19, "tf32"), (21, "tf32_cluster"), (11, "cublas_tf32"), (13, "wmma"),
        (14, "wmma_multistage"), (15, "mma_sync"), (16, "cublaslt"), (17, "wgmma"),
        (18, "wgmma_ws"), (20, "wgmma_cluster"),
        (100, "ijk"), (101, "ikj"), (102, "blocked"), (103, "blocked_openmp")]
    # ids from 1: the copy a transpose is measured against is gl.ceilings()' D2D copy
    assert ids("transpose") == [(1, "naive"), (2, "shared"), (3, "padded"), (4, "wide"),
                                (100, "blocked")]
    # TF32 only where a name says so, and never the default
    for v in gl.variants("matmul"):
        assert not (v.best and "tf32" in v.name)


def noted_launches(call):
    """(call()'s result, the kernel launches it made, as gl.inspect notes them)."""
    gl.synchronize()
    gl._core._launch_notes_begin()
    try:
        out = call()
        gl.synchronize()
    finally:
        _, notes = gl._core._launch_notes_end()
    return out, notes


@pytest.mark.gpu
@pytest.mark.parametrize("name, threads", [("wgmma", 256), ("wgmma_ws", 384),
                                           ("wgmma_cluster", 384)])
def test_wgmma_rungs_run_their_own_kernel_where_the_tma_can(name, threads):
    """Where k and n are multiples of 8 a Hopper rung launches its own kernel (two warpgroups, or
    three with the producer); elsewhere mma_sync's (4 warps), and the product is right either
    way. Their table names both kernels as some calls' only, so test_inspect cannot tell."""
    if tuple(gl.device_info()["compute_capability"]) != (9, 0):
        pytest.skip("wgmma and the TMA need compute capability 9.0")
    v = next(v for v in gl.variants("matmul") if v.name == name)
    for (m, k, n), want in (((200, 64, 136), threads), ((1000, 256, 520), threads),
                            ((33, 47, 65), 128), ((64, 60, 72), 128)):
        rng = rng_for("wgmma-kernels", name, m, k, n)
        A, B = normal(rng, (m, k), np.float16), normal(rng, (k, n), np.float16)
        dA, dB = gl.to_device(A), gl.to_device(B)
        C, notes = noted_launches(lambda: gl.matmul(dA, dB, variant=v.id))
        blocks = {int(np.prod(note["block"])) for note in notes}
        assert blocks == {want}, ((m, k, n), notes)
        ref.check_matmul(C.get(), A, B, variant=v)


# ------------------------------------------------ TF32 on wgmma (variants 19 and 21)

# (M, K, N): one, k below and at one 4-float row of 16 bytes, k % 4 != 0 (tf32_wmma's kernel),
# one 32-float slice and one slice plus a 16-byte row (the k tail zero-filled by the TMA), the
# 128-row and 256-column tiles one past, n odd (C's scalar stores), a long k, tall and skinny,
# short and wide, and 257 x 300 x 129 beside its k % 4 == 0 neighbour
TF32_SHAPES = [(1, 1, 1), (1, 4, 1), (7, 5, 3), (8, 8, 8), (128, 32, 128), (129, 36, 257),
               (129, 33, 257), (257, 129, 300), (257, 128, 300), (130, 1000, 131), (1000, 4, 3),
               (3, 8, 1000), (640, 260, 513)]


# The TF32 rungs on the wgmma kernels, and the kernel each runs where the TMA can read A
TF32_WGMMA = {"tf32": "hgemm_wgmma_ws_kernel", "tf32_cluster": "hgemm_wgmma_cluster_kernel"}


def tf32_variant(name="tf32"):
    return next(v for v in gl.variants("matmul") if v.name == name)


def nan_in_the_pool(m, n):
    """gl.matmul has no out=: this frees a NaN-filled device block of C's size back to the
    stream-ordered pool just before the call, so that C, the call's first allocation when A and
    B are already on the device, most likely reuses it and any element a kernel leaves
    unwritten reads NaN, which fails the bound."""
    gl.to_device(np.full((m, n), np.nan, np.float32))  # dropped at once: freed on its stream


def on_hopper():
    return gl.cuda_available() and tuple(gl.device_info()["compute_capability"]) == (9, 0)


@pytest.mark.gpu
@pytest.mark.parametrize("name", TF32_WGMMA)
def test_tf32_shapes_against_float64(name):
    """The TF32 rungs on awkward shapes, from device inputs into a C that most likely starts as
    NaN, against the float64 product under the TF32 bound (tests/references/linalg.py)."""
    v = tf32_variant(name)
    for m, k, n in TF32_SHAPES:
        rng = rng_for("tf32", m, k, n)
        A, B = normal(rng, (m, k), np.float32), normal(rng, (k, n), np.float32)
        dA, dB = gl.to_device(A), gl.to_device(B)
        nan_in_the_pool(m, n)
        ref.check_matmul(gl.matmul(dA, dB, variant=v.id).get(), A, B, variant=v)


@pytest.mark.gpu
@pytest.mark.parametrize("name, kw", [(v.name, kw) for v in gl.variants("matmul")
                                      if v.name in TF32_WGMMA
                                      for kw in matmul_configurations(v)], ids=repr)
def test_tf32_every_configuration(name, kw):
    """Each (bn, stages) instantiation on tiles that n and m do not fill and a k of several
    slices that wraps the stages (k = 1000: 32 slices), and one that does not fill the first."""
    v = tf32_variant(name)
    for m, k, n in [(257, 132, 300), (130, 1000, 513), (65, 12, 40)]:
        rng = rng_for("tf32-config", repr(kw), m, k, n)
        A, B = normal(rng, (m, k), np.float32), normal(rng, (k, n), np.float32)
        dA, dB = gl.to_device(A), gl.to_device(B)
        nan_in_the_pool(m, n)
        ref.check_matmul(gl.matmul(dA, dB, variant=v.id, **kw).get(), A, B, variant=v)


@pytest.mark.gpu
@pytest.mark.parametrize("name", TF32_WGMMA)
def test_tf32_operands_off_the_16_byte_grain(name):
    """B one element past a 16-byte boundary (the transpose's element-wise path; the wgmma
    kernel still runs), then A (tf32_wmma's kernel: the TMA cannot take A)."""
    v = tf32_variant(name)
    m, k, n = 131, 40, 132
    rng = rng_for("tf32-view")
    A, B = normal(rng, m * k + 1, np.float32), normal(rng, k * n + 1, np.float32)
    dA, dB = gl.to_device(A), gl.to_device(B)
    whole_a = gl.to_device(A[1:].reshape(m, k))
    got = gl.matmul(whole_a, CudaView(dB, (k, n), offset=4), variant=v.id).get()
    ref.check_matmul(got, A[1:].reshape(m, k), B[1:].reshape(k, n), variant=v)
    got = gl.matmul(CudaView(dA, (m, k), offset=4), CudaView(dB, (k, n), offset=4),
                    variant=v.id).get()
    ref.check_matmul(got, A[1:].reshape(m, k), B[1:].reshape(k, n), variant=v)


@pytest.mark.gpu
@pytest.mark.parametrize("name", TF32_WGMMA)
def test_tf32_rounds_to_tf32(name):
    """1 + 3 * 2^-12 has two bits below TF32's 10-bit mantissa: times 1, FP32 keeps them and
    TF32 does not (1 truncated, 1 + 2^-10 rounded to nearest). Both kernels of the rung drop
    them, and the bound's 2 x 2^-10 a product covers either rounding."""
    v = tf32_variant(name)
    a = np.float32(1 + 3 * 2.0 ** -12)
    for k in (4, 5):  # the wgmma kernel, then tf32_wmma's
        A = np.zeros((3, k), np.float32)
        A[:, 0] = a
        B = np.zeros((k, 2), np.float32)
        B[0, :] = 1
        got = gl.matmul(A, B, variant=v.id)
        assert set(got.ravel().tolist()) <= {1.0, 1 + 2.0 ** -10}, (k, got)


@pytest.mark.gpu
@pytest.mark.parametrize("name", TF32_WGMMA)
def test_tf32_runs_the_wgmma_kernel_where_the_tma_can(name):
    """With k % 4 == 0 and A 16-byte aligned the rung launches the transpose of B (16 x 16
    threads) and its wgmma kernel (384: a producer and two consumer warpgroups); elsewhere
    tf32_wmma's kernel alone (256). Its table names all three as some calls' only, so
    test_inspect cannot tell."""
    if not on_hopper():
        pytest.skip("wgmma and the TMA need compute capability 9.0")
    v = tf32_variant(name)
    for (m, k, n), want in (((200, 64, 136), [(16, 16, 1), (384, 1, 1)]),
                            ((257, 132, 301), [(16, 16, 1), (384, 1, 1)]),
                            ((33, 47, 65), [(256, 1, 1)]), ((64, 62, 72), [(256, 1, 1)])):
        rng = rng_for("tf32-kernels", m, k, n)
        A, B = normal(rng, (m, k), np.float32), normal(rng, (k, n), np.float32)
        dA, dB = gl.to_device(A), gl.to_device(B)
        C, notes = noted_launches(lambda: gl.matmul(dA, dB, variant=v.id))
        assert sorted(tuple(note["block"]) for note in notes) == want, ((m, k, n), notes)
        if want != [(256, 1, 1)]:
            assert TF32_WGMMA[name] in kernel_names(notes)
        ref.check_matmul(C.get(), A, B, variant=v)


@pytest.mark.gpu
def test_tf32_outside_hopper_raises_as_the_wgmma_rungs_do():
    """On a device other than compute capability 9.0 (or a build without sm_90a) the rung raises
    CudaError (cudaErrorNotSupported) naming the kernel, as wgmma and wgmma_ws do; where k % 4
    != 0 it runs tf32_wmma's kernel there too (from sm_80)."""
    if on_hopper():
        pytest.skip("a Hopper device runs the rung")
    A, B = np.ones((8, 8), np.float32), np.ones((8, 8), np.float32)
    for name, kernel in TF32_WGMMA.items():
        with pytest.raises(gl.CudaError, match=kernel):
            gl.matmul(A, B, variant=name)
    with pytest.raises(gl.CudaError, match="hgemm_wgmma_ws_kernel"):
        gl.matmul(A.astype(np.float16), B.astype(np.float16), variant="wgmma_ws")
    if gl.device_info()["compute_capability"][0] >= 8:  # tf32_wmma's kernel needs sm_80
        A5, B5 = np.ones((8, 5), np.float32), np.ones((5, 8), np.float32)
        for name in TF32_WGMMA:
            assert (gl.matmul(A5, B5, variant=name) == 5).all()


@pytest.mark.parametrize("name", TF32_WGMMA)
def test_tf32_tunables_are_refused_by_name(name):
    """bn=256 with 5 stages (5 x 48 KiB of stages) is refused before anything runs, as for the
    half types' wgmma rungs; the grid the tests and the sanitizers run leaves it out."""
    A = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="at most 4 stages at bn=256"):
        gl.matmul(A, A, variant=name, bn=256, stages=5)
    with pytest.raises(ValueError, match="bk"):
        gl.matmul(A, A, variant=name, bk=64)
    v = tf32_variant(name)
    assert tuple(v.dtypes) == ("float32",)
    assert not v.best and not v.best_for_dtypes
    assert {"bn": 256, "stages": 5} not in matmul_configurations(v)
    assert len(matmul_configurations(v)) == 5
# (M, K, N) with k % 8 == 0 and n % 8 == 0, so that wgmma_cluster runs its own kernel: the second
# block of a cluster with every row past C (m <= 128), a cluster tile partly filled in m (its
# second block partly) and in n (subtiles of C's TMA store past n), k tails and a k of one slice,
# whole 256-row cluster tiles, and more cluster tiles than an H200 has clusters (the persistent
# walk, every cluster several tiles at bn = 128).
CLUSTER_SHAPES = [(1, 64, 8), (100, 64, 136), (129, 72, 264), (255, 200, 128), (256, 64, 256),
                  (257, 8, 520), (300, 136, 72), (1100, 264, 2056)]


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [{}, {"bn": 128, "stages": 3}, {"bn": 128, "stages": 5},
                                {"bn": 256, "stages": 3}], ids=repr)
def test_wgmma_cluster_awkward_shapes(kw):
    """Rung 20's clusters of two blocks along m, B multicast to both and C stored by the TMA,
    on the shapes above, float16 and bfloat16 into both output dtypes."""
    if tuple(gl.device_info()["compute_capability"]) != (9, 0):
        pytest.skip("clusters with TMA multicast and wgmma need compute capability 9.0")
    v = next(v for v in gl.variants("matmul") if v.name == "wgmma_cluster")
    for dtype in HALF_DTYPES:
        for m, k, n in CLUSTER_SHAPES:
            A, B = half_inputs(rng_for("cluster", repr(kw), dtype.name, m, k, n), m, k, n, dtype)
            dA, dB = gl.to_device(A), gl.to_device(B)
            for out in (None, np.float32):
                got = gl.matmul(dA, dB, variant=v.id, out_dtype=out, **kw).get()
                assert got.dtype == (dtype if out is None else np.float32)
                ref.check_matmul(got, A, B, variant=v)


# ---------------------------------------------------------------- transposed operands

# How A and B lie: (A given as a transposed view, B given as one). A transposed view is x.T of a
# C-contiguous x: F-contiguous, the storage of its transpose (glc_matmul_layout).
LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]
# (M, K, N): empty (C- and F-contiguous at once: taken as C), one row, one column and K == 1
# (the same), odd everywhere (the wgmma rungs' TMA reads none of these rows: mma.sync on
# row-major copies), every row a multiple of 8 (wgmma reads every layout in place), and M % 8 !=
# 0 with K and N multiples of 8 (A.T falls back to row-major copies, B.T is read in place), past
# one 128-row tile; then A.T in both warpgroups' boxes of a tile with two column tiles, and past
# a cluster's 256 rows
TRANSPOSED_SHAPES = [(0, 3, 4), (3, 0, 4), (1, 5, 3), (5, 1, 3), (6, 4, 1), (67, 35, 41),
                     (64, 48, 72), (129, 40, 136), (136, 72, 264), (264, 40, 136)]
CONTAINERS = ["numpy", "device", "cupy", "torch"]


def transposed_params():
    """(variant, container): NumPy for every variant, and for CUDA ones DeviceArrays, CuPy
    arrays and torch tensors too."""
    return [pytest.param(v, where, id=f"{v.id}-{v.name}-{where}",
                         marks=[pytest.mark.gpu] if v.backend == "cuda" else [])
            for v in gl.variants("matmul")
            for where in (CONTAINERS if v.backend == "cuda" else ["numpy"])]


def laid_out(rng, shape, dtype, transposed):
    """A random matrix of shape: C-contiguous, or with transposed the view x.T of a C-contiguous
    x of the transposed shape (F-contiguous where both dimensions exceed 1)."""
    if not transposed:
        return normal(rng, shape, dtype)
    return normal(rng, shape[::-1], dtype).T


def placed_as(where, a):
    """a (C-contiguous, or a transposed view x.T) where `where` puts it, lying the same way: NumPy
    as it is; a DeviceArray (a transposed one as a foreign view with F strides, CudaView), a CuPy
    array (x.T) or a torch tensor (x.t(), through DLPack: bfloat16 too)."""
    if where == "numpy":
        return a
    transposed = not a.flags.c_contiguous
    storage = a.T if transposed else a  # C-contiguous either way
    if where == "device":
        d = gl.to_device(storage)
        if not transposed:
            return d
        if a.dtype == bfloat16():
            pytest.skip("a bfloat16 DeviceArray has no CUDA Array Interface to view (torch's "
                        "container takes bfloat16 through DLPack)")
        return CudaView(d, a.shape, strides=(a.itemsize, a.shape[0] * a.itemsize))
    if where == "cupy":
        cp = pytest.importorskip("cupy")
        if a.dtype == bfloat16():
            pytest.skip("CuPy has no bfloat16")
        c = cp.asarray(storage)
        return c.T if transposed else c
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    t = torch.from_dlpack(gl.to_device(storage))
    return t.t() if transposed else t


def kernel_names(notes):
    """The base names of the noted kernels, sorted (gl.inspect's names)."""
    from gpulab.inspection import base_name
    return sorted(base_name(gl._core._kernel_attributes(note["kernel"])["demangled"])
                  for note in notes)


def launched_on_layout(v, rng, shape, dtype, a_t, b_t):
    """matmul variant v on device A (m x k) and B (k x n) of dtype, each given transposed or not
    as a_t and b_t say: the product checked against float64 under v's bound, and the base names
    of the kernels the call launched, sorted."""
    m, k, n = shape
    A, B = laid_out(rng, (m, k), dtype, a_t), laid_out(rng, (k, n), dtype, b_t)
    dA, dB = placed_as("device", A), placed_as("device", B)
    C, notes = noted_launches(lambda: gl.matmul(dA, dB, variant=v.id))
    ref.check_matmul(C.get(), np.ascontiguousarray(A), np.ascontiguousarray(B), variant=v)
    return kernel_names(notes)


@pytest.mark.parametrize("v, where", transposed_params())
def test_matmul_takes_transposed_operands(v, where):
    """A.T and B.T views (F-contiguous) in all four layouts, from every container, against the
    float64 product of contiguous copies under the variant's bound; on the CPU (which multiplies
    C-order copies) bit for bit what the contiguous copies give."""
    for dtype in dtypes_of(v):
        for m, k, n in TRANSPOSED_SHAPES:
            for a_t, b_t in LAYOUTS:
                rng = rng_for("matmul-transposed", v.id, dtype.name, m, k, n, a_t, b_t)
                A, B = laid_out(rng, (m, k), dtype, a_t), laid_out(rng, (k, n), dtype, b_t)
                if a_t and m > 1 and k > 1:
                    assert A.flags.f_contiguous and not A.flags.c_contiguous
                got = gl.matmul(placed_as(where, A), placed_as(where, B), variant=v.id)
                got = fetched("numpy" if where == "numpy" else "device", got)
                cA, cB = np.ascontiguousarray(A), np.ascontiguousarray(B)
                ref.check_matmul(got, cA, cB, variant=v)
                if v.backend == "cpu":
                    assert got.tobytes() == gl.matmul(cA, cB, variant=v.id).tobytes()


def test_matmul_refuses_other_strided_views():
    """Only C- and F-contiguous operands: every other view is refused naming the operand, and
    every other op still refuses an F-contiguous input as before."""
    X = np.ones((8, 6), np.float32)
    B = np.ones((6, 5), np.float32)
    for bad in (X[::2], X[:, ::2], X[::-1], X.T[::2].T, np.asfortranarray(X)[::2]):
        with pytest.raises(ValueError, match="A must be C-contiguous, or F-contiguous"):
            gl.matmul(bad, B, variant="ijk")
        with pytest.raises(ValueError, match="B must be C-contiguous, or F-contiguous"):
            gl.matmul(B.T, bad, variant="ijk")
    # F-contiguous everywhere else: refused as it was
    with pytest.raises(ValueError, match="A must be C-contiguous; pass"):
        gl.matvec(X.T, np.ones(8, np.float32), variant="contiguous")
    with pytest.raises(ValueError, match="A must be C-contiguous; pass"):
        gl.transpose(X.T, variant="blocked")
    # shapes are the views': a (6, 8) A.T needs a B of 8 rows
    with pytest.raises(ValueError, match="A is 6 x 8, B is 6 x 5"):
        gl.matmul(X.T, B, variant="ijk")


@pytest.mark.gpu
def test_device_operands_of_other_layouts_are_refused():
    """On the device too: matmul takes C- and F-contiguous views only, the other ops C-contiguous
    ones only."""
    X = gl.to_device(np.ones((8, 6), np.float32))
    B = gl.to_device(np.ones((6, 5), np.float32))
    every_other_row = CudaView(X, (4, 6), strides=(48, 4))
    with pytest.raises(ValueError, match="A must be C-contiguous on the device, or F-contiguous"):
        gl.matmul(every_other_row, B)
    f_view = CudaView(X, (6, 8), strides=(4, 24))  # X.T
    with pytest.raises(ValueError, match="A must be C-contiguous on the device$"):
        gl.transpose(f_view)
    with pytest.raises(ValueError, match="A must be C-contiguous on the device$"):
        gl.matvec(f_view, gl.to_device(np.ones(8, np.float32)))


@pytest.mark.gpu
@pytest.mark.parametrize("name, kernel", [("wgmma", "hgemm_wgmma_kernel"),
                                          ("wgmma_ws", "hgemm_wgmma_ws_kernel"),
                                          ("wgmma_cluster", "hgemm_wgmma_cluster_kernel")])
def test_wgmma_rungs_read_transposed_operands_in_place(name, kernel):
    """Where the TMA can read A.T and B.T as they lie (their rows a multiple of 8 elements) a
    wgmma rung launches its own kernel alone: no transpose. Where it cannot (A.T with m % 8 != 0)
    A is copied to row-major (transpose_wide) and mma.sync's kernel runs."""
    if not on_hopper():
        pytest.skip("wgmma and the TMA need compute capability 9.0")
    v = next(v for v in gl.variants("matmul") if v.name == name)
    for (m, k, n), layouts, want in (
            ((64, 48, 72), LAYOUTS[1:], [kernel]),
            ((200, 64, 136), LAYOUTS[1:], [kernel]),
            ((67, 64, 72), [(False, True)], [kernel]),  # B.T's rows are k: in place
            ((67, 64, 72), [(True, False)], ["hgemm_mma_kernel", "transpose_wide"]),
            ((67, 64, 72), [(True, True)], ["hgemm_mma_kernel", "transpose_wide",
                                            "transpose_wide"])):
        for a_t, b_t in layouts:
            rng = rng_for("wgmma-transposed", name, m, k, n, a_t, b_t)
            got = launched_on_layout(v, rng, (m, k, n), np.float16, a_t, b_t)
            assert got == want, ((m, k, n), a_t, b_t)


@pytest.mark.gpu
@pytest.mark.parametrize("name", TF32_WGMMA)
def test_tf32_reads_b_transposed_in_place(name):
    """wgmma takes 32-bit B K-major only: B as it lies is transposed first, B.T (K-major
    already) is read in place, with no transpose; A.T (M-major) is transposed."""
    if not on_hopper():
        pytest.skip("wgmma and the TMA need compute capability 9.0")
    v = tf32_variant(name)
    kernel = TF32_WGMMA[name]
    for m, k, n in ((200, 64, 136), (257, 132, 301)):
        for a_t in (False, True):
            for b_t in (True, False):
                want = sorted([kernel] + ["transpose_wide"] * (int(a_t) + int(not b_t)))
                rng = rng_for("tf32-transposed", m, k, n, a_t, b_t)
                got = launched_on_layout(v, rng, (m, k, n), np.float32, a_t, b_t)
                assert got == want, ((m, k, n), a_t, b_t)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["cublas", "cublas_tf32", "cublaslt"])
def test_library_rungs_read_transposed_operands_in_place(name):
    """cuBLAS and cuBLASLt take the layouts as their op flags: no kernel of ours runs (the
    library's are not noted), in every layout."""
    v = next(v for v in gl.variants("matmul") if v.name == name)
    dtype = dtypes_of(v)[0]
    for a_t, b_t in LAYOUTS:
        rng = rng_for("library-transposed", name, a_t, b_t)
        assert launched_on_layout(v, rng, (67, 35, 41), dtype, a_t, b_t) == [], (a_t, b_t)


@pytest.mark.gpu
def test_row_major_copies_of_transposed_operands():
    """A rung that reads row-major operands only gets a copy of each one given transposed
    (transpose_wide), as many as there are."""
    for name, dtype, kernel in (("naive", np.float32, "sgemm_naive"),
                                ("wmma", np.float16, "hgemm_wmma")):
        v = next(v for v in gl.variants("matmul") if v.name == name)
        for a_t, b_t in LAYOUTS:
            rng = rng_for("row-major-copies", name, a_t, b_t)
            got = launched_on_layout(v, rng, (67, 35, 41), dtype, a_t, b_t)
            assert got == sorted([kernel] + ["transpose_wide"] * (a_t + b_t)), (a_t, b_t)


@pytest.mark.gpu
def test_transposed_operand_past_one_launch_of_the_transpose():
    """B.T of more rows than grid y's 65535 row tiles of the wide transpose (64 rows a tile for
    4-byte elements, 128 for 2-byte ones): its row-major copy takes two launches, and the product
    is right."""
    for name, dtype, tile in (("coalesced", np.float32, 64), ("wmma", np.float16, 128)):
        v = next(v for v in gl.variants("matmul") if v.name == name)
        m, k, n = 2, 3, 65535 * tile + 100
        rng = rng_for("transposed-past-the-grid", name)
        A, B = normal(rng, (m, k), dtype), laid_out(rng, (k, n), dtype, True)
        dA, dB = gl.to_device(A), placed_as("device", B)
        C, notes = noted_launches(lambda: gl.matmul(dA, dB, variant=v.id))
        assert kernel_names(notes).count("transpose_wide") == 2
        ref.check_matmul(C.get(), A, np.ascontiguousarray(B), variant=v)
