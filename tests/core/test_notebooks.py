"""The notebooks run top to bottom, on a machine with or without a GPU."""

import glob
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    # The kernel imports the gpulab that these tests import, wherever it is installed.
    import gpulab
    tree = os.path.dirname(os.path.dirname(os.path.abspath(gpulab.__file__)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [tree, os.environ.get(
        "PYTHONPATH")])))
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel", reason="the notebooks run in an IPython kernel")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
