"""Shared by the benchmark scripts: metadata for every saved result, and saving it."""

import datetime
import json
import os
import platform
import sys

import numpy as np

import gpulab as gl
from gpulab.__main__ import commit


def metadata(settings):
    meta = {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": commit(),
        "argv": sys.argv,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "build": gl.build_info(),
        "settings": settings,
    }
    if gl.cuda_available():
        info = gl.device_info()
        meta["device"] = info["name"]
        meta["driver"] = info["driver_version"]
        meta["runtime"] = info["runtime_version"]
        meta["device_info"] = info
    else:
        meta["device"] = "cpu"
    for peer in ("cupy", "torch"):
        try:
            meta[peer] = __import__(peer).__version__
        except Exception:
            meta[peer] = None
    return meta


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
