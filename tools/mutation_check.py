"""The planted-bug check: proof that the sanitizer runs can see real bugs.

In scratch copies of the tree it plants known bugs, one per copy, into kernels of every lab: an
off-by-one global write, a read one past the end, a missing __syncthreads() in a shared-memory
tree, a read of uninitialized shared memory. Each copy is rebuilt incrementally (the base copy is
built once; a plant recompiles the one object it touches, plus the binding's C files and the
link), then the matching compute-sanitizer tool runs the matching driver of tools/sanitize/ in
exact allocation mode. The check passes only if every plant is reported by the sanitizer (its
error or hazard summary is not zero; for a plant no sanitizer can see, tool "result", the driver's
own result check), and if the same commands on the unplanted base report nothing. It fails, too, when a lab of the registry has no plant: a new lab adds its own below.

    python3 tools/mutation_check.py [--out FILE] [--jobs N] [--keep DIR] [--only NAME,...]
                                    [--run-timeout SECONDS]

It needs the GPU machine (compute-sanitizer and a GPU). The result, with the cost of each step,
goes to FILE (default: $GPULAB_RESULTS or benchmarks/results/, mutation_check.json). A sanitizer
run that passes --run-timeout (default 300 s) is stopped and recorded as not finished (the plant
neither caught nor missed, the check not passed), so that one slow run cannot cost the file.
"""

import argparse
import concurrent.futures
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The GPU machine's own architecture only: the plants are run there, and one SASS target halves
# nvcc's time against the default "80;90" + PTX.
ARCHS = "90"
# Room after every allocation, so that an overrun cannot land in a neighbouring one.
MEMCHECK_PADDING = "512"
ERROR_EXIT = 86
# What the base copy leaves behind: builds, outputs and caches; a plant's copy takes the base's
# build along.
NOT_COPIED = ("build", "gpu-check-out", ".git", "__pycache__", "*.so", "*.egg-info", ".whl",
              ".pytest_cache", ".scratch", ".before")


@dataclasses.dataclass(frozen=True)
class Plant:
    name: str
    lab: str
    kind: str
    file: str  # relative to the root
    find: str  # must occur exactly once in the kernel that `after` names (or in the file)
    replace: str
    tool: str  # compute-sanitizer --tool
    driver: Tuple[str, ...]  # tools/sanitize/<driver> and its arguments
    after: Optional[str] = None  # the start of the kernel to plant into

    def command(self):
        return sanitizer_command(self.tool, self.driver)


