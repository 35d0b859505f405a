"""Table: the rows of one lab measurement (gpulab.memory, gpulab.streams), ready to plot; and
the HTML tables that gpulab's objects show in Jupyter (their _repr_html_)."""

import html
import numbers
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

    def _repr_html_(self):
        """The rows as an HTML table, .meta as its caption (Jupyter shows this)."""
        caption = ", ".join(f"{k}: {_cell(v)}" for k, v in self.meta.items())
        if not self:
            return html_table([], [], caption=caption or "Table (empty)")
        cols = self.columns
        return html_table(cols, [[r[c] if c in r else "" for c in cols] for r in self],
                          caption=caption)

    def __repr__(self):
        if not self:
            return "Table(empty)"
        cols = self.columns
        return text_table(cols, [[r[c] if c in r else "" for c in cols] for r in self])


def _cell(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# Jupyter's own stylesheet styles these; the inline styles only keep them compact and put
# numbers on the right, so that no external CSS is needed.
_TABLE_STYLE = "border-collapse:collapse;font-size:12px"
_CELL_STYLE = "padding:1px 6px;text-align:{align}"


def html_table(columns, rows, caption=None, formats=None) -> str:
    """An HTML <table> of rows (lists of values, one per column), every text escaped; numbers
    are right-aligned and floats shown to 4 significant digits unless formats[column] (a
    function of a number) says otherwise; None shows as a blank cell. caption, when given,
    goes above the table."""
    formats = formats or {}

    def cell(column, value):
        number = isinstance(value, numbers.Number) and not isinstance(value, bool)
        if value is None:
            text = ""
        else:
            text = formats[column](value) if number and column in formats else _cell(value)
        style = _CELL_STYLE.format(align="right" if number else "left")
        return f'<td style="{style}">{html.escape(text)}</td>'

    parts = [f'<table style="{_TABLE_STYLE}">']
    if caption:
        parts.append(f'<caption style="text-align:left">{html.escape(str(caption))}</caption>')
    if columns:
        parts.append("<thead><tr>" + "".join(
            f'<th style="{_CELL_STYLE.format(align="left")}">{html.escape(str(c))}</th>'
            for c in columns) + "</tr></thead>")
    parts.append("<tbody>")
    for row in rows:
        parts.append("<tr>" + "".join(cell(c, v) for c, v in zip(columns, row))
                     + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def text_table(columns, rows, widest=None) -> str:
    """The plain-text twin of html_table: a header line and a line per row; columns of numbers
    are right-aligned, others left-aligned, and text longer than widest (if given) is cut
    with '...'."""
    def text(value):
        out = _cell(value)
        return out if widest is None or len(out) <= widest else out[:widest - 3] + "..."

    cells = [[text(v) for v in row] for row in rows]
    right = [bool(rows) and all(_reads_as_number(row[i]) for row in rows)
             for i in range(len(columns))]
    widths = [max([len(str(c))] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = lambda values: "  ".join(v.rjust(w) if r else v.ljust(w)
                                    for v, w, r in zip(values, widths, right)).rstrip()
    return "\n".join([line([str(c) for c in columns])] + [line(row) for row in cells])


def _reads_as_number(value):
    """Whether a cell holds a number, or a number already formatted ('0.0136', '+4.1')."""
    if isinstance(value, numbers.Number):
        return True
    try:
        float(value)
        return isinstance(value, str)
    except (TypeError, ValueError):
        return False


def summary(samples):
    """median, min and max of a list of times."""
    return {"median_ms": statistics.median(samples), "min_ms": min(samples),
            "max_ms": max(samples)}
