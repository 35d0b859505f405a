/* The sort lab's ladder (LABS.md section 7, issue 12): a bitonic network, an LSD radix sort and
 * CUB's radix sort, and two CPU sorts. sort, argsort and sort_pairs run the same variants (keys
 * alone, with their indices, or with values), so the three ops share one table. Ids come from
 * cuda/sort/sort.h's enum; the CPU's start at 100. Still to come (issue 12): merge sort,
 * onesweep, and S4's two quicksorts. */
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
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"bits", {4, 8, 0}, 8}}},
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
