"""gl.inspect(op, variant): the kernels behind a variant, read rather than guessed.

    r = gl.inspect("reduce", 5)      # in Jupyter: highlighted source, tables, SASS
    print(r)                         # the same as text
    r.kernels[0].instances[0].attributes["registers"]

- The source of each kernel the variant launches (and of the __device__ helpers it calls), as
  built: setup.py embeds cuda/ in the package.
- On a GPU, the variant is run once per block size it accepts, on a small problem, with every
  launch noted: so the kernels shown are the ones that really ran, each template instance with
  its registers, static and dynamic shared memory, local memory (spills), its own limit on
  threads per block and its binary's architecture (cudaFuncGetAttributes), and its theoretical
  occupancy at each block size (cudaOccupancyMaxActiveBlocksPerMultiprocessor) with what limits it.
- The SASS of each instance, when cuobjdump is on PATH.
Without a GPU the source is still there, and the rest says why it needs one.
"""

import html
import math
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from . import _core, registry
from ._op import OPS, example_for
from .kernel_source import Snippet, definition, helpers
from .table import Table

# The problem a variant runs on to be inspected: large enough for every pass of a multi-pass
# variant to launch, small enough to take milliseconds.
INSPECT_SIZE = 1 << 16
BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
# Registers are allocated to warps in units of 256 (sm_70 through sm_90, the occupancy
# calculator's "register allocation unit size"), from the register file of the SM sub-partition
# (one of four) the warp runs on: a warp's registers never straddle two.
REGISTER_UNIT = 256
SM_PARTITIONS = 4


@dataclass
class OccupancyRow:
    block: int
    dynamic_shared_bytes: int
    blocks_per_sm: int  # the CUDA occupancy API's figure
    occupancy: float  # resident warps / the SM's maximum
    limited_by: str  # 'registers', 'shared memory', 'threads', 'blocks per SM', ...
    launched: bool  # this configuration ran; other rows are what it would get


@dataclass
class KernelInstance:
    """One compiled instance of a kernel (a template instance is a kernel of its own)."""
    mangled: str
    signature: str
    attributes: Dict[str, int]
    launches: List[dict]  # {grid, block, shared_bytes} of each distinct launch noted
    occupancy: List[OccupancyRow] = field(default_factory=list)
    sass: Optional[str] = None


@dataclass
class KernelView:
    name: str
    source: Optional[Snippet]
    helpers: List[Snippet]
    instances: List[KernelInstance] = field(default_factory=list)


@dataclass
class Inspection:
    variant: registry.Variant
    tunables: Dict[str, int]
    kernels: List[KernelView]
    launched: Optional[set] = None  # names of the kernels noted at launch; None without a GPU
    launches_counted: int = 0
    gpu_note: Optional[str] = None  # why resources and occupancy are missing
    sass_note: Optional[str] = None  # why the SASS is missing

    @property
    def undeclared(self) -> List[str]:
        """Kernels that ran but that the variant table does not name (should be empty)."""
        return sorted((self.launched or set()) - set(self.variant.kernels))

    def __str__(self):
        v = self.variant
        out = [f"{v.op}[{v.id}] {v.name}: {v.summary}"]
        if v.library:
            out.append(f"Calls {v.library}: the kernels are the library's; ours makes the call.")
        if self.gpu_note:
            out.append(self.gpu_note)
        for k in self.kernels:
            out.append("")
            where = f"{k.source.path}:{k.source.line}" if k.source else "source not found"
            out.append(f"== {k.name}  ({where})")
            if k.source:
                out.append(k.source.text)
            for h in k.helpers:
                out.append(f"-- helper {h.name} ({h.path}:{h.line})\n{h.text}")
            for inst in k.instances:
                out.append(f"-- {inst.signature}")
                out.append(str(resource_table([inst])))
                out.append(str(occupancy_table(inst)))
                if inst.sass:
                    out.append(inst.sass)
        if self.sass_note:
            out.append(self.sass_note)
        return "\n".join(out)

    def _repr_html_(self):
        v = self.variant
        parts = [f"<h3>{html.escape(v.op)}[{v.id}] {html.escape(v.name)}</h3>",
                 f"<p>{html.escape(v.summary)}</p>"]
        if v.library:
            parts.append(f"<p>Calls <b>{html.escape(v.library)}</b>: the kernels are the "
                         "library's; the source below is our function that makes the call.</p>")
        if self.gpu_note:
            parts.append(f"<p><i>{html.escape(self.gpu_note)}</i></p>")
        for k in self.kernels:
            where = f"{k.source.path}:{k.source.line}" if k.source else "source not found"
            parts.append(f"<h4><code>{html.escape(k.name)}</code> "
                         f"<small>{html.escape(where)}</small></h4>")
            if k.source:
                parts.append(_highlight(k.source.text))
            for h in k.helpers:
                parts.append(f"<details><summary>helper <code>{html.escape(h.name)}</code> "
                             f"({html.escape(h.path)}:{h.line})</summary>"
                             f"{_highlight(h.text)}</details>")
            if k.instances:
                parts.append(_table_html(resource_table(k.instances)))
            for inst in k.instances:
                parts.append(f"<details><summary>occupancy of "
                             f"<code>{html.escape(inst.signature)}</code></summary>"
                             f"{_table_html(occupancy_table(inst))}</details>")
                if inst.sass:
                    parts.append(f"<details><summary>SASS</summary><pre>"
                                 f"{html.escape(inst.sass)}</pre></details>")
        if self.sass_note:
            parts.append(f"<p><i>{html.escape(self.sass_note)}</i></p>")
        return "\n".join(parts)


