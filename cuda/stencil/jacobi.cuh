// Internal to cuda/stencil/: the Jacobi sweep kernels' launchers (jacobi_sweeps.cu) that the
// solver (jacobi.cu), its temporal blocking (jacobi_temporal.cu) and the C ABI of single sweeps
// share, and the device-side max that the residual rides on.
#ifndef GPULAB_STENCIL_JACOBI_CUH
#define GPULAB_STENCIL_JACOBI_CUH

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/stencil/grid.cuh"  // glc_grid_dim

// Raises *target to value for value >= 0 (or NaN, which then sticks): non-negative IEEE values
// order as their bit patterns do, so the integer atomicMax is the float max, and the result does
// not depend on the order of the blocks (the residual is deterministic).
__device__ inline void glc_atomic_max_nonnegative(float *target, float value) {
  atomicMax(reinterpret_cast<unsigned int *>(target), __float_as_uint(value));
}
__device__ inline void glc_atomic_max_nonnegative(double *target, double value) {
  atomicMax(reinterpret_cast<unsigned long long *>(target),
            static_cast<unsigned long long>(__double_as_longlong(value)));
}

// max that keeps a NaN (fmax drops it, and a diverged solve must not look converged).
template <typename T>
__device__ inline T glc_max_keep_nan(T a, T b) {
  return (a > b || a != a) ? a : b;
}

// The block's max of value, raised into *target by one atomic. Every thread of the block must
// call it (a shuffle and a barrier inside).
template <typename T>
__device__ inline void glc_block_max_into(T value, T *target) {
  __shared__ T warp_max[32];
  for (int offset = 16; offset > 0; offset /= 2)
    value = glc_max_keep_nan(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const int warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
  if (thread % 32 == 0) warp_max[thread / 32] = value;
  __syncthreads();
  if (thread < 32) {
    value = thread < warps ? warp_max[thread] : T(0);
    for (int offset = 16; offset > 0; offset /= 2)
      value = glc_max_keep_nan(value, __shfl_xor_sync(0xffffffffu, value, offset));
    if (thread == 0) glc_atomic_max_nonnegative(target, value);
  }
}

// One sweep over rows [row_begin, row_end) of a rows x cols slab (2D) / planes [begin, end) of
// a planes x rows x cols slab (3D), the residual raised into residual_max unless it is null.
template <typename T>
int glc_jacobi_rows(const T *u, T *u_new, const T *f, size_t rows, size_t cols, size_t row_begin,
                    size_t row_end, T h2, T *residual_max, cudaStream_t stream);
template <typename T>
int glc_jacobi_planes(const T *u, T *u_new, const T *f, size_t planes, size_t rows, size_t cols,
                      size_t plane_begin, size_t plane_end, T h2, T *residual_max,
                      cudaStream_t stream);
// Loads the sweep kernels' code (CUDA loads modules lazily, on a kernel's first use), so that a
// stream capture records launches only: loading a module while a stream is being captured can
// fail with cudaErrorStreamCaptureUnsupported.
template <typename T>
int glc_jacobi_load_sweeps();
// *residual_max raised to max |a - b| over n elements (variant 0's separate pass).
template <typename T>
int glc_jacobi_residual(const T *a, const T *b, size_t n, T *residual_max, cudaStream_t stream);
// depth sweeps of a rows x cols grid in one launch (2D), from u into u_new, its first and last
// rows held; rows [row_begin, row_end) written, their last sweep's update raised into
// residual_max unless null.
template <typename T>
int glc_jacobi_temporal(const T *u, T *u_new, const T *f, size_t rows, size_t cols,
                        size_t row_begin, size_t row_end, int depth, T h2, T *residual_max,
                        cudaStream_t stream);

#endif
