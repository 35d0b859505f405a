"""The streams lab: what streams, events and graphs buy, measured.

    gl.streams.overlap(n, chunks=8, streams=4, order="depth", intensity=k)
    gl.streams.concurrent_kernels(k=5, duration_ms=10)
    gl.streams.stream_cost()
    gl.streams.graph_vs_launch(1000)
    gl.streams.producer_consumer(wait=True)
    gl.streams.matvec(rows, cols, streams=[1, 2, 4, 8])

Each returns a Table (rows of dicts; .to_pandas() for plotting), overlap an OverlapResult. All
of them need a GPU and raise NoDeviceError without one."""

import statistics
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import _core
from ._args import choice_arg, close, int_arg, int_list, progress_bar, tick
from ..table import Table, summary

# Nothing lifted to gpulab's top level: users reach this lab as a module (gl.streams.*).
EXPORTS = ()

ORDERS = ("depth", "breadth")
STAGES = ("h2d", "kernel", "d2h")


def _real_arg(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    value = float(value)
    if not low <= value <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value}")
    return value


def _stage_reference(x, intensity):
    """f of the overlap kernel in float64, with the kernel's float32 constants."""
    a, b = float(np.float32(0.999)), float(np.float32(0.001))
    v = x.astype(np.float64)
    for _ in range(intensity):
        v = v * a + b
    return v


def _stage_tolerance(intensity):
    """The kernel rounds each of its FMAs to float32 (at most 2^-24 for values below 1) and the
    map shrinks earlier errors only by 0.999 a step, so they add up over the last ~1000 steps."""
    return 2.0 ** -24 * min(intensity, 1000) * 1.01 + 1e-7


@dataclass
class OverlapResult:
    n: int
    chunks: int
    streams: int
    order: str
    intensity: int
    serial_ms: float  # one stream, whole array, stage after stage
    overlapped_ms: float  # chunked over streams
    h2d_ms: float  # the stages of the serial run, each over the whole array
    kernel_ms: float
    d2h_ms: float
    ideal_ms: float  # the slowest stage: what perfect overlap would take
    efficiency: float  # ideal_ms / overlapped_ms (1 is perfect overlap)
    speedup: float  # serial_ms / overlapped_ms
    correct: bool
    samples: dict = field(default_factory=dict)
    timeline: Table = field(default_factory=Table)  # one bar per chunk and stage

    def to_dict(self):
        d = asdict(self)
        d["timeline"] = list(self.timeline)
        return d

    def to_pandas(self):
        """The summary as a one-row DataFrame (the bars: .timeline.to_pandas())."""
        import pandas as pd
        d = self.to_dict()
        d.pop("timeline")
        d.pop("samples")
        return pd.DataFrame([d])

    def __str__(self):
        return (f"overlap n={self.n} chunks={self.chunks} streams={self.streams} "
                f"{self.order}-first intensity={self.intensity}: serial {self.serial_ms:.3f} ms, "
                f"overlapped {self.overlapped_ms:.3f} ms, ideal {self.ideal_ms:.3f} ms "
                f"(efficiency {self.efficiency:.2f}, speedup {self.speedup:.2f})")


