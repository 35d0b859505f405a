"""The memory lab: where the bytes go between host and device and inside the device.

    gl.memory.bandwidth_test("h2d", "pinned")   # gpulab's transfer path vs raw cudaMemcpy
    gl.memory.access_pattern()                   # S1's granularity kernels
    gl.memory.pointer_chase()                    # the latency staircase: L1, L2, TLB
    gl.memory.bank_conflicts()                   # shared memory, stride 1..32
    gl.memory.constant_memory()                  # broadcast vs serialised constant reads
    gl.memory.host_bandwidth(), gl.memory.pointer_chase(where="cpu")   # the host's own

Every function returns a Table (rows of dicts; .to_pandas() for plotting). The GPU ones raise
NoDeviceError without a GPU; the host ones run everywhere. Times are the median of `repeat` runs
after an untimed one, with min and max."""

import math
import time

import numpy as np

from .. import _core
from ._args import (choice_arg as _choice, close, int_arg as _int_arg, int_list as _int_list,
                    progress_bar, sizes_arg, tick)
from ..table import Table, summary

# Nothing lifted to gpulab's top level: users reach this lab as a module (gl.memory.*).
EXPORTS = ()

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

DIRECTIONS = ("h2d", "d2h", "d2d")
HOST_MEMORY = ("pageable", "pinned", "mapped", "managed")
# 4 KiB .. 1 GiB in steps of 4x, as bandwidthTest's range mode but coarser.
DEFAULT_SIZES = tuple(4 * KiB << (2 * k) for k in range(10))

ACCESS_PATTERNS = ("coalesced", "mixed", "offset2", "offset4", "offset8", "offset32", "scattered")
_PATTERN_CODES = {"coalesced": 0, "mixed": 1, "offset": 2, "scattered": 3}

CONSTANT_MODES = (("constant", "uniform"), ("constant", "divergent"), ("global", "uniform"),
                  ("global", "divergent"))


# ---- bandwidth ----

