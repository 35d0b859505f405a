/* The histogram lab's ladders: histogram and histogram_rgb. Ids: cuda/histogram/histogram.h. */
#include "variants.h"

#include "cuda/histogram/histogram.h"

static const gl_variant histogram_variants[] = {
    {.id = GLC_HISTOGRAM_GLOBAL_ATOMIC,
     .name = "global_atomics",
     .backend = GL_BACKEND_CUDA,
     .summary = "S4: every element adds one to its bin's 64-bit count in global memory with an "
                "atomic. Atomics on one address serialize at its L2 slice, so data with most "
                "samples in one bin crawls.",
     .seed = "S4 section 8 (parallel histograms, atomics)",
     .kernels = "(histogram_data_range) histogram_global_atomic",
     .dtypes = HISTOGRAM_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_HISTOGRAM_SHARED,
     .name = "shared_privatized",
     .backend = GL_BACKEND_CUDA,
     .summary = "A 32-bit histogram per block in shared memory (S4's 'from global to shared "
                "memory'), counted with shared atomics and added to the global counts once per "
                "block; more than 12288 bins are counted a tile of bins per pass.",
     .seed = "S4 section 8 (local histograms merged)",
     .kernels = "(histogram_data_range) histogram_shared",
     .dtypes = HISTOGRAM_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_HISTOGRAM_WARP_AGGREGATED,
     .name = "warp_aggregated",
     .backend = GL_BACKEND_CUDA,
     .summary = "Variant 1 with warp aggregation: __match_any_sync groups the lanes of a warp "
                "that hold the same bin and the lowest adds their number, one shared atomic per "
                "distinct bin per warp instead of one per lane (skewed data).",
     .seed = "S4 atomics; warp-aggregated atomics (CUDA programming guide, match_any)",
     .kernels = "(histogram_data_range) histogram_warp_aggregated",
     .dtypes = HISTOGRAM_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_HISTOGRAM_LANE_COLUMNS,
     .name = "lane_columns_vec16",
     .backend = GL_BACKEND_CUDA,
     .summary = "A shared histogram per block with one column per lane (counts[bin][lane] for "
                "up to 256 bins): every shared atomic of a warp hits 32 banks and never one "
                "address, whatever the data; 16-byte loads, four in flight per thread, one wave "
                "of blocks, one merge per block.",
     .seed = "S4 section 8; per-lane sub-histograms (replication against contention)",
     .kernels = "(histogram_data_range) histogram_lane_columns",
     .dtypes = HISTOGRAM_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", {64, 128, 256, 512, 1024, 0}, 512}}},
    {.id = GLC_HISTOGRAM_CUB,
     .name = "cub",
     .backend = GL_BACKEND_CUDA,
     .summary = "CUB's DeviceHistogram::HistogramEven (the toolkit's CCCL), the reference: "
                "integer data only, the value lo + bins moved into the last bin on the way in "
                "(CUB's levels are half-open, np.histogram's last bin is closed). CUB bins "
                "floats as (x - lo) * scale, which differs from NumPy on some edges.",
     .seed = "CUB DeviceHistogram (reference implementation)",
     .kernels = "glc_histogram_cub",
     .library = "CUB DeviceHistogram::HistogramEven",
     .dtypes = HISTOGRAM_INT_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_HISTOGRAM_CPU_SERIAL,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "One thread, one count per element: the reference loop.",
     .seed = "S4 section 8 (sequential histogram)",
     .dtypes = HISTOGRAM_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_HISTOGRAM_CPU_OPENMP,
     .name = "openmp_private",
     .backend = GL_BACKEND_CPU,
     .summary = "OpenMP threads, each counting 64 Ki-element chunks into a private histogram; "
                "the private histograms are added at the end.",
     .seed = "S2 OpenMP; S4 section 8 (local histograms merged)",
     .dtypes = HISTOGRAM_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_histogram = {
    .op = "histogram", .variants = histogram_variants, .count = GL_COUNT_OF(histogram_variants)};

static const gl_variant histogram_rgb_variants[] = {
    {.id = GLC_HISTOGRAM_RGB_GLOBAL_ATOMIC,
     .name = "global_atomics",
     .backend = GL_BACKEND_CUDA,
     .summary = "S4's kernel: each pixel adds one to three 64-bit global counts (R, G, B) with "
                "atomics.",
     .seed = "S4 section 8 (local_his)",
     .kernels = "rgb_global_atomic",
     .dtypes = HISTOGRAM_RGB_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_HISTOGRAM_RGB_PRIVATIZED,
     .name = "privatized_vec16",
     .backend = GL_BACKEND_CUDA,
     .summary = "3 x 256 counts per block in shared memory, one column per lane (96 KiB: no "
                "bank conflict or same-address collision within a warp); uint8 images read 16 "
                "interleaved bytes per load, the channel of each byte from its position; one "
                "merge per block.",
     .seed = "S4 section 8 ('moving from global to shared memory')",
     .kernels = "rgb_privatized",
     .dtypes = HISTOGRAM_RGB_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", {128, 256, 512, 1024, 0}, 1024}}},
    {.id = GLC_HISTOGRAM_RGB_CPU,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "One thread over the interleaved values, channel = position % 3.",
     .seed = "S4 section 8",
     .dtypes = HISTOGRAM_RGB_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_histogram_rgb = {.op = "histogram_rgb",
                                           .variants = histogram_rgb_variants,
                                           .count = GL_COUNT_OF(histogram_rgb_variants)};
