"""Where onesweep's time goes, on the GPU: an instrumented copy of cuda/sort/onesweep.cu in which
thread 0 of each onesweep_pass block stamps clock64() after each phase (tile id, load and
count, publication and block scan, rank and scatter to shared memory, look-back, write-out; all
but the rank end at a barrier, so they are the block's time, the rank thread 0's) and every
thread counts its look-back windows and waits; built with nvcc beside a small driver (onesweep_phases_main.cu)
that sorts 2^k random int32 keys and prints each phase's share and the instrumented sort's time,
to hold against the uninstrumented one (benchmarks/sort_lab.py): a probe for the tuning of
variant 4 (docs/labs/sort.md), not a benchmark.

    python3 tools/probe/onesweep_phases.py [--log2n 26]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import nvcc_driver

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def instrumented(text):
    """onesweep.cu with the probe's stamps and counters, and its report function. The counters
    are spread over 64 slots a quantity (by block) and the look-back's are summed in shared
    memory first: one global address that every thread adds to made the first probe ten times
    slower than the kernel it measured, and its look-back waits an artefact of that."""
    def put(anchor, extra, after=True):
        nonlocal text
        if text.count(anchor) != 1:
            sys.exit(f"probe: {anchor!r} is not in onesweep.cu once any more: update the probe")
        text = text.replace(anchor, anchor + extra if after else extra + anchor)

    put("namespace {\n", "__device__ unsigned long long probe[16][64];\n"
        "#define STAMP(k) if (threadIdx.x == 0) { long long t = clock64(); "
        "atomicAdd(&probe[k][blockIdx.x % 64], (unsigned long long)(t - probe_t)); probe_t = t; }\n")
    put("  Value *tile_values = reinterpret_cast<Value *>(exchange);\n",
        "  __shared__ unsigned probe_look_back[2];\n"
        "  if (threadIdx.x == 0) probe_look_back[0] = probe_look_back[1] = 0;\n"
        "  long long probe_t = clock64();\n  unsigned lb_windows = 0, lb_waits = 0;\n")
    put("  __syncthreads();\n  const size_t tile_id = tile_id_of_block;\n", "  STAMP(0)\n")
    put("\n    // Thread d: digit d's count", "    STAMP(1)\n", after=False)
    put("warp_digits[w][d] += start_in_tile;\n    __syncthreads();\n", "    STAMP(2)\n")
    put("      __syncwarp();  // the next item's leader claims after this item's\n    }\n",
        "    STAMP(3)\n")
    put("      Word words[look_back_window];\n", "      ++lb_windows;\n")
    put("      if (waiting) __nanosleep(20);\n", "      lb_waits += waiting;\n", after=False)
    put("    digit_shift[d] = static_cast<Word>(digit_start[d]) + earlier - start_in_tile;\n",
        "  if (lb_windows) atomicAdd(&probe_look_back[0], lb_windows);\n"
        "  if (lb_waits) atomicAdd(&probe_look_back[1], lb_waits);\n")
    put("  __syncthreads();  // the sorted tile and every digit's shift are in place\n",
        "  STAMP(4)\n")
    put("    if constexpr (HasValues) {\n      __syncthreads();  // every key has left the exchange\n",
        "  STAMP(5)\n  if (threadIdx.x == 0) {\n"
        "    atomicAdd(&probe[8][blockIdx.x % 64], (unsigned long long)probe_look_back[0]);\n"
        "    atomicAdd(&probe[9][blockIdx.x % 64], (unsigned long long)probe_look_back[1]);\n"
        "    atomicAdd(&probe[10][blockIdx.x % 64], 1ull);\n  }\n", after=False)
    text += '''
    #include <cstdio>
    extern "C" void onesweep_probe_report() {
      static unsigned long long slots[16][64];
      cudaMemcpyFromSymbol(slots, probe, sizeof slots);
      double h[16] = {};
      for (int k = 0; k < 16; ++k)
        for (int b = 0; b < 64; ++b) h[k] += slots[k][b];
      const char *names[6] = {"tile id + zero", "load + count", "publish + block scan",
                              "rank + scatter (thread 0)", "look-back", "write-out"};
      double total = 0;
      for (int k = 0; k < 6; ++k) total += h[k];
      const double tiles = h[10] ? h[10] : 1.0;
      for (int k = 0; k < 6; ++k)
        printf("  %-30s %5.1f%%  %8.0f cycles a tile\\n", names[k], 100.0 * h[k] / total, h[k] / tiles);
      printf("  look-back windows a digit a tile %.2f, waits %.2f (tiles %.0f)\\n",
             h[8] / (256.0 * tiles), h[9] / (256.0 * tiles), tiles);
      static unsigned long long zero[16][64];
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
        _, exe, log = nvcc_driver.build("onesweep_probe", work, "sort", [
            os.path.join(HERE, "onesweep_phases_main.cu"), source])
        if exe is None:
            print(f"probe: build failed\n{log[-2000:]}")
            return 1
        return subprocess.run([exe, str(args.log2n)]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
