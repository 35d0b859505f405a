"""bench(): time one call as CONTRIBUTING.md's rules say: warm up, repeat, take the median, flush L2
between repetitions, and report the rate against the device's own ceilings and against peers.

It times a gpulab op (its cost model gives the rates) or any other callable, as triton's
do_bench and cupyx.profiler.benchmark do (a lambda calling CuPy, PyTorch or NumPy: times only)."""

import functools
import math
import statistics
import sys
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

import numpy as np

from . import _core, peers as _peers, registry
from ._op import Cost
from .ceilings import _cpu_name, ceilings
from .table import html_table
from .timing import event_samples, host_samples

# Options of bench() itself; every other keyword goes to the op.
BENCH_OPTIONS = ("repeat", "warmup", "flush_l2", "peers", "budget_s")

# A gpulab op, by default: exactly this many timed calls after this many warm-up calls.
OP_REPEAT, OP_WARMUP = 20, 3
# Any other callable, by default: as many timed calls as fit in the budget, up to the cap (a
# microsecond call needs no more to pin its median; a longer list only bloats the record).
CALLABLE_BUDGET_S, CALLABLE_REPEAT = 1.0, 1000
# Under a budget, the fewest timed calls: a median, min and max of fewer say little.
MIN_REPEAT = 5


@dataclass
class BenchResult:
    """One timed call. For a gpulab op, every field; for another callable (bench(lambda: ...))
    variant is None, variant_name '' and bound '', and the fields of the cost model (bytes,
    flops) and the rates from it (gbps, gflops, frac_copy, frac_fma) are None: nothing says
    what work it does. samples keeps every timed repetition, in ms, in the order they ran."""
    op: str  # the op's name; another callable's __qualname__ ('<lambda>', 'sort', ...)
    variant: Optional[int]
    variant_name: str
    backend: str  # where the variant runs: 'cuda' or 'cpu'
    params: Dict[str, object]  # the op's keyword arguments (block, ...)
    device: str
    size: int  # elements
    dtype: str
    transfers_included: bool  # NumPy in/out through a CUDA variant: copies are in the time
    timer: str  # 'cuda-events' or 'perf_counter'
    median_ms: float
    min_ms: float
    max_ms: float
    samples: List[float]
    bytes: Optional[int]
    flops: Optional[int]
    gbps: Optional[float]
    gflops: Optional[float]
    frac_copy: Optional[float]  # of the measured copy bandwidth
    frac_fma: Optional[float]  # of the measured FP32 FMA rate
    # 'memory' or 'compute': which ceiling bounds this op where it ran (see bound_of); the
    # rate to read is gbps and frac_copy for 'memory', gflops and frac_fma for 'compute';
    # '' where no cost model is known
    bound: str
    l2_flushed: bool
    peers: Dict[str, dict] = field(default_factory=dict)
    unit: Optional[str] = None  # the op's own unit of work, e.g. "G interactions/s"
    unit_rate: Optional[float] = None  # the rate in that unit

    def to_dict(self):
        return asdict(self)

    def __str__(self):
        if self.variant is None:  # a plain callable: times only
            shape = f" n={self.size} {self.dtype}" if self.dtype else ""
            return (f"{self.op}{shape}: {self.median_ms:.4f} ms (min {self.min_ms:.4f}, max "
                    f"{self.max_ms:.4f}; {len(self.samples)} runs, {self.timer})")
        text = f"{self.op}[{self.variant} {self.variant_name}] n={self.size} {self.dtype}: "
        if self.bound == "compute":
            own = f", {format_rate(self.unit_rate)} {self.unit}" if self.unit else ""
            text += (f"{self.median_ms:.4f} ms, {format_rate(self.gflops)} GFLOP/s{own} "
                     f"({format_fraction(self.frac_fma)} of FMA)")
        else:
            own = f", {format_rate(self.unit_rate)} {self.unit}" if self.unit else ""
            text += (f"{self.median_ms:.4f} ms, {format_rate(self.gbps)} GB/s "
                     f"({format_fraction(self.frac_copy)} of copy){own}")
        for name, p in self.peers.items():
            text += f", {name} {p['median_ms']:.4f} ms (x{p['speedup']:.2f})"
        return text

    def _repr_html_(self):
        """This result as a one-row HTML table under its headline (Jupyter shows this)."""
        row = result_row(self)
        return html_table(list(row), [list(row.values())], caption=str(self),
                          formats=RESULT_FORMATS)


