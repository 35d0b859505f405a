"""sweep(): bench() over the cross product of list-valued keyword arguments."""

import collections
import difflib
import inspect
import itertools
import sys
import warnings
from typing import List

from . import registry
from .bench import BENCH_OPTIONS, RESULT_FORMATS, bench, result_row
from .table import html_table, text_table

# Options of sweep() itself, beside bench()'s.
SWEEP_OPTIONS = ("progress",)


class SweepSkippedWarning(UserWarning):
    """sweep() timed nothing: the op refused every combination of the grid."""


class SweepResults(list):
    """A list of BenchResult; .skipped lists the combinations the op refused, with why."""

    def __init__(self, results=(), skipped=()):
        super().__init__(results)
        self.skipped: List[tuple] = list(skipped)

    def to_pandas(self):
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from e
        rows = []
        for r in self:
            row = r.to_dict()
            row.pop("samples")
            peers = row.pop("peers")
            row.update(row.pop("params"))
            for name, p in peers.items():
                row[f"{name}_ms"] = p["median_ms"]
                row[f"{name}_speedup"] = p["speedup"]
            rows.append(row)
        return pd.DataFrame(rows)

    def _table(self):
        """(caption, columns, rows): one row per result, each swept parameter a column."""
        rows = [result_row(r, params_as_columns=True) for r in self]
        columns = list(dict.fromkeys(c for row in rows for c in row))
        ops = ", ".join(dict.fromkeys(r.op for r in self)) or "sweep"
        caption = f"{ops}: {len(self)} results, {len(self.skipped)} skipped"
        return caption, columns, [[row.get(c) for c in columns] for row in rows]

    def __repr__(self):
        caption, columns, rows = self._table()
        formatted = [[RESULT_FORMATS[c](v) if c in RESULT_FORMATS and v is not None else v
                      for c, v in zip(columns, row)] for row in rows]
        lines = [caption] + ([text_table(columns, formatted)] if rows else [])
        lines += [f"skipped {combo}: {why}" for combo, why in self.skipped]
        return "\n".join(lines)

    __str__ = __repr__

    def _repr_html_(self):
        """One row per result, each swept parameter a column, then the skipped combinations
        with why (Jupyter shows this)."""
        caption, columns, rows = self._table()
        parts = [html_table(columns, rows, caption=caption, formats=RESULT_FORMATS)]
        if self.skipped:
            skipped = [[", ".join(f"{k}={v}" for k, v in combo.items()) or "-", why]
                       for combo, why in self.skipped]
            parts.append("<details><summary>skipped</summary>"
                         + html_table(["combination", "why"], skipped) + "</details>")
        return "".join(parts)


def _is_grid(value):
    return isinstance(value, (list, tuple, range))


def _progress(total, enabled, desc="sweep"):
    """A tqdm bar when tqdm is installed and enabled, else None."""
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
        return tqdm(total=total, desc=desc, leave=False)
    except ImportError:
        return None


def valid_keywords(fn, positional: int):
    """The keywords sweep(fn, <positional args>, ...) takes, by kind: 'arguments' (fn's
    parameters after those the positional args fill), 'tunables' (a gpulab op's variants'
    tunables, for an op that takes them as **tunables), 'options' (bench's and sweep's). None
    for 'arguments' when fn takes any keyword (a plain **kwargs)."""
    spec = getattr(fn, "__gpulab_op__", None)
    tunables = []
    if spec is not None:
        for v in registry.variants(spec.name):
            tunables += [t for t in v.tunables if t not in tunables]
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: anything goes
        params = None
    arguments = None
    if params is not None:
        open_ended = any(p.kind == p.VAR_KEYWORD for p in params)
        named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        takes_positional = [p for p in params if p.kind != p.KEYWORD_ONLY and
                            p.kind != p.VAR_KEYWORD]
        filled = {p.name for p in takes_positional[:positional]
                  if p.kind != p.VAR_POSITIONAL}
        if not open_ended or spec is not None:
            arguments = [p.name for p in named if p.name not in filled]
    return {"arguments": arguments, "tunables": tunables,
            "options": list(BENCH_OPTIONS) + list(SWEEP_OPTIONS)}


def _check_keywords(fn, positional, kw):
    """Raises TypeError for a keyword that neither fn, its variants nor bench() take."""
    valid = valid_keywords(fn, positional)
    if valid["arguments"] is None:
        return
    known = set(valid["arguments"]) | set(valid["tunables"]) | set(valid["options"])
    unknown = [k for k in kw if k not in known]
    if not unknown:
        return
    name = getattr(getattr(fn, "__gpulab_op__", None), "name", None) or getattr(
        fn, "__name__", repr(fn))
    hints = []
    for k in unknown:
        close = difflib.get_close_matches(k, sorted(known), n=1)
        hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    listed = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in valid.items() if names)
    raise TypeError(f"sweep({name}): unknown keyword{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(hints)}; valid keywords are {listed}")


def _skip_summary(skipped, most=3):
    """The distinct reasons of skipped combinations, commonest first, each with its count."""
    counts = collections.Counter(why for _, why in skipped)
    lines = [f"{n} x {why}" for why, n in counts.most_common(most)]
    if len(counts) > most:
        lines.append(f"... and {len(counts) - most} other reasons (see .skipped)")
    return "; ".join(lines)


def sweep(fn, *args, progress=True, **kw) -> SweepResults:
    """Returns the SweepResults of bench(fn, *args, ...) for every combination of the
    list-valued keywords, e.g. ``sweep(gl.saxpy, 2.0, dx, dy, variant=[0, 1, 2],
    block=[64, 128, 256])``. Scalar keywords (and bench's own: repeat, warmup, budget_s,
    flush_l2, peers) apply to every run. A combination the op rejects (a CPU variant given a
    block, say) is skipped and recorded in .skipped; when every one is skipped, a
    SweepSkippedWarning says why. A keyword that fn does not take (a typo: blcok=) raises
    TypeError before anything runs, naming it and listing the valid ones."""
    _check_keywords(fn, len(args), kw)
    grid = {k: list(v) for k, v in kw.items() if _is_grid(v) and k not in BENCH_OPTIONS}
    fixed = {k: v for k, v in kw.items() if k not in grid}
    combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    bar = _progress(len(combos), progress)
    results, skipped = [], []
    try:
        for i, combo in enumerate(combos):
            try:
                results.append(bench(fn, *args, **fixed, **combo))
            except (ValueError, TypeError) as e:
                skipped.append((combo, str(e)))
            if bar is not None:
                bar.update(1)
            elif progress:
                print(f"\rsweep {i + 1}/{len(combos)}", end="", file=sys.stderr, flush=True)
    finally:  # Ctrl-C as well: the progress line ends before the traceback or the next prompt
        if bar is not None:
            bar.close()
        elif progress and combos:
            print(file=sys.stderr)
    if combos and not results:
        warnings.warn(f"sweep timed nothing: all {len(combos)} combinations were skipped: "
                      f"{_skip_summary(skipped)}", SweepSkippedWarning, stacklevel=2)
    return SweepResults(results, skipped)
