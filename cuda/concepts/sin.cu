// sin variants 0-1: sinf against __sinf on float32, one element per thread. gpulab is built
// without -use_fast_math (setup.py), so sinf stays the accurate library function and __sinf is
// used only where it is written. The CUDA Programming Guide's bounds: sinf is within 2 ulp over
// the whole range (a Payne-Hanek reduction for large |x|; 22 registers and no local memory for
// sm_90 with CUDA 13). __sinf is FMUL.RZ by float32(1 / (2 pi)) and one MUFU.SIN (the special
// function unit), within 2^-21.41 absolute on [-pi, pi] only: outside, the float32 reduction's
// error grows with |x| (gl.concepts.sin_error and benchmarks/concepts_lab.py measure both).
#include <cuda_runtime.h>

#include <cstddef>

#include "concepts.h"
#include "cuda/core/launch.cuh"

namespace {

__global__ void sin_accurate(size_t n, const float *__restrict__ x, float *__restrict__ out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = sinf(x[i]);
}

__global__ void sin_intrinsic(size_t n, const float *__restrict__ x, float *__restrict__ out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __sinf(x[i]);
}

}  // namespace

extern "C" int glc_sin(int variant, int block, size_t n, const float *x, float *out,
                       glc_stream stream) {
  using kernel_t = void (*)(size_t, const float *, float *);
  kernel_t kernel = nullptr;
  const char *name = nullptr;
  switch (variant) {
    case GLC_SIN_ACCURATE:
      kernel = sin_accurate, name = "sin_accurate";
      break;
    case GLC_SIN_INTRINSIC:
      kernel = sin_intrinsic, name = "sin_intrinsic";
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_sin(variant)");
  }
  if (block < 32 || block > 1024 || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_sin(block)");
  if (n == 0) return cudaSuccess;
  if (!glc_all_aligned(sizeof(float), x, out))
    return glc_fail(cudaErrorInvalidValue, "glc_sin(pointers)");
  const size_t grid = glc_blocks_to_cover(n, block);
  if (grid > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, name);
  return glc_launch(kernel, name, static_cast<unsigned>(grid), block,
                    static_cast<cudaStream_t>(stream), n, x, out);
}