def _pattern(nbytes):
    """Distinct 64-bit words, so that a misplaced chunk is caught."""
    words = np.arange(nbytes // 8, dtype=np.uint64)
    words *= np.uint64(0x9E3779B97F4A7C15)
    return words.view(np.uint8)


def _host_buffer(memory, nbytes):
    return _core.pinned_empty(nbytes, dtype=np.uint8) if memory == "pinned" else \
        np.empty(nbytes, dtype=np.uint8)


def _host_timed(call, repeat):
    call()  # untimed
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def _wait_for_allocations():
    """Device arrays come from the stream-ordered pool on the library's stream, which the legacy
    default stream of the raw cudaMemcpy rows does not wait for: until the library's stream has
    caught up, a raw copy could touch memory whose allocation (or an earlier user's free) is
    still pending there. compute-sanitizer's initcheck saw such a copy read "uninitialized"
    memory (docs/labs/memory.md)."""
    _core.synchronize()


def _copy_rows(direction, memory, nbytes, repeat):
    """gpulab's own path and raw cudaMemcpy over the same buffers, in the same run."""
    expected = _pattern(nbytes)
    if direction == "d2d":
        src = _core.empty(nbytes, dtype=np.uint8)
        dst = _core.empty(nbytes, dtype=np.uint8)
        _wait_for_allocations()
        _core._memlab_memcpy(src, expected)

        def ours():
            _core._copy(dst, src)
            _core.synchronize()

        def raw():
            _core._memlab_memcpy(dst, src)

        def arrived():
            return np.array_equal(dst.get(), expected)
    else:
        host = _host_buffer(memory, nbytes)
        dev = _core.empty(nbytes, dtype=np.uint8)
        _wait_for_allocations()
        if direction == "h2d":
            host[:] = expected

            def ours():
                _core._h2d(dev, host, "auto")
                _core.synchronize()

            def raw():
                _core._memlab_memcpy(dev, host)

            def arrived():
                back = np.empty(nbytes, dtype=np.uint8)
                _core._memlab_memcpy(back, dev)
                return np.array_equal(back, expected)
        else:
            _core._memlab_memcpy(dev, expected)

            def ours():
                _core._d2h(host, dev, "auto")

            def raw():
                _core._memlab_memcpy(host, dev)

            def arrived():
                ok = np.array_equal(host, expected)
                host[:] = 0  # so that the next path's copy is checked on its own
                return ok
    ours_samples = _host_timed(ours, repeat)
    intact = arrived()
    raw_samples = _host_timed(raw, repeat)
    intact = arrived() and intact
    rows = []
    for method, samples in (("gpulab", ours_samples), ("cudaMemcpy", raw_samples)):
        s = summary(samples)
        rows.append({"direction": direction, "memory": memory, "bytes": nbytes, "method": method,
                     **s, "gbps": nbytes / s["median_ms"] / 1e6, "intact": intact})
    rows[0]["ratio_to_cudaMemcpy"] = rows[1]["median_ms"] / rows[0]["median_ms"]
    rows[1]["ratio_to_cudaMemcpy"] = 1.0
    return rows


def bandwidth_test(direction="h2d", memory="pinned", sizes=None, max_bytes=None, repeat=5,
                   progress=True):
    """Transfer bandwidth over sizes (default 4 KiB .. 1 GiB in 4x steps), like bandwidthTest.

    direction 'h2d' or 'd2h' with memory:
      'pageable', 'pinned': rows for gpulab's own path (what to_device / DeviceArray.get take:
          the staging ring for pageable memory, a direct copy for pinned) and for raw
          cudaMemcpy, timed alike (host clock, call to completion) in the same run;
          ratio_to_cudaMemcpy > 1 means gpulab was faster;
      'mapped': a kernel reads (h2d) or writes (d2h) mapped pinned host memory (zero-copy);
      'managed': cudaMallocManaged memory that the other side last wrote, touched on demand
          ('on-demand') and after cudaMemPrefetchAsync ('prefetch', prefetch included).
    direction 'd2d' with memory 'device': gpulab's device copy and raw cudaMemcpy.
    Sizes are bytes, multiples of 16; max_bytes drops larger ones. Every row says whether the
    data arrived intact. GB/s counts the bytes moved once."""
    direction = _choice("direction", direction, DIRECTIONS)
    if direction == "d2d":
        memory = _choice("memory", "device" if memory == "pinned" else memory, ("device",))
    else:
        memory = _choice("memory", memory, HOST_MEMORY)
    sizes = sizes_arg(sizes, max_bytes, DEFAULT_SIZES, 16)
    repeat = _int_arg("repeat", repeat, 1, 10000)
    _core._library_stream()  # NoDeviceError, before anything is allocated, without a GPU
    code = 0 if direction in ("h2d", "d2d") else 1
    rows = []
    bar = progress_bar(len(sizes), progress, f"bandwidth {direction} {memory}")
    try:
        for nbytes in sizes:
            if memory == "mapped":
                samples, intact = _core._memlab_mapped(code, nbytes, repeat)
                s = summary(samples)
                rows.append({"direction": direction, "memory": memory, "bytes": nbytes,
                             "method": "zero-copy kernel", **s,
                             "gbps": nbytes / s["median_ms"] / 1e6, "intact": intact})
            elif memory == "managed":
                for prefetch in (False, True):
                    samples, intact = _core._memlab_managed(code, prefetch, nbytes, repeat)
                    s = summary(samples)
                    rows.append({"direction": direction, "memory": memory, "bytes": nbytes,
                                 "method": "prefetch" if prefetch else "on-demand", **s,
                                 "gbps": nbytes / s["median_ms"] / 1e6, "intact": intact})
            else:
                rows.extend(_copy_rows(direction, memory, nbytes, repeat))
            tick(bar)
    finally:
        close(bar)
    return Table(rows, {"measure": "bandwidth_test", "direction": direction, "memory": memory,
                        "repeat": repeat,
                        "timer": "perf_counter" if memory in ("pageable", "pinned", "device")
                        else "cuda-events (managed d2h: host clock)"})


# ---- access patterns ----

def _parse_pattern(name):
    if not isinstance(name, str):
        raise TypeError(f"patterns must be strings, not {type(name).__name__}")
    if name in ("coalesced", "mixed", "scattered"):
        return _PATTERN_CODES[name], 0
    if name.startswith("offset") and name[6:].isdigit() and int(name[6:]) >= 1:
        return _PATTERN_CODES["offset"], int(name[6:])
    raise ValueError(f"unknown pattern {name!r}: use coalesced, mixed, offsetK (K >= 1) or "
                     "scattered")


def access_pattern(patterns=ACCESS_PATTERNS, n=1 << 24, repeat=10, progress=True):
    """S1's granularity kernels over n ints: each thread copies in[id] to out[id] with id from
    the pattern (coalesced; mixed: lane*7 % 32 within the warp's 32 ints; offsetK: id*K % n;
    scattered: id*121 % n). GB/s counts the 8 bytes each thread reads and writes, as S1 does;
    ratio_to_coalesced compares with the coalesced kernel of the same run."""
    if isinstance(patterns, str):
        patterns = [patterns]
    patterns = list(patterns)
    if not patterns:
        raise ValueError("patterns must not be empty")
    parsed = [(p, *_parse_pattern(p)) for p in patterns]
    n = _int_arg("n", n, 32, 1 << 31)
    repeat = _int_arg("repeat", repeat, 1, 10000)
    if "coalesced" not in patterns:
        parsed.insert(0, ("coalesced", 0, 0))
    rows = []
    bar = progress_bar(len(parsed), progress, "access_pattern")
    try:
        for name, code, offset in parsed:
            s = summary(_core._memlab_access(code, offset, n, repeat))
            rows.append({"pattern": name, "n": n, **s, "gbps": 8 * n / s["median_ms"] / 1e6})
            tick(bar)
    finally:
        close(bar)
    base = next(r["gbps"] for r in rows if r["pattern"] == "coalesced")
    for r in rows:
        r["ratio_to_coalesced"] = r["gbps"] / base
    return Table([r for r in rows if r["pattern"] in patterns],
                 {"measure": "access_pattern", "n": n, "repeat": repeat,
                  "seed_gbps": {"coalesced": 255.9, "mixed": 246.3, "offset2": 134.1,
                                "offset4": 73.0, "offset8": 36.8, "offset32": 17.3,
                                "scattered": 8.2}})


# ---- latency staircase ----

# Two sizes per octave: 4 KiB .. 1 GiB on the GPU, 4 KiB .. 256 MiB on the host.
def _octaves(low, high):
    out, k = [], 0
    while True:
        size = int(round(low * 2 ** (k / 2) / 64)) * 64
        if size > high:
            return out
        out.append(size)
        k += 1


DEFAULT_GPU_CHASE_SIZES = tuple(_octaves(4 * KiB, 1 * GiB))
DEFAULT_CPU_CHASE_SIZES = tuple(_octaves(4 * KiB, 256 * MiB))


# The untimed walk before the timed passes covers the whole chain up to this many links: an
# array whose chain is longer is then timed on nodes it never touched, which is also what a
# cyclic walk meets in steady state once the chain outgrows a cache (LRU keeps none of it).
WARM_STEPS_MAX = 1 << 21


def cache_sizes():
    """Where the device's caches end, from device_info (bytes): l2_cache_bytes, and the
    unified L1/shared storage per SM (shared_mem_per_sm is its shared part)."""
    info = _core.device_info(0)
    return {"l2_cache_bytes": info["l2_cache_bytes"],
            "shared_mem_per_sm": info["shared_mem_per_sm"]}


def pointer_chase(sizes=None, strides=(64,), steps=1 << 16, repeat=3, shuffle=True, where="gpu",
                  max_bytes=None, seed=1, progress=True):
    """ns per dependent load: one thread follows a chain of `steps` loads over an array of
    `size` bytes whose nodes lie `stride` bytes apart, visited in a random single cycle
    (shuffle=True) or in order. As the array outgrows a cache (or the TLB's reach) the time per
    load steps up. An untimed walk over the whole chain (up to WARM_STEPS_MAX links) comes
    first; the timed passes go on from where it stopped. where='gpu' (one CUDA thread; default
    sizes 4 KiB .. 1 GiB, two per octave) or 'cpu' (one host thread; 4 KiB .. 256 MiB). Each row
    checks the chase ended on the node that a walk of the same chain on the host ends on."""
    where = _choice("where", where, ("gpu", "cpu"))
    default = DEFAULT_GPU_CHASE_SIZES if where == "gpu" else DEFAULT_CPU_CHASE_SIZES
    sizes = sizes_arg(sizes, max_bytes, default, 4)
    strides = _int_list("strides", strides, 4, 4)
    steps = _int_arg("steps", steps, 1, 1 << 30)
    repeat = _int_arg("repeat", repeat, 1, 1000)
    if not isinstance(shuffle, (bool, np.bool_)):
        raise TypeError(f"shuffle must be a bool, not {type(shuffle).__name__}")
    seed = _int_arg("seed", seed, 0)
    for size in sizes:
        for stride in strides:
            if size < stride:
                raise ValueError(f"size {size} is smaller than stride {stride}")
            if size // 4 >= 1 << 32:
                raise ValueError(f"size {size} exceeds 2^32 words")
    meta = {"measure": "pointer_chase", "where": where, "steps": steps, "repeat": repeat,
            "shuffle": bool(shuffle), "warm_steps_max": WARM_STEPS_MAX}
    if where == "gpu":
        meta.update(cache_sizes())  # raises NoDeviceError without a GPU
    rows = []
    bar = progress_bar(len(sizes) * len(strides), progress, f"pointer_chase {where}")
    try:
        for size in sizes:
            for stride in strides:
                nodes = size // stride
                chain = _core._memlab_chain(nodes, bool(shuffle), seed)
                warm = min(nodes, WARM_STEPS_MAX)
                if where == "gpu":
                    samples, last = _core._memlab_chase(chain, stride // 4, warm, steps, repeat)
                else:
                    samples, last = _core._memlab_cpu_chase(chain, stride // 4, warm, steps,
                                                            repeat)
                s = summary(samples)
                rows.append({"where": where, "bytes": size, "stride": stride, "nodes": nodes,
                             "steps": steps,
                             "ns_per_load": s["median_ms"] * 1e6 / steps,
                             "min_ns": s["min_ms"] * 1e6 / steps,
                             "max_ns": s["max_ms"] * 1e6 / steps,
                             "chain_ok": last == _core._memlab_walk(chain, warm + repeat * steps)})
                tick(bar)
    finally:
        close(bar)
    return Table(rows, meta)


# ---- shared and constant memory ----

def bank_conflicts(strides=range(1, 33), iterations=4096, repeat=5, progress=True):
    """Shared memory time per access stride: every warp reads its 32x32 float tile at word
    (lane * stride + k) % 1024, so gcd(stride, 32) lanes share each bank ('ways') and their loads
    are serialised. slowdown is relative to stride 1 of the same run."""
    strides = _int_list("strides", strides, 1)
    if max(strides) > 1024:
        raise ValueError("strides must be <= 1024")
    iterations = _int_arg("iterations", iterations, 1, 1 << 24)
    repeat = _int_arg("repeat", repeat, 1, 10000)
    base = summary(_core._memlab_bank(1, iterations, repeat))["median_ms"]
    rows = []
    bar = progress_bar(len(strides), progress, "bank_conflicts")
    try:
        for stride in strides:
            s = summary(_core._memlab_bank(stride, iterations, repeat))
            rows.append({"stride": stride, "ways": math.gcd(stride, 32), **s,
                         "slowdown": s["median_ms"] / base})
            tick(bar)
    finally:
        close(bar)
    return Table(rows, {"measure": "bank_conflicts", "iterations": iterations, "repeat": repeat})


def constant_memory(iterations=4096, repeat=5):
    """Table reads from __constant__ memory and from global memory (an 8 KiB table, cached),
    each uniform (one address per warp) and divergent (32 addresses per warp). Constant memory
    broadcasts a uniform read and serialises a divergent one; relative is the time against
    constant uniform."""
    iterations = _int_arg("iterations", iterations, 1, 1 << 24)
    repeat = _int_arg("repeat", repeat, 1, 10000)
    rows = []
    for mode, (memory, access) in enumerate(CONSTANT_MODES):
        samples, loads = _core._memlab_constant(mode, iterations, repeat)
        s = summary(samples)
        rows.append({"memory": memory, "access": access, **s,
                     "gloads_per_s": loads / s["median_ms"] / 1e6})
    for r in rows:
        r["relative"] = r["median_ms"] / rows[0]["median_ms"]
    return Table(rows, {"measure": "constant_memory", "iterations": iterations,
                        "repeat": repeat})


# ---- the host ----

DEFAULT_HOST_SIZES = tuple(4 * KiB << (2 * k) for k in range(9))  # 4 KiB .. 256 MiB
HOST_KINDS = ("read", "write", "copy")


def host_bandwidth(sizes=None, kinds=HOST_KINDS, repeat=5, max_bytes=None, progress=True):
    """The host's memory bandwidth on every OpenMP thread: read (a sum), write (memset) and copy
    (memcpy), over sizes (default 4 KiB .. 256 MiB): the steps show the host's caches. GB/s
    counts the bytes read plus written (copy: twice the size)."""
    sizes = sizes_arg(sizes, max_bytes, DEFAULT_HOST_SIZES, 64)
    if isinstance(kinds, str):
        kinds = [kinds]
    kinds = [_choice("kinds", k, HOST_KINDS) for k in kinds]
    if not kinds:
        raise ValueError("kinds must not be empty")
    repeat = _int_arg("repeat", repeat, 1, 10000)
    rows = []
    bar = progress_bar(len(sizes), progress, "host_bandwidth")
    try:
        for nbytes in sizes:
            a = np.ones(nbytes, dtype=np.uint8)
            b = np.ones(nbytes, dtype=np.uint8)
            for kind in kinds:
                code = HOST_KINDS.index(kind)
                # Small sizes repeat inside each sample so that a sample lasts long enough to time.
                inner = max(1, (8 * MiB) // nbytes)
                samples = []
                for i in range(repeat + 1):
                    seconds = sum(_core._memlab_cpu_bandwidth(code, a, b) for _ in range(inner))
                    if i:
                        samples.append(seconds * 1e3 / inner)
                s = summary(samples)
                moved = 2 * nbytes if kind == "copy" else nbytes
                rows.append({"kind": kind, "bytes": nbytes, **s,
                             "gbps": moved / s["median_ms"] / 1e6})
            tick(bar)
    finally:
        close(bar)
    return Table(rows, {"measure": "host_bandwidth", "repeat": repeat,
                        "threads": _core.build_info()["openmp_threads"]})
