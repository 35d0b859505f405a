/* The stencil lab's ladders: the stencil from S3's naive kernel through shared tiles with halos,
 * 2.5D streaming and the interior/boundary split to a Hopper rung; the Jacobi solver from a kernel
 * per sweep to temporal blocking and a CUDA graph. Ids come from cuda/stencil/stencil.h's enums;
 * the CPU's start at 100. */
#include "variants.h"

#include "cuda/stencil/stencil.h"

/* Block shape along x and y; None lets the variant pick by dimension (1D: 256 x 1 or 128 x 1). */
#define BX_TUNABLE \
  { "bx", {32, 64, 128, 256, 512, 1024, 0}, 32 }
#define BY_TUNABLE \
  { "by", {1, 2, 4, 8, 16, 32, 0}, 8 }
#define BLOCK_SHAPE_TUNABLES \
  { BX_TUNABLE, BY_TUNABLE }
/* Rows along y a thread of the 3D star kernel owns (cuda/stencil/split.cu's star_rows note). */
#define HOPPER_TUNABLES                              \
  {                                                  \
    BX_TUNABLE, BY_TUNABLE, { "rows", {1, 2, 4}, 1 } \
  }

static const gl_variant stencil_variants[] = {
    {.id = GLC_STENCIL_NAIVE,
     .name = "naive",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3 6.4's kernel: one thread per cell, every tap read from global memory through "
                "the boundary policy's index map (the caches catch the re-reads).",
     .seed = "S3 6.4",
     .kernels = "stencil_naive",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_SHAPE_TUNABLES},
    {.id = GLC_STENCIL_SHARED_TILES,
     .name = "shared_tiles",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3 5.1/11.1: the block's tile and its halo loaded into shared memory once (the "
                "policy applied at the load), every tap read from there; 3D tiles 4 planes deep.",
     .seed = "S3 5.1, 11.1",
     .kernels = "stencil_shared_tiles",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_SHAPE_TUNABLES},
    {.id = GLC_STENCIL_STREAMING,
     .name = "streaming",
     .backend = GL_BACKEND_CUDA,
     .summary = "Blocking along one axis: 2.5D streaming, a ring of 2r+1 padded planes in shared "
                "memory marched along z (2D: along y); 1D: 8 outputs per thread from a register "
                "window.",
     .seed = "S3 11.1; 2.5D blocking",
     .kernels = "(stencil_streaming) (stencil_register_1d)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_SHAPE_TUNABLES},
    {.id = GLC_STENCIL_SPLIT,
     .name = "interior_boundary",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3 11.1's split: a branch-free interior kernel at fixed flat tap offsets, and a "
                "kernel over the boundary shell alone that applies the policy.",
     .seed = "S3 11.1, 12.4",
     .kernels = "(stencil_interior) stencil_boundary",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_SHAPE_TUNABLES},
    {.id = GLC_STENCIL_HOPPER,
     .name = "hopper",
     .backend = GL_BACKEND_CUDA,
     .summary =
         "The split with 4 outputs per thread in the interior (each tap's weight loaded "
         "once for 4 cells); radius-1 star weights (laplace5/7) march the outer axis with "
         "its neighbours in registers, 16-byte vectors along x where the rows allow (then one "
         "kernel covers the faces too, through the policy).",
     .seed = "S3 11.1; 2.5D register streaming",
     .kernels = "(stencil_interior) (stencil_star) (stencil_star_wide) (stencil_boundary)",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = HOPPER_TUNABLES},
    {.id = GLC_STENCIL_CPU_SERIAL,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "S3 6.4's loop on the host: every tap of every cell through the index map.",
     .seed = "S3 6.4",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_STENCIL_CPU_OPENMP_SIMD,
     .name = "openmp_simd",
     .backend = GL_BACKEND_CPU,
     .summary = "Rows over OpenMP threads; a row's interior tap by tap over SIMD lanes along x "
                "(each lane one cell's sum, in the serial order: the same bits).",
     .seed = "S3 6.4",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

static const gl_variant jacobi_variants[] = {
    {.id = GLC_JACOBI_PER_SWEEP,
     .name = "per_sweep",
     .backend = GL_BACKEND_CUDA,
     .summary = "A sweep kernel per sweep (u, f read, u_new written: 3 x itemsize per cell), the "
                "residual a separate pass over both grids at each check.",
     .seed = "S3 8.5",
     .kernels = "(jacobi_sweep2d) (jacobi_sweep2d_wide) (jacobi_sweep3d) (jacobi_sweep3d_wide) "
                "jacobi_residual",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_JACOBI_FUSED,
     .name = "fused",
     .backend = GL_BACKEND_CUDA,
     .summary = "The checked sweep reduces its own update (a block max, one atomic per block): "
                "no residual pass, the same 3 x itemsize per cell and sweep.",
     .seed = "S3 8.4, 8.5",
     .kernels = "(jacobi_sweep2d) (jacobi_sweep2d_wide) (jacobi_sweep3d) (jacobi_sweep3d_wide)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_JACOBI_TEMPORAL,
     .name = "temporal",
     .backend = GL_BACKEND_CUDA,
     .summary = "Temporal blocking, 2D only: depth sweeps per launch on a 64 x 32 shared tile, "
                "each counted as a sweep; one read of u and f and one write per depth sweeps.",
     .seed = "S3 11.5; temporal blocking",
     .kernels = "jacobi_temporal2d",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"depth", {1, 2, 4, 8, 0}, 4}}},
    {.id = GLC_JACOBI_GRAPH,
     .name = "graph",
     .backend = GL_BACKEND_CUDA,
     .summary = "check_every fused sweeps and the residual's reset captured once as a CUDA graph "
                "and replayed: one launch per check (a shorter last chunk runs unrecorded).",
     .seed = "S3 8.4",
     .kernels = "(jacobi_sweep2d) (jacobi_sweep2d_wide) (jacobi_sweep3d) (jacobi_sweep3d_wide)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_JACOBI_CPU_SERIAL,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "The same sweeps on the host, serially, the residual of each checked sweep.",
     .seed = "S3 8.5",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_stencil = {
    .op = "stencil", .variants = stencil_variants, .count = GL_COUNT_OF(stencil_variants)};
const gl_ladder gl_ladder_jacobi = {
    .op = "jacobi", .variants = jacobi_variants, .count = GL_COUNT_OF(jacobi_variants)};
