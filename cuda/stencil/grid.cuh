// Internal to cuda/stencil/: the grid every stencil kernel sees (S3 6.4's policies are
// boundary.h's index map), the taps a launch reads, and the launchers of the variant families
// (naive.cu, tiles.cu, streaming.cu, split.cu), which stencil.cu dispatches to.
#ifndef GPULAB_STENCIL_GRID_CUH
#define GPULAB_STENCIL_GRID_CUH

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/core/vec16.cuh"
#include "cuda/stencil/boundary.h"
#include "cuda/stencil/stencil.h"

// A grid as the kernels see it: (nz, ny, nx), x fastest, each axis's radius, the policy.
struct glc_grid3 {
  int nz, ny, nx;
  int rz, ry, rx;
  int boundary;
};

// The nonzero weights of a stencil, in device memory: taps (dz, dy, dx) offsets in `offsets`
// (3 ints each), their weights in `weights`, and each tap's offset in elements of the flat
// array (for kernels that never leave the grid). All reads of them are uniform across a warp.
template <typename T>
struct glc_taps {
  const T *weights;
  const int *offsets;
  const long long *linear;
  int count;
};

__host__ __device__ inline size_t glc_flat(const glc_grid3 &g, int z, int y, int x) {
  return (static_cast<size_t>(z) * g.ny + y) * g.nx + x;
}

// u at (z, y, x), any of them possibly outside the grid, under g's policy.
template <typename T>
__device__ inline T glc_fetch(const T *__restrict__ u, const glc_grid3 &g, int z, int y, int x) {
  int mz = glc_map_index(z, g.nz, g.boundary);
  int my = glc_map_index(y, g.ny, g.boundary);
  int mx = glc_map_index(x, g.nx, g.boundary);
  if ((mz | my | mx) < 0) return T(0);
  return __ldg(u + glc_flat(g, mz, my, mx));
}

// True for a cell that the fixed policy copies: closer to an edge than the radius along an axis.
__host__ __device__ inline bool glc_in_shell(const glc_grid3 &g, int z, int y, int x) {
  return z < g.rz || z >= g.nz - g.rz || y < g.ry || y >= g.ny - g.ry || x < g.rx ||
         x >= g.nx - g.rx;
}

// The stencil at one cell with every tap through the policy (the naive and boundary kernels).
template <typename T>
__device__ inline T glc_stencil_at(const T *__restrict__ u, const glc_grid3 &g,
                                   const glc_taps<T> &taps, int z, int y, int x) {
  if (g.boundary == GLC_BOUNDARY_FIXED && glc_in_shell(g, z, y, x))
    return __ldg(u + glc_flat(g, z, y, x));
  T sum = T(0);
  for (int t = 0; t < taps.count; ++t) {
    const int *o = taps.offsets + 3 * t;
    sum +=
        __ldg(taps.weights + t) * glc_fetch(u, g, z + __ldg(o), y + __ldg(o + 1), x + __ldg(o + 2));
  }
  return sum;
}

template <typename T>
__device__ inline void load_wide(const T *p, T (&v)[glc_vec16<T>::lanes]) {
  const typename glc_vec16<T>::type w =
      __ldg(reinterpret_cast<const typename glc_vec16<T>::type *>(p));
  const T *e = reinterpret_cast<const T *>(&w);
#pragma unroll
  for (int j = 0; j < glc_vec16<T>::lanes; ++j) v[j] = e[j];
}

// Everything a launcher needs: the grid, the taps, the dense weights on the host (for kernels
// that keep them in registers), the block shape, the stream.
template <typename T>
struct glc_stencil_launch {
  glc_grid3 grid;
  glc_taps<T> taps;
  const double *dense;  // host memory, (2rz+1)(2ry+1)(2rx+1)
  int block_x, block_y;
  int rows;  // variant 4's 3D star kernel: rows along y a thread owns (1, 2 or 4)
  cudaStream_t stream;
};

// The grid dimension that covers `tiles` with at most `limit` blocks (grid-stride loops take the
// rest: gridDim.y and .z stop at 65535).
inline unsigned glc_grid_dim(size_t tiles, size_t limit = 65535) {
  return static_cast<unsigned>(tiles < 1 ? 1 : (tiles < limit ? tiles : limit));
}

template <typename T>
int glc_stencil_naive(const glc_stencil_launch<T> &l, const T *u, T *out);
template <typename T>
int glc_stencil_tiles(const glc_stencil_launch<T> &l, const T *u, T *out);
template <typename T>
int glc_stencil_streaming(const glc_stencil_launch<T> &l, const T *u, T *out);
// vector: 1 for variant 3's interior kernel, 4 for variant 4's (which also takes star paths).
template <typename T>
int glc_stencil_split(const glc_stencil_launch<T> &l, const T *u, T *out, bool hopper);
// Whether the variant reads l.taps: all but variant 4 where its whole-grid star kernel runs.
template <typename T>
bool glc_stencil_needs_taps(int variant, const glc_stencil_launch<T> &l, const T *u, const T *out);

#endif
