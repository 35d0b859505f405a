"""Runs every notebook's code cells in order, in one namespace, without Jupyter: for machines
that have no kernel installed (the GPU machine). Exits non-zero on the first failing cell.

    python3 tools/run_notebooks.py [notebooks/*.ipynb]
"""

import glob
import json
import os
import sys
import traceback


def run(path):
    with open(path) as f:
        cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    namespace = {"__name__": "__main__"}
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        try:
            exec(compile(source, f"{os.path.basename(path)}[cell {i}]", "exec"), namespace)
        except Exception:
            traceback.print_exc()
            return False
    return True


def main(paths):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = paths or sorted(glob.glob(os.path.join(root, "notebooks", "*.ipynb")))
    failed = [p for p in paths if not run(p)]
    print(f"notebooks: {len(paths) - len(failed)} ran, {len(failed)} failed {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
