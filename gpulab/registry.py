"""The variant registry, as Python sees it. The ladders live in the C core
(csrc/labs/<lab>/variants.c), one per op; this is a read-only view of them."""

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import _core
from .table import html_table, text_table


@dataclass(frozen=True)
class Variant:
    op: str
    id: int
    name: str
    backend: str  # 'cuda' or 'cpu'
    summary: str
    seed: str
    tunables: Dict[str, dict] = field(default_factory=dict)
    dtypes: tuple = ()
    # ops with modes (reduce's op="sum"|"min"|"max"): the dtypes each mode supports
    support: Dict[str, tuple] = field(default_factory=dict)
    best: bool = False
    # variant=None's pick on its backend for the dtypes it takes that the `best` one does not
    # (matmul's float16 and bfloat16): best(op, backend, dtype) finds it
    best_for_dtypes: bool = False
    deterministic: bool = False
    # a deliberate data race (the concepts lab's demos): results vary, within bounds, and the
    # sanitizer runs that must come out clean leave it to its lab's driver
    racy: bool = False
    # launches kernels from the device (CUDA dynamic parallelism), which compute-sanitizer's
    # initcheck, racecheck and synccheck do not follow: the sanitizer runs give it to memcheck
    device_launches: bool = False
    lab: str = ""  # the lab the op belongs to (csrc/labs/labs.def)
    # CUDA variants: the functions of cuda/<lab>/ it launches (gl.inspect shows their source)
    kernels: tuple = ()
    # those of `kernels` that only some calls launch (the table writes them in parentheses)
    sometimes: tuple = ()
    # a variant that calls a library (e.g. "CUB DeviceReduce::Reduce") instead of our kernels
    library: Optional[str] = None

    def supports(self, mode: str, dtype) -> bool:
        """Whether this variant can run mode (e.g. "min") on dtype; True for ops without
        modes when the dtype is one of its dtypes."""
        import numpy as np
        name = np.dtype(dtype).name
        return name in (self.support.get(mode, ()) if self.support else self.dtypes)

    def inspect(self, **tunables):
        """gl.inspect of this variant: its kernels' source, resources and occupancy."""
        from .inspection import inspect
        return inspect(self.op, self.id, **tunables)

    def __str__(self):
        return f"{self.op}[{self.id}] {self.name} ({self.backend}): {self.summary}"

    def _repr_html_(self):
        """This variant's record as a two-column HTML table (Jupyter shows this)."""
        rows = [[name, value] for name, value in _described(self).items()]
        return html_table(["field", "value"], rows, caption=f"{self.op}[{self.id}] {self.name}")


def _tunables_text(tunables):
    """'block=64|128|256' per tunable, or '-'."""
    parts = [f"{name}={'|'.join(str(v) for v in t.get('values', ()))}" if isinstance(t, dict)
             and t.get("values") else name for name, t in tunables.items()]
    return " ".join(parts) or "-"


def _described(v: Variant) -> dict:
    """The fields of v worth reading, as text, in reading order."""
    out = {"op": v.op, "id": v.id, "name": v.name, "backend": v.backend,
           "best": "yes" if v.best else "for " + " ".join(v.dtypes) if v.best_for_dtypes else "",
           "summary": v.summary, "seed": v.seed,
           "tunables": _tunables_text(v.tunables), "dtypes": " ".join(v.dtypes)}
    flags = [name for name in ("deterministic", "racy", "device_launches")
             if getattr(v, name)]
    out["flags"] = " ".join(flags)
    if v.kernels:
        out["kernels"] = " ".join(f"({k})" if k in v.sometimes else k for k in v.kernels)
    if v.library:
        out["library"] = v.library
    return out


# the columns of a ladder's table: what tells one rung from the next
_LADDER_COLUMNS = ("op", "id", "name", "backend", "best", "tunables", "summary")


class VariantList(list):
    """A list of Variants (what gl.variants() returns): a list in every way, equal to a plain
    list of the same Variants, that prints as a table of the ladder."""

    def _rows(self):
        columns = [c for c in _LADDER_COLUMNS if c != "op" or len({v.op for v in self}) > 1]
        return columns, [[_described(v)[c] for c in columns] for v in self]

    def __repr__(self):
        if not self:
            return "VariantList(empty)"
        return text_table(*self._rows(), widest=72)

    __str__ = __repr__

    def _repr_html_(self):
        """The ladder as an HTML table (Jupyter shows this)."""
        ops = list(dict.fromkeys(v.op for v in self))
        caption = f"{', '.join(ops)}: {len(self)} variants" if ops else "no variants"
        return html_table(*self._rows(), caption=caption)


def _kernel_lists(text):
    """{'kernels', 'sometimes'} from a table's kernel list, "a b (c) (d e)": every name, and the
    ones in parentheses, which only some calls launch."""
    kernels, sometimes, inside = [], [], False
    for word in (text or "").split():
        inside = inside or word.startswith("(")
        name = word.strip("()")
        kernels.append(name)
        if inside:
            sometimes.append(name)
        inside = inside and not word.endswith(")")
    return {"kernels": tuple(kernels), "sometimes": tuple(sometimes)}


_ALL = tuple(Variant(**{**d, "dtypes": tuple(d["dtypes"]),
                         "support": {m: tuple(t) for m, t in d["support"].items()},
                         **_kernel_lists(d["kernels"])})
             for d in _core.variants())


def variants(op: Optional[str] = None) -> VariantList:
    """Every variant of op (or of every op), in ladder order, as a VariantList: a new list
    each call, which prints (and shows in Jupyter) as a table."""
    if op is None:
        return VariantList(_ALL)
    found = VariantList(v for v in _ALL if v.op == op)
    if not found:
        raise ValueError(f"op: unknown op {op!r}; known: {', '.join(ops())}")
    return found


def ops() -> List[str]:
    seen = []
    for v in _ALL:
        if v.op not in seen:
            seen.append(v.op)
    return seen


def find(op: str, variant) -> Variant:
    """The record for variant (an id or a name) of op."""
    for v in variants(op):
        if variant == v.id or variant == v.name:
            return v
    known = ", ".join(f"{v.id} {v.name}" for v in variants(op))
    raise ValueError(f"variant: {op} has no variant {variant!r}; known: {known}")


def best(op: str, backend: str, dtype=None) -> Variant:
    """The variant variant=None runs on backend: the best one, or for a dtype it does not take
    (a NumPy dtype or its name), the variant flagged best_for_dtypes that takes it."""
    first = next(v for v in variants(op) if v.backend == backend and v.best)
    name = _dtype_name(dtype)
    if name is None or name in first.dtypes:
        return first
    return next((v for v in variants(op) if v.backend == backend and v.best_for_dtypes
                 and name in v.dtypes), first)


def _dtype_name(dtype):
    """A dtype's name as the records write it ('float16', 'bfloat16'), from a NumPy dtype, a
    name or a PyTorch dtype (torch.bfloat16); None for None."""
    if dtype is None:
        return None
    try:
        import numpy as np
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype).rpartition(".")[2]
