"""bench(): time one op call the way DESIGN.md says: warm up, repeat, take the median, flush L2
between repetitions, and report the rate against the device's own ceilings and against peers."""

import statistics
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

import numpy as np

from . import _core, peers as _peers, registry
from ._op import Cost, spec_of
from .ceilings import ceilings
from .timing import event_samples, host_samples

# Options of bench() itself; every other keyword goes to the op.
BENCH_OPTIONS = ("repeat", "warmup", "flush_l2", "peers")


@dataclass
class BenchResult:
    op: str
    variant: int
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
    bytes: int
    flops: int
    gbps: float
    gflops: float
    frac_copy: float  # of the measured copy bandwidth
    frac_fma: float  # of the measured FP32 FMA rate
    # 'memory' or 'compute': which ceiling bounds this op where it ran (see bound_of); the
    # rate to read is gbps and frac_copy for 'memory', gflops and frac_fma for 'compute'
    bound: str
    l2_flushed: bool
    peers: Dict[str, dict] = field(default_factory=dict)
    unit: Optional[str] = None  # the op's own unit of work, e.g. "G interactions/s"
    unit_rate: Optional[float] = None  # the rate in that unit

    def to_dict(self):
        return asdict(self)

    def __str__(self):
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


def format_rate(value: float) -> str:
    """A rate for a table: one decimal from 1 up; below 1, three significant digits, so that a
    slow but real rate (a CPU's G interactions/s) never prints as 0.0."""
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.3g}"


def format_fraction(value: float) -> str:
    """A fraction of a ceiling: three decimals, or two significant digits below 0.01."""
    return f"{value:.3f}" if abs(value) >= 0.01 else f"{value:.2g}"


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
    return isinstance(obj, _core.DeviceArray) or hasattr(obj, "__cuda_array_interface__") or (
        hasattr(obj, "__dlpack_device__") and not isinstance(obj, np.ndarray)
        and obj.__dlpack_device__()[0] in (2, 13))


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


def bench(fn, *args, repeat=20, warmup=3, flush_l2=True, peers=False, **kw) -> BenchResult:
    """Times fn(*args, **kw) for a gpulab op fn.

    Device arrays in: CUDA events on the op's stream, L2 flushed before each repetition when
    flush_l2. NumPy in: perf_counter around the whole call (a CUDA variant then includes its
    copies in and out; the result says so). peers=True also times the CuPy and PyTorch
    equivalents, in the same run, on the same device arrays."""
    spec = spec_of(fn)
    if repeat < 1 or warmup < 0:
        raise ValueError("repeat must be >= 1 and warmup >= 0")
    on_device = any(_is_device(a) for a in args)
    if kw.get("variant") is None:
        gpu = on_device or _core.cuda_available()
        variant = registry.best(spec.name, "cuda" if gpu else "cpu")
    else:
        variant = registry.find(spec.name, kw["variant"])
    kw = {**kw, "variant": variant.id}
    fn(*args, **kw)  # validates the arguments before anything is timed
    if variant.backend == "cuda" and on_device:
        stream = _stream_of(kw)
        samples = event_samples(lambda: fn(*args, **kw), stream, repeat, warmup,
                                _flusher(stream, flush_l2))
        timer, where, flushed = "cuda-events", "gpu", bool(flush_l2)
    else:
        samples = host_samples(lambda: fn(*args, **kw), repeat, warmup)
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
        result.peers = _time_peers(spec, args, kw, repeat, warmup, flush_l2, med, cost.bytes)
    return result
