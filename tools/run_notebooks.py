"""Runs every notebook's code cells in order, in one namespace, without Jupyter: for machines
that have no kernel installed (the GPU machine). Each notebook runs in a fresh temporary
working directory, as from an installed gpulab, so that a path into the source tree fails here
as it would there.

Charts: matplotlib draws on the non-interactive Agg backend (MPLBACKEND=Agg, set here only: the
notebooks themselves show their charts inline in Jupyter). A figure counts as shown, as in
Jupyter, when it is open in pyplot at the end of its cell or is the value of the cell's last
line. A notebook that plots (its code has `plt.` or `.plot(`) and shows no figure is reported,
and fails the run when matplotlib is installed.

    python3 tools/run_notebooks.py [--figures DIR] [notebooks/*.ipynb]

--figures DIR saves every figure shown as DIR/<notebook>-<k>.png. Exits non-zero when a cell
raised or a plotting notebook showed no figure.
"""

import argparse
import ast
import glob
import importlib.util
import json
import os
import sys
import tempfile
import time
import traceback
import warnings

os.environ["MPLBACKEND"] = "Agg"  # before anything imports matplotlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def plots(source):
    """Whether notebook code draws charts (the test's rule too)."""
    return "plt." in source or ".plot(" in source


def _compile_cell(source, name):
    """(body, last): the cell's statements, and its last line as an expression to evaluate for
    its value when it is one (None otherwise), as IPython does."""
    tree = ast.parse(source, name)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), name, "eval")
    return compile(tree, name, "exec"), last


def _is_figure(value):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    return isinstance(value, Figure)


def _shown_figures(value):
    """The figures a cell shows: those open in pyplot at its end (closed here, as the inline
    backend does), and its value when that is a Figure."""
    shown = []
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        shown = [pyplot.figure(k) for k in pyplot.get_fignums()]
    if _is_figure(value) and all(value is not f for f in shown):
        shown.append(value)
    return shown


def run(path, figures_dir=None):
    """(ok, figures shown, seconds) of one notebook."""
    with open(path) as f:
        cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    stem = os.path.splitext(os.path.basename(path))[0]
    namespace = {"__name__": "__main__"}
    count, ok = 0, True
    start = time.perf_counter()
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix=f"nb-{stem}-") as workdir:
        os.chdir(workdir)
        try:
            for i, cell in enumerate(cells):
                source = "".join(cell["source"])
                try:
                    body, last = _compile_cell(source, f"{stem}.ipynb[cell {i}]")
                    exec(body, namespace)
                    value = eval(last, namespace) if last is not None else None
                except Exception:
                    traceback.print_exc()
                    ok = False
                    value = None
                if value is not None and not _is_figure(value):
                    print(repr(value))  # what Jupyter would show as the cell's value
                for fig in _shown_figures(value):
                    count += 1
                    if figures_dir:
                        fig.savefig(os.path.join(figures_dir, f"{stem}-{count}.png"), dpi=80,
                                    bbox_inches="tight")
                pyplot = sys.modules.get("matplotlib.pyplot")
                if pyplot is not None:
                    pyplot.close("all")
                if not ok:
                    break
        finally:
            os.chdir(here)
    return ok, count, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", metavar="DIR", help="save every figure shown as a PNG here")
    parser.add_argument("paths", nargs="*", help="notebooks (default: notebooks/*.ipynb)")
    args = parser.parse_args(argv)
    paths = [os.path.abspath(p) for p in args.paths] or sorted(
        glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    if args.figures:
        os.makedirs(args.figures, exist_ok=True)
        args.figures = os.path.abspath(args.figures)
    if importlib.util.find_spec("gpulab") is None:  # not installed: the checkout's own
        sys.path.append(ROOT)
    have_matplotlib = importlib.util.find_spec("matplotlib") is not None
    # plt.show() on Agg warns that it cannot show; here the figures are counted instead
    warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")
    failed, blank = [], []
    for path in paths:
        name = os.path.basename(path)
        with open(path) as f:
            source = "".join("".join(c["source"]) for c in json.load(f)["cells"]
                             if c["cell_type"] == "code")
        ok, count, seconds = run(path, args.figures)
        if not ok:
            failed.append(name)
        elif plots(source) and count == 0:
            blank.append(name)
        print(f"{name:<22} {'ran' if ok else 'FAILED':<6} {seconds:7.1f} s  {count:3d} figures",
              flush=True)
    print(f"notebooks: {len(paths) - len(failed)} ran, {len(failed)} failed {failed}")
    if blank:
        print(f"plotting notebooks that showed no figure: {blank}"
              + ("" if have_matplotlib else " (matplotlib is not installed)"))
    return 1 if failed or (blank and have_matplotlib) else 0


if __name__ == "__main__":
    sys.exit(main())
