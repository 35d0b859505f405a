"""Where onesweep's time goes, on the GPU: an instrumented copy of cuda/sort/onesweep.cu in which
thread 0 of each onesweep_pass block stamps clock64() after each phase that a barrier closes
(tile id, load and rank, counts and block scan, look-back, scatter to shared memory, write-out)
and every thread counts its look-back windows and waits; built with nvcc beside a small driver
(onesweep_phases_main.cu) that sorts 2^k random int32 keys and prints each phase's share. A
probe for the tuning of variant 4 (benchmarks/NOTES.md, "The sort lab on the H100"), not a
benchmark: the stamps and atomics slow the kernel a little.

    python3 tools/probe/onesweep_phases.py [--log2n 26]
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def instrumented(text):
    """onesweep.cu with the probe's stamps and counters, and its report function."""
    def put(anchor, extra, after=True):
        nonlocal text
        if text.count(anchor) != 1:
            sys.exit(f"probe: {anchor!r} is not in onesweep.cu once any more: update the probe")
        text = text.replace(anchor, anchor + extra if after else extra + anchor)

    put("namespace {\n", "__device__ unsigned long long probe[16];\n"
        "#define STAMP(k) if (threadIdx.x == 0) { long long t = clock64(); "
        "atomicAdd(&probe[k], (unsigned long long)(t - probe_t)); probe_t = t; }\n")
    put("  Value *tile_values = reinterpret_cast<Value *>(exchange);\n",
        "  long long probe_t = clock64();\n  unsigned lb_windows = 0, lb_waits = 0;\n")
    put("  __syncthreads();\n  const size_t tile_id = tile_id_of_block;\n", "  STAMP(0)\n")
    put("\n  // Thread d: digit d's count", "  STAMP(1)\n", after=False)
    put("  tile_digit_start[d] = start_in_tile;\n", "  STAMP(2)\n")
    put("      Word words[look_back_window];\n", "      ++lb_windows;\n")
    put("      if (waiting) __nanosleep(20);\n", "      lb_waits += waiting;\n", after=False)
    put("  digit_shift[d] = digit_start[d] + earlier - start_in_tile;\n  __syncthreads();\n",
        "  STAMP(3)\n  if (lb_windows) atomicAdd(&probe[8], lb_windows);\n"
        "  if (lb_waits) atomicAdd(&probe[9], lb_waits);\n")
    put("    if (valid) tile_keys[place[j]] = key[j];\n  }\n  __syncthreads();\n", "  STAMP(4)\n")
    put("  if constexpr (HasValues) {\n    __syncthreads();  // every key has left the exchange\n",
        "  STAMP(5)\n  if (threadIdx.x == 0) atomicAdd(&probe[10], 1ull);\n", after=False)
    text += '''
    #include <cstdio>
    extern "C" void onesweep_probe_report() {
      unsigned long long h[16];
      cudaMemcpyFromSymbol(h, probe, sizeof h);
      const char *names[6] = {"tile id + zero", "load + rank", "counts + publish + block scan",
                              "look-back", "scatter to shared", "write-out"};
      double total = 0;
      for (int k = 0; k < 6; ++k) total += h[k];
      const double tiles = h[10] ? double(h[10]) : 1.0;
      for (int k = 0; k < 6; ++k)
        printf("  %-30s %5.1f%%  %8.0f cycles a tile\\n", names[k], 100.0 * h[k] / total, h[k] / tiles);
      printf("  look-back windows a digit a tile %.2f, waits %.2f (tiles %.0f)\\n",
             h[8] / (256.0 * tiles), h[9] / (256.0 * tiles), tiles);
      unsigned long long zero[16] = {};
      cudaMemcpyToSymbol(probe, zero, sizeof zero);
    }
    '''
    return text


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log2n", type=int, default=26)
    args = parser.parse_args(argv)
    with open(os.path.join(ROOT, "cuda", "sort", "onesweep.cu")) as f:
        text = instrumented(f.read())
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "onesweep_probe.cu")
        with open(source, "w") as f:
            f.write(text)
        exe = os.path.join(work, "onesweep_probe")
        subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-I", ROOT, "-I",
                        os.path.join(ROOT, "cuda", "sort"),
                        os.path.join(HERE, "onesweep_phases_main.cu"), source,
                        os.path.join(ROOT, "cuda", "core", "runtime.cu"),
                        os.path.join(ROOT, "cuda", "core", "inspect.cu"), "-o", exe], check=True)
        return subprocess.run([exe, str(args.log2n)]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
