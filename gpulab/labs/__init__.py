"""The labs' Python modules, one per lab of the registry (csrc/labs/labs.def), in its order.

Each module gpulab.labs.<name> declares EXPORTS, the names that gpulab lifts to its top level
(gl.saxpy, gl.reduce, ...). A lab whose module exports no function of its own name is itself
reachable as gl.<name> (gl.memory, gl.streams), and as gpulab.<name> for `import` statements.
"""

import importlib

from .. import _core


def load():
    """{lab name: module}, importing each lab's module in the registry's order."""
    return {name: importlib.import_module(f"{__name__}.{name}") for name in _core.labs()}
