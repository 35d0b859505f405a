"""sweep(): bench() over the cross product of list-valued keyword arguments."""

import itertools
import sys
from typing import List

from .bench import BENCH_OPTIONS, bench


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


def sweep(fn, *args, progress=True, **kw) -> SweepResults:
    """Runs bench(fn, *args, ...) for every combination of the list-valued keywords, e.g.
    ``sweep(gl.saxpy, 2.0, dx, dy, variant=[0, 1, 2], block=[64, 128, 256])``. Scalar keywords
    (and bench's own: repeat, warmup, flush_l2, peers) apply to every run. A combination the op
    rejects (a CPU variant given a block, say) is skipped and recorded in .skipped."""
    grid = {k: list(v) for k, v in kw.items() if _is_grid(v) and k not in BENCH_OPTIONS}
    fixed = {k: v for k, v in kw.items() if k not in grid}
    combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    bar = _progress(len(combos), progress)
    results, skipped = [], []
    for i, combo in enumerate(combos):
        try:
            results.append(bench(fn, *args, **fixed, **combo))
        except (ValueError, TypeError) as e:
            skipped.append((combo, str(e)))
        if bar is not None:
            bar.update(1)
        elif progress:
            print(f"\rsweep {i + 1}/{len(combos)}", end="", file=sys.stderr, flush=True)
    if bar is not None:
        bar.close()
    elif progress and combos:
        print(file=sys.stderr)
    return SweepResults(results, skipped)
