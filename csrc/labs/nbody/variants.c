/* The n-body lab's ladder: nbody_accel, which nbody_step also runs. */
#include "variants.h"

#define NB_BLOCKS_V5 \
  { 32, 64, 128, 256, 0 }
#define NB_UNROLLS \
  { 1, 2, 4, 8, 16, 0 }

static const gl_variant nbody_variants[] = {
    {.id = 0,
     .name = "naive_aos",
     .backend = GL_BACKEND_CUDA,
     .summary = "One thread per body; every j body (a float4: x, y, z, m) read from global memory.",
     .seed = "S0 ch. 7 naive kernel; GPU Gems 3 ch. 31",
     .kernels = "nbody_pack nbody_naive nbody_unpack",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 1,
     .name = "naive_unrolled",
     .backend = GL_BACKEND_CUDA,
     .summary = "Variant 0 with the j loop unrolled `unroll` times.",
     .seed = "S0 ch. 7 loop unrolling (1 / 2 / 16)",
     .kernels = "nbody_pack nbody_naive_unrolled nbody_unpack",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}, {"unroll", NB_UNROLLS, 4}}},
    {.id = 2,
     .name = "shared_tiles",
     .backend = GL_BACKEND_CUDA,
     .summary =
         "The block stages 256 bodies at a time in shared memory; threads read them as broadcasts.",
     .seed = "S0 ch. 7 shared-memory tiles; GPU Gems 3 ch. 31",
     .kernels = "nbody_pack nbody_tiled nbody_unpack",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 3,
     .name = "tiles_unrolled",
     .backend = GL_BACKEND_CUDA,
     .summary = "Variant 2 with the loop over the tile unrolled `unroll` times.",
     .seed = "S0 ch. 7 tiles + unrolling (1 / 2 / 4)",
     .kernels = "nbody_pack nbody_tiled nbody_unpack",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}, {"unroll", NB_UNROLLS, 4}}},
    {.id = 4,
     .name = "tiles_soa",
     .backend = GL_BACKEND_CUDA,
     .summary =
         "Variant 3 on a structure of arrays (x[], y[], z[], m[]): four 4-byte loads per body.",
     .seed = "S0 ch. 7 SoA vs AoS",
     .kernels = "nbody_pack nbody_tiled_soa nbody_unpack",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}, {"unroll", NB_UNROLLS, 4}}},
    {.id = 5,
     .name = "multibody_split",
     .backend = GL_BACKEND_CUDA,
     .summary = "`bodies` bodies per thread share each j body loaded from shared memory; MUFU "
                "rsqrt (ftz); the j range is split over enough blocks to fill every SM, and the "
                "parts are added in order.",
     .seed = "H100: register blocking over i (as in SGEMM), split-K",
     .kernels = "nbody_pack nbody_multibody nbody_sum_splits nbody_unpack",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", NB_BLOCKS_V5, 128}, {"bodies", {1, 2, 4, 8, 0}, 8}}},
    {.id = 100,
     .name = "naive",
     .backend = GL_BACKEND_CPU,
     .summary = "Naive AoS double loop on one core.",
     .seed = "S0 ch. 7 CPU baseline",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC},
    {.id = 101,
     .name = "soa_autovec",
     .backend = GL_BACKEND_CPU,
     .summary =
         "SoA; for blocks of 256 i, j outside and i inside, so gcc vectorizes the i loop (SSE).",
     .seed = "S0 ch. 7 SSE",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC},
    {.id = 102,
     .name = "openmp_simd",
     .backend = GL_BACKEND_CPU,
     .summary = "Variant 101 with OpenMP threads over the i blocks and 'omp simd' inside.",
     .seed = "S0 ch. 7 SSE on 32 threads",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_nbody = {
    .op = "nbody_accel", .variants = nbody_variants, .count = GL_COUNT_OF(nbody_variants)};
