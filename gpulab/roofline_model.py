"""The roofline model (S0 ch. 1, S4's five steps): the device's measured ceilings as roofs, and
each measured op as a point at its arithmetic intensity and achieved GFLOP/s.

    import gpulab as gl
    r = [gl.bench(gl.saxpy, 2.0, dx, dy), gl.bench(gl.nbody_accel, pos, mass, 0.05)]
    gl.roofline(r)                    # a matplotlib Figure (a Table without matplotlib)
    gl.roofline("results.json")       # the points of `python -m gpulab --json results.json`
    gl.roofline(r, table=True)        # the points as a Table: AI, GFLOP/s, attainable, ...

The model is S4's "naive roofline": a kernel of intensity I (flops per byte of main memory)
attains at most P = min(P_peak, I * b_s), where P_peak is the compute ceiling and b_s the
bandwidth ceiling; the ridge point P_peak / b_s separates the memory-bound side (left) from
the compute-bound side (right)."""

import json
import math
import os
import warnings
from dataclasses import dataclass

from . import _core
from .table import Table


# ---------------------------------------------------------------- the model


def _number(value, name, positive=False):
    """value as a float, or a TypeError/ValueError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(
            value, "__float__"):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'} and finite, "
                         f"got {value!r}")
    return value


def arithmetic_intensity(flops, nbytes):
    """Flops per byte of memory traffic (S4's W / Q): the x coordinate of a roofline point.
    flops >= 0; nbytes > 0 (a cost that moves no bytes has no intensity)."""
    return _number(flops, "flops") / _number(nbytes, "nbytes", positive=True)


def ridge_point(peak_gflops, peak_gbps):
    """The intensity (flop/B) where the memory roof meets the compute roof: peak / bandwidth.
    Below it a kernel is memory-bound, above it compute-bound."""
    return (_number(peak_gflops, "peak_gflops", positive=True)
            / _number(peak_gbps, "peak_gbps", positive=True))


def attainable(ai, peak_gflops, peak_gbps):
    """The roofline: the most GFLOP/s a kernel of intensity ai (flop/B) can attain under a
    compute ceiling of peak_gflops and a bandwidth of peak_gbps, min(peak, ai * bandwidth)."""
    ai = _number(ai, "ai")
    return min(_number(peak_gflops, "peak_gflops", positive=True),
               ai * _number(peak_gbps, "peak_gbps", positive=True))


def bound_by(ai, peak_gflops, peak_gbps):
    """Which side of the ridge a kernel of intensity ai lies on: 'memory' at or below the ridge
    point, 'compute' above it (the convention of gpulab.bench.bound_of)."""
    return "compute" if _number(ai, "ai") > ridge_point(peak_gflops, peak_gbps) else "memory"


# ---------------------------------------------------------------- the roofs of a device


@dataclass(frozen=True)
class Roof:
    """One ceiling drawn on the roofline: a bandwidth (kind 'memory', value in GB/s: a slanted
    roof) or a compute rate (kind 'compute', value in GFLOP/s: a flat one). `key` is the
    ceilings() key it comes from."""

    name: str
    kind: str
    value: float
    key: str


# ceilings() key -> (roof name, kind); the first of each kind is the one points are held to
# unless _compute_roof picks another (FP64 for float64, a tensor roof for the tensor-core work)
ROOF_KEYS = (("copy_gbps", "HBM copy", "memory"), ("l2_copy_gbps", "L2 copy", "memory"),
             ("fma_gflops", "FP32 FMA", "compute"), ("fma64_gflops", "FP64 FMA", "compute"),
             ("tensor_f16_gflops", "FP16 tensor", "compute"),
             ("tensor_bf16_gflops", "BF16 tensor", "compute"),
             ("tensor_tf32_gflops", "TF32 tensor", "compute"))
# The GPU's tensor-core roofs: the CPU has none, and a GPU without wgmma has them as None
TENSOR_ROOF_KEYS = ("tensor_f16_gflops", "tensor_bf16_gflops", "tensor_tf32_gflops")
# A result's dtype -> the tensor roof that bounds it (float32 goes by the variant's name: tf32)
TENSOR_ROOF_OF_DTYPE = {"float16": "tensor_f16_gflops", "bfloat16": "tensor_bf16_gflops"}


def roofs_of(ceil):
    """The roofs of a ceilings() dict, in ROOF_KEYS order: the keys it lacks (a file saved
    before the L2, FP64 and tensor-core ceilings were measured) and those it holds as None (no
    tensor cores gpulab can measure on this device) are left out. Main memory is named 'DRAM
    copy' on the CPU."""
    out = []
    for key, name, kind in ROOF_KEYS:
        if ceil.get(key):
            if key == "copy_gbps" and ceil.get("where") == "cpu":
                name = "DRAM copy"
            out.append(Roof(name, kind, float(ceil[key]), key))
    return out


def _ceilings_for(ceilings, where, from_file):
    """The ceilings dict of `where`: from the argument (one ceilings() dict, or a dict of them
    by where, as a results file's meta holds), else from the file, else measured now."""
    source = ceilings if ceilings is not None else from_file
    if source is None:
        from .ceilings import ceilings as measure
        return measure(where)
    if not isinstance(source, dict):
        raise TypeError(f"ceilings must be a dict from gl.ceilings() (or a dict of them by "
                        f"'gpu'/'cpu'), got {type(source).__name__}")
    if "copy_gbps" not in source:
        if where not in source:
            raise ValueError(f"ceilings has no '{where}' entry and no 'copy_gbps': pass "
                             f"gl.ceilings('{where}') or a results file's meta['ceilings']")
        source = source[where]
    for key in ("copy_gbps", "fma_gflops"):
        if key not in source:
            raise ValueError(f"ceilings lacks {key!r}: pass a dict from gl.ceilings()")
        _number(source[key], f"ceilings[{key!r}]", positive=True)
    return source


# ---------------------------------------------------------------- the points


RESULT_KEYS = ("op", "variant", "variant_name", "backend", "bytes", "flops", "gbps", "gflops")


def _as_dict(result, index):
    """A BenchResult or a result dict (as saved in JSON) as a dict with RESULT_KEYS."""
    d = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(d, dict):
        raise TypeError(f"results[{index}] must be a BenchResult or a result dict, got "
                        f"{type(result).__name__}")
    missing = [k for k in RESULT_KEYS if k not in d]
    if missing:
        raise ValueError(f"results[{index}] lacks {', '.join(missing)}: a result dict needs "
                         f"{', '.join(RESULT_KEYS)} (BenchResult.to_dict() has them)")
    if d["backend"] not in ("cuda", "cpu"):
        raise ValueError(f"results[{index}]['backend'] must be 'cuda' or 'cpu', got "
                         f"{d['backend']!r}")
    return d


def load_results(path):
    """(result dicts, meta) from a JSON file of `python -m gpulab --json` (or of a benchmark
    that saves {"meta", "results": [result dicts]})."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError(f"results: {os.fspath(path)!r} holds no 'results' list; expected the "
                         "JSON of `python -m gpulab --json FILE`")
    return data["results"], data.get("meta") or {}


def _normalise(results):
    """(result dicts, meta of the file they came from or None) from any accepted `results`."""
    if results is None:
        return [], None
    if isinstance(results, (str, os.PathLike)):
        found, meta = load_results(results)
        return [_as_dict(r, i) for i, r in enumerate(found)], meta
    if isinstance(results, dict) or hasattr(results, "to_dict"):
        results = [results]
    try:
        items = list(results)
    except TypeError:
        raise TypeError(f"results must be a BenchResult, a result dict, a list of them or a "
                        f"JSON file's path, got {type(results).__name__}") from None
    return [_as_dict(r, i) for i, r in enumerate(items)], None


def _where_of(result):
    return "gpu" if result["backend"] == "cuda" else "cpu"


def _label(result):
    return f"{result['op']}[{result['variant']} {result['variant_name']}]"


def tensor_roof_key(result):
    """The ceilings() key of the tensor-core roof that bounds result (a result dict), or None:
    float16 and bfloat16 data that of their dtype, a matmul variant named tf32 (float32 data
    rounded to TF32 on the tensor cores) TF32's."""
    dtype = str(result.get("dtype", ""))
    if dtype in TENSOR_ROOF_OF_DTYPE:
        return TENSOR_ROOF_OF_DTYPE[dtype]
    if result.get("op") == "matmul" and "tf32" in str(result.get("variant_name", "")):
        return "tensor_tf32_gflops"
    return None


def _compute_roof(result, roofs):
    """The compute roof that bounds result: the tensor-core roof of its dtype (float16,
    bfloat16) or of TF32 (a matmul variant named tf32) where it was measured; FP64 FMA for
    float64 data where it was measured; else FP32 FMA."""
    by_key = {r.key: r for r in roofs}
    tensor = tensor_roof_key(result)
    if tensor in by_key:
        return by_key[tensor]
    if str(result.get("dtype", "")) == "float64" and "fma64_gflops" in by_key:
        return by_key["fma64_gflops"]
    return by_key["fma_gflops"]


def point_row(result, roofs):
    """One Table row for a result dict: where it sits on the roofline and against which roof.

    ai is flops / bytes from the op's cost model; gflops the achieved rate. attainable is
    min(compute roof, ai * HBM copy); fraction = gflops / attainable. A result with no flops
    (a pure copy) sits at ai = 0 on the memory side: attainable and gflops are 0 there, and its
    fraction is taken in the limit, gbps / HBM copy, which is what it is on that side for any
    ai."""
    memory = next(r for r in roofs if r.key == "copy_gbps")
    compute = _compute_roof(result, roofs)
    flops, nbytes = float(result["flops"]), float(result["bytes"])
    if nbytes <= 0:
        raise ValueError(f"results: {_label(result)} moves no bytes, so it has no arithmetic "
                         "intensity to place on a roofline")
    ai = arithmetic_intensity(flops, nbytes)
    roof_gflops = attainable(ai, compute.value, memory.value)
    side = bound_by(ai, compute.value, memory.value)
    if flops == 0:
        fraction = float(result["gbps"]) / memory.value
    else:
        fraction = float(result["gflops"]) / roof_gflops
    return {"label": _label(result), "op": result["op"], "variant": result["variant"],
            "backend": result["backend"], "dtype": str(result.get("dtype", "")), "ai": ai,
            "gflops": float(result["gflops"]), "gbps": float(result["gbps"]),
            "roof": f"{memory.name}/{compute.name}", "attainable": roof_gflops,
            "fraction": fraction, "bound": side}


class RooflineTable(Table):
    """The points of a roofline, one row per result (see point_row), with the roofs in
    .meta['roofs'] and the ridge points in .meta['ridges']; its text shows the roofs too."""

    def __repr__(self):
        lines = [f"Roofline of {self.meta.get('device', '?')} ({self.meta.get('where', '?')})"]
        for roof in self.meta.get("roofs", ()):
            unit = "GB/s" if roof["kind"] == "memory" else "GFLOP/s"
            lines.append(f"  {roof['name']:<9} {roof['value']:12.1f} {unit}")
        for name, value in self.meta.get("ridges", {}).items():
            lines.append(f"  ridge {name}: {value:.3g} flop/B")
        for note in self.meta.get("notes", ()):
            lines.append(f"  note: {note}")
        return "\n".join(lines + ["", super().__repr__()])


def points(results=None, ceilings=None, where=None):
    """The roofline of `where` ('gpu' or 'cpu') as a RooflineTable: one row per result that ran
    there (label, op, variant, backend, dtype, ai, gflops, gbps, roof, attainable, fraction,
    bound), the roofs and ridge points in .meta. Arguments as for roofline()."""
    found, meta = _normalise(results)
    wheres = sorted({_where_of(r) for r in found})
    if where is None:
        if isinstance(ceilings, dict) and ceilings.get("where") in ("gpu", "cpu"):
            where = ceilings["where"]  # one device's ceilings say which roofline this is
        elif len(wheres) > 1:
            raise ValueError("where: the results ran on both the GPU and the CPU, which have "
                             "different roofs; pass where='gpu' or where='cpu'")
        elif wheres:
            where = wheres[0]
        else:
            where = "gpu" if _core.cuda_available() else "cpu"
    if where not in ("gpu", "cpu"):
        raise ValueError(f"where must be 'gpu', 'cpu' or None, got {where!r}")
    ceil = _ceilings_for(ceilings, where, (meta or {}).get("ceilings"))
    roofs = roofs_of(ceil)
    kept = [r for r in found if _where_of(r) == where]
    rows = [point_row(r, roofs) for r in kept]
    memory = [r for r in roofs if r.kind == "memory"]
    ridges = {f"{c.name}/{m.name}": ridge_point(c.value, m.value)
              for c in roofs if c.kind == "compute" for m in memory}
    notes = []
    if any(r["ai"] == 0 for r in rows):
        notes.append("results with no flops (pure copies) sit at ai = 0, off a log axis: "
                     "they are listed here, not plotted, and their fraction is GB/s over the "
                     "HBM copy rate")
    # the CPU has no L2 figure (its caches are per core, not one level every thread shares)
    # and no tensor cores; a GPU's tensor roof is missed only where a point would be held to it
    needed = {tensor_roof_key(r) for r in kept} - {None} if where == "gpu" else set()
    missing = [name for key, name, _ in ROOF_KEYS
               if key not in ceil and not (key == "l2_copy_gbps" and where == "cpu")
               and (key not in TENSOR_ROOF_KEYS or key in needed)]
    if missing:
        notes.append(f"these ceilings lack {', '.join(missing)} (measured before gpulab "
                     "had them)")
    unmeasured = [name for key, name, _ in ROOF_KEYS if key in needed and key in ceil
                  and not ceil[key]]
    if unmeasured:
        notes.append(f"no {', '.join(unmeasured)} roof on this device (see the ceilings' "
                     "method): its float16, bfloat16 and TF32 points are held to FP32 FMA")
    left_out = [_label(r) for r in found if _where_of(r) != where]
    return RooflineTable(rows, {
        "where": where, "device": ceil.get("device", where),
        "roofs": [{"name": r.name, "kind": r.kind, "value": r.value, "key": r.key}
                  for r in roofs],
        "ridges": ridges, "notes": notes, "left_out": left_out,
        "ceilings_method": ceil.get("method", "")})


def roofline(results=None, ax=None, ceilings=None, where=None, table=False):
    """The roofline of the device, with a point for each result.

    results: None (the roofs alone), a BenchResult, a result dict (BenchResult.to_dict(), or
    as loaded from JSON), a list of them, or the path of a `python -m gpulab --json` file (its
    meta's ceilings are then the default ceilings). Each point sits at its arithmetic
    intensity (flops / bytes, the op's cost model) and its achieved GFLOP/s, labelled
    op[variant name].
    ceilings: a gl.ceilings() dict, or a dict of them by 'gpu'/'cpu'; default: the file's,
    else measured now in this process (about a second, once).
    where: 'gpu' or 'cpu'; default: that of the ceilings when they are one device's, else
    where the results ran (an error if on both), else the GPU when there is one. Results
    that ran elsewhere are left out (.meta['left_out']).
    ax: a matplotlib Axes to draw into; default: a new Figure.
    table: True returns the points as a RooflineTable instead of drawing (AI, GFLOP/s,
    attainable, fraction of the roof, bound; see point_row).

    The roofs are the measured ceilings: HBM copy and L2 copy (slanted), FP32 and FP64 FMA
    and, on a GPU with wgmma, the FP16, BF16 and TF32 tensor-core rates (flat); a float64
    point is held to the FP64 roof, a float16 or bfloat16 point to its dtype's tensor roof, a
    matmul variant named tf32 to the TF32 one (FP32 FMA where the device has none). Results
    with no flops (pure copies) cannot sit on a log axis at ai = 0: they are named in a note
    on the figure with their GB/s and fraction of copy, and listed in the table.

    Returns the Figure drawn (or ax, when given); without matplotlib, the RooflineTable, with a
    warning that says how to get the figure."""
    tab = points(results, ceilings, where)
    if table:
        return tab
    try:
        import matplotlib  # noqa: F401 (only to know whether it is there)
    except ImportError:
        warnings.warn("matplotlib is not installed, so gl.roofline() returns its points as a "
                      "Table; pip install matplotlib for the figure", stacklevel=2)
        return tab
    from . import roofline_plot
    return roofline_plot.draw(tab, ax)
