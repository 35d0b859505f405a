"""Shared by the benchmark scripts: metadata for every saved result, and saving it."""

import datetime
import json
import os
import platform
import subprocess
import sys

import numpy as np

import gpulab as gl


def commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return out + ("-dirty" if dirty else "") if out else None
    except Exception:
        return None


def metadata(settings):
    meta = {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": os.environ.get("GPULAB_COMMIT") or commit(),
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