PLANTS: List[Plant] = [
    Plant("saxpy-write-past-end", "saxpy", "off-by-one global write", "cuda/saxpy/saxpy.cu",
          find="  if (i < n) out[i] = a * x[i] + y[i];",
          replace="  if (i <= n) out[i] = a * x[i] + y[i];",
          tool="memcheck", driver=("ops.py", "--only", "saxpy:0")),
    Plant("reduce-read-past-end", "reduce", "read one past the end", "cuda/reduce/harris.cu",
          after="__global__ void sequential(",
          find="  s[tid] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();",
          replace="  s[tid] = i <= n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();",
          tool="memcheck", driver=("ops.py", "--only", "reduce:2")),
    Plant("reduce-missing-syncthreads", "reduce", "missing __syncthreads() in a shared tree",
          "cuda/reduce/harris.cu", after="__global__ void sequential(",
          find="    if (tid < stride) s[tid] = Op::apply(s[tid], s[tid + stride]);\n"
               "    __syncthreads();\n",
          replace="    if (tid < stride) s[tid] = Op::apply(s[tid], s[tid + stride]);\n",
          tool="racecheck", driver=("ops.py", "--only", "reduce:2", "--inputs", "device")),
    # No compute-sanitizer tool sees a read of uninitialized shared memory inside the block's
    # shared window (docs/labs/concepts.md: a probe with every tool). This tree starts one level too
    # high, so its first step reads the half above the block's slots, which nothing wrote; with
    # the dynamic shared memory sized exactly (block x sizeof(Acc)), memcheck sees that read.
    Plant("reduce-uninitialized-shared", "reduce", "read of uninitialized shared memory",
          "cuda/reduce/harris.cu", after="__global__ void sequential(",
          find="  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {",
          replace="  for (unsigned stride = blockDim.x; stride > 0; stride >>= 1) {",
          tool="memcheck", driver=("ops.py", "--only", "reduce:2", "--inputs", "device")),
    Plant("nbody-missing-syncthreads", "nbody", "missing __syncthreads() after a tile load",
          "cuda/nbody/accel.cu", after="__global__ void nbody_tiled(",
          find="    for (int t = threadIdx.x; t < nbody_tile; t += blockDim.x) tile[t] = pos[base + t];\n"
               "    __syncthreads();\n",
          replace="    for (int t = threadIdx.x; t < nbody_tile; t += blockDim.x) tile[t] = pos[base + t];\n",
          tool="racecheck", driver=("nbody.py", "--only", "2", "--inputs", "device")),
    Plant("nbody-scaled-missing-syncthreads", "nbody", "missing __syncthreads() after a tile load",
          "cuda/nbody/accel.cu", after="    nbody_scaled(",
          find="      tile_e[s] = e;\n    }\n    __syncthreads();\n",
          replace="      tile_e[s] = e;\n    }\n",
          tool="racecheck", driver=("nbody.py", "--only", "6", "--inputs", "device")),
    # Variant 6's i = j term is the rounding error of a x_i, not 0. Left in, a lone body
    # accelerates itself: no sanitizer sees that, the driver's check against the CPU does.
    Plant("nbody-scaled-self-term-left-in", "nbody", "the i = j rounding term not taken out",
          "cuda/nbody/accel.cu", after="    nbody_scaled(",
          find="    if (tile_i >= t0 && tile_i < t1) {", replace="    if (tile_i < 0) {",
          tool="result", driver=("nbody.py", "--only", "6", "--inputs", "device")),
    # Variant 7: its partial slots have one writer each, which zeroes its row sums first.
    Plant("nbody-pairs-zero-past-end", "nbody", "zeroing one past a short last band",
          "cuda/nbody/accel.cu", after="    nbody_pairs(",
          find="    if (rows_first + i < static_cast<size_t>(n_pad))",
          replace="    if (rows_first + i <= static_cast<size_t>(n_pad))",
          tool="memcheck", driver=("nbody.py", "--only", "7", "--inputs", "device")),
    # initcheck misses this one (the pool's memory was written by earlier calls); nbody_step
    # evaluates the accelerations several times into one buffer, and the sums pile up.
    Plant("nbody-pairs-rows-not-zeroed", "nbody", "row sums added to an unzeroed slot",
          "cuda/nbody/accel.cu", after="    nbody_pairs(",
          find="      row_slot[rows_first + i] = make_float4(0.f, 0.f, 0.f, 0.f);",
          replace="      (void)row_slot;",
          tool="result", driver=("nbody.py", "--only", "7", "--inputs", "device")),
    # Pairs of a diagonal block taken both ways, and the row bodies' sums dropped: the results
    # are wrong, which no sanitizer sees and the driver's check against the CPU does.
    Plant("nbody-pairs-diagonal-twice", "nbody", "the pairs of a diagonal block counted twice",
          "cuda/nbody/accel.cu", after="    nbody_pairs(",
          find="(!diagonal || p <= q)", replace="(!diagonal || p != q || p == q)",
          tool="result", driver=("nbody.py", "--only", "7", "--inputs", "device")),
    Plant("nbody-pairs-row-sums-dropped", "nbody", "the row bodies' sums not stored",
          "cuda/nbody/accel.cu", after="__device__ __forceinline__ void pair_rows(",
          find="    slot[b] = make_float4(sum.x + axj, sum.y + ayj, sum.z + azj, 0.f);",
          replace="    slot[b] = make_float4(sum.x, sum.y + ayj, sum.z + azj, 0.f);",
          tool="result", driver=("nbody.py", "--only", "7", "--inputs", "device")),
    Plant("memory-write-past-end", "memory", "off-by-one global write", "cuda/memory/access.cu",
          find="  id %= n;\n", replace="  id %= n + 1;\n",
          tool="memcheck", driver=("memory.py",)),
    Plant("streams-read-past-end", "streams", "read one past the end", "cuda/streams/streams.cu",
          after="__global__ void matvec_rows(",
          find="  for (size_t j = lane; j < cols; j += 32) sum += r[j] * x[j];",
          replace="  for (size_t j = lane; j <= cols; j += 32) sum += r[j] * x[j];",
          tool="memcheck", driver=("streams.py",)),
    # The read half of a warp-synchronous step without its __syncwarp(): lane t may then read
    # s[t + offset] before or after lane t + offset overwrites it, the race S0's lockstep warp has.
    Plant("concepts-missing-syncwarp", "concepts",
          "missing __syncwarp() in a warp-synchronous step", "cuda/concepts/warp_reduce.cu",
          after="__device__ __forceinline__ unsigned last_warp_syncwarp(",
          find="    v += s[tid + offset];\n    __syncwarp();\n",
          replace="    v += s[tid + offset];\n",
          tool="racecheck",
          driver=("concepts.py", "--only", "warp_reduce:2", "--inputs", "device")),
    # A clip that lets table_size through: indices past the end read one float past the table.
    Plant("concepts-lookup-read-past-end", "concepts", "read one past the end",
          "cuda/concepts/lookup.cu", after="__device__ __forceinline__ int clip(",
          find="  return min(max(i, 0), table_size - 1);",
          replace="  return min(max(i, 0), table_size);",
          tool="memcheck", driver=("concepts.py", "--only", "lookup:1")),
    # The RGB merge runs one bin past the 3 x 256: a shared read past the columns and a global
    # atomic past the counts.
    Plant("histogram-rgb-merge-one-past", "histogram", "read and write one past the end",
          "cuda/histogram/rgb.cu", after="rgb_privatized(",
          find="k < rgb_bins; k += blockDim.x", replace="k <= rgb_bins; k += blockDim.x",
          tool="memcheck", driver=("histogram.py", "--only", "histogram_rgb:1")),
    # range=None's data range: thread 0 reads the other warps' partials without the barrier.
    Plant("histogram-data-range-missing-syncthreads", "histogram",
          "missing __syncthreads() before reading other warps' shared partials",
          "cuda/histogram/histogram.cu", after="__global__ void histogram_data_range(",
          find="  __syncthreads();  // every warp's partial is in\n", replace="",
          tool="racecheck",
          driver=("histogram.py", "--only", "histogram:3", "--inputs", "device")),
    # Lane columns' scalar tail reads one element past the end. (Its barriers make no plant:
    # racecheck reports no hazard when shared atomics meet plain loads, as the GPU showed
    # with the count-to-merge barrier removed, and the next tile's zeroing touches only the
    # words the same thread merged.)
    Plant("histogram-lane-columns-tail-one-past", "histogram",
          "read one element past x's end in the unaligned tail",
          "cuda/histogram/lane_columns.cu", after="histogram_lane_columns(",
          find="    if (tid < n - tail) count(x[tail + tid]);\n",
          replace="    if (tid <= n - tail) count(x[tail + tid]);\n", tool="memcheck",
          driver=("histogram.py", "--only", "histogram:3")),
    # The look-back scan's tail (a partial last tile) writes one element past y's end.
    Plant("scan-write-past-end", "scan", "off-by-one global write", "cuda/scan/shuffle.cu",
          after="    decoupled_lookback(const In *x, Acc *y,",
          find="        if (i < n) y[i] = out[k];",
          replace="        if (i <= n) y[i] = out[k];",
          tool="memcheck", driver=("scan.py", "--only", "scan:5")),
    # The look-back scan stages the partial last tile too: its copy into shared memory (the bulk
    # copy from sm_90) and its vector stores run past x's and y's ends.
    Plant("scan-stage-partial-tile", "scan", "staged copy past the end", "cuda/scan/shuffle.cu",
          after="__device__ __forceinline__ bool tile_is_staged(",
          find="  return vector_ok && begin + S::tile <= n;",
          replace="  return vector_ok && begin < n;",
          tool="memcheck", driver=("scan.py", "--only", "scan:5")),
    # The look-back scan's thread 0 folds the warps' sums into the aggregate it publishes before
    # the barrier after which every warp has written its sum (shared memory: racecheck).
    Plant("scan-aggregate-before-barrier", "scan", "missing __syncthreads() before a shared read",
          "cuda/scan/shuffle.cu", after="    decoupled_lookback(const In *x, Acc *y,",
          find="  Scan::warp_sum(thread_total, warp_sums);\n  __syncthreads();\n",
          replace="  Scan::warp_sum(thread_total, warp_sums);\n",
          tool="racecheck", driver=("scan.py", "--only", "scan:5", "--inputs", "device")),
    # Blelloch's up-sweep without its barrier: each step reads partial sums that other threads
    # of the step before may not have written yet (shared memory, which racecheck watches).
    Plant("scan-missing-syncthreads", "scan", "missing __syncthreads() in a shared tree",
          "cuda/scan/ops.cuh", after="__device__ Acc glc_blelloch_chunk(",
          find="  for (unsigned d = half; d > 0; d >>= 1, offset <<= 1) {\n    __syncthreads();\n",
          replace="  for (unsigned d = half; d > 0; d >>= 1, offset <<= 1) {\n",
          tool="racecheck", driver=("scan.py", "--only", "scan:1", "--inputs", "device")),
    # The radix scatter's last round taking one lane too many: in the last block that lane
    # reads the key one past the end (and writes it somewhere in the output).
    Plant("sort-radix-read-past-end", "sort", "read one past the end of the keys",
          "cuda/sort/radix.cu", after="    radix_scatter(",
          find="    const bool valid = i < end;", replace="    const bool valid = i <= end;",
          tool="memcheck", driver=("sort.py", "--only", "sort:1")),
    # The bitonic network's shared steps without their barrier: a step reads pairs that other
    # warps' compare-exchanges of the step before may not have stored yet.
    Plant("sort-bitonic-missing-syncthreads", "sort", "missing __syncthreads() between the "
          "steps of a shared bitonic merge", "cuda/sort/bitonic.cu",
          after="__device__ void merge_in_shared(",
          find="    compare_exchange(keys, indices, i, j, ((base + i) & k) == 0);\n    __syncthreads();\n",
          replace="    compare_exchange(keys, indices, i, j, ((base + i) & k) == 0);\n",
          tool="racecheck", driver=("sort.py", "--only", "sort:0", "--inputs", "device")),
    # Onesweep's tile load taking one key too many: the last tile reads the key one past the end
    # (and ranks it as one of its own).
    Plant("sort-onesweep-read-past-end", "sort", "read one past the end of the keys",
          "cuda/sort/onesweep.cu", after="    onesweep_pass(",
          find="return Full || warp_begin + 32 * j + lane < n; };",
          replace="return Full || warp_begin + 32 * j + lane <= n; };",
          tool="memcheck", driver=("sort.py", "--only", "sort:4")),
    # Onesweep's write-out reading the tile sorted in shared memory before every thread has
    # stored its keys there.
    Plant("sort-onesweep-missing-syncthreads", "sort", "missing __syncthreads() between the "
          "tile's sort in shared memory and its write-out", "cuda/sort/onesweep.cu",
          after="    onesweep_pass(",
          find="    __syncthreads();  // the sorted tile and every digit's shift are in place\n",
          replace="",
          tool="racecheck", driver=("sort.py", "--only", "sort:4", "--inputs", "device")),
    # Onesweep's copy, which runs when the device skips every pass (one key, all keys equal),
    # taking one key too many: it reads one past the end of the keys and writes one past the
    # outputs. memcheck sees it only if the driver's sorts reach the skipped passes.
    Plant("sort-onesweep-copy-one-past", "sort",
          "read and write one past the end in the copy after skipped passes",
          "cuda/sort/onesweep.cu", after="    onesweep_copy(",
          find="auto exists = [&](int j) { return at(j) < n; };",
          replace="auto exists = [&](int j) { return at(j) <= n; };",
          tool="memcheck", driver=("sort.py", "--only", "sort:4")),
    # The merge pass without the barrier between merging out of its shared slices and staging its
    # outputs over them: a thread's stores overwrite keys that other warps have still to merge.
    Plant("sort-merge-missing-syncthreads", "sort", "missing __syncthreads() between reading "
          "shared memory and overwriting it", "cuda/sort/merge.cu",
          after="    merge_pass(",
          find="  __syncthreads();  // every thread has read its slices before the outputs "
               "overwrite them\n",
          replace="",
          tool="racecheck", driver=("sort.py", "--only", "sort:3", "--inputs", "device")),
    # The quicksort's leaf network without its barrier between steps: a step reads pairs that
    # other warps' compare-exchanges of the step before may not have stored yet.
    Plant("sort-quicksort-leaf-missing-syncthreads", "sort", "missing __syncthreads() between the "
          "steps of the quicksort's shared leaf network", "cuda/sort/quicksort.cu",
          after="__device__ void sort_leaf(",
          find="        }\n      }\n      __syncthreads();\n    }\n",
          replace="        }\n      }\n    }\n",
          tool="racecheck", driver=("sort.py", "--only", "sort:5", "--inputs", "device")),
    # The dynamic-parallelism quicksort's partition writing its larger records one place too far
    # right: the first of them lands one past the segment, for the top segment one past the
    # scratch buffer (and the slot left unwritten sends the gather to a wild index).
    Plant("sort-cdp-partition-one-past", "sort", "off-by-one global write",
          "cuda/sort/quicksort_cdp.cu",
          after="    quicksort_cdp_segment(Records<Key> r, unsigned lo, unsigned hi, int depth, "
                "int max_depth) {",
          find="        at = hi - 1 - (greater + (prefix >> 16) + __popc(greater_lanes[item] & "
               "lanes_below));",
          replace="        at = hi - (greater + (prefix >> 16) + __popc(greater_lanes[item] & "
                  "lanes_below));",
          tool="memcheck", driver=("sort.py", "--only", "sort:6")),
    # The staged compaction's write-out rounds its count of 16-byte vectors up: the last vector
    # of a run whose length is not a whole number of vectors writes up to 3 elements past it,
    # past the end of a masked result (allocated at exactly the kept count) for the last tile.
    Plant("compact-staged-vector-past-end", "scan", "off-by-one global write",
          "cuda/scan/compact.cu", after="__device__ __forceinline__ void write_staged(",
          find="  const int vectors = (kept - head) / per;",
          replace="  const int vectors = (kept - head + per - 1) / per;",
          tool="memcheck", driver=("scan.py", "--only", "compact:3")),
    # The shared-tile SGEMM's guarded load of A lets the column k through: on the last row of A
    # that is one element past A's end (its product meets a zero of B's guarded tile, so the
    # result stays right and only memcheck can tell).
    Plant("linalg-tile-load-one-past", "linalg", "read one past the end of A in a guarded tile load",
          "cuda/linalg/matmul.cu", after="__device__ void tiled_product(",
          find="as_t[tx][ty] = row < m && a_col < k ?",
          replace="as_t[tx][ty] = row < m && a_col <= k ?",
          tool="memcheck", driver=("linalg.py", "--only", "matmul:2")),
    # The shared-tile SGEMM without the barrier between the tile loads and the products: warps
    # read the tiles' words that other warps may not have stored yet (plain shared loads and
    # stores, which racecheck watches).
    Plant("linalg-tiles-missing-syncthreads", "linalg",
          "missing __syncthreads() between a shared tile's stores and its loads",
          "cuda/linalg/matmul.cu", after="__device__ void tiled_product(",
          find="    __syncthreads();\n#pragma unroll\n",
          replace="#pragma unroll\n",
          tool="racecheck",
          driver=("linalg.py", "--only", "matmul:2", "--inputs", "device")),
    # The multistage SGEMM's cp.async copies of A taking the row past the tile's last one: on the
    # last row tile of an A whose rows are not a multiple of 128, one row past A's end (those rows'
    # results are never stored, so only memcheck can tell; it also shows that memcheck sees
    # cp.async's global reads).
    Plant("linalg-multistage-row-past-end", "linalg", "cp.async copy of the row past A's end",
          "cuda/linalg/matmul_multistage.cu", after="auto load = [&](unsigned s, unsigned tile) {",
          find="const unsigned row = r < rows_in ? r : rows_in - 1;",
          replace="const unsigned row = r <= rows_in ? r : rows_in - 1;",
          tool="memcheck", driver=("linalg.py", "--only", "matmul:12")),
    # The multistage SGEMM's unguarded whole-slice loop running one slice too far: it copies the
    # slice past the last whole one without guards, so at k % bk != 0 (the driver's 130 x 70 x
    # 132) B's rows past k, past B's end; at k % bk == 0, a slice past both A and B.
    Plant("linalg-multistage-whole-slice-past-k", "linalg",
          "cp.async copy of a whole slice past k", "cuda/linalg/matmul_multistage.cu",
          after="auto load = [&](unsigned s, unsigned tile) {",
          find="for (; t + STAGES - 1 < k_whole; ++t",
          replace="for (; t + STAGES - 1 <= k_whole; ++t",
          tool="memcheck", driver=("linalg.py", "--only", "matmul:12")),
    # The WMMA rungs' element-wise tile load (k % 8 != 0) letting column k through: on the last
    # row of A, one element past A's end (its product meets a zero of B's guarded tile, so the
    # result stays right and only memcheck can tell).
    Plant("linalg-wmma-tail-one-past", "linalg", "read one past the end of A in a WMMA tile tail",
          "cuda/linalg/hgemm_tiles.cuh", after="__device__ __forceinline__ void load_tile_sync(",
          find="if (col + j < cols_in) chunk.e[j] = p[j];",
          replace="if (col + j <= cols_in) chunk.e[j] = p[j];",
          tool="memcheck", driver=("linalg.py", "--only", "matmul:13")),
    # The WMMA multistage consumer waiting for one cp.async group too few: it reads the stage of
    # slice t while that slice's copies may still be in flight. No sanitizer sees cp.async's
    # completion, so the driver's own result check is the tool ("result": wrong results).
    Plant("linalg-wmma-multistage-read-before-wait", "linalg",
          "a cp.async stage read before cp.async.wait_group", "cuda/linalg/hgemm_wmma_multistage.cu",
          after="hgemm_wmma_multistage(size_t m, size_t n, size_t k,",
          find="cp_async_wait<STAGES - 2>();", replace="cp_async_wait<STAGES - 1>();",
          tool="result", driver=("linalg.py", "--only", "matmul:14", "--inputs", "device")),
    # The mma.sync rung's row guard of A's copies one row too far: on a last row tile that m
    # does not fill, the 16-byte copy of the row past A's end is issued (its results are never
    # stored, so only memcheck sees it).
    Plant("linalg-mma-tail-one-past", "linalg", "read one row past the end of A in an mma tile",
          "cuda/linalg/hgemm_mma.cu", after="    hgemm_mma_kernel(",
          find="a_rows |= (row0 + a_r + l * S::A_STEP < m ? 1u : 0u) << l;",
          replace="a_rows |= (row0 + a_r + l * S::A_STEP <= m ? 1u : 0u) << l;",
          tool="memcheck", driver=("linalg.py", "--only", "matmul:15")),
    # The warp-specialized wgmma consumers multiplying a stage without waiting on its full
    # mbarrier, so before the TMA has filled it. No sanitizer sees the TMA's writes or wgmma's
    # shared reads: the driver's result check is the tool.
    Plant("linalg-wgmma-ws-read-before-full", "linalg",
          "a consumer reading a stage before its mbarrier completes", "cuda/linalg/hgemm_wgmma.cu",
          after="    hgemm_wgmma_ws_kernel(",
          find="        mbar_wait(full + 8 * s, phase);\n        const uint64_t offset",
          replace="        const uint64_t offset",
          tool="result", driver=("linalg.py", "--only", "matmul:18", "--inputs", "device")),
    # A's TMA box one row down: every tile multiplies A's rows shifted by one, and the last
    # tile's box reaches one row past the matrix (the TMA zero-fills it). No sanitizer sees the
    # TMA's reads, in the matrix or past it: the driver's result check is the tool.
    Plant("linalg-wgmma-tma-box-row-past", "linalg",
          "A's TMA box one row down, its last row past the matrix", "cuda/linalg/hgemm_wgmma.cu",
          after="void wgmma_load_a(",
          find="tma_load_2d(stage, map_a, bar, kt * S::BK, row0);",
          replace="tma_load_2d(stage, map_a, bar, kt * S::BK, row0 + 1);",
          tool="result", driver=("linalg.py", "--only", "matmul:18", "--inputs", "device")),
    # The TF32 rung's tensor map of B^T one row (of n) short: the TMA zero-fills the last row
    # of B^T, so C's last column comes out 0. No sanitizer sees the TMA's reads (and this one
    # reads less, not more): the driver's result check is the tool.
    Plant("linalg-tf32-bt-map-one-row-short", "linalg",
          "B^T's tensor map one row short (C's last column zero)", "cuda/linalg/hgemm_wgmma.cu",
          find="wgmma_tensor_map(&map_b, GLC_F32, bt.ptr, k, n, ",
          replace="wgmma_tensor_map(&map_b, GLC_F32, bt.ptr, k, n - 1, ",
          tool="result", driver=("linalg.py", "--only", "matmul:19", "--inputs", "device")),
    # The clustered wgmma producers both multicasting the same half of B's boxes (the box index
    # without the block's rank): the bytes each full barrier expects still arrive, but the other
    # half of every B stage is never written, so the consumers multiply stale shared memory. No
    # sanitizer sees the TMA's writes; the driver's result check does, wherever n passes 64.
    Plant("linalg-wgmma-cluster-multicast-one-half", "linalg",
          "both blocks of a cluster multicasting the same half of B", "cuda/linalg/hgemm_wgmma.cu",
          after="    hgemm_wgmma_cluster_kernel(",
          find="const int j = 2 * i + static_cast<int>(rank);", replace="const int j = 2 * i;",
          tool="result", driver=("linalg.py", "--only", "matmul:20", "--inputs", "device")),
    # The same on the cluster kernel's K-major B (the TF32 instantiation's, which loads B^T's
    # box of bn rows as two halves of bn / 2): both producers multicast the first half, the
    # second half of every B stage is never written. The driver's result check sees it wherever
    # a tile's n passes bn / 2 (n = 128 at bn = 128).
    Plant("linalg-tf32-cluster-multicast-one-half", "linalg",
          "both blocks of a TF32 cluster multicasting the same half of B^T",
          "cuda/linalg/hgemm_wgmma.cu", after="    hgemm_wgmma_cluster_kernel(",
          find="const int half = static_cast<int>(rank);", replace="const int half = 0;",
          tool="result", driver=("linalg.py", "--only", "matmul:21", "--inputs", "device")),
    # S3's thread-per-row SpMV walking one nonzero too far: the last stored row reads indices and
    # data one past their end (other rows read their neighbour's first entry, in bounds).
    Plant("sparse-row-one-past", "sparse", "read one past the end of a CSR row",
          "cuda/sparse/csr.cu", after="__global__ void spmv_csr_scalar(",
          find="k < indptr[row + 1]; k++)", replace="k <= indptr[row + 1]; k++)",
          tool="memcheck", driver=("sparse.py", "--only", "spmv:0")),
    # The strided gather sum's load guard one nonzero too far (strided_sum in kernels.cuh, which
    # csr_subwarp and both of csr_hybrid's kernels use): the group of the last stored row, or the
    # block of a long row's last chunk, loads indices and data one past both arrays where that
    # row's length is not a multiple of the pass (the awkward matrices' wide_3x4099); the x gather
    # keeps its guard and multiplies by 0, so results stay right: only memcheck can tell.
    Plant("sparse-strided-sum-one-past", "sparse",
          "csr_subwarp and csr_hybrid reading one past a row or chunk",
          "cuda/sparse/kernels.cuh", after="__device__ __forceinline__ T strided_sum(",
          find="const bool in_range = k + u * Step < end;",
          replace="const bool in_range = k + u * Step <= end;",
          tool="memcheck", driver=("sparse.py", "--only", "spmv:8,spmv:9")),
    # csr_hub_sorted's per-call gather of x into the column order one element too far: it writes
    # x_sorted[cols], one past the pool buffer the call allocated (its read of new_to_old[cols]
    # stays inside the order, on the first relabelled index): only memcheck can tell.
    Plant("sparse-hub-gather-one-past", "sparse", "csr_hub_sorted gathering x one past its end",
          "cuda/sparse/hub_sorted.cu", after="__global__ void hub_gather_x(",
          find="threadIdx.x; i < cols;", replace="threadIdx.x; i <= cols;",
          tool="memcheck", driver=("sparse.py", "--only", "spmv:10")),
    # The device row statistics walking one row past the last: the grid-stride loop's bound
    # reads indptr[rows + 1], one past the array, in the thread that owns the last row.
    Plant("sparse-stats-row-one-past", "sparse", "row statistics reading one past indptr",
          "cuda/sparse/stats.cu", after="__global__ void csr_stats(",
          find="threadIdx.x; row < rows;", replace="threadIdx.x; row <= rows;",
          tool="memcheck", driver=("sparse.py", "--only", "analysis")),
    # R-MAT's indptr kernel writing one offset too many: indptr[rows + 1], past its end.
    Plant("sparse-rmat-indptr-one-past", "sparse", "R-MAT indptr written one past its end",
          "cuda/sparse/rmat.cu", after="__global__ void rmat_indptr(",
          find="r <= rows;", replace="r <= rows + 1;",
          tool="memcheck", driver=("sparse.py", "--only", "rmat")),
    # SELL-C-sigma's window sort without the barrier between storing the rows' lengths in shared
    # memory and every thread reading all of them (plain shared stores and loads, 8 warps).
    Plant("sparse-sell-missing-syncthreads", "sparse",
          "missing __syncthreads() between shared stores and loads of a window's row lengths",
          "cuda/sparse/formats.cu", after="__global__ void sell_sort_window(",
          find="  __syncthreads();\n  if (row >= rows) {\n",
          replace="  if (row >= rows) {\n",
          tool="racecheck", driver=("sparse.py", "--only", "spmv:5", "--inputs", "device")),
    # CG's Jacobi step one element too far: z = M^-1 r reads dinv[n], past the end of the solve's
    # vector buffer (dinv is its last vector).
    Plant("sparse-cg-jacobi-one-past", "sparse", "Jacobi step reading one past the vectors",
          "cuda/sparse/cg_kernels.cuh", after="__global__ void cg_jacobi(",
          find="if (i < n) z[i] = dinv[i] * r[i];", replace="if (i <= n) z[i] = dinv[i] * r[i];",
          tool="memcheck", driver=("sparse.py", "--only", "cg:0")),
    # CG's block sum without the barrier between the warps' lane 0 storing their sums in shared
    # memory and warp 0 reading them (plain shared stores and loads).
    Plant("sparse-cg-block-sum-missing-syncthreads", "sparse",
          "missing __syncthreads() between the warps' sums and warp 0's reads in cg's block sum",
          "cuda/sparse/cg_kernels.cuh", after="__device__ double block_sum(",
          find="  if (lane == 0) warp_sums[warp] = v;\n  __syncthreads();\n",
          replace="  if (lane == 0) warp_sums[warp] = v;\n",
          tool="racecheck", driver=("sparse.py", "--only", "cg:2", "--inputs", "device")),
    # counted_staged's count reading a tile's 16 mask bytes in one load where fewer than 16 are
    # left: past the end of the mask on the last, partial tile.
    Plant("compact-counted-mask-vector-past-end", "scan", "16-byte mask load past the end",
          "cuda/scan/compact.cu", after="count_kept_tiles(",
          find="if (mask_vectors && first + per <= n) {",
          replace="if (mask_vectors && first < n) {",
          tool="memcheck", driver=("scan.py", "--only", "compact:4")),
    # dia_fused's SpMV taking one diagonal slot past the matrix's (the predicate on the slot
    # off by one): on the 5-point Laplacian (5 diagonals, the 8-slot kernel) row i reads
    # values[5 n + i], past the DIA arrays' own allocation.
    Plant("sparse-cg-dia-slot-one-past", "sparse", "DIA SpMV reading one diagonal past A's",
          "cuda/sparse/cg_dia_kernels.cuh", after="__global__ void cg_dia_step(",
          find="if (d < offsets.count && j >= 0 && j < rows)",
          replace="if (d <= offsets.count && j >= 0 && j < rows)",
          tool="memcheck", driver=("sparse.py", "--only", "cg:4")),
    # The fused filter storing one row too many: the last tile of an image whose height is not a
    # multiple of 64 writes the row past the image's end.
    Plant("image-fused-row-past-end", "image", "write one row past the end of the image",
          "cuda/image/filter_fused.cu", after="filter_fused_separable(",
          find="if (row < h) glc_store_pixel", replace="if (row <= h) glc_store_pixel",
          tool="memcheck", driver=("image.py", "--only", "gaussian:3")),
    # The fused filter's row pass reading the input tile before every thread has stored its
    # part (plain shared stores, then plain 16-byte and scalar shared loads).
    Plant("image-fused-missing-syncthreads", "image",
          "missing __syncthreads() between the input tile's stores and the row pass's loads",
          "cuda/image/filter_fused.cu", after="filter_fused_separable(",
          find="  __syncthreads();\n\n  // The row pass into mid",
          replace="\n  // The row pass into mid",
          tool="racecheck",
          driver=("image.py", "--only", "gaussian:3", "--inputs", "device")),
    # S3 6.4's naive stencil letting the thread one past the last column through: on the grid's
    # last row it writes one element past the end of out (odd widths leave such a thread).
    Plant("stencil-naive-one-past", "stencil", "write one past the end of the output grid",
          "cuda/stencil/naive.cu", after="__global__ void stencil_naive(",
          find="if (x >= g.nx) return;", replace="if (x > g.nx) return;",
          tool="memcheck", driver=("stencil.py", "--only", "stencil:0")),
    # The shared tile's halo load without the barrier before the taps read it: warps read the
    # words other warps of the block may not have stored yet (plain shared loads and stores).
    Plant("stencil-tiles-missing-syncthreads", "stencil",
          "missing __syncthreads() between a halo tile's stores and its loads",
          "cuda/stencil/tiles.cu", after="__global__ void stencil_shared_tiles(",
          find="      __syncthreads();\n      const int x = x0 + threadIdx.x",
          replace="      const int x = x0 + threadIdx.x",
          tool="racecheck", driver=("stencil.py", "--only", "stencil:1", "--inputs", "device")),
    # Variant 4's whole-grid star kernel reading the west neighbour at row - 1 without the policy:
    # at the grid's first cell that is the element before u (the driver's aligned laplace5 and
    # laplace7 cases take this kernel).
    Plant("stencil-star-west-before-the-grid", "stencil",
          "the star kernel's west neighbour read at p - 1, past the face, without the policy",
          "cuda/stencil/split.cu", after="__global__ void stencil_star_wide(",
          find="const T left = __ldg(row + (west < 0 ? 0 : west - c0));",
          replace="const T left = __ldg(row - 1);",
          tool="memcheck", driver=("stencil.py", "--only", "stencil:4")),
    # Temporal blocking without the barrier that ends a sweep: the next sweep's warps read the
    # shared tile's neighbours while other warps may still be writing them.
    Plant("stencil-temporal-missing-syncthreads", "stencil",
          "missing __syncthreads() between two sweeps of a temporal pass",
          "cuda/stencil/jacobi_temporal.cu", after="jacobi_temporal2d(const T",
          find="      dst[ly][lx] = value;\n    }\n    __syncthreads();\n",
          replace="      dst[ly][lx] = value;\n    }\n",
          tool="racecheck", driver=("stencil.py", "--only", "jacobi:2", "--inputs", "device")),
    # gl.multi.jacobi's temporal passes sweep the whole slab, spoiling ghost rows up to depth - 1
    # deep, and rely on the exchange to refill all of them: one row short leaves a spoilt row in
    # the next pass (no sanitizer sees it; the driver's bitwise check against gl.jacobi does).
    Plant("multi-temporal-ghosts-one-row-short", "multi",
          "the halo exchange a row short of a temporal pass's ghost rows",
          "cuda/multi/jacobi.cu",
          find="  const size_t bytes = p.halo * p.row_elems * p.item;",
          replace="  const size_t bytes = (p.halo - (p.depth > 1)) * p.row_elems * p.item;",
          tool="result", driver=("multi.py",)),
    # The multi lab launches no kernel of its own: each GPU's part goes through the reduce lab's
    # best variant (12). The plant reads one past the end of the scalar tail there, and the multi
    # driver, which hands that kernel parts the multi lab allocated and copied itself (exact
    # sizes from the pool of each GPU), must let memcheck see it.
    Plant("multi-local-reduce-read-past-end", "multi", "read one past the end",
          "cuda/reduce/single_pass.cu", find="  if (thread < shape.tail) {", replace="  if (thread <= shape.tail) {",
          tool="memcheck", driver=("multi.py",)),
]


