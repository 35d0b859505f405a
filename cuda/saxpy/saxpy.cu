// out = a*x + y, three ways: one thread per element, a grid-stride loop, and a grid-stride loop
// over 16-byte vectors with several loads in flight per thread.
//
// a*x + y is contracted by nvcc into one fused multiply-add (rounded once), as in every variant.
// out may be x or y itself (each element is read before it is written, by the same thread), but
// must not overlap them otherwise.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/core/errors.cuh"
#include "saxpy.h"
#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/core/vec16.cuh"

namespace {

template <typename T>
__global__ void saxpy_per_element(size_t n, T a, const T *__restrict__ x, const T *__restrict__ y,
                                  T *__restrict__ out) {
  // 64-bit before the multiply: blockIdx.x * blockDim.x overflows 32 bits past 2^32 elements.
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

template <typename T>
__global__ void saxpy_grid_stride(size_t n, T a, const T *__restrict__ x, const T *__restrict__ y,
                                  T *__restrict__ out) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = a * x[i] + y[i];
}

// a*x + y on a 16-byte vector.
__device__ __forceinline__ float4 axpy16(float a, float4 x, float4 y) {
  return make_float4(a * x.x + y.x, a * x.y + y.y, a * x.z + y.z, a * x.w + y.w);
}
__device__ __forceinline__ double2 axpy16(double a, double2 x, double2 y) {
  return make_double2(a * x.x + y.x, a * x.y + y.y);
}

// Vectors each thread loads before its first store: 4 gives 8 independent 16-byte loads in
// flight per thread (4 of x, 4 of y). HBM needs many bytes in flight per SM (latency times
// bandwidth); wide, unrolled loads supply them with few threads and few instructions.
constexpr int vectors_per_thread = 4;

// Requires x, y and out 16-byte aligned. The last n % (16 / sizeof(T)) elements, which fill no
// vector, are done one per thread by the first threads of the grid.
//
// A block owns tiles of vectors_per_thread * blockDim.x vectors and strides over them by the
// grid. The launch makes one tile per block, so the loop runs once unless n outgrows the grid
// limit. Within a tile, vector k of a thread is k * blockDim.x + threadIdx.x: each warp load is
// one contiguous 512-byte segment and each block streams one contiguous tile. Measured on the
// H100 at 2^28 floats (docs/labs/saxpy.md): this layout reaches 1.01-1.02x the
// cudaMemcpy D2D rate, while one resident wave striding the whole array by gridDim * blockDim
// (the S3 grid-stride form) stays at 0.97x whatever its unroll, block size or store policy.
//
// On purpose without __restrict__ or __ldg (unlike the scalar kernels): then the compiler may
// not move a load past a store that might alias it, so all loads of a tile stay ahead of its
// stores, as written. With them, ptxas interleaves later loads with the first stores.
template <typename T>
__global__ void saxpy_vec16(size_t n, T a, const T *x, const T *y, T *out) {
  using V = typename glc_vec16<T>::type;
  constexpr size_t lanes = sizeof(V) / sizeof(T);
  const V *xv = reinterpret_cast<const V *>(x);
  const V *yv = reinterpret_cast<const V *>(y);
  V *outv = reinterpret_cast<V *>(out);
  size_t vectors = n / lanes;
  size_t tile = static_cast<size_t>(vectors_per_thread) * blockDim.x;

  for (size_t base = blockIdx.x * tile + threadIdx.x; base < vectors; base += gridDim.x * tile) {
    V xs[vectors_per_thread], ys[vectors_per_thread];
#pragma unroll
    for (int k = 0; k < vectors_per_thread; ++k) {
      size_t i = base + k * blockDim.x;
      if (i < vectors) {
        xs[k] = xv[i];
        ys[k] = yv[i];
      }
    }
#pragma unroll
    for (int k = 0; k < vectors_per_thread; ++k) {
      size_t i = base + k * blockDim.x;
      if (i < vectors) outv[i] = axpy16(a, xs[k], ys[k]);
    }
  }

  size_t tail = vectors * lanes + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n) out[tail] = a * x[tail] + y[tail];
}

// variant is 0, 1 or 2; n > 0.
template <typename T>
int launch_saxpy(int variant, int block, size_t n, T a, const T *x, const T *y, T *out,
                 cudaStream_t stream) {
  if (variant == 0) {
    size_t grid = glc_blocks_to_cover(n, block);
    if (grid > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, "glc_saxpy(grid)");
    return glc_launch(saxpy_per_element<T>, "saxpy_per_element", static_cast<unsigned>(grid), block,
                      stream, n, a, x, y, out);
  }
  // The vector path needs all three pointers on 16-byte boundaries. When they are not, no
  // single scalar head can align all three (their offsets may differ), so those inputs
  // (offset views, in practice) take the scalar grid-stride loop: correct, just slower.
  if (variant == 2 && glc_all_aligned(16, x, y, out)) {
    size_t vectors = n / (16 / sizeof(T));
    size_t grid = glc_blocks_to_cover(vectors, block * vectors_per_thread);
    if (grid == 0) grid = 1;  // fewer elements than one vector: the tail alone
    if (grid > glc_max_grid_x) grid = glc_max_grid_x;
    return glc_launch(saxpy_vec16<T>, "saxpy_vec16", static_cast<unsigned>(grid), block, stream, n,
                      a, x, y, out);
  }
  size_t grid = 0;
  int code = glc_full_wave_blocks<saxpy_grid_stride<T>>(block, &grid);
  if (code != cudaSuccess) return code;
  // More blocks than there is work would only launch idle blocks.
  size_t needed = glc_blocks_to_cover(n, block);
  if (grid > needed) grid = needed;
  return glc_launch(saxpy_grid_stride<T>, "saxpy_grid_stride", static_cast<unsigned>(grid), block,
                    stream, n, a, x, y, out);
}

}  // namespace

extern "C" int glc_saxpy(int variant, int block, int dtype, size_t n, double a, const void *x,
                         const void *y, void *out, glc_stream stream) {
  if (variant < 0 || variant > 2) return glc_fail(cudaErrorInvalidValue, "glc_saxpy(variant)");
  if (block < 32 || block > 1024 || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_saxpy(block)");
  return glc_dispatch_floating(dtype, "glc_saxpy(dtype)", [&](auto zero) {
    using T = decltype(zero);
    if (n == 0) return static_cast<int>(cudaSuccess);
    if (!glc_all_aligned(sizeof(T), x, y, out))
      return glc_fail(cudaErrorInvalidValue, "glc_saxpy(pointers)");
    return launch_saxpy<T>(variant, block, n, static_cast<T>(a), static_cast<const T *>(x),
                           static_cast<const T *>(y), static_cast<T *>(out),
                           static_cast<cudaStream_t>(stream));
  });
}
