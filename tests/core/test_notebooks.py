"""The notebooks run top to bottom, on a machine with or without a GPU, from a working directory
outside the source tree (as from an installed wheel), use only gpulab's public API, and show
their charts: a notebook that plots must produce at least one image, here too."""

import glob
import json
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
IDS = [os.path.basename(p) for p in NOTEBOOKS]

# What a notebook must not hold: gpulab's private names, a backend that draws without showing,
# and paths into the source tree, which an installed wheel does not have.
FORBIDDEN = {
    "a private gpulab name (gl._...)": re.compile(r"\bgl\._|\bgpulab\._|\b_core\b"),
    "matplotlib.use(...): charts must show inline": re.compile(r"matplotlib\.use\(|\bAgg\b"),
    "a path into the source tree": re.compile(r"__file__|\.\./|benchmarks/results"),
}


def code_of(path):
    with open(path) as f:
        cells = json.load(f)["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def plots(source):
    """Whether notebook code draws charts (tools/run_notebooks.py's rule too)."""
    return "plt." in source or ".plot(" in source


def images(nb):
    """The PNG images among a run notebook's outputs."""
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if o.get("output_type") in ("display_data", "execute_result")
            and "image/png" in o.get("data", {})]


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_uses_the_public_api(path):
    source = code_of(path)
    found = [f"{what}: {m.group(0)!r}" for what, pattern in FORBIDDEN.items()
             for m in [pattern.search(source)] if m]
    assert not found, found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs(path, tmp_path, monkeypatch):
    # The kernel imports the gpulab that these tests import, wherever it is installed.
    import gpulab
    tree = os.path.dirname(os.path.dirname(os.path.abspath(gpulab.__file__)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [tree, os.environ.get(
        "PYTHONPATH")])))
    # The kernel's own default (inline) backend, as in Jupyter: an MPLBACKEND=Agg inherited
    # from CI would draw every chart and show none.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel", reason="the notebooks run in an IPython kernel")
    nb = nbformat.read(path, as_version=4)
    # The working directory is tmp_path, outside the source tree: a relative path into the tree
    # (../benchmarks) fails here as it would from a wheel. A path built from gl.__file__ would
    # still resolve in a checkout: test_notebook_uses_the_public_api refuses those.
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    if plots(code_of(path)):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            pytest.skip("ran; its charts are not checked: matplotlib is not installed")
        shown = images(nb)
        assert shown, (f"{os.path.basename(path)} plots but showed no image: a chart drawn and "
                       "never shown (a non-interactive backend?), or charts drawn only where a "
                       "GPU is")