def result_row(r: BenchResult, params_as_columns=False) -> dict:
    """r's row in a results table (BenchResult's and SweepResults' HTML), column -> value: who
    ran, the times, then the rate that bounds it, its own unit and the peers' ratios. params
    become one column each when params_as_columns, else one 'params' column."""
    row = {"op": r.op,
           "variant": "-" if r.variant is None else f"{r.variant} {r.variant_name}",
           "backend": r.backend + (" +copies" if r.transfers_included else "")}
    if params_as_columns:
        row.update(r.params)
    elif r.params:
        row["params"] = ",".join(f"{k}={v}" for k, v in r.params.items())
    row.update({"size": r.size, "dtype": r.dtype, "ms": r.median_ms, "min ms": r.min_ms,
                "max ms": r.max_ms, "runs": len(r.samples)})
    if r.bound == "memory":
        row.update({"GB/s": r.gbps, "of copy": r.frac_copy})
    elif r.bound == "compute":
        row.update({"GFLOP/s": r.gflops, "of FMA": r.frac_fma})
    if r.unit and r.unit_rate is not None:
        row[r.unit] = r.unit_rate
    for name, p in r.peers.items():
        row[f"x {name}"] = p["speedup"]  # >1: gpulab is faster
    row["timer"] = r.timer
    return row


def format_rate(value: float) -> str:
    """A rate for a table: one decimal from 1 up; below 1, three significant digits, so that a
    slow but real rate (a CPU's G interactions/s) never prints as 0.0."""
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.3g}"


def format_fraction(value: float) -> str:
    """A fraction of a ceiling: three decimals, or two significant digits below 0.01."""
    return f"{value:.3f}" if abs(value) >= 0.01 else f"{value:.2g}"


# how result_row's columns print in HTML (the rest: 4 significant digits)
RESULT_FORMATS = {"ms": "{:.4f}".format, "min ms": "{:.4f}".format, "max ms": "{:.4f}".format,
                  "GB/s": format_rate, "GFLOP/s": format_rate, "of copy": format_fraction,
                  "of FMA": format_fraction}


def bound_of(cost: Cost, ceil: dict) -> str:
    """'compute' when the op's arithmetic intensity (flops per byte, from its cost model)
    exceeds the device's balance (its measured FMA GFLOP/s over its measured copy GB/s), else
    'memory'.

    The roofline argument: a call takes at least max(bytes / copy rate, flops / FMA rate), and
    the larger term is the one that bounds it; flops / bytes > fma / copy says the flop term
    is larger. The balance is the device's own, so one op can be compute-bound on the GPU and
    memory-bound on the CPU, or change bound with its size. The two ratios are compared
    cross-multiplied, so a cost of zero bytes needs no division (an empty call reads as
    'memory')."""
    if cost.flops * ceil["copy_gbps"] > cost.bytes * ceil["fma_gflops"]:
        return "compute"
    return "memory"


def _is_device(obj):
    """Whether obj is a device array gl takes: a DeviceArray, or an object exporting CUDA memory
    through __cuda_array_interface__ or DLPack (device types kDLCUDA, kDLCUDAManaged). Asks no
    GPU."""
    if isinstance(obj, _core.DeviceArray) or hasattr(obj, "__cuda_array_interface__"):
        return True
    if isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack_device__"):
        return False
    try:
        return int(obj.__dlpack_device__()[0]) in (2, 13)
    except Exception:  # noqa: BLE001 (a malformed exporter is not a device array)
        return False


def _first_array(args):
    return next((a for a in args if hasattr(a, "dtype") and hasattr(a, "shape")), None)


_flush_buffers = {}