def _highlight(code: str) -> str:
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import CudaLexer
    except ImportError:
        return f"<pre>{html.escape(code)}</pre>"
    return highlight(code, CudaLexer(), HtmlFormatter(noclasses=True))


def _table_html(table: Table) -> str:
    if not table:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(row[c]))}</td>" for c in table.columns)
                   + "</tr>" for row in table)
    return f"<table><tr>{head}</tr>{body}</table>"


def resource_table(instances: List[KernelInstance]) -> Table:
    rows = []
    for inst in instances:
        a = inst.attributes
        rows.append({
            "instance": inst.signature if len(inst.signature) <= 90 else
            inst.signature[:87] + "...",
            "registers": a["registers"],
            "static shared B": a["static_shared_bytes"],
            "dynamic shared B": ", ".join(str(s) for s in sorted(
                {launch["shared_bytes"] for launch in inst.launches})),
            "local B (spills)": a["local_bytes"],
            "max threads/block": a["max_threads_per_block"],
            "arch": f"sm_{a['binary_version']}",
        })
    return Table(rows, {"what": "resources, from cudaFuncGetAttributes"})


def occupancy_table(inst: KernelInstance) -> Table:
    rows = [{"block": r.block, "dynamic shared B": r.dynamic_shared_bytes,
             "blocks/SM": r.blocks_per_sm, "occupancy": f"{r.occupancy:.2f}",
             "limited by": r.limited_by, "launched": "yes" if r.launched else ""}
            for r in inst.occupancy]
    return Table(rows, {"what": "theoretical occupancy, from "
                              "cudaOccupancyMaxActiveBlocksPerMultiprocessor"})


