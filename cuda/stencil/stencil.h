/* The stencil lab's C ABI: stencils of any small weights over 1D, 2D and 3D grids with S3's
 * boundary policies, and a Jacobi solver of the Poisson problem -laplace(u) = f with Dirichlet
 * boundaries. Operands are C-contiguous, in device memory (host memory for the CPU variants); every
 * function returns a CUDA error code, as cuda/core/gpulab_core.h says. The variant ids below are
 * shared by the ladders (csrc/labs/stencil/variants.c), the dispatch and the CPU variants.
 *
 * Grids are always described as (nz, ny, nx), x fastest: a 2D grid is (1, ny, nx), a 1D grid
 * (1, 1, nx), with radius 0 along the axes it does not have. */
#ifndef GPULAB_CUDA_STENCIL_H
#define GPULAB_CUDA_STENCIL_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum glc_stencil_variant {
  GLC_STENCIL_NAIVE = 0,        /* one thread per cell, every tap read from global memory */
  GLC_STENCIL_SHARED_TILES = 1, /* S3 5.1 / 11.1: a block's tile and its halo in shared memory */
  GLC_STENCIL_STREAMING = 2,    /* 2.5D: a ring of planes marched along the outer axis; 1D: a
                                   register window of outputs per thread */
  GLC_STENCIL_SPLIT = 3,        /* S3 11.1: branch-free interior kernel + boundary-shell kernel */
  GLC_STENCIL_HOPPER = 4,       /* the split, with 4 outputs per thread and star fast paths */
  /* CPU ladder */
  GLC_STENCIL_CPU_SERIAL = 100,
  GLC_STENCIL_CPU_OPENMP_SIMD = 101
};

enum glc_jacobi_variant {
  GLC_JACOBI_PER_SWEEP = 0, /* a sweep kernel per sweep, the residual a separate pass */
  GLC_JACOBI_FUSED = 1,     /* the checked sweep reduces its own update (no extra pass) */
  GLC_JACOBI_TEMPORAL = 2,  /* several sweeps per launch in shared memory (2D only) */
  GLC_JACOBI_GRAPH = 3,     /* check_every fused sweeps captured once as a CUDA graph */
  /* CPU ladder */
  GLC_JACOBI_CPU_SERIAL = 100
};

/* S3 6.4's policies for the neighbours of a cell that lie outside the grid. As numpy.pad modes:
 * zero = "constant" (0), clamp = "edge", periodic = "wrap", reflect = "symmetric" (the edge cell
 * repeated: -1 -> 0, scipy.ndimage's "reflect"). fixed: a cell closer to an edge than the
 * stencil's radius along that axis keeps its input value; the others never read outside. */
enum glc_boundary {
  GLC_BOUNDARY_ZERO = 0,
  GLC_BOUNDARY_CLAMP = 1,
  GLC_BOUNDARY_PERIODIC = 2,
  GLC_BOUNDARY_REFLECT = 3,
  GLC_BOUNDARY_FIXED = 4
};

#define GLC_STENCIL_MAX_RADIUS 4

/* out[z, y, x] = sum over (dz, dy, dx) of weights[rz + dz, ry + dy, rx + dx] * u[z + dz, y + dy,
 * x + dx] (a correlation, as scipy.ndimage.correlate), the neighbours outside the grid given by
 * the policy. Sums are accumulated in the grid's dtype over the nonzero weights only, in the
 * order of the weights array. */
typedef struct {
  size_t n[3];           /* nz, ny, nx; each below 2^31 */
  int r[3];              /* rz, ry, rx: 0..GLC_STENCIL_MAX_RADIUS */
  int boundary;          /* enum glc_boundary */
  const double *weights; /* host memory: (2rz+1)(2ry+1)(2rx+1) values, C order */
} glc_stencil_problem;

/* One side of a stencil block: the caller's, else the variant's default halved until the block
 * with its other side fits 1024 threads (a bx of 1024 alone gets by = 1, not a failed launch).
 * The kernels' launches and the binding's shared-memory estimate use it alike. */
static inline int glc_stencil_block_side(int given, int fallback, int other) {
  if (given) return given;
  while (fallback > 1 && fallback * other > 1024) fallback /= 2;
  return fallback;
}

/* dtype GLC_F32 or GLC_F64. block_x, block_y: the block's threads along x and y (0: the
 * variant's default, glc_stencil_block_side). rows: 1, 2 or 4, the rows along y a thread of
 * variant 4's 3D star kernel owns (0: 1); the other variants ignore it. */
