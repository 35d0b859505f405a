"""Runs the multi-GPU Jacobi's own orchestration (cuda/multi/jacobi.cu, compiled as it is) on
the CPU through the host emulation in multi_jacobi_host.cpp: the CUDA runtime, the stencil lab's
row/plane-range sweeps and NCCL's send/recv and all-reduce stand in as CPU functions. Streams are
queues run only when the host waits, in random and in starving (strict random priority) orders,
honouring only the event waits and NCCL's rendezvous, so a missing wait shows as a wrong byte. 1 to
4 "GPUs", p2p and nccl, overlap on and off, 2D and 3D, float32 and float64, 0 to 12 sweeps, uneven
and one-row slabs, tol, each under 6 schedules; each case byte for byte against the whole grid swept
by the same CPU sweep, with guard bytes around every allocation and every call checked to be issued
on its memory's device; and Ctrl-C part-way (the binding's check answering GLC_INTERRUPTED): the
solve stops, drains its streams, frees everything and gathers nothing. A check of the slabs'
arithmetic and of the event chain's logic without a GPU; not of the hardware (its memory model,
NCCL's own kernels, timing). Needs g++ and the CUDA headers; exits non-zero when a case is wrong.

    python3 tools/emulate/multi_jacobi.py
"""

import os
import subprocess
import sys
import tempfile

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    cxx, include = host_toolchain.require()
    with tempfile.TemporaryDirectory() as work:
        exe = os.path.join(work, "multi_jacobi_host")
        subprocess.run([cxx, "-std=c++17", "-O1", "-w", f"-I{include}", f"-I{ROOT}",
                        "-x", "c++", os.path.join(ROOT, "cuda", "multi", "jacobi.cu"),
                        "-x", "c++", os.path.join(HERE, "multi_jacobi_host.cpp"), "-o", exe],
                       check=True)
        return subprocess.run([exe]).returncode


if __name__ == "__main__":
    sys.exit(main())
