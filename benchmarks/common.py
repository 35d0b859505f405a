"""Shared by the benchmark scripts: metadata for every saved result, and saving it; progress
lines; the peers' settings."""

import json
import os
import sys

# CuPy reads its accelerators when it is imported: CUB on for the reduce, scan, histogram and
# sort peers, as CuPy's users turn it on (gpulab's peer setups turn it on at run time as well).
os.environ.setdefault("CUPY_ACCELERATORS", "cub,cutensor")

import gpulab as gl
from gpulab.provenance import metadata


def save(name, settings, results, quiet=False):
    """Writes {meta, results} to $GPULAB_RESULTS (default benchmarks/results/)/name.json; the
    settings gain "peers_as_called" (peer_settings()). quiet: no "saved" line."""
    settings = {**settings, "peers_as_called": peer_settings()}
    folder = os.environ.get("GPULAB_RESULTS") or os.path.join(os.path.dirname(__file__), "results")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump({"meta": metadata(settings), "results": results}, f, indent=1, default=str)
    if not quiet:
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


def progress(*words):
    """One progress line on stderr (stdout keeps the tables)."""
    print(*words, file=sys.stderr, flush=True)


def peer_settings():
    """What the saved results say about the peers: versions, CuPy's accelerators, and how the
    peers whose call differs from ours are called (keys-only or not, CuPy kernels)."""
    from gpulab import peers
    from gpulab.user_path import DEVICE_PEER_NOTES
    return {"cupy": peers.version("cupy"), "torch": peers.version("torch"),
            "how": {f"{op} {lib}": how for (op, lib), how in DEVICE_PEER_NOTES.items()},
            "cupy_accelerators": peers.cupy_accelerators(),
            "CUPY_ACCELERATORS": os.environ.get("CUPY_ACCELERATORS")}