def sanitizer_command(tool, driver):
    if tool == "result":  # the driver alone, its own result checks the tool
        return [sys.executable, os.path.join("tools", "sanitize", driver[0]), *driver[1:]]
    cmd = ["compute-sanitizer", "--tool", tool, "--error-exitcode", str(ERROR_EXIT)]
    if tool == "memcheck":
        cmd += ["--padding", MEMCHECK_PADDING]
    return cmd + [sys.executable, os.path.join("tools", "sanitize", driver[0]), *driver[1:]]


def reported(tool, output):
    """The number of errors or hazards the sanitizer's summary reports (0 when none); for the
    "result" tool, the driver's wrong results."""
    if tool == "result":
        return len(re.findall(r"^wrong result", output, re.M))
    pattern = r"RACECHECK SUMMARY: (\d+) hazard" if tool == "racecheck" else \
        r"ERROR SUMMARY: (\d+) error"
    found = re.findall(pattern, output)
    return int(found[-1]) if found else 0


def copy_tree(src, dst, leave_out=NOT_COPIED):
    """A copy that keeps modification times, so that the copy's build sees its objects as fresh."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(*leave_out))


def build(tree, log):
    """Builds tree in place (incrementally); returns (seconds, nvcc runs)."""
    env = dict(os.environ, GPULAB_CUDA_ARCHS=ARCHS)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree,
                          env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    with open(log, "w") as f:
        f.write(done.stdout + done.stderr)
    if done.returncode:
        raise RuntimeError(f"build of {tree} failed; see {log}")
    # setup.py's progress: one "[k/N] path (s)" line on stderr for each file it compiled
    return seconds, len(re.findall(r"^\[\d+/\d+\] cuda/\S+\.cu ", done.stderr, re.M))


def core_mtime(tree):
    found = glob.glob(os.path.join(tree, "gpulab", "_core*.so"))
    return max(os.path.getmtime(p) for p in found) if found else 0.0


# Seconds a sanitizer run may take before it is stopped (main's --run-timeout).
RUN_TIMEOUT_S = 300


def run_command(command, cwd, env, timeout):
    """(output, exit code, finished): the command's stdout and stderr. A run past `timeout`
    seconds is killed with its whole process group (compute-sanitizer and the driver under it),
    keeping the output it had written; its exit code is None and finished False."""
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
            return out + err, proc.returncode, True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return out + err + f"\n(stopped after {timeout} s)\n", None, False


def run_sanitizer(tree, tool, driver, log, exact=True, command=None):
    env = dict(os.environ, PYTHONPATH=tree, GPULAB_EXACT_ALLOC="1" if exact else "0",
               PYTHONUNBUFFERED="1", GPULAB_SANITIZER_TOOL=tool)
    t0 = time.perf_counter()
    output, code, finished = run_command(command or sanitizer_command(tool, driver), tree, env,
                                         RUN_TIMEOUT_S)
    seconds = time.perf_counter() - t0
    with open(log, "w") as f:
        f.write(output)
    summary = [line.strip("= ").strip() for line in output.splitlines() if "SUMMARY" in line][-1:]
    return {"reported": reported(tool, output) if finished else 0, "exit": code,
            "finished": finished, "seconds": round(seconds, 1),
            "summary": summary if finished else [f"not finished in {RUN_TIMEOUT_S} s"]}


def plant_into(tree, plant):
    path = os.path.join(tree, plant.file)
    with open(path) as f:
        text = f.read()
    # With an anchor, the region is the anchored kernel: up to the next __global__.
    start, end = 0, len(text)
    if plant.after:
        if text.count(plant.after) != 1:
            raise ValueError(f"{plant.name}: the anchor occurs {text.count(plant.after)} times in "
                             f"{plant.file}; update the plant")
        start = text.index(plant.after)
        following = text.find("__global__", start + len(plant.after))
        end = following if following >= 0 else end
    count = text.count(plant.find, start, end)
    if count != 1:
        raise ValueError(f"{plant.name}: the text to plant over occurs {count} times in "
                         f"{plant.file}; update the plant")
    at = text.index(plant.find, start, end)
    with open(path, "w") as f:
        f.write(text[:at] + plant.replace + text[at + len(plant.find):])


def check_plant(base, work, plant):
    tree = os.path.join(work, plant.name)
    copy_tree(base, tree, leave_out=("__pycache__",))
    plant_into(tree, plant)
    before = core_mtime(tree)
    build_s, nvcc_runs = build(tree, os.path.join(work, f"{plant.name}.build.log"))
    if core_mtime(tree) <= before:  # else the run below would test the unplanted library
        raise RuntimeError(f"{plant.name}: the build did not relink gpulab/_core")
    result = run_sanitizer(tree, plant.tool, plant.driver, os.path.join(work, f"{plant.name}.log"))
    # For the record, not for the verdict: what the same run sees without exact allocation mode.
    normal = run_sanitizer(tree, plant.tool, plant.driver,
                           os.path.join(work, f"{plant.name}.normal.log"),
                           exact=False) if result["finished"] else {"reported": None}
    return {**dataclasses.asdict(plant), "driver": " ".join(plant.driver),
            "caught": result["reported"] > 0, "build_s": round(build_s, 1),
            "objects_recompiled_by_nvcc": nvcc_runs, **result,
            "reported_without_exact_mode": normal["reported"]}


def check_baseline(base, work, tool, driver):
    name = f"baseline-{tool}-{'-'.join(driver).replace('.py', '').replace(':', '_')}"
    result = run_sanitizer(base, tool, driver, os.path.join(work, name + ".log"))
    return {"tool": tool, "driver": " ".join(driver), "clean": result["finished"] and
            result["reported"] == 0 and result["exit"] == 0, **result}


def labs():
    """The registry's labs, read from csrc/labs/labs.def (no build needed)."""
    with open(os.path.join(ROOT, "csrc", "labs", "labs.def")) as f:
        return re.findall(r"^GL_LAB\((\w+)\)", f.read(), re.M)


