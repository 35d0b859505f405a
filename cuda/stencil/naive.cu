// Variant 0: S3 6.4's pattern as it stands: one thread per cell, every tap read from global
// memory through the boundary policy's index map. Neighbouring threads read the same cells again
// (a 7-point stencil asks for each input 7 times); only the caches stand between that and DRAM.
#include "cuda/core/launch.cuh"
#include "cuda/stencil/grid.cuh"

template <typename T>
__global__ void stencil_naive(const T *__restrict__ u, T *__restrict__ out, glc_grid3 g,
                              glc_taps<T> taps) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= g.nx) return;  // no barrier below
  for (int z = blockIdx.z; z < g.nz; z += gridDim.z)
    for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < g.ny; y += gridDim.y * blockDim.y)
      out[glc_flat(g, z, y, x)] = glc_stencil_at(u, g, taps, z, y, x);
}

template <typename T>
int glc_stencil_naive(const glc_stencil_launch<T> &l, const T *u, T *out) {
  const glc_grid3 &g = l.grid;
  // 1D and thin grids want the threads along x; 2D and 3D a 32 x 8 tile.
  const int bx = glc_stencil_block_side(l.block_x, g.ny == 1 ? 256 : 32, l.block_y ? l.block_y : 1);
  const int by = glc_stencil_block_side(l.block_y, g.ny == 1 ? 1 : 8, bx);
  if (bx * by > 1024) return glc_fail(cudaErrorInvalidValue, "stencil_naive (block)");
  dim3 block(bx, by);
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(g.nx, bx), glc_max_grid_x),
            glc_grid_dim(glc_blocks_to_cover(g.ny, by)), glc_grid_dim(g.nz));
  return glc_launch(stencil_naive<T>, "stencil_naive", grid, block, l.stream, u, out, g, l.taps);
}

template int glc_stencil_naive<float>(const glc_stencil_launch<float> &, const float *, float *);
template int glc_stencil_naive<double>(const glc_stencil_launch<double> &, const double *,
                                       double *);
