"""Where a result came from: commit, device, driver, versions and settings. Every saved result
(python -m gpulab --json, benchmarks/) carries this as its 'meta'."""

import datetime
import os
import platform
import subprocess
import sys

import numpy as np

from . import _core, peers as _peers


def commit():
    """The git commit of this checkout (GPULAB_COMMIT overrides it: the GPU machine gets a copy
    of the tree without .git), or None."""
    if os.environ.get("GPULAB_COMMIT"):
        return os.environ["GPULAB_COMMIT"]
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        done = subprocess.run(["git", "-C", here, "rev-parse", "--verify", "HEAD"],
                              capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def driver_release():
    """The NVIDIA kernel driver's release (e.g. '580.159.04'), or None where Linux does not
    say."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            for word in f.readline().split():
                if word.count(".") >= 1 and word.replace(".", "").isdigit():
                    return word
    except OSError:
        pass
    return None


def metadata(settings):
    meta = {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": commit(),
        "argv": sys.argv,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "build": _core.build_info(),
        "settings": settings,
        "peers": {name: _peers.version(name) for name in ("cupy", "torch")},
    }
    if _core.cuda_available():
        info = _core.device_info(0)
        meta.update(device=info["name"], driver=driver_release(),
                    cuda_driver=info["driver_version"], cuda_runtime=info["runtime_version"],
                    device_info=info)
    else:
        meta.update(device="cpu", why_no_gpu=str(_core._gpu_status()))
    return meta
