// C = A + B on row-major matrices with a 2-D grid: x over columns, y over rows.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "cuda/core/errors.cuh"
#include "saxpy.h"
#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"

namespace {

// Blocks of 16 x 16 threads. threadIdx.x runs along a row, so a warp (two half-rows of 16
// consecutive columns) reads two contiguous segments: coalesced.
constexpr int tile = 16;

// gridDim.y is limited to 65535, so rows beyond 65535 * 16 are reached by striding in y.
constexpr size_t max_grid_y = 65535;

template <typename T>
__global__ void matadd_2d(size_t rows, size_t cols, const T *__restrict__ a,
                          const T *__restrict__ b, T *__restrict__ c) {
  size_t col = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  size_t row_stride = static_cast<size_t>(gridDim.y) * blockDim.y;
  for (size_t row = static_cast<size_t>(blockIdx.y) * blockDim.y + threadIdx.y; row < rows;
       row += row_stride) {
    size_t i = row * cols + col;
    c[i] = a[i] + b[i];
  }
}

}  // namespace

extern "C" int glc_matadd(int variant, int dtype, size_t rows, size_t cols, const void *a,
                          const void *b, void *c, glc_stream stream) {
  if (variant != 0) return glc_fail(cudaErrorInvalidValue, "glc_matadd(variant)");
  return glc_dispatch_floating(dtype, "glc_matadd(dtype)", [&](auto zero) {
    using T = decltype(zero);
    if (rows == 0 || cols == 0) return static_cast<int>(cudaSuccess);
    if (!glc_all_aligned(sizeof(T), a, b, c))
      return glc_fail(cudaErrorInvalidValue, "glc_matadd(pointers)");
    size_t grid_x = glc_blocks_to_cover(cols, tile);
    if (grid_x > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, "glc_matadd(grid)");
    size_t grid_y = std::min(glc_blocks_to_cover(rows, tile), max_grid_y);
    dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
    return glc_launch(matadd_2d<T>, "matadd_2d", grid, dim3(tile, tile),
                      static_cast<cudaStream_t>(stream), rows, cols, static_cast<const T *>(a),
                      static_cast<const T *>(b), static_cast<T *>(c));
  });
}
