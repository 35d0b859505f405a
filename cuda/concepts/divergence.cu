// Divergence variants 0-2: the same per-element work (one of four arithmetic paths, picked by
// the element's key) written three ways. The key array is the experiment: keys that change from
// lane to lane make every warp run all four paths one after the other, keys that change every 16
// lanes make it run two, keys constant over each warp of 32 make it run one. One kernel per
// variant serves every pattern, with the same memory traffic, so time differences are the
// divergence alone (benchmarks/concepts_lab.py measures them; docs/labs/concepts.md).
//
// Each path is a loop of dependent FMAs whose trip count is a run-time argument: a loop cannot be
// predicated, so the compiler cannot if-convert the branch of variant 0 away, and the SASS keeps
// one FFMA loop per path behind real branches (cuobjdump -sass: four loops in divergence_branch,
// one in divergence_branch_free).
#include <cuda_runtime.h>

#include <cstddef>

#include "concepts.h"
#include "cuda/core/launch.cuh"

namespace {

constexpr float path_scale[GLC_DIVERGENCE_PATHS] = {GLC_DIVERGENCE_SCALE_0, GLC_DIVERGENCE_SCALE_1,
                                                    GLC_DIVERGENCE_SCALE_2, GLC_DIVERGENCE_SCALE_3};
constexpr float path_shift[GLC_DIVERGENCE_PATHS] = {GLC_DIVERGENCE_SHIFT_0, GLC_DIVERGENCE_SHIFT_1,
                                                    GLC_DIVERGENCE_SHIFT_2, GLC_DIVERGENCE_SHIFT_3};

// Path K's constants as compile-time values: immediates in the SASS.
template <int K>
struct PathConstants {
  static constexpr float scale = path_scale[K], shift = path_shift[K];
};

// `iterations` steps of x <- fma(x, scale, shift). The chain is dependent, so the unroll buys
// fewer counter and branch instructions per FMA, not parallelism.
__device__ __forceinline__ float fma_chain(float v, float scale, float shift, int iterations) {
#pragma unroll 4
  for (int r = 0; r < iterations; ++r) v = fmaf(v, scale, shift);
  return v;
}

// Path K with its constants as immediates: each path is its own code.
template <int K>
__device__ __forceinline__ float path(float v, int iterations) {
  return fma_chain(v, PathConstants<K>::scale, PathConstants<K>::shift, iterations);
}

// Variant 0: a switch on the key. Lanes of one warp with different keys take different cases,
// which the warp runs one after the other with the other lanes masked off (S0 "The Challenge of
// Branch Divergence"): up to four paths' time for one path's work.
__global__ void divergence_branch(size_t n, const float *__restrict__ x,
                                  const int *__restrict__ key, int iterations,
                                  float *__restrict__ out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  switch (key[i] & 3) {
    case 0:
      v = path<0>(v, iterations);
      break;
    case 1:
      v = path<1>(v, iterations);
      break;
    case 2:
      v = path<2>(v, iterations);
      break;
    default:
      v = path<3>(v, iterations);
      break;
  }
  out[i] = v;
}

// Variant 1: the key picks the constants (selects, no branch) and every lane runs the one loop:
// one path's time whatever the keys. The fix when paths differ in data rather than in code.
__global__ void divergence_branch_free(size_t n, const float *__restrict__ x,
                                       const int *__restrict__ key, int iterations,
                                       float *__restrict__ out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int k = key[i] & 3;
  const float scale = k == 0   ? PathConstants<0>::scale
                      : k == 1 ? PathConstants<1>::scale
                      : k == 2 ? PathConstants<2>::scale
                               : PathConstants<3>::scale;
  const float shift = k == 0   ? PathConstants<0>::shift
                      : k == 1 ? PathConstants<1>::shift
                      : k == 2 ? PathConstants<2>::shift
                               : PathConstants<3>::shift;
  out[i] = fma_chain(x[i], scale, shift, iterations);
}

// Variant 2: every lane computes all four paths and keeps its own: what predication (the
// compiler's if-conversion of a short branch) costs, four paths' time whatever the keys. The four
// chains are independent, which gives the scheduler more to overlap than one chain does.
__global__ void divergence_all_paths(size_t n, const float *__restrict__ x,
                                     const int *__restrict__ key, int iterations,
                                     float *__restrict__ out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float p0 = v, p1 = v, p2 = v, p3 = v;
#pragma unroll 4
  for (int r = 0; r < iterations; ++r) {
    p0 = fmaf(p0, PathConstants<0>::scale, PathConstants<0>::shift);
    p1 = fmaf(p1, PathConstants<1>::scale, PathConstants<1>::shift);
    p2 = fmaf(p2, PathConstants<2>::scale, PathConstants<2>::shift);
    p3 = fmaf(p3, PathConstants<3>::scale, PathConstants<3>::shift);
  }
  const int k = key[i] & 3;
  out[i] = k == 0 ? p0 : k == 1 ? p1 : k == 2 ? p2 : p3;
}

}  // namespace

extern "C" int glc_divergence(int variant, int block, size_t n, const float *x, const int *key,
                              int iterations, float *out, glc_stream stream) {
  using kernel_t = void (*)(size_t, const float *, const int *, int, float *);
  kernel_t kernel = nullptr;
  const char *name = nullptr;
  switch (variant) {
    case GLC_DIVERGENCE_BRANCH:
      kernel = divergence_branch, name = "divergence_branch";
      break;
    case GLC_DIVERGENCE_BRANCH_FREE:
      kernel = divergence_branch_free, name = "divergence_branch_free";
      break;
    case GLC_DIVERGENCE_ALL_PATHS:
      kernel = divergence_all_paths, name = "divergence_all_paths";
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_divergence(variant)");
  }
  if (block < 32 || block > 1024 || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_divergence(block)");
  if (iterations < 0 || iterations > GLC_DIVERGENCE_MAX_ITERATIONS)
    return glc_fail(cudaErrorInvalidValue, "glc_divergence(iterations)");
  if (n == 0) return cudaSuccess;
  if (!glc_all_aligned(sizeof(float), x, key, out))
    return glc_fail(cudaErrorInvalidValue, "glc_divergence(pointers)");
  const size_t grid = glc_blocks_to_cover(n, block);
  if (grid > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, name);
  return glc_launch(kernel, name, static_cast<unsigned>(grid), block,
                    static_cast<cudaStream_t>(stream), n, x, key, iterations, out);
}
