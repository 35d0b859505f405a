// Kernels that measure a ceiling of the device rather than do useful work.
#include <cuda_runtime.h>

#include "errors.cuh"
#include "gpulab_core.h"
#include "launch.cuh"

namespace {

// Independent FMA chains per thread. An FFMA's result is ready about 4 cycles after it issues,
// and each SM sub-partition issues one warp instruction per cycle: with 8 chains, even a single
// warp per sub-partition has an independent FFMA ready every cycle.
constexpr int fma_chains = 8;

// Iterations of all chains per trip through the loop, so that the loop's own counter, compare
// and branch are few next to the 8 * 8 FFMAs.
constexpr int fma_unroll = 8;

// Each chain runs x = x * scale + offset with 0 < scale < 1: x converges towards
// offset / (1 - scale) instead of growing, so that no value overflows or becomes denormal
// (which could run slower), whatever the iteration count. scale and offset are kernel arguments
// so that the compiler cannot fold the chains.
__global__ void fma_chains_kernel(int iterations, float scale, float offset, float *sink) {
  unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
  float x[fma_chains];
#pragma unroll
  for (int c = 0; c < fma_chains; ++c) x[c] = static_cast<float>(threadIdx.x + c);

  int i = 0;
  for (; i + fma_unroll <= iterations; i += fma_unroll) {
#pragma unroll
    for (int u = 0; u < fma_unroll; ++u) {
#pragma unroll
      for (int c = 0; c < fma_chains; ++c) x[c] = fmaf(x[c], scale, offset);
    }
  }
  for (; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < fma_chains; ++c) x[c] = fmaf(x[c], scale, offset);
  }

  // Every chain reaches the store, so none of the work is dead code.
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < fma_chains; ++c) sum += x[c];
  sink[thread] = sum;
}

}  // namespace

extern "C" int glc_fma_loop(int blocks, int threads, int iterations, float *sink, double *flops,
                            glc_stream stream) {
  if (blocks <= 0 || threads <= 0 || iterations < 0 || sink == nullptr || flops == nullptr)
    return glc_fail(cudaErrorInvalidValue, "glc_fma_loop(arguments)");
  // Two flops (a multiply and an add) per FMA; the final sum is not counted.
  *flops = 2.0 * fma_chains * static_cast<double>(iterations) * blocks * threads;
  return glc_launch(fma_chains_kernel, "fma_chains_kernel", blocks, threads,
                    static_cast<cudaStream_t>(stream), iterations, 0.999999f, 1e-3f, sink);
}
