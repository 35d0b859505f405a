"""Record: one benchmark result with where it came from and whether its output was right.

The store saves Records and load() returns them; compare() takes them. Every shape a result
takes in gpulab becomes a list of Records through ``records_of``:

- a ``BenchResult`` (what ``gl.bench`` returns), a list of them, or a ``SweepResults``;
- a result dict, as ``BenchResult.to_dict()`` writes it and ``python -m gpulab --json`` and
  ``benchmarks/*.py`` save it;
- a whole saved document, ``{"meta": {...}, "results": ...}``: its result dicts are found
  wherever they sit under "results" (``benchmarks/results/reduce_ladder.json`` nests them in
  ``results.ladder_int32.runs``), and its "meta" is their provenance;
- Records themselves (what ``gpulab.store.load`` returns).

A result dict needs every field of BenchResult except those of ``OPTIONAL_FIELDS``, which older
files lack (``nbody_ladder.json`` has no samples; files before the bound column have no bound,
unit or unit_rate). Its fields beyond BenchResult's (nbody's ``ginter_s``, ...) are kept in
``Record.extra``.

The correctness check. A result dict may carry the outcome of checking its output against a
reference: ``"ok": false`` says the check failed, and ``"error": "why"`` says how (an error
with no "ok" also means failed). Without either field the result counts as correct: a
BenchResult carries no check, and bench() times calls whose arguments it validated. compare()
reports failed checks apart from performance.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .bench import BenchResult

# BenchResult's fields that a result dict may lack, and what a missing one becomes ('' for
# bound says "not recorded": such a result is compared on GB/s)
OPTIONAL_FIELDS = {"samples": list, "bound": str, "peers": dict, "unit": lambda: None,
                   "unit_rate": lambda: None}
RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(BenchResult))
CHECK_FIELDS = ("ok", "error")


@dataclass
class Record:
    """A BenchResult with its provenance and its correctness check.

    meta: where it came from. For a saved document, its "meta" (``provenance.metadata()``:
    timestamp, commit, device, driver, cuda_driver, cuda_runtime, build, ...); for a stored
    result, the same plus "tag" and "run" (the id of the save() that stored it).
    ok, error: the check (see the module's docstring). extra: the record's fields beyond
    BenchResult's. id: the row id in the store, None for a record that was not loaded from one.
    """
    result: BenchResult
    meta: Dict[str, object] = field(default_factory=dict)
    ok: bool = True
    error: Optional[str] = None
    extra: Dict[str, object] = field(default_factory=dict)
    id: Optional[int] = None

    @property
    def failed(self) -> bool:
        """Whether the check failed: ok is False, or an error is recorded."""
        return not self.ok or bool(self.error)

    def to_dict(self):
        """The result dict this record came from: BenchResult's fields, the extra ones, and
        the check when it failed."""
        out = {**self.result.to_dict(), **self.extra}
        if self.failed:
            out.update(ok=False, error=self.error)
        return out


def is_result_dict(obj) -> bool:
    return isinstance(obj, dict) and "op" in obj and "median_ms" in obj


def is_document(obj) -> bool:
    return isinstance(obj, dict) and "results" in obj and not is_result_dict(obj)


def record_from_dict(d: dict, where: str, meta: Optional[dict] = None) -> Record:
    """A Record from a result dict; where names the dict in error messages."""
    if not isinstance(d, dict):
        raise TypeError(f"{where} must be a BenchResult or a result dict, got "
                        f"{type(d).__name__}")
    missing = [name for name in RESULT_FIELDS if name not in d and name not in OPTIONAL_FIELDS]
    if missing:
        raise ValueError(f"{where} is not a BenchResult record: it lacks {missing}")
    values = {name: d[name] if name in d else OPTIONAL_FIELDS[name]()
              for name in RESULT_FIELDS}
    _check_types(values, where)
    ok, error = check_of(d, where)
    extra = {k: v for k, v in d.items() if k not in RESULT_FIELDS and k not in CHECK_FIELDS}
    return Record(BenchResult(**values), dict(meta or {}), ok, error, extra)


def check_of(d: dict, where: str):
    """(ok, error) from a result dict's check fields."""
    ok, error = d.get("ok", True), d.get("error")
    if not isinstance(ok, bool):
        raise TypeError(f"{where}['ok'] must be true or false, got {ok!r}")
    if error is not None and not isinstance(error, str):
        raise TypeError(f"{where}['error'] must be a string or null, got {error!r}")
    if error:
        ok = False
    elif not ok:
        error = "check failed (no reason recorded)"
    return ok, error or None


def _check_types(values, where):
    for name in ("op", "variant_name", "backend", "device", "dtype", "timer", "bound"):
        if not isinstance(values[name], str):
            raise TypeError(f"{where}['{name}'] must be a string, got {values[name]!r}")
    for name in ("variant", "size", "bytes", "flops"):
        if not isinstance(values[name], int) or isinstance(values[name], bool):
            raise TypeError(f"{where}['{name}'] must be an integer, got {values[name]!r}")
    for name in ("median_ms", "min_ms", "max_ms", "gbps", "gflops", "frac_copy", "frac_fma"):
        if not _is_number(values[name]):
            raise TypeError(f"{where}['{name}'] must be a number, got {values[name]!r}")
    samples = values["samples"]
    if not isinstance(samples, list) or not all(_is_number(s) for s in samples):
        raise TypeError(f"{where}['samples'] must be a list of numbers")
    for name in ("params", "peers"):
        if not isinstance(values[name], dict):
            raise TypeError(f"{where}['{name}'] must be a dict, got {values[name]!r}")
    for name in ("transfers_included", "l2_flushed"):
        if not isinstance(values[name], bool):
            raise TypeError(f"{where}['{name}'] must be true or false, got {values[name]!r}")
    if values["unit"] is not None and not isinstance(values["unit"], str):
        raise TypeError(f"{where}['unit'] must be a string or null, got {values['unit']!r}")
    if values["unit_rate"] is not None and not _is_number(values["unit_rate"]):
        raise TypeError(f"{where}['unit_rate'] must be a number or null, got "
                        f"{values['unit_rate']!r}")


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def records_of(results, name: str = "results", meta: Optional[dict] = None) -> List[Record]:
    """Every shape of result (see the module's docstring) as a list of Records. meta, when
    given, is the provenance of records that carry none of their own; name is the argument's
    name in error messages."""
    if isinstance(results, (Record, BenchResult)) or is_result_dict(results):
        results = [results]
    if is_document(results):
        doc_meta = results.get("meta") or {}
        if not isinstance(doc_meta, dict):
            raise TypeError(f"{name}['meta'] must be a dict, got {type(doc_meta).__name__}")
        found = list(_result_dicts(results["results"], f"{name}['results']"))
        if not found:
            raise ValueError(f"{name} holds no BenchResult records under 'results' (a record "
                             f"is a dict with 'op' and 'median_ms')")
        return [record_from_dict(d, where, doc_meta or meta) for where, d in found]
    if isinstance(results, (str, bytes, dict)) or not hasattr(results, "__iter__"):
        raise TypeError(f"{name} must be a BenchResult, a list of them, a SweepResults, result "
                        f"dicts or a saved {{'meta', 'results'}} document, got "
                        f"{type(results).__name__}")
    out = []
    for i, item in enumerate(results):
        if isinstance(item, Record):
            out.append(item)
        elif isinstance(item, BenchResult):
            out.append(Record(item, dict(meta or {})))
        else:
            out.append(record_from_dict(item, f"{name}[{i}]", meta))
    return out


def _result_dicts(node, where):
    if is_result_dict(node):
        yield where, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _result_dicts(value, f"{where}[{key!r}]")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _result_dicts(value, f"{where}[{i}]")