def base_name(signature: str) -> str:
    """The function's own name in a demangled signature:
    'void (anonymous namespace)::cascaded<256u, float, double, Sum>(float const*, ...)' ->
    'cascaded'."""
    s = signature.strip()
    if s.endswith(")"):  # drop the parameter list
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    if s.endswith(">"):  # drop the template arguments
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {">": 1, "<": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    return s.split("::")[-1].split()[-1]


def occupancy_limits(attributes, block, dynamic_shared, limits):
    """Each per-SM limit on resident blocks for this kernel at this launch shape."""
    warps = math.ceil(block / 32)
    registers_per_warp = math.ceil(attributes["registers"] * 32 / REGISTER_UNIT) * REGISTER_UNIT
    shared = attributes["static_shared_bytes"] + dynamic_shared + limits[
        "reserved_shared_per_block"]
    return {
        "threads": limits["max_threads_per_sm"] // (warps * 32),
        "blocks per SM": limits["max_blocks_per_sm"],
        "registers": SM_PARTITIONS * (limits["registers_per_sm"] // SM_PARTITIONS //
                                      registers_per_warp) // warps
        if registers_per_warp else limits["max_blocks_per_sm"],
        "shared memory": limits["shared_per_sm"] // shared,
    }


def limiting(by: Dict[str, int], blocks_per_sm: int) -> str:
    """The limits that give the API's figure; when none does, say so rather than guess."""
    if blocks_per_sm == 0:
        return "cannot run at this block size"
    names = [name for name, value in by.items() if value == blocks_per_sm]
    return " and ".join(names) if names else f"other (our limits give {min(by.values())})"


def _occupancy_rows(kernel, attributes, launches, limits) -> List[OccupancyRow]:
    shared_at = {}
    for launch in launches:
        shared_at.setdefault(launch["block"][0] * launch["block"][1] * launch["block"][2],
                             set()).add(launch["shared_bytes"])
    every_shared = {s for shared in shared_at.values() for s in shared}
    rows = []
    for block in sorted(set(BLOCK_SIZES) | set(shared_at)):
        if block > attributes["max_threads_per_block"]:
            continue
        if block in shared_at:
            choices, launched = sorted(shared_at[block]), True
        elif len(every_shared) == 1:  # the same at every launch: assume it for this block too
            choices, launched = sorted(every_shared), False
        else:
            continue  # depends on the block in a way no launch showed
        for shared in choices:
            per_sm = _core._kernel_occupancy(kernel, block, shared)
            by = occupancy_limits(attributes, block, shared, limits)
            warps = per_sm * math.ceil(block / 32)
            rows.append(OccupancyRow(block, shared, per_sm,
                                     warps / (limits["max_threads_per_sm"] // 32),
                                     limiting(by, per_sm), launched))
    return rows


def _example_arguments(v):
    spec = OPS[v.op].__gpulab_op__
    host = example_for(spec, v, INSPECT_SIZE, np.random.default_rng(0))
    return [_core.to_device(a) if isinstance(a, np.ndarray) else a for a in host]


def _noted_launches(v, tunables):
    """Runs the variant once per block size it takes and returns (launches counted, notes)."""
    fn = OPS.get(v.op)
    if fn is None:
        raise ValueError(f"op: {v.op} has no Python function to run (gpulab._op.OPS)")
    args = _example_arguments(v)
    blocks = [tunables["block"]] if "block" in tunables else \
        list(v.tunables["block"]["values"]) if "block" in v.tunables else [None]
    counted, notes = 0, []
    for block in blocks:
        kw = {k: val for k, val in tunables.items() if k != "block"}
        if block is not None:
            kw["block"] = block
        _core.synchronize()
        _core._launch_notes_begin()
        try:
            fn(*args, variant=v.id, **kw)
            _core.synchronize()
        finally:
            n, kept = _core._launch_notes_end()
        counted += n
        notes += kept
    return counted, notes


def _cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    nvcc = _core.build_info().get("nvcc")
    candidate = os.path.join(os.path.dirname(nvcc), "cuobjdump") if nvcc else None
    return candidate if candidate and os.path.exists(candidate) else None


def sass_of(mangled: str, arch: int) -> Optional[str]:
    """The SASS of one kernel in this build's _core, or None when cuobjdump is missing."""
    tool = _cuobjdump()
    if tool is None:
        return None
    done = subprocess.run([tool, "-sass", "-arch", f"sm_{arch}", "-fun", mangled, _core.__file__],
                          capture_output=True, text=True, timeout=120)
    return function_sass(done.stdout) or done.stderr.strip() or \
        f"cuobjdump found no SASS for {mangled} for sm_{arch}"


def function_sass(listing: str) -> str:
    """The functions' own text in a cuobjdump -sass listing: from each "Function :" line to the
    end of its code, without the headers of every fat binary cuobjdump walks through."""
    out, keep = [], False
    for line in listing.splitlines():
        if "Function :" in line:
            keep = True
        elif keep and (line.startswith("Fatbin") or line.strip().startswith(".......")):
            keep = False
            out.append("")
        if keep:
            out.append(line)
    return "\n".join(out).strip()


def inspect(op: str, variant=None, sass: bool = True, **tunables) -> Inspection:
    """The kernels of `variant` of `op` (an id or a name; default: the op's best CUDA variant):
    source, resources, occupancy and SASS. `tunables` (block=, unroll=, ...) pick the instances
    to run; without block=, every block size the variant takes is run. sass=False skips
    cuobjdump (it takes a second or two per kernel)."""
    if op not in registry.ops():
        raise ValueError(f"op: unknown op {op!r}; known: {', '.join(registry.ops())}")
    v = registry.best(op, "cuda") if variant is None else registry.find(op, variant)
    if v.backend != "cuda":
        raise ValueError(f"variant: {op}[{v.id}] {v.name} runs on the CPU; gl.inspect reads "
                         "CUDA kernels (the CPU variants are in csrc/labs/)")
    unknown = [t for t in tunables if t not in v.tunables]
    if unknown:
        raise ValueError(f"{unknown[0]}: {op}[{v.id}] {v.name} has no such tunable; it has "
                         f"{sorted(v.tunables) or 'none'}")
    views = []
    for name in v.kernels:
        src = definition(name, v.lab)
        views.append(KernelView(name, src, helpers(src, v.lab) if src else []))
    result = Inspection(v, dict(tunables), views)
    status = _core._gpu_status()
    if status is not None:
        result.gpu_note = (f"Resources, occupancy and SASS need a GPU to run the variant on "
                           f"({status}).")
        return result
    counted, notes = _noted_launches(v, tunables)
    result.launches_counted = counted
    limits = _core._occupancy_limits()
    by_kernel: Dict[int, List[dict]] = {}
    for note in notes:
        by_kernel.setdefault(note["kernel"], []).append(note)
    view_of = {k.name: k for k in views}
    result.launched = set()
    tool_missing = sass and _cuobjdump() is None
    for kernel, launches in by_kernel.items():
        attributes = _core._kernel_attributes(kernel)
        signature = attributes.pop("demangled")
        name = base_name(signature)
        result.launched.add(name)
        distinct = []
        for launch in launches:
            shape = {k: launch[k] for k in ("grid", "block", "shared_bytes")}
            if shape not in distinct:
                distinct.append(shape)
        inst = KernelInstance(attributes.pop("mangled"), signature, attributes, distinct)
        inst.occupancy = _occupancy_rows(kernel, attributes, distinct, limits)
        if sass and not tool_missing:
            inst.sass = sass_of(inst.mangled, attributes["binary_version"])
        if name not in view_of:  # ran but undeclared: shown, and `undeclared` names it
            src = definition(name, v.lab)
            view_of[name] = KernelView(name, src, helpers(src, v.lab) if src else [])
            views.append(view_of[name])
        view_of[name].instances.append(inst)
    if tool_missing:
        result.sass_note = ("SASS: cuobjdump is not on PATH (it comes with the CUDA toolkit: add "
                            "its bin/ folder to PATH).")
    return result