def _flush_l2(stream):
    """Overwrites twice the L2 so that the next repetition reads from DRAM."""
    buf = _flush_buffers.get("gpu")
    if buf is None:
        l2 = _core.device_info(0)["l2_cache_bytes"]
        buf = _flush_buffers["gpu"] = _core.empty(max(2 * l2, 1 << 20), dtype=np.uint8)
    _flush_buffers["tick"] = (_flush_buffers.get("tick", 0) + 1) & 0xFF
    _core._memset(buf, _flush_buffers["tick"], stream)


def _flusher(stream, enabled):
    return (lambda: _flush_l2(stream)) if enabled else None


def _stream_of(kw):
    stream = kw.get("stream")
    if stream is None:
        return _core._library_stream()
    return stream


def _time_peers(spec, args, kw, repeat, warmup, flush_l2, ours_ms, nbytes):
    out = {}
    for name, setup in spec.peers.items():
        if not _peers.available(name):
            continue
        call = setup(*args, **{k: v for k, v in kw.items() if k not in ("variant", "block",
                                                                          "out", "stream")})
        handle = _peers.stream_handle(name)
        samples = event_samples(call, handle, repeat, warmup, _flusher(handle, flush_l2))
        med = statistics.median(samples)
        out[name] = {"median_ms": med, "min_ms": min(samples), "gbps": nbytes / med / 1e6,
                     "speedup": med / ours_ms, "version": _peers.version(name)}
    return out


def bench(fn, *args, repeat=None, warmup=None, budget_s=None, flush_l2=True, peers=False,
          **kw) -> BenchResult:
    """Returns the BenchResult of timing fn(*args, **kw): a gpulab op, or any other callable.

    A gpulab op (gl.saxpy, ...): device arrays in, CUDA events on the op's stream, L2 flushed
    before each repetition when flush_l2; NumPy in, perf_counter around the whole call (a CUDA
    variant then includes its copies in and out; the result says so). The rates come from the
    op's cost model. peers=True also times the CuPy and PyTorch equivalents, in the same run,
    on the same device arrays. By default: warmup=3 untimed calls, then exactly repeat=20.

    Any other callable (``gl.bench(lambda: cp.sort(d))``, ``gl.bench(np.sort, a)``): one
    untimed first call (its errors surface there), then warm-up and timed calls within a time
    budget. Where a GPU is present and the callable works on device arrays (CuPy, PyTorch,
    gpulab or any __cuda_array_interface__ array among its arguments, the names its code uses,
    or what it returns), CUDA events on the current stream of that array's library (CuPy's or
    PyTorch's current stream, gpulab's stream, else the legacy default stream), with L2
    flushed before each repetition when flush_l2; otherwise perf_counter, with a synchronize
    of the GPU's work (when there is a GPU) inside each timed call. The result has the times
    and samples; its rates are None, there being no cost model. By default: budget_s=1.0
    seconds of wall clock (warm-up included), the first tenth warming up (warmup=None), then
    timed calls until the budget is spent or repeat=1000 were timed; never fewer than 5 (or
    repeat, if less), so a call longer than the budget overruns it rather than leave one
    sample. budget_s=math.inf: no budget, exactly repeat timed calls after warmup (3 by
    default).

    budget_s works the same way on a gpulab op (repeat then is a cap). Raises TypeError when
    fn is not callable and ValueError for a repeat below 1, a negative warmup or a budget_s
    that is not a positive number of seconds."""
    spec = _check_bench_options(fn, repeat, warmup, budget_s)
    if spec is None:
        return _bench_callable(fn, args, kw, repeat, warmup, budget_s, flush_l2, peers)
    repeat = OP_REPEAT if repeat is None else repeat
    budget = None if budget_s is None or math.isinf(budget_s) else budget_s
    if warmup is None and budget is None:
        warmup = OP_WARMUP
    on_device = any(_is_device(a) for a in args)
    if kw.get("variant") is None:
        gpu = on_device or _core.cuda_available()
        first = _first_array(args)
        variant = registry.best(spec.name, "cuda" if gpu else "cpu",
                                getattr(first, "dtype", None))
    else:
        variant = registry.find(spec.name, kw["variant"])
    kw = {**kw, "variant": variant.id}
    fn(*args, **kw)  # validates the arguments before anything is timed
    budgeted = {"budget_s": budget, "min_repeat": MIN_REPEAT}
    if variant.backend == "cuda" and on_device:
        stream = _stream_of(kw)
        samples = event_samples(lambda: fn(*args, **kw), stream, repeat, warmup,
                                _flusher(stream, flush_l2), **budgeted)
        timer, where, flushed = "cuda-events", "gpu", bool(flush_l2)
    else:
        samples = host_samples(lambda: fn(*args, **kw), repeat, warmup, **budgeted)
        timer, flushed = "perf_counter", False
        where = "gpu" if variant.backend == "cuda" else "cpu"
    cost = spec.cost(*args, **kw)
    ceil = ceilings(where)
    med = statistics.median(samples)
    gbps = cost.bytes / med / 1e6
    gflops = cost.flops / med / 1e6
    unit_rate = None
    if spec.unit is not None:
        unit_rate = spec.unit.count(*args, **kw) / (med / 1e3) / spec.unit.scale
    array = _first_array(args)
    result = BenchResult(
        op=spec.name, variant=variant.id, variant_name=variant.name, backend=variant.backend,
        params={k: v for k, v in kw.items() if k not in ("variant", "out", "stream")},
        device=ceil["device"], size=spec.size(*args, **kw),
        dtype=str(array.dtype) if array is not None else "",
        transfers_included=variant.backend == "cuda" and not on_device, timer=timer,
        median_ms=med, min_ms=min(samples), max_ms=max(samples), samples=samples,
        bytes=cost.bytes, flops=cost.flops, gbps=gbps, gflops=gflops,
        frac_copy=gbps / ceil["copy_gbps"], frac_fma=gflops / ceil["fma_gflops"],
        bound=bound_of(cost, ceil), l2_flushed=flushed,
        unit=spec.unit.name if spec.unit else None, unit_rate=unit_rate)
    if peers and on_device:
        result.peers = _time_peers(spec, args, kw, repeat if budget is None else len(samples),
                                   OP_WARMUP if warmup is None else warmup, flush_l2, med,
                                   cost.bytes)
    return result


