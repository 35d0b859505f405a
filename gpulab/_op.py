"""What every op declares next to its code: its name, its cost model, its peers and, when it
has one, its own unit of work."""

from dataclasses import dataclass
from typing import Callable, Dict, Optional

from . import nvtx


@dataclass(frozen=True)
class Cost:
    """The least work an op must do: bytes moved through memory (each input read once, each
    output written once) and floating-point operations."""

    bytes: int
    flops: int


@dataclass(frozen=True)
class Unit:
    """An op's own unit of work, for reporting its rate beside GFLOP/s: `name` is the rate's
    label (e.g. "G interactions/s") and `count(*args, **kw)` the number of those things one call
    does (e.g. N^2 interactions). The rate is count / seconds / `scale`, so the default scale of
    1e9 fits a "G.../s" name."""

    name: str
    count: Callable[..., int]
    scale: float = 1e9


@dataclass(frozen=True)
class OpSpec:
    name: str
    cost: Callable[..., Cost]
    # peer name -> setup(*args, **kw) returning a zero-argument callable that does the same
    # work on device arrays in that library (CuPy, PyTorch).
    peers: Dict[str, Callable[..., Callable[[], object]]]
    # element count, for tables
    size: Callable[..., int]
    # example(n, rng) -> NumPy arguments of a problem with about n elements (the main job's)
    example: Callable[..., tuple]
    # sizes the main job runs at: on the GPU, and on the CPU
    demo_size: Dict[str, int]
    # the op's own unit of work (nbody_accel: interactions), or None to report flops only
    unit: Optional[Unit] = None


# op name -> function, in the order the ops were defined
OPS: Dict[str, Callable] = {}


def op(name: str, cost: Callable[..., Cost], size: Callable[..., int], example: Callable,
       demo_size: Dict[str, int], peers: Optional[Dict[str, Callable]] = None,
       unit: Optional[Unit] = None):
    """Marks fn as the gpulab op `name`, so that bench(), sweep() and the main job can run it.
    `unit`, optional: the op's own unit of work, reported beside GFLOP/s (see Unit)."""

    def mark(fn):
        if nvtx.ENABLED:  # a profiler is attached: each call opens an NVTX range
            fn = nvtx.ranged(fn, name)
        fn.__gpulab_op__ = OpSpec(name, cost, dict(peers or {}), size, example, dict(demo_size),
                                  unit)
        OPS[name] = fn
        return fn

    return mark


def example_for(spec: OpSpec, v, n: int, rng) -> tuple:
    """spec.example(n, rng) in a dtype that variant v takes: where v takes none of the example's
    floating-point dtype (matmul's float16 and bfloat16 rungs), its floating-point NumPy arrays
    are cast to v's first dtype; otherwise the example as it is."""
    import numpy as np
    args = spec.example(n, rng)
    first = next((a for a in args if isinstance(a, np.ndarray)), None)
    if v is None or first is None or first.dtype.name in v.dtypes or first.dtype.kind != "f":
        return args
    want = np.dtype(v.dtypes[0])
    return tuple(a.astype(want) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in args)


def spec_of(fn) -> OpSpec:
    spec = getattr(fn, "__gpulab_op__", None)
    if spec is None:
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} is not a gpulab op; bench() and sweep() "
                        "time the functions of gpulab (gl.saxpy, gl.matadd, ...)")
    return spec


def numel(x) -> int:
    """Element count of a NumPy, gpulab, CuPy or PyTorch array."""
    n = getattr(x, "numel", None)
    return int(n()) if callable(n) else int(x.size)


def nbytes(x) -> int:
    size = getattr(x, "element_size", None)
    return numel(x) * int(size()) if callable(size) else int(x.nbytes)
