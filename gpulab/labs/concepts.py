"""The concepts lab: five ideas of the course texts as small ops whose results are checked against
NumPy and whose effect is measured.

    gl.concepts.divergence(x, key)        # the same work branched per lane, half-warp, warp
    gl.concepts.warp_reduce(x, trials)    # S0's lockstep last warp: wrong block sums, counted
    gl.concepts.counter(x)                # S4's counter: lost updates without atomics
    gl.concepts.sin(x, variant=...)       # sinf against __sinf
    gl.concepts.sin_error(lo, hi)         # ... and their error over a range
    gl.concepts.lookup(table, idx)        # a table in __constant__, global or shared memory
    gl.concepts.lane_pattern(n, lanes, values)   # keys and indices that agree per lane/warp

Each op follows the rest of gpulab: NumPy in, NumPy out (on the GPU when there is one and the
variant is a CUDA one); device arrays in, DeviceArray out, asynchronously on `stream`; `variant`
picks a rung of ``gl.variants(op)``, `block` the threads per block of a CUDA variant. The lab is a
namespace (gl.concepts.*): its ops are demonstrations, not library functions to import at the
top level.

What to look at is in the data as much as in the variant: the keys of divergence and the indices
of lookup decide how many lanes of a warp agree (lane_pattern makes them), and the racy variants
(``v.racy`` in ``gl.variants()``) give results that vary from run to run, within bounds.
"""

import math

import numpy as np

from .. import _core, registry
from .. import peers as _peers
from .._op import Cost, Unit, nbytes, numel, op
from ..table import Table
from ._args import int_arg as _int_arg

# Nothing lifted to gpulab's top level: users reach this lab as a module (gl.concepts.*).
EXPORTS = ()

_CONSTANTS = _core._concepts_constants()
# (scale, shift) of each divergence path: path k is `iterations` steps of x <- fma(x, scale, shift)
PATHS = tuple(_CONSTANTS["divergence_paths"])
MAX_ITERATIONS = _CONSTANTS["max_iterations"]
MAX_TRIALS = _CONSTANTS["max_trials"]
MAX_TABLE = _CONSTANTS["max_table"]
# the block the CPU variant of warp_reduce sums over (the CUDA variants' default block)
CPU_BLOCK = _CONSTANTS["cpu_block"]
WARP = 32


# ---------------------------------------------------------------- inputs


def lane_pattern(n, lanes, values, shuffle=False, seed=None):
    """An int32 array of n values in runs of `lanes` consecutive equal elements: run r holds
    r % values, or with shuffle=True a random value in [0, values). Elements i and j of one warp
    (i // 32 == j // 32) agree when they fall in the same run, so lanes=1 makes every lane of a
    warp differ (up to `values` distinct), lanes=16 makes the two half-warps differ, lanes=32
    makes each warp uniform and lanes >= n the whole array.

    As divergence keys (values=4): lanes 1, 16 and 32 make each warp run 4, 2 and 1 paths. As
    lookup indices (values=table size, shuffle=True): lanes 32 is a uniform index per warp,
    lanes 1 a different index in every lane."""
    n = _int_arg("n", n, 0)
    lanes = _int_arg("lanes", lanes, 1)
    values = _int_arg("values", values, 1, 2**31 - 1)
    runs = np.arange(n, dtype=np.int64) // lanes
    if shuffle:
        rng = np.random.default_rng(seed)
        per_run = rng.integers(0, values, size=int(runs[-1]) + 1 if n else 0, dtype=np.int64)
        return per_run[runs].astype(np.int32)
    return (runs % values).astype(np.int32)


# ---------------------------------------------------------------- divergence


def _divergence_cost(x, key, iterations=128, **_):
    # x and key read, out written; one FMA (2 flops) per step of the element's own path: the
    # work a warp that diverges, or computes every path, does beyond this is the waste to see
    return Cost(bytes=nbytes(x) + nbytes(key) + nbytes(x), flops=2 * iterations * numel(x))


def _divergence_example(n, rng):
    """Random keys (a warp runs every path) over [-4, 8): key & 3 masks the high ones."""
    return (rng.standard_normal(n, dtype=np.float32),
            rng.integers(-4, 8, size=n, dtype=np.int32))


@op("divergence", cost=_divergence_cost, size=lambda x, key, **_: numel(x),
    example=_divergence_example, demo_size={"gpu": 1 << 22, "cpu": 1 << 16})
def divergence(x, key, iterations=128, variant=None, block=None, stream=None):
    """out[i] = path[key[i] & 3](x[i]): path k is `iterations` steps of x <- fma(x, scale_k,
    shift_k) with PATHS[k] = (scale_k, shift_k). Every variant gives the same bits; they differ
    in how the paths are chosen: "branch_per_key" branches (a warp whose keys differ runs each of
    their paths in turn), "branch_free" selects the constants and runs one loop, and
    "all_paths_select" runs all four and keeps one.

    x: float32, key: int32 of the same shape (any shape, C-contiguous). iterations in
    [0, 2**20]. Make keys with lane_pattern(n, lanes, 4): lanes 1, 16, 32 = divergence per lane,
    per half-warp, none."""
    return _core.divergence(x, key, iterations, variant, stream, block)


