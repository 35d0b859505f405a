"""How the GPU probes (onesweep_ab.py, scan_ab.py, onesweep_phases.py) build a driver: nvcc for
sm_90 with the tree and the lab's folder on the include path, linked with the core's runtime
and inspect files (which every lab file's launch helpers need)."""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build(name, work, lab, sources):
    """sources (the driver's main first) built into work/name with cuda/<lab> on the include
    path; returns (name, executable or None, nvcc's output)."""
    exe = os.path.join(work, name)
    done = subprocess.run(
        ["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-Xptxas", "-v", "-I", ROOT, "-I",
         os.path.join(ROOT, "cuda", lab), *sources,
         os.path.join(ROOT, "cuda", "core", "runtime.cu"),
         os.path.join(ROOT, "cuda", "core", "inspect.cu"), "-o", exe],
        capture_output=True, text=True)
    return name, exe if done.returncode == 0 else None, done.stdout + done.stderr
