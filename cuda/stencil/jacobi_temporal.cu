// Variant 2: temporal blocking. A block loads a 64 x 32 tile of u (and f for its cells, into
// registers) once and runs `depth` sweeps on it in shared memory, the valid region shrinking by one
// cell a sweep, then writes the (64 - 2 depth) x (32 - 2 depth) centre: depth sweeps for one read
// of u and f and one write of u_new, the halo read again by the neighbouring blocks. Every sweep is
// a full sweep of the grid (the result is the same as depth launches of the per-sweep kernel), and
// the solver counts each as one. Byte model per pass (depth 4, f32): 2048 cells of u and f read for
// 1344 written, about 16 bytes per output cell for 4 sweeps (docs/labs/stencil.md).
// Only rows [row_begin, row_end) are written (and measured for the residual): a multi-GPU slab's
// pass that checks the residual writes its own rows, and its ghost rows are only read.
#include "cuda/core/launch.cuh"
#include "cuda/stencil/jacobi.cuh"

namespace {
constexpr int tile_x = 64, tile_y = 32, block_y = 4, cells_per_thread = tile_y / block_y;
}  // namespace

// ranged: rows [row_begin, row_end) only, held to 6 blocks an SM (40 registers; left free it
// takes 44, and 5). The whole grid, without the range checks (which cost gl.jacobi 4-9% on the
// H200), takes 36 registers and 7 blocks; the update is the last buffer less the one before it.
template <typename T, bool ranged>
__global__ void __launch_bounds__(tile_x *block_y, ranged ? 6 : 0)
    jacobi_temporal2d(const T *__restrict__ u, T *__restrict__ u_new, const T *__restrict__ f,
                      int rows, int cols, int row_begin, int row_end, int depth, T h2,
                      T *residual_max) {
  __shared__ T buffers[2][tile_y][tile_x];
  const int out_x = tile_x - 2 * depth, out_y = tile_y - 2 * depth;
  const int gx0 = blockIdx.x * out_x - depth,
            gy0 = (ranged ? row_begin : 0) + blockIdx.y * out_y - depth;
  const int lx = threadIdx.x, gx = gx0 + lx;
  T scaled_f[cells_per_thread];
  bool interior[cells_per_thread];
#pragma unroll
  for (int k = 0; k < cells_per_thread; ++k) {
    const int ly = threadIdx.y + k * block_y, gy = gy0 + ly;
    const bool inside = gx >= 0 && gx < cols && gy >= 0 && gy < rows;
    const size_t at = static_cast<size_t>(gy) * cols + gx;
    // cells outside the grid are neighbours only of boundary cells, which are never updated
    buffers[0][ly][lx] = inside ? __ldg(u + at) : T(0);
    interior[k] = gx >= 1 && gx < cols - 1 && gy >= 1 && gy < rows - 1;
    scaled_f[k] = interior[k] ? h2 * __ldg(f + at) : T(0);
  }
  __syncthreads();
  int from = 0;
  for (int s = 0; s < depth; ++s, from ^= 1) {
    T(*src)[tile_x] = buffers[from];
    T(*dst)[tile_x] = buffers[from ^ 1];
#pragma unroll
    for (int k = 0; k < cells_per_thread; ++k) {
      const int ly = threadIdx.y + k * block_y;
      const bool valid = lx > s && lx < tile_x - 1 - s && ly > s && ly < tile_y - 1 - s;
      const T old = src[ly][lx];
      T value = old;
      if (valid && interior[k])
        value =
            (src[ly - 1][lx] + src[ly + 1][lx] + src[ly][lx - 1] + src[ly][lx + 1] + scaled_f[k]) *
            T(0.25);
      dst[ly][lx] = value;
    }
    __syncthreads();
  }
  // the centre was valid in the last sweep: its update is the newest buffer less the other
  const T(*result)[tile_x] = buffers[from];
  const T(*before)[tile_x] = buffers[from ^ 1];
  T largest = T(0);
#pragma unroll
  for (int k = 0; k < cells_per_thread; ++k) {
    const int ly = threadIdx.y + k * block_y;
    const bool mine = lx >= depth && lx < tile_x - depth && ly >= depth && ly < tile_y - depth &&
                      (!ranged || gy0 + ly < row_end);
    if (!mine) continue;
    largest = glc_max_keep_nan(largest, abs(result[ly][lx] - before[ly][lx]));
    if (interior[k]) u_new[static_cast<size_t>(gy0 + ly) * cols + gx] = result[ly][lx];
  }
  if (residual_max) glc_block_max_into(largest, residual_max);
}

template <typename T>
int glc_jacobi_temporal(const T *u, T *u_new, const T *f, size_t rows, size_t cols,
                        size_t row_begin, size_t row_end, int depth, T h2, T *residual_max,
                        cudaStream_t stream) {
  if (depth < 1 || 2 * depth >= tile_y)
    return glc_fail(cudaErrorInvalidValue, "jacobi_temporal2d (depth)");
  if (row_begin > row_end || row_end > rows)
    return glc_fail(cudaErrorInvalidValue, "jacobi_temporal2d (rows)");
  if (rows < 3 || cols < 3 || row_begin == row_end) return cudaSuccess;
  // rows 0 and rows - 1 are never written: [1, rows - 1) is the whole grid, tiled from row 0
  const bool whole = row_begin <= 1 && row_end + 1 >= rows;
  const size_t tiles_y =
      glc_blocks_to_cover(whole ? rows : row_end - row_begin, tile_y - 2 * depth);
  if (tiles_y > 65535) return glc_fail(cudaErrorInvalidValue, "jacobi_temporal2d (rows)");
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(cols, tile_x - 2 * depth), glc_max_grid_x),
            glc_grid_dim(tiles_y));
  return glc_launch(whole ? jacobi_temporal2d<T, false> : jacobi_temporal2d<T, true>,
                    "jacobi_temporal2d", grid, dim3(tile_x, block_y), stream, u, u_new, f,
                    static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(row_begin),
                    static_cast<int>(row_end), depth, h2, residual_max);
}

template int glc_jacobi_temporal<float>(const float *, float *, const float *, size_t, size_t,
                                        size_t, size_t, int, float, float *, cudaStream_t);
template int glc_jacobi_temporal<double>(const double *, double *, const double *, size_t, size_t,
                                         size_t, size_t, int, double, double *, cudaStream_t);