def labs_without_plants():
    return sorted(set(labs()) - {p.lab for p in PLANTS})


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    results_dir = os.environ.get("GPULAB_RESULTS") or os.path.join(ROOT, "benchmarks", "results")
    parser.add_argument("--out", default=os.path.join(results_dir, "mutation_check.json"))
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--only", help="comma-separated plant names")
    parser.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT_S,
                        help="seconds a sanitizer run may take (default %(default)s)")
    args = parser.parse_args()
    globals()["RUN_TIMEOUT_S"] = args.run_timeout
    plants = PLANTS if not args.only else [p for p in PLANTS if p.name in args.only.split(",")]
    missing = labs_without_plants()
    work = args.keep or tempfile.mkdtemp(prefix="gpulab-mutation-")
    os.makedirs(work, exist_ok=True)
    t0 = time.perf_counter()
    base = os.path.join(work, "base")
    copy_tree(ROOT, base)
    base_build_s, _ = build(base, os.path.join(work, "base.build.log"))
    print(f"base built in {base_build_s:.0f} s (sm_{ARCHS})", flush=True)
    commands = sorted({(p.tool, p.driver) for p in plants})
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        baselines = [pool.submit(check_baseline, base, work, tool, driver)
                     for tool, driver in commands]
        planted = [pool.submit(check_plant, base, work, p) for p in plants]
        baselines = [f.result() for f in baselines]
        planted = [f.result() for f in planted]
    wall_s = time.perf_counter() - t0
    for r in planted:
        verdict = "CAUGHT" if r["caught"] else "MISSED" if r["finished"] else "NOT FINISHED"
        print(f"{verdict} {r['name']} ({r['lab']}: {r['kind']}) by "
              f"{r['tool']}: {r['summary']}; rebuilt in {r['build_s']} s "
              f"({r['objects_recompiled_by_nvcc']} object by nvcc), ran {r['seconds']} s; without "
              f"exact mode {r['reported_without_exact_mode']} reported")
    for r in baselines:
        verdict = "clean" if r["clean"] else "DIRTY" if r["finished"] else "NOT FINISHED"
        print(f"{verdict} baseline {r['tool']} {r['driver']}: "
              f"{r['summary']} (exit {r['exit']})")
    ok = all(r["caught"] for r in planted) and all(r["clean"] for r in baselines) and not missing
    if missing:
        print(f"labs without a plant: {', '.join(missing)}: add theirs to PLANTS")
    sys.path.insert(0, base)  # the built copy of this tree
    from gpulab.provenance import metadata
    meta = metadata({"archs": ARCHS, "jobs": args.jobs, "memcheck_padding": MEMCHECK_PADDING,
                     "exact_alloc": True, "run_timeout_s": RUN_TIMEOUT_S})
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "results": {
            "passed": ok, "plants": planted, "baselines": baselines,
            "labs_without_plants": missing, "base_build_s": round(base_build_s, 1),
            "wall_s": round(wall_s, 1)}}, f, indent=1)
    caught = sum(r["caught"] for r in planted)
    print(f"mutation_check: {caught} of {len(planted)} planted bugs caught, "
          f"{sum(r['clean'] for r in baselines)} of {len(baselines)} baselines clean, "
          f"{wall_s:.0f} s in all (base build {base_build_s:.0f} s); wrote {args.out}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