def divergence_reference(x, key, iterations=128):
    """The float64 value of the paths (closed form) and the bound of float32's rounding:
    (ref, bound) with |out - ref| <= bound elementwise for every variant.

    x_R = s^R x_0 + c (1 - s^R) with c = shift / (1 - scale). Each float32 step rounds once (an
    FMA), by at most eps/2 of |x_r| <= |x_0| + |c|; the scale < 1 damps old errors, so at most
    min(R, 1 / (1 - scale)) of them add up."""
    x64 = np.asarray(x, dtype=np.float64)
    k = np.bitwise_and(np.asarray(key), 3)
    scale = np.array([p[0] for p in PATHS], dtype=np.float64)[k]
    shift = np.array([p[1] for p in PATHS], dtype=np.float64)[k]
    c = shift / (1 - scale)
    damped = scale ** iterations
    ref = damped * x64 + c * (1 - damped)
    steps = np.minimum(iterations, 1 / (1 - scale)) + 1
    bound = steps * np.finfo(np.float32).eps * (np.abs(x64) + np.abs(c))
    return ref, bound


# ---------------------------------------------------------------- warp_reduce


def _warp_reduce_cost(x, trials=1, **_):
    # x read once; each trial adds every element once in shared memory and registers
    return Cost(bytes=nbytes(x), flops=trials * numel(x))


def _warp_reduce_example(n, rng):
    return (rng.integers(-1000, 1000, size=n, dtype=np.int32),)


@op("warp_reduce", cost=_warp_reduce_cost, size=lambda x, **_: numel(x),
    example=_warp_reduce_example, demo_size={"gpu": 1 << 22, "cpu": 1 << 20})
def warp_reduce(x, trials=1, variant=None, block=None, stream=None):
    """Block sums of int32 x (flattened), each block of `block` threads summing `block`
    elements (zeros past the end) with S0's shared-memory tree and a last warp written the
    variant's way, `trials` times over the same data.

    Returns an int32 array of shape (2, blocks): row 0 the last trial's block sums (wrapping
    modulo 2**32 like NumPy's int32 sums), row 1 how many of the trials got each block's sum
    wrong, against exact sums taken first with shared-memory atomics. So

        sums, wrong = gl.concepts.warp_reduce(x, trials=1000, variant="lockstep_volatile")
        wrong.sum()   # block sums that came out wrong, over all trials

    "lockstep_plain" and "lockstep_volatile" are deliberate races (no __syncwarp); whether they
    go wrong depends on the compiler and the GPU: the count is measured, never assumed. The CPU
    variant sums blocks of CPU_BLOCK = 256 and never goes wrong. trials in [1, 2**20]; block: 64
    to 1024."""
    return _core.warp_reduce(x, trials, variant, stream, block)