def _is_count(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_bench_options(fn, repeat, warmup, budget_s):
    """fn's OpSpec, or None for a callable that is not a gpulab op; raises on bad options."""
    if not callable(fn):
        raise TypeError(f"bench() times a callable: a gpulab op (gl.saxpy, ...) or any function "
                        f"(lambda: np.sort(a), ...); got {type(fn).__name__} {fn!r:.60}")
    if repeat is not None and (not _is_count(repeat) or repeat < 1):
        raise ValueError(f"repeat must be an integer >= 1 (timed calls), got {repeat!r}")
    if warmup is not None and (not _is_count(warmup) or warmup < 0):
        raise ValueError(f"warmup must be an integer >= 0 (untimed calls) or None, got "
                         f"{warmup!r}")
    if budget_s is not None and (not isinstance(budget_s, (int, float)) or
                                 isinstance(budget_s, bool) or not budget_s > 0):
        raise ValueError(f"budget_s must be a positive number of seconds (math.inf: no budget) "
                         f"or None, got {budget_s!r}")
    return getattr(fn, "__gpulab_op__", None)


# ---------------------------------------------------------------- any callable


def _bench_callable(fn, args, kw, repeat, warmup, budget_s, flush_l2, peers):
    """bench() of a callable that is not a gpulab op (see bench)."""
    name = _callable_name(fn)
    if peers:
        raise ValueError(f"peers=True times a gpulab op's CuPy and PyTorch equivalents; {name} "
                         f"is not a gpulab op, so it has none")
    repeat = CALLABLE_REPEAT if repeat is None else repeat
    budget_s = CALLABLE_BUDGET_S if budget_s is None else budget_s
    budget = None if math.isinf(budget_s) else budget_s
    if warmup is None and budget is None:
        warmup = OP_WARMUP
    call = functools.partial(fn, *args, **kw)
    returned = call()  # untimed: errors surface here, and what it returns shows where it ran
    gpu = _core.cuda_available()
    library = _device_library(fn, args, kw, returned) if gpu else None
    budgeted = {"budget_s": budget, "min_repeat": MIN_REPEAT}
    if library is not None:
        stream = _current_stream(library)
        samples = event_samples(call, stream, repeat, warmup, _flusher(stream, flush_l2),
                                **budgeted)
        timer, flushed = "cuda-events", bool(flush_l2)
        device = _gpu_name()
    else:
        samples = host_samples(call, repeat, warmup,
                               after=_synchronize_gpu if gpu else None, **budgeted)
        timer, flushed, device = "perf_counter", False, _cpu_name()
    array = _first_array(list(args) + list(kw.values()))
    med = statistics.median(samples)
    return BenchResult(
        op=name, variant=None, variant_name="", backend="cuda" if library else "cpu",
        params={k: v if _is_plain(v) else type(v).__name__ for k, v in kw.items()},
        device=device, size=_numel(array), dtype=str(array.dtype) if array is not None else "",
        transfers_included=False, timer=timer, median_ms=med, min_ms=min(samples),
        max_ms=max(samples), samples=samples, bytes=None, flops=None, gbps=None, gflops=None,
        frac_copy=None, frac_fma=None, bound="", l2_flushed=flushed)


def _callable_name(fn) -> str:
    """What a result calls fn: its qualified name ('<lambda>', 'sort', 'Model.forward'),
    less the functions it was defined in."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = (getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
            or type(fn).__name__)
    return name.rpartition("<locals>.")[2]


def _is_plain(value):
    return value is None or isinstance(value, (bool, int, float, str))


def _numel(array):
    if array is None:
        return 0
    n = getattr(array, "numel", None)  # PyTorch's numel is a method; NumPy's size a number
    return int(n()) if callable(n) else int(getattr(array, "size", 0))


def _values_seen_by(fn, depth=0):
    """The objects fn works on besides its arguments: its closure's cells, the globals its
    code names (a notebook's arrays are globals), and a partial's or a bound method's own."""
    if depth > 2:
        return
    if isinstance(fn, functools.partial):
        yield from fn.args
        yield from fn.keywords.values()
        yield from _values_seen_by(fn.func, depth + 1)
        return
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, type(sys)):
        yield owner
    code, scope = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # a cell not yet filled
            pass
    if code is not None:
        for name in code.co_names:
            if name in scope:
                yield scope[name]


def _device_library(fn, args, kw, returned) -> Optional[str]:
    """'cupy', 'torch', 'gpulab' or 'other': the library of the first device array among fn's
    arguments, the objects it works on and what it returned; None when there is none."""
    def spread(values):
        for value in values:
            yield value
            if isinstance(value, (tuple, list)):
                yield from value[:8]
            elif isinstance(value, dict):
                yield from list(value.values())[:8]

    candidates = spread([*args, *kw.values(), returned, *_values_seen_by(fn)])
    for value in candidates:
        # a class (cupy.ndarray) has the array protocol's attributes, but holds no data
        if isinstance(value, (np.ndarray, type)):
            continue
        try:
            if not _is_device(value):
                continue
        except Exception:  # whatever an object's protocol raises, it is no GPU array of ours
            continue
        if isinstance(value, _core.DeviceArray):
            return "gpulab"
        module = type(value).__module__.split(".")[0]
        return module if module in ("cupy", "torch") else "other"
    return None


def _current_stream(library):
    """The stream a library's work goes to now, as something Event.record takes."""
    if library == "gpulab":
        return _core._library_stream()
    if library in ("cupy", "torch"):
        return _peers.stream_handle(library)
    return 0  # the legacy default stream: Numba's and most others' default


def _synchronize_gpu():
    """Waits for the GPU work that a callable may have queued: gpulab's stream, and the whole
    device through CuPy or PyTorch when either is loaded (gpulab's core binds no device-wide
    synchronize)."""
    _core.synchronize()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        cupy.cuda.runtime.deviceSynchronize()


_gpu_names = {}


def _gpu_name():
    if "name" not in _gpu_names:
        _gpu_names["name"] = _core.device_info(0)["name"]
    return _gpu_names["name"]