def overlap(n=1 << 24, chunks=8, streams=4, order="depth", intensity=1, repeat=5, seed=0):
    """S0's V1/V2 and S3's chunked pipeline over pinned memory: H2D -> kernel -> D2H of n floats,
    where the kernel does `intensity` FMAs per element (raise it to make the kernel as slow as a
    copy, S0's r >= c/b). Times, medians of `repeat` runs: the serial run (one stream, whole
    array; its stages give h2d_ms, kernel_ms, d2h_ms), the chunked run (`chunks` chunks over
    `streams` streams, issued depth-first or breadth-first), and the ideal, the slowest stage.
    .timeline holds one bar per chunk and stage of a further run with events around every
    operation (start = when the stream reached it). The result is checked against NumPy on up
    to 65536 elements."""
    n = int_arg("n", n, 1, 1 << 34)
    chunks = int_arg("chunks", chunks, 1, min(n, 4096))
    streams = int_arg("streams", streams, 1, 64)
    order = choice_arg("order", order, ORDERS)
    intensity = int_arg("intensity", intensity, 0, 1 << 20)
    repeat = int_arg("repeat", repeat, 1, 1000)
    x = _core.pinned_empty(n, dtype=np.float32)
    y = _core.pinned_empty(n, dtype=np.float32)
    x[:] = np.random.default_rng(seed).random(n, dtype=np.float32)
    breadth = order == "breadth"
    runs = [_core._streamlab_overlap(x, y, chunks, streams, breadth, intensity, False)
            for _ in range(repeat + 1)][1:]  # the first is untimed
    bars = _core._streamlab_overlap(x, y, chunks, streams, breadth, intensity, True)["timeline"]
    keys = ("serial_ms", "overlapped_ms", "h2d_ms", "kernel_ms", "d2h_ms")
    samples = {k: [r[k] for r in runs] for k in keys}
    med = {k: statistics.median(v) for k, v in samples.items()}
    ideal = max(med["h2d_ms"], med["kernel_ms"], med["d2h_ms"])
    check = np.random.default_rng(seed + 1).choice(n, size=min(n, 65536), replace=False)
    error = np.max(np.abs(y[check] - _stage_reference(x[check], intensity)))
    correct = bool(error <= _stage_tolerance(intensity))
    timeline = Table(
        [{"chunk": c, "stream": c % streams, "stage": stage, "start_ms": float(bars[c, s, 0]),
          "end_ms": float(bars[c, s, 1])}
         for c in range(chunks) for s, stage in enumerate(STAGES)],
        {"measure": "overlap timeline", "order": order})
    return OverlapResult(n=n, chunks=chunks, streams=streams, order=order, intensity=intensity,
                         serial_ms=med["serial_ms"], overlapped_ms=med["overlapped_ms"],
                         h2d_ms=med["h2d_ms"], kernel_ms=med["kernel_ms"], d2h_ms=med["d2h_ms"],
                         ideal_ms=ideal, efficiency=ideal / med["overlapped_ms"],
                         speedup=med["serial_ms"] / med["overlapped_ms"], correct=correct,
                         samples=samples, timeline=timeline)


def concurrent_kernels(k=5, duration_ms=10.0, repeat=3):
    """S1's sleeping kernels: k kernels of one warp that each sleep duration_ms, all in one
    stream (they run one after the other: about k * duration) and in k streams (they overlap:
    about duration)."""
    k = int_arg("k", k, 1, 1024)
    duration_ms = _real_arg("duration_ms", duration_ms, 0.0, 1000.0)
    repeat = int_arg("repeat", repeat, 1, 1000)
    runs = [_core._streamlab_concurrent(k, duration_ms) for _ in range(repeat)]
    one = statistics.median(r[0] for r in runs)
    many = statistics.median(r[1] for r in runs)
    return Table([{"kernels": k, "duration_ms": duration_ms, "one_stream_ms": one,
                   "k_streams_ms": many, "speedup": one / many}],
                 {"measure": "concurrent_kernels", "repeat": repeat})


def stream_cost(count=1000, repeat=3):
    """Host time of cudaStreamCreate/Destroy and cudaEventCreate/Destroy, us per call, over
    `count` objects at a time (median of `repeat` rounds). S2 measured 17-33 us per stream."""
    count = int_arg("count", count, 1, 100000)
    repeat = int_arg("repeat", repeat, 1, 1000)
    runs = [_core._streamlab_object_cost(count) for _ in range(repeat)]
    rows = []
    for obj in ("stream", "event"):
        for action in ("create", "destroy"):
            values = [r[f"{obj}_{action}_us"] for r in runs]
            rows.append({"object": obj, "action": action, "us": statistics.median(values),
                         "min_us": min(values), "max_us": max(values)})
    return Table(rows, {"measure": "stream_cost", "count": count, "repeat": repeat})