def warp_reduce_reference(x, block):
    """The exact int32 sums of x (flattened) over blocks of `block` elements, zeros past the end,
    wrapping modulo 2**32 like the kernels."""
    x = np.asarray(x).ravel()
    blocks = -(-x.size // block)
    padded = np.zeros(blocks * block, np.int32)
    padded[:x.size] = x
    return padded.reshape(blocks, block).sum(axis=1, dtype=np.int32)


def block_of(n, blocks):
    """The block size (a power of two from 64) that splits n elements into `blocks` blocks; for
    one block or none, any block covers them and 1024 is returned."""
    if blocks <= 1:
        return 1024
    for block in (64, 128, 256, 512, 1024):
        if -(-n // block) == blocks:
            return block
    raise ValueError(f"no block from 64 to 1024 splits {n} elements into {blocks} blocks")


# ---------------------------------------------------------------- counter


def _counter_cost(x, **_):
    # x read once, one counter updated; one increment per element
    return Cost(bytes=nbytes(x) + 8, flops=numel(x))


def _counter_example(n, rng):
    """Three elements in four count (every thread increments in S4's version: pass ones)."""
    return (rng.integers(0, 4, size=n, dtype=np.int32),)


def _cupy_count(x, **_):
    import cupy
    cx = _peers.as_peer("cupy", x)
    return lambda: cupy.count_nonzero(cx)


def _torch_count(x, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    return lambda: torch.count_nonzero(tx)


# the CPU size too is large enough for OpenMP's threads to overlap and lose updates
@op("counter", cost=_counter_cost, size=lambda x, **_: numel(x), example=_counter_example,
    demo_size={"gpu": 1 << 24, "cpu": 1 << 24},
    peers={"cupy": _cupy_count, "torch": _torch_count})
def counter(x, variant=None, block=None, stream=None):
    """The final value of one global counter that every thread whose element of int32 x is
    non-zero increments once (int64; a NumPy scalar, or a 0-d DeviceArray for device input).
    expected = np.count_nonzero(x); lost updates = expected - count.

    The atomic variants are exact. "racy_increment" (and the CPU's "openmp_racy") load and
    store without atomicity: their count lies in [1, expected] for expected >= 1, and varies."""
    return _core.counter(x, variant, stream, block)


# ---------------------------------------------------------------- sin


def _sin_cost(x, **_):
    # read and write once; one sine per element (its instruction count is the variant's)
    return Cost(bytes=2 * nbytes(x), flops=numel(x))


def _sin_example(n, rng):
    return (rng.uniform(-10.0, 10.0, size=n).astype(np.float32),)


def _cupy_sin(x, **_):
    import cupy
    cx = _peers.as_peer("cupy", x)
    return lambda: cupy.sin(cx)


def _torch_sin(x, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    return lambda: torch.sin(tx)


@op("sin", cost=_sin_cost, size=lambda x, **_: numel(x), example=_sin_example,
    demo_size={"gpu": 1 << 24, "cpu": 1 << 20}, peers={"cupy": _cupy_sin, "torch": _torch_sin},
    unit=Unit("G sin/s", lambda x, **_: numel(x)))
def sin(x, variant=None, out=None, stream=None, block=None):
    """sin of float32 x (any shape): "sinf" (accurate, 2 ulp), "intrinsic_sinf" (__sinf: fast,
    absolute error 2**-21.41 on [-pi, pi] and growing outside) or the CPU's libm sinf. `out`: an
    array of x's shape and dtype where x lives. sin_error() measures the error over a range."""
    return _core.sin(x, variant, out, stream, block)


def sin_error(lo=-math.pi, hi=math.pi, samples=1 << 20, variants=None):
    """The error of each sin variant over [lo, hi] against NumPy's float64 sin of the same
    float32 inputs (samples evenly spaced, endpoints included). A Table with, per variant: the
    largest absolute error and where it is, the largest error in float32 ulps of the true value
    (huge near the zeros of sin for an absolute-error method such as __sinf), and the mean
    absolute error. variants: ids or names (default: every variant that can run here)."""
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or not lo <= hi:
        raise ValueError(f"need finite lo <= hi, got lo={lo!r}, hi={hi!r}")
    if max(abs(lo), abs(hi)) > np.finfo(np.float32).max:
        raise ValueError("lo and hi must be float32 numbers (|x| <= 3.4e38)")
    samples = _int_arg("samples", samples, 1, 1 << 28)
    x = np.linspace(lo, hi, samples).astype(np.float32)
    ref = np.sin(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    if variants is None:
        gpu = _core.cuda_available()
        chosen = [v for v in registry.variants("sin") if gpu or v.backend == "cpu"]
    else:
        chosen = [registry.find("sin", v) for v in variants]
    rows = []
    for v in chosen:
        got = sin(x, variant=v.id).astype(np.float64)
        err = np.abs(got - ref)
        worst = int(np.argmax(err))
        rows.append({"variant": v.id, "name": v.name, "backend": v.backend, "lo": lo, "hi": hi,
                     "samples": samples, "max_abs_error": float(err[worst]),
                     "at_x": float(x[worst]), "max_ulp": float(np.max(err / ulp)),
                     "mean_abs_error": float(err.mean())})
    return Table(rows, {"measure": "sin_error", "lo": lo, "hi": hi, "samples": samples})


# ---------------------------------------------------------------- lookup


def _lookup_cost(table, idx, **_):
    # idx read and out written once, the table read at least once
    return Cost(bytes=2 * nbytes(idx) + nbytes(table), flops=0)


def _lookup_example(n, rng):
    """A 256-entry table and indices in [-8, 264): most in range, a few clipped at each end."""
    return (rng.standard_normal(256, dtype=np.float32),
            rng.integers(-8, 264, size=n, dtype=np.int32))


@op("lookup", cost=_lookup_cost, size=lambda table, idx, **_: numel(idx), example=_lookup_example,
    demo_size={"gpu": 1 << 24, "cpu": 1 << 20})
def lookup(table, idx, variant=None, block=None, stream=None):
    """out = np.take(table, idx, mode="clip"): float32 `table` (1-D, at most MAX_TABLE = 8192
    entries) looked up at int32 `idx` (any shape; out has its shape). An index out of range
    reads the nearest end of the table. Variants: the table in __constant__ memory, in global
    memory through __ldg, or copied into shared memory per block. Make indices that agree per
    warp (lane_pattern(n, 32, len(table), shuffle=True)) or differ per lane (lanes=1) to see
    constant memory serialize."""
    return _core.lookup(table, idx, variant, stream, block)
