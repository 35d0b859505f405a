"""Shared by the benchmark scripts: metadata for every saved result, and saving it."""

import json
import os
import sys

import gpulab as gl
from gpulab.provenance import metadata


def save(name, settings, results):
    """Writes {meta, results} to $GPULAB_RESULTS (default benchmarks/results/)/name.json."""
    folder = os.environ.get("GPULAB_RESULTS") or os.path.join(os.path.dirname(__file__), "results")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump({"meta": metadata(settings), "results": results}, f, indent=1, default=str)
    print(f"saved {path}")
    return path


def require_gpu():
    if not gl.cuda_available():
        sys.exit(f"this benchmark needs a GPU: {gl._core._gpu_status()}")


def ladder_args(repeat=10, quick_help="small sizes only", extra=None):
    """--repeat (default `repeat`) and --quick (`quick_help`: a check of the script, not a
    measurement), and the script's own arguments (extra(parser) adds them), parsed; exits,
    saying why, where no GPU is usable."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--quick", action="store_true",
                        help=f"{quick_help} (a check of the script, not a measurement)")
    if extra is not None:
        extra(parser)
    args = parser.parse_args()
    require_gpu()
    return args