GLC_API int glc_stencil(int variant, int block_x, int block_y, int rows, int dtype,
                        const glc_stencil_problem *problem, const void *u, void *out,
                        glc_stream stream);

/* ---- Jacobi ---- */

typedef struct {
  size_t sweeps; /* sweeps done */
  size_t checks; /* residuals written */
  int converged; /* the last residual was <= tol */
} glc_jacobi_result;

/* One check of a solve: its residual kept in residuals while capacity lasts and counted in
 * *checks; 1 (and *converged set) when tol > 0 stops the solve there. The single-GPU solver and
 * the multi lab's slab solver (cuda/multi/jacobi.cu) both record their checks through it, so
 * that they report alike. */
static inline int glc_jacobi_record_check(double residual, double tol, double *residuals,
                                          size_t capacity, size_t *checks, int *converged) {
  if (*checks < capacity) residuals[*checks] = residual;
  *checks += 1;
  if (tol > 0 && residual <= tol) {
    *converged = 1;
    return 1;
  }
  return 0;
}

/* -laplace_h(u) = f on a 2D (ndim 2: shape[0] x shape[1]) or 3D grid of spacing h; the cells
 * on the grid's faces keep u0's values (Dirichlet). u receives the solution; u0 and u may not
 * alias. Sweeps stop after max_sweeps, or at the first check whose residual is <= tol (tol <= 0:
 * never). A check is every check_every sweeps and after the last sweep; residuals[i] (host
 * memory, capacity entries) receives check i's residual: max |f + laplace_h(u)| over the
 * interior for the iterate the checked sweep started from, which is (2 ndim / h^2) times the
 * max-norm of that sweep's update. Only that scalar crosses to the host. depth: variant 2's
 * sweeps per launch (0: default). */
GLC_API int glc_jacobi(int variant, int depth, int dtype, int ndim, const size_t *shape, double h,
                       size_t max_sweeps, double tol, size_t check_every, const void *f,
                       const void *u0, void *u, double *residuals, size_t capacity,
                       glc_jacobi_result *result, glc_stream stream);

/* One Jacobi sweep over rows [row_begin, row_end) of a slab of rows_with_ghosts x cols cells
 * whose first and last rows are ghosts (a neighbour's rows, or the Dirichlet boundary): for
 * those rows and the columns 1..cols-2, u_new = (the 4 neighbours in u + h2 f) / 4. Columns 0
 * and cols-1 and every other row of u_new are left as they are, so a caller can sweep its
 * interior rows while the halos travel and its edge rows after. 1 <= row_begin <= row_end <=
 * rows_with_ghosts - 1. residual_max: null, or one element of dtype in device memory that is
 * raised (atomically, never lowered) to the largest |u_new - u| of the sweep; zero it first. */
GLC_API int glc_jacobi_sweep2d_rows(int dtype, const void *u, void *u_new, const void *f,
                                    size_t rows_with_ghosts, size_t cols, size_t row_begin,
                                    size_t row_end, double h2, void *residual_max,
                                    glc_stream stream);
/* depth sweeps of the same 2D slab in one launch (variant 2's temporal blocking), its first and
 * last rows held: rows [row_begin, row_end) of u_new get the result, every other row is left as
 * it is, and residual_max (as above) gets the last sweep's largest update over those rows. A
 * row is right when it lies at least depth rows from each held row that is a ghost (a held row
 * on the Dirichlet boundary is right at any distance): a caller gives its slab halos depth rows
 * deep. 1 <= depth <= 15; the arithmetic of each cell is glc_jacobi's temporal variant's, so
 * any split of the sweeps into launches gives its result bitwise. */
GLC_API int glc_jacobi_temporal2d_rows(int dtype, const void *u, void *u_new, const void *f,
                                       size_t rows_with_ghosts, size_t cols, size_t row_begin,
                                       size_t row_end, int depth, double h2, void *residual_max,
                                       glc_stream stream);
/* The same for a 3D slab of planes_with_ghosts x rows x cols cells, over planes [plane_begin,
 * plane_end) and rows 1..rows-2, columns 1..cols-2, with the 6 neighbours, divided by 6. */
GLC_API int glc_jacobi_sweep3d_planes(int dtype, const void *u, void *u_new, const void *f,
                                      size_t planes_with_ghosts, size_t rows, size_t cols,
                                      size_t plane_begin, size_t plane_end, double h2,
                                      void *residual_max, glc_stream stream);

#ifdef __cplusplus
}
#endif

#endif
