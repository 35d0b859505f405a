// Variant 1: S3 5.1 and 11.1: a block loads its tile of bx x by x bz cells and the halo of the
// stencil's radius around it into shared memory once (the policy applied as the halo is loaded,
// S3: "threads that would load outside write the chosen boundary value"), then every tap reads
// shared memory. The load is one linear loop over the padded tile, so corners (box9, any dense
// weights) come for free. 3D tiles are 4 planes deep.
#include "cuda/core/launch.cuh"
#include "cuda/stencil/grid.cuh"

template <typename T>
__global__ void stencil_shared_tiles(const T *__restrict__ u, T *__restrict__ out, glc_grid3 g,
                                     glc_taps<T> taps, int tiles_y, int tiles_z) {
  extern __shared__ unsigned char stencil_shared_bytes[];
  T *tile = reinterpret_cast<T *>(stencil_shared_bytes);
  const int bx = blockDim.x, by = blockDim.y, bz = blockDim.z;
  const int px = bx + 2 * g.rx, py = by + 2 * g.ry, pz = bz + 2 * g.rz;
  const int padded = px * py * pz;
  const int thread = (threadIdx.z * by + threadIdx.y) * bx + threadIdx.x;
  const int threads = bx * by * bz;
  const int x0 = blockIdx.x * bx;
  // block-uniform loops: every thread reaches every barrier
  for (int tz = blockIdx.z; tz < tiles_z; tz += gridDim.z)
    for (int ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
      const int y0 = ty * by, z0 = tz * bz;
      for (int i = thread; i < padded; i += threads) {
        const int lx = i % px, ly = (i / px) % py, lz = i / (px * py);
        tile[i] = glc_fetch(u, g, z0 + lz - g.rz, y0 + ly - g.ry, x0 + lx - g.rx);
      }
      __syncthreads();
      const int x = x0 + threadIdx.x, y = y0 + threadIdx.y, z = z0 + threadIdx.z;
      if (x < g.nx && y < g.ny && z < g.nz) {
        const int lx = threadIdx.x + g.rx, ly = threadIdx.y + g.ry, lz = threadIdx.z + g.rz;
        T value;
        if (g.boundary == GLC_BOUNDARY_FIXED && glc_in_shell(g, z, y, x)) {
          value = tile[(lz * py + ly) * px + lx];
        } else {
          value = T(0);
          for (int t = 0; t < taps.count; ++t) {
            const int *o = taps.offsets + 3 * t;
            value += __ldg(taps.weights + t) *
                     tile[((lz + __ldg(o)) * py + ly + __ldg(o + 1)) * px + lx + __ldg(o + 2)];
          }
        }
        out[glc_flat(g, z, y, x)] = value;
      }
      __syncthreads();  // the next tile overwrites this one
    }
}

template <typename T>
int glc_stencil_tiles(const glc_stencil_launch<T> &l, const T *u, T *out) {
  const glc_grid3 &g = l.grid;
  const int bx = glc_stencil_block_side(l.block_x, g.ny == 1 ? 256 : 32, l.block_y ? l.block_y : 1);
  const int by = glc_stencil_block_side(l.block_y, g.ny == 1 ? 1 : 8, bx);
  if (bx * by > 1024) return glc_fail(cudaErrorInvalidValue, "stencil_shared_tiles (block)");
  int bz = g.nz > 1 ? 4 : 1;
  while (bz > 1 && bx * by * bz > 1024) bz /= 2;
  const size_t bytes = sizeof(T) * (bx + 2 * g.rx) * (by + 2 * g.ry) * (bz + 2 * g.rz);
  int code = cudaSuccess;
  if (bytes > 48 * 1024)  // above the default dynamic limit: opt in (up to 227 KiB on Hopper)
    code = GLC_CUDA(cudaFuncSetAttribute, stencil_shared_tiles<T>,
                    cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (code != cudaSuccess) return code;
  const size_t tiles_y = glc_blocks_to_cover(g.ny, by), tiles_z = glc_blocks_to_cover(g.nz, bz);
  dim3 block(bx, by, bz);
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(g.nx, bx), glc_max_grid_x), glc_grid_dim(tiles_y),
            glc_grid_dim(tiles_z));
  return glc_launch_shared(stencil_shared_tiles<T>, "stencil_shared_tiles", grid, block,
                           static_cast<unsigned>(bytes), l.stream, u, out, g, l.taps,
                           static_cast<int>(tiles_y), static_cast<int>(tiles_z));
}

template int glc_stencil_tiles<float>(const glc_stencil_launch<float> &, const float *, float *);
template int glc_stencil_tiles<double>(const glc_stencil_launch<double> &, const double *,
                                       double *);