def graph_vs_launch(n_kernels=1000, repeat=5, progress=True):
    """Per-launch host cost (launch to completion) of n one-thread kernels launched one by one,
    and of the same n captured once into a CUDA graph and replayed (instantiation reported
    apart). n_kernels may be a list. correct: the kernels' counter saw every launch."""
    counts = int_list("n_kernels", n_kernels, 1)
    if max(counts) > 1000000:
        raise ValueError("n_kernels must be <= 1000000")
    repeat = int_arg("repeat", repeat, 1, 1000)
    rows = []
    bar = progress_bar(len(counts), progress, "graph_vs_launch")
    try:
        for n in counts:
            r = _core._streamlab_graph(n, repeat)
            rows.append({"kernels": n, "launch_us": r["launch_us"], "graph_us": r["graph_us"],
                         "speedup": r["launch_us"] / r["graph_us"],
                         "instantiate_us": r["instantiate_us"],
                         "correct": r["counted"] == 2 * n * (repeat + 1)})
            tick(bar)
    finally:
        close(bar)
    return Table(rows, {"measure": "graph_vs_launch", "repeat": repeat})


def producer_consumer(chunks=16, chunk_elems=1 << 16, delay_ms=1.0, wait=True):
    """Events across streams (S3): a producer stream writes `chunks` chunks, each after sleeping
    delay_ms on purpose, and records an event per chunk; a consumer stream checks every word of
    each chunk. With wait=True the consumer waits on each chunk's event (cudaStreamWaitEvent) and
    must find no incomplete chunk; wait=False shows the hazard that the wait prevents."""
    chunks = int_arg("chunks", chunks, 1, 4096)
    chunk_elems = int_arg("chunk_elems", chunk_elems, 1, 1 << 28)
    delay_ms = _real_arg("delay_ms", delay_ms, 0.0, 1000.0)
    if not isinstance(wait, (bool, np.bool_)):
        raise TypeError(f"wait must be a bool, not {type(wait).__name__}")
    bad = _core._streamlab_producer_consumer(chunks, chunk_elems, delay_ms, bool(wait))
    return Table([{"chunks": chunks, "chunk_elems": chunk_elems, "delay_ms": delay_ms,
                   "wait": bool(wait), "bad_chunks": bad}], {"measure": "producer_consumer"})


def matvec(rows=8192, cols=8192, streams=(1, 2, 4, 8, 16), repeat=5, seed=0, progress=True):
    """S2 task 4: y = A x with A's rows split over M streams, each copying its rows from pinned
    memory, multiplying and copying its part of y back, for each M of `streams`. More streams
    overlap more of A's copy with the kernels, until the copy engine is the bottleneck: the
    speedup over M = 1 flattens there. Each M's y is checked against NumPy."""
    rows = int_arg("rows", rows, 1, 1 << 20)
    cols = int_arg("cols", cols, 1, 1 << 20)
    counts = int_list("streams", streams, 1)
    if max(counts) > min(rows, 64):
        raise ValueError(f"streams must be <= min(rows, 64) = {min(rows, 64)}")
    repeat = int_arg("repeat", repeat, 1, 1000)
    rng = np.random.default_rng(seed)
    a = _core.pinned_empty((rows, cols), dtype=np.float32)
    x = _core.pinned_empty(cols, dtype=np.float32)
    y = _core.pinned_empty(rows, dtype=np.float32)
    a[:] = rng.standard_normal((rows, cols), dtype=np.float32)
    x[:] = rng.standard_normal(cols, dtype=np.float32)
    ref = a.astype(np.float64) @ x.astype(np.float64)
    scale = np.abs(a) @ np.abs(x)  # bounds the rounding error of each row's sum
    out = []
    bar = progress_bar(len(counts), progress, "matvec")
    try:
        for m in counts:
            y[:] = np.nan
            samples = [_core._streamlab_matvec(a, x, y, m) for _ in range(repeat + 1)][1:]
            s = summary(samples)
            err = float(np.max(np.abs(y - ref) / np.maximum(scale, 1e-30)))
            out.append({"streams": m, "rows": rows, "cols": cols, **s,
                        "gbps": a.nbytes / s["median_ms"] / 1e6, "max_rel_error": err,
                        "correct": bool(np.all(np.isfinite(y))) and err < 1e-5})
            tick(bar)
    finally:
        close(bar)
    base = next((r["median_ms"] for r in out if r["streams"] == 1), out[0]["median_ms"])
    for r in out:
        r["speedup"] = base / r["median_ms"]
    return Table(out, {"measure": "matvec", "repeat": repeat,
                       "note": "gbps counts A's bytes copied in"})
