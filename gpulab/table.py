"""Table: the rows of one lab measurement (gpulab.memory, gpulab.streams), ready to plot."""

import statistics


class Table(list):
    """A list of rows (dicts, usually with the same keys; a row without a column shows it blank
    and gives None for it); .meta says what was measured and how."""

    def __init__(self, rows=(), meta=None):
        super().__init__(rows)
        self.meta = dict(meta or {})

    @property
    def columns(self):
        """Every row's keys, in the order they first appear."""
        return list(dict.fromkeys(k for row in self for k in row))

    def column(self, name):
        if self and name not in self.columns:
            raise KeyError(f"{name!r}: no such column; the table has {self.columns}")
        return [row.get(name) for row in self]

    def where(self, **match):
        """The rows whose columns equal the given values, as a Table with the same meta."""
        return Table([r for r in self if all(r.get(k) == v for k, v in match.items())], self.meta)

    def to_pandas(self):
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from e
        return pd.DataFrame(list(self), columns=self.columns or None)

    def to_dict(self):
        return {"meta": self.meta, "rows": list(self)}

    def __repr__(self):
        if not self:
            return "Table(empty)"
        cols = self.columns
        cells = [[_cell(r[c]) if c in r else "" for c in cols] for r in self]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
        return "\n".join(lines)


def _cell(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def summary(samples):
    """median, min and max of a list of times."""
    return {"median_ms": statistics.median(samples), "min_ms": min(samples),
            "max_ms": max(samples)}
