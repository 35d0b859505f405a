/* The saxpy lab's ladders: saxpy, and matadd, S0's first 2-D launch. */
#include "variants.h"

static const gl_variant saxpy_variants[] = {
    {.id = 0,
     .name = "one_per_thread",
     .backend = GL_BACKEND_CUDA,
     .summary = "One thread per element with a bounds check; grid = ceil(n / block).",
     .seed = "S0 SAXPY; S4 first kernels",
     .kernels = "saxpy_per_element",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 1,
     .name = "grid_stride",
     .backend = GL_BACKEND_CUDA,
     .summary = "Grid-stride loop over one resident wave of blocks, so any n runs on a fixed grid.",
     .seed = "S3 grid-stride loops",
     .kernels = "saxpy_grid_stride",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 2,
     .name = "vec16_tiles",
     .backend = GL_BACKEND_CUDA,
     .summary = "16-byte vectors (float4/double2), 4 per thread loaded before any store, one "
                "contiguous tile per block; a grid-stride loop over tiles covers any n.",
     .seed = "S3 vectorized memory access",
     .kernels = "saxpy_vec16",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 100,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "A plain loop on one core (gcc may SIMD-vectorize it).",
     .seed = "S0 CPU SAXPY",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = 101,
     .name = "openmp_simd",
     .backend = GL_BACKEND_CPU,
     .summary = "OpenMP threads over 'omp simd' loops.",
     .seed = "S0/S2 OpenMP",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_saxpy = {
    .op = "saxpy", .variants = saxpy_variants, .count = GL_COUNT_OF(saxpy_variants)};

static const gl_variant matadd_variants[] = {
    {.id = 0,
     .name = "grid_2d_16x16",
     .backend = GL_BACKEND_CUDA,
     .summary = "A 2-D grid of 16x16 blocks, x over columns and y over rows.",
     .seed = "S0 first 2-D launch",
     .kernels = "matadd_2d",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = 100,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "Row-major double loop on one core.",
     .seed = "S0 CPU matadd",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_matadd = {
    .op = "matadd", .variants = matadd_variants, .count = GL_COUNT_OF(matadd_variants)};
