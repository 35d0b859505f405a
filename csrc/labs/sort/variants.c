/* The sort lab's ladder: a bitonic network, an LSD radix sort, a merge-path merge sort, a onesweep
 * radix sort, a quicksort by scans, S4's quicksort with dynamic parallelism and CUB's radix sort,
 * and two CPU sorts. sort, argsort and sort_pairs run the same variants (keys alone, with their
 * indices, or with values), so the three ops share one table. Ids come from cuda/sort/sort.h's
 * enum; the CPU's start at 100. */
#include "variants.h"

#include "cuda/sort/sort.h"

static const gl_variant sort_variants[] = {
    {.id = GLC_SORT_BITONIC,
     .name = "bitonic",
     .backend = GL_BACKEND_CUDA,
     .summary = "Batcher's bitonic network on (key, index) pairs padded to a power of two: "
                "every stage up to 2048 pairs in one block's shared memory, then each later "
                "stage's long steps in global memory and its short ones in shared memory. The "
                "index breaks ties, so it is stable. log2(N)^2/2 steps: up to 2^28 keys "
                "(ValueError beyond).",
     .seed = "S4 9 (bitonic sort; its index bugs fixed)",
     .kernels = "bitonic_prepare bitonic_sort_shared (bitonic_merge_global bitonic_merge_shared) "
                "bitonic_gather",
     .dtypes = SORT_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_SORT_LSD_RADIX,
     .name = "lsd_radix",
     .backend = GL_BACKEND_CUDA,
     .summary = "LSD radix sort, stable, `bits` (4 or 8) a pass, lowest digit first: per-block "
                "digit histograms, one block's scan of them (digit-major), and a scatter that "
                "ranks each key among its warp's peers (__match_any_sync) and the earlier warps. "
                "12 B a 4-byte key a pass; its writes are not coalesced.",
     .seed = "S4 9 (radix sort); Merrill & Grimshaw 2011",
     .kernels = "radix_histogram radix_scan_counts radix_scatter",
     .dtypes = SORT_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bits", {4, 8, 0}, 8}}},
    {.id = GLC_SORT_MERGE_PATH,
     .name = "merge_path",
     .backend = GL_BACKEND_CUDA,
     .summary = "Merge sort, stable: each block sorts a tile of 2048 keys (odd-even transposition "
                "in registers, then merges in shared memory), then ceil(log2(n / 2048)) passes "
                "each merge pairs of sorted runs, every block and thread finding its share of "
                "the two runs by a merge-path binary search; equal keys are taken from the left "
                "run first. Every pass reads and writes every key: O(n log n) bytes, 8 B a 4-byte "
                "key a pass (+8 B for 4-byte values). Any n (64-bit offsets); scratch: a second "
                "copy of the keys and values.",
     .seed = "Green, McColl & Bader 2012 (merge path); Odeh et al. 2012",
     .kernels = "merge_sort_tiles (merge_partition merge_pass)",
     .dtypes = SORT_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_SORT_ONESWEEP,
     .name = "onesweep",
     .backend = GL_BACKEND_CUDA,
     .summary = "Onesweep radix sort, stable, 8 bits a pass: one read of the keys counts every "
                "pass's digits; then each pass is one kernel whose blocks rank a tile of keys "
                "(per-warp digit counters, peers found by a ballot a digit bit), find each "
                "digit's place after the earlier tiles by a decoupled look-back (a thread a "
                "digit), sort the tile by digit in shared memory and write it out coalesced. "
                "A pass where every key has the same digit is skipped on the device, with no "
                "host sync: the counts route the passes that run between the spare buffers and "
                "the outputs, and a copy moves the inputs when none runs. 4 + 8 B a 4-byte key a "
                "pass: 36 B for int32. The default: 3.1x lsd_radix at 2^28 int32 on an H100, "
                "1.19x cupy.sort, 2.45x torch.sort.",
     .seed = "Adinets & Merrill 2022 (Onesweep)",
     .kernels = "onesweep_histogram onesweep_offsets onesweep_pass onesweep_copy",
     .dtypes = SORT_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = GLC_SORT_QUICKSORT,
     .name = "quicksort",
     .backend = GL_BACKEND_CUDA,
     .summary = "Quicksort by scans, stable: each level partitions all its segments at once, "
                "three ways around each one's median-of-three pivot (per-tile counts of the "
                "less and equal flags, one block's scan of them, a stable scatter); the equal "
                "class is done, segments of up to 2048 keys are sorted by a bitonic network on "
                "(key, position) in shared memory. One 16-byte read-back a level; past 64 levels "
                "a stable merge sort finishes. 12 B a 4-byte key a level, ~1.2 log2(n/2048) "
                "levels on random keys; 64-bit offsets, any n.",
     .seed = "S4 9 (quicksort by prefix sums)",
     .kernels = "quicksort_root (quicksort_iota quicksort_plan quicksort_count quicksort_scan "
                "quicksort_scatter quicksort_split quicksort_leaf quicksort_fallback_chunks "
                "quicksort_merge_pass)",
     .dtypes = SORT_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_SORT_QUICKSORT_CDP,
     .name = "quicksort_cdp",
     .backend = GL_BACKEND_CUDA,
     .summary = "S4's quicksort by dynamic parallelism on (key, index) records, which the index "
                "makes stable: a one-block grid partitions its segment (ballots and a scan of "
                "warp counts) around a ninther and launches a grid per side from the "
                "device (CDP2, fire-and-forget); sides up to 2048 are sorted in shared memory, "
                "and from depth 22 (or when a launch fails) a block sorts its segment alone. "
                "16 B a key a level; one block partitions the whole input: up to 2^24 keys "
                "(ValueError beyond).",
     .seed = "S4 9 (cdp_simple_quicksort)",
     /* the host launches the top segment; the device launches the same kernel for the rest */
     .kernels = "quicksort_cdp_prepare quicksort_cdp_segment quicksort_cdp_gather",
     .dtypes = SORT_DTYPES,
     .flags = GL_DETERMINISTIC | GL_DEVICE_LAUNCHES},
    {.id = GLC_SORT_CUB,
     .name = "cub",
     .backend = GL_BACKEND_CUDA,
     .summary = "CUB's DeviceRadixSort (onesweep), stable: the reference, as cupy.sort calls it. "
                "Integer keys as they are; float keys as their ordered bits with their indices "
                "(CUB puts -0.0 before +0.0 and negative NaNs first), then gathered.",
     .seed = "CCCL/CUB",
     .kernels = "cub_sort",
     .library = "CUB DeviceRadixSort::SortKeys, DeviceRadixSort::SortPairs (and Descending), "
                "DeviceTransform::Transform",
     .dtypes = SORT_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = 100,
     .name = "qsort",
     .backend = GL_BACKEND_CPU,
     .summary = "libc's qsort, serial, on (key, index) records: the index breaks ties, which "
                "makes the unstable qsort stable.",
     .seed = "-",
     .dtypes = SORT_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = 101,
     .name = "openmp_radix",
     .backend = GL_BACKEND_CPU,
     .summary = "LSD radix sort by bytes with OpenMP, stable: each thread counts its chunk, the "
                "counts are scanned byte-major, each thread scatters its chunk in order; a pass "
                "where every key has the same byte is skipped.",
     .seed = "S4 9 (radix sort)",
     .dtypes = SORT_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_sort = {
    .op = "sort", .variants = sort_variants, .count = GL_COUNT_OF(sort_variants)};
const gl_ladder gl_ladder_argsort = {
    .op = "argsort", .variants = sort_variants, .count = GL_COUNT_OF(sort_variants)};
const gl_ladder gl_ladder_sort_pairs = {
    .op = "sort_pairs", .variants = sort_variants, .count = GL_COUNT_OF(sort_variants)};
