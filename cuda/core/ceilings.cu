// Kernels that measure a ceiling of the device rather than do useful work: the FP32 and FP64 FMA
// rates and the L2 copy rate. The HBM copy rate needs no kernel of its own: it is
// cudaMemcpyAsync's (gpulab/ceilings.py).
#include <cuda_runtime.h>

#include <cstdint>

#include "errors.cuh"
#include "gpulab_core.h"
#include "launch.cuh"

namespace {

// Independent FMA chains per thread. An FFMA's result is ready about 4 cycles after it issues,
// and each SM sub-partition issues one warp instruction per cycle: with 8 chains, even a single
// warp per sub-partition has an independent FFMA ready every cycle. A DFMA's latency is longer
// but its issue rate is half the FFMA's on the H100 (64 FP64 lanes per SM against 128 FP32), so
// the 8 chains of the 8 warps per sub-partition that gpulab/ceilings.py launches cover it too.
constexpr int fma_chains = 8;

// Iterations of all chains per trip through the loop, so that the loop's own counter, compare
// and branch are few next to the 8 * 8 FMAs.
constexpr int fma_unroll = 8;

// One FMA instruction (FFMA or DFMA) for each precision.
__device__ __forceinline__ float fused_multiply_add(float x, float scale, float offset) {
  return fmaf(x, scale, offset);
}
__device__ __forceinline__ double fused_multiply_add(double x, double scale, double offset) {
  return fma(x, scale, offset);
}

// Each chain runs x = x * scale + offset with 0 < scale < 1: x converges towards
// offset / (1 - scale) instead of growing, so that no value overflows or becomes denormal
// (which could run slower), whatever the iteration count. scale and offset are kernel arguments
// so that the compiler cannot fold the chains. Real is float (FFMA) or double (DFMA).
template <typename Real>
__global__ void fma_chains_kernel(int iterations, Real scale, Real offset, Real *sink) {
  unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
  Real x[fma_chains];
#pragma unroll
  for (int c = 0; c < fma_chains; ++c) x[c] = static_cast<Real>(threadIdx.x + c);

  int i = 0;
  for (; i + fma_unroll <= iterations; i += fma_unroll) {
#pragma unroll
    for (int u = 0; u < fma_unroll; ++u) {
#pragma unroll
      for (int c = 0; c < fma_chains; ++c) x[c] = fused_multiply_add(x[c], scale, offset);
    }
  }
  for (; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < fma_chains; ++c) x[c] = fused_multiply_add(x[c], scale, offset);
  }

  // Every chain reaches the store, so none of the work is dead code.
  Real sum = 0;
#pragma unroll
  for (int c = 0; c < fma_chains; ++c) sum += x[c];
  sink[thread] = sum;
}

// caller names the C entry for a refusal of its arguments, kernel the kernel for a failed launch.
template <typename Real>
int launch_fma_chains(const char *caller, const char *kernel, int blocks, int threads,
                      int iterations, Real *sink, double *flops, glc_stream stream) {
  if (blocks <= 0 || threads <= 0 || iterations < 0 || sink == nullptr || flops == nullptr)
    return glc_fail(cudaErrorInvalidValue, caller);
  // Two flops (a multiply and an add) per FMA; the final sum is not counted.
  *flops = 2.0 * fma_chains * static_cast<double>(iterations) * blocks * threads;
  return glc_launch(fma_chains_kernel<Real>, kernel, blocks, threads,
                    static_cast<cudaStream_t>(stream), iterations, static_cast<Real>(0.999999),
                    static_cast<Real>(1e-3), sink);
}

// `passes` copies of src into dst, 16 bytes per load and store, every one of them through L2:
// ld.global.cg and st.global.cg (__ldcg, __stcg) skip L1, which would otherwise serve the
// second pass's loads (a few MiB spread over 132 SMs is some 32 KiB each, which their 256 KiB of
// L1 would hold). __ldcg is a volatile asm, so no pass can be hoisted or merged with another, and
// __stcg clobbers memory, so no pass's stores are dead to the compiler. A grid-stride loop: the
// caller sizes the buffers to a whole number of waves of the grid, so every thread moves the
// same number of vectors per pass. Passes need no synchronisation between them: each thread
// reads and writes only its own elements, and src is never written.
__global__ void l2_copy_kernel(const uint4 *src, uint4 *dst, size_t vectors, int passes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = first; i < vectors; i += stride) __stcg(dst + i, __ldcg(src + i));
  }
}

}  // namespace

extern "C" int glc_fma_loop(int blocks, int threads, int iterations, float *sink, double *flops,
                            glc_stream stream) {
  return launch_fma_chains<float>("glc_fma_loop(arguments)", "fma_chains_kernel<float>", blocks,
                                  threads, iterations, sink, flops, stream);
}

extern "C" int glc_fma64_loop(int blocks, int threads, int iterations, double *sink, double *flops,
                              glc_stream stream) {
  return launch_fma_chains<double>("glc_fma64_loop(arguments)", "fma_chains_kernel<double>", blocks,
                                   threads, iterations, sink, flops, stream);
}

extern "C" int glc_l2_copy(void *dst, const void *src, size_t bytes, int passes, int blocks,
                           int threads, glc_stream stream) {
  if (bytes % sizeof(uint4) != 0 || passes < 0 || blocks <= 0 || threads <= 0 || threads > 1024 ||
      !glc_all_aligned(sizeof(uint4), dst, src))
    return glc_fail(cudaErrorInvalidValue, "glc_l2_copy(arguments)");
  if (bytes == 0 || passes == 0) return cudaSuccess;
  return glc_launch(l2_copy_kernel, "l2_copy_kernel", blocks, threads,
                    static_cast<cudaStream_t>(stream), static_cast<const uint4 *>(src),
                    static_cast<uint4 *>(dst), bytes / sizeof(uint4), passes);
}
