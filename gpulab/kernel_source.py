"""The CUDA source of gpulab's kernels, as built: setup.py embeds every file of cuda/ in
gpulab/_kernel_sources.py, so that an installed package can show its kernels without the source
tree. `definition(name, lab)` finds a function's definition (its leading comment, template line
and body) by name."""

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional


@dataclass(frozen=True)
class Snippet:
    name: str
    path: str  # relative to the repository, e.g. cuda/saxpy/saxpy.cu
    line: int  # 1-based, where the snippet starts
    text: str
    is_kernel: bool  # __global__
    is_device: bool  # __device__ (a helper a kernel calls)


_sources: Optional[Dict[str, str]] = None


def sources() -> Dict[str, str]:
    """{path: text} of every file of cuda/ this build was made from."""
    global _sources
    if _sources is None:
        try:
            from ._kernel_sources import SOURCES
            _sources = dict(SOURCES)
        except ImportError:  # a tree built before the sources were embedded: read cuda/ itself
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            _sources = {}
            for folder, _, files in os.walk(os.path.join(root, "cuda")):
                for name in files:
                    if name.endswith((".cu", ".cuh", ".h")):
                        path = os.path.join(folder, name)
                        with open(path, encoding="utf-8") as f:
                            _sources[os.path.relpath(path, root)] = f.read()
    return _sources


def lab_files(lab: str) -> List[str]:
    """The files a lab's kernels may live in: its own folder first, then cuda/core."""
    own = sorted(p for p in sources() if p.startswith(f"cuda/{lab}/"))
    core = sorted(p for p in sources() if p.startswith("cuda/core/"))
    return own + core


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _blank_comments(text: str) -> str:
    """text with every comment replaced by spaces of the same length (newlines kept), so that
    offsets still match and no brace or parenthesis inside a comment counts."""
    return _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _statement_start(code: str, at: int) -> int:
    """Where the declaration that reaches offset `at` begins: after the last ';', '{' or '}'
    before it (comments already blanked)."""
    return max(code.rfind(c, 0, at) for c in ";{}") + 1


def _matching(code: str, at: int, open_: str, close: str) -> int:
    """Offset just past the bracket that closes the one at `at`, or -1."""
    depth = 0
    for i in range(at, len(code)):
        if code[i] == open_:
            depth += 1
        elif code[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _without_templates(prefix: str) -> str:
    """prefix with its `template <...>` headers and `__launch_bounds__(...)` removed."""
    out, i = [], 0
    while True:
        m = re.search(r"\btemplate\s*<|__launch_bounds__\s*\(", prefix[i:])
        if not m:
            return "".join(out) + prefix[i:]
        out.append(prefix[i:i + m.start()])
        opener = i + m.end() - 1
        close = _matching(prefix, opener, prefix[opener], ">" if prefix[opener] == "<" else ")")
        if close < 0:
            return "".join(out)
        i = close


def _declares(prefix: str) -> bool:
    """Whether the text before a name is the start of its declaration (a return type and
    qualifiers), not a call, an assignment or an expression."""
    rest = _without_templates(prefix)
    return bool(rest.strip()) and not any(c in rest for c in "=(,<>") and \
        not re.search(r"\b(return|case|if|while)\b", rest)


def _find_in(path: str, name: str) -> Optional[Snippet]:
    text = sources()[path]
    code = _blank_comments(text)
    for m in re.finditer(rf"\b{re.escape(name)}\b", code):
        start = _statement_start(code, m.start())
        prefix = code[start:m.start()]
        # A definition: a return type before the name, and no call, assignment or
        # expression around it.
        if not _declares(prefix):
            continue
        after = m.end()
        if after < len(code) and code[after] == "<":  # an explicit specialization's arguments
            after = _matching(code, after, "<", ">")
            if after < 0:
                continue
        paren = code.find("(", after)
        if paren < 0 or code[after:paren].strip():
            continue
        close = _matching(code, paren, "(", ")")
        if close < 0:
            continue
        brace = code.find("{", close)
        semicolon = code.find(";", close)
        if brace < 0 or (0 <= semicolon < brace):
            continue  # a declaration only
        end = _matching(code, brace, "{", "}")
        if end < 0:
            continue
        # Start at the first line of the statement, with the comment that leads into it.
        first = text.rfind("\n", 0, start) + 1
        if text[first:start].strip():  # the line ends the previous statement: begin after it
            first = text.find("\n", start) + 1
        while first < m.start() and not text[first:text.find("\n", first)].strip():
            first = text.find("\n", first) + 1  # blank lines before the leading comment
        is_kernel = "__global__" in prefix
        return Snippet(name, path, text.count("\n", 0, first) + 1, text[first:end], is_kernel,
                       "__device__" in prefix and not is_kernel)
    return None


def definition(name: str, lab: str) -> Optional[Snippet]:
    """The definition of function `name` in the lab's folder of cuda/ (or cuda/core), or None."""
    for path in lab_files(lab):
        found = _find_in(path, name)
        if found:
            return found
    return None


_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*?>)?\s*\(")


def helpers(snippet: Snippet, lab: str, depth: int = 2) -> List[Snippet]:
    """The __device__ functions of the lab that the snippet calls, and theirs, to `depth`
    levels: what a reader needs beside a kernel to follow it."""
    found, seen, frontier = [], {snippet.name}, [snippet]
    for _ in range(depth):
        following = []
        for s in frontier:
            for name in _CALLED.findall(_blank_comments(s.text)):
                if name in seen:
                    continue
                seen.add(name)
                d = definition(name, lab)
                if d and d.is_device:
                    found.append(d)
                    following.append(d)
        frontier = following
    return found
