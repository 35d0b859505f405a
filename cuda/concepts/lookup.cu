// lookup variants 0-2: out[i] = table[idx[i]] (np.take(table, idx, mode="clip")) with the table
// in three memories. Constant memory has one port per SM that serves one address per cycle: a
// warp whose lanes all read one entry gets it broadcast in one pass, a warp whose 32 lanes read 32
// entries is served in 32 passes (S0's memory table, S4's __constant__ lookup table). The L1 and
// shared memory serve a warp's different addresses together (shared memory up to bank conflicts),
// so they care much less whether the indices agree. Whether indices are uniform across a warp is
// the experiment, in the idx array (gl.concepts.lane_pattern), with one kernel per memory.
//
// Indices are clipped to [0, table_size - 1] in every variant: an index out of range reads the
// nearest end of the table, never outside it.
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>

#include "concepts.h"
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"

namespace {

__constant__ float lookup_table[GLC_LOOKUP_MAX_TABLE];

__device__ __forceinline__ int clip(int i, int table_size) {
  return min(max(i, 0), table_size - 1);
}

// Variant 0: the table in __constant__ memory.
__global__ void lookup_constant(size_t n, const int *__restrict__ idx, int table_size,
                                float *__restrict__ out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lookup_table[clip(idx[i], table_size)];
}

// Variant 1: the table in global memory, read through the read-only data cache (__ldg).
__global__ void lookup_global_ldg(size_t n, const float *__restrict__ table,
                                  const int *__restrict__ idx, int table_size,
                                  float *__restrict__ out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __ldg(table + clip(idx[i], table_size));
}

// Variant 2: each block copies the table into shared memory once, then looks up a grid-stride
// share of the indices: the copy is paid per block, so the grid is about one wave, not n / block.
__global__ void lookup_shared(size_t n, const float *__restrict__ table,
                              const int *__restrict__ idx, int table_size,
                              float *__restrict__ out) {
  extern __shared__ float copy[];
  for (int k = threadIdx.x; k < table_size; k += blockDim.x) copy[k] = table[k];
  __syncthreads();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = copy[clip(idx[i], table_size)];
}

// The __constant__ table is one per device, and calls on different streams could otherwise
// overwrite it while an earlier lookup still reads it. Each call's copy into it waits for the
// previous call's kernel (an event recorded after it), under a lock that keeps wait, copy, launch
// and record in one order: constant lookups on different streams run one after the other.
int launch_constant(size_t table_size, const float *table, size_t n, const int *idx, float *out,
                    int block, cudaStream_t stream) {
  static std::mutex lock;
  static cudaEvent_t table_free[glc_cached_devices] = {};
  std::lock_guard<std::mutex> guard(lock);
  int device = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  if (device < 0 || device >= glc_cached_devices)
    return glc_fail(cudaErrorNotSupported, "glc_lookup(device)");
  cudaEvent_t &free_event = table_free[device];
  if (!free_event) code = GLC_CUDA(cudaEventCreateWithFlags, &free_event, cudaEventDisableTiming);
  GLC_TRY(code, GLC_CUDA(cudaStreamWaitEvent, stream, free_event, 0));
  GLC_TRY(code, GLC_CUDA(cudaMemcpyToSymbolAsync, lookup_table, table, table_size * sizeof(float),
                         0, cudaMemcpyDefault, stream));
  const size_t grid = glc_blocks_to_cover(n, block);
  if (!code && grid > glc_max_grid_x)
    code = glc_fail(cudaErrorInvalidConfiguration, "lookup_constant");
  GLC_TRY(code, glc_launch(lookup_constant, "lookup_constant", static_cast<unsigned>(grid), block,
                           stream, n, idx, static_cast<int>(table_size), out));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, free_event, stream));
  return code;
}

int launch_shared(size_t table_size, const float *table, size_t n, const int *idx, float *out,
                  int block, cudaStream_t stream) {
  int sm_count = 0;
  int code = glc_current_sm_count(&sm_count);
  if (code) return code;
  // About one wave: 2048 resident threads per SM on the H100 and the A100; a large table lets
  // fewer blocks reside, and the rest run in a later wave.
  size_t grid = static_cast<size_t>(sm_count) * (2048 / block);
  const size_t needed = glc_blocks_to_cover(n, block);
  if (grid > needed) grid = needed;
  return glc_launch_shared(lookup_shared, "lookup_shared", static_cast<unsigned>(grid), block,
                           static_cast<unsigned>(table_size * sizeof(float)), stream, n, table, idx,
                           static_cast<int>(table_size), out);
}

}  // namespace

extern "C" int glc_lookup(int variant, int block, size_t table_size, const float *table, size_t n,
                          const int *idx, float *out, glc_stream stream) {
  if (variant != GLC_LOOKUP_CONSTANT && variant != GLC_LOOKUP_GLOBAL_LDG &&
      variant != GLC_LOOKUP_SHARED)
    return glc_fail(cudaErrorInvalidValue, "glc_lookup(variant)");
  if (block < 32 || block > 1024 || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_lookup(block)");
  if (n == 0) return cudaSuccess;
  if (table_size < 1 || table_size > GLC_LOOKUP_MAX_TABLE)
    return glc_fail(cudaErrorInvalidValue, "glc_lookup(table_size)");
  if (!glc_all_aligned(sizeof(float), table, idx, out))
    return glc_fail(cudaErrorInvalidValue, "glc_lookup(pointers)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (variant == GLC_LOOKUP_CONSTANT)
    return launch_constant(table_size, table, n, idx, out, block, s);
  if (variant == GLC_LOOKUP_SHARED) return launch_shared(table_size, table, n, idx, out, block, s);
  const size_t grid = glc_blocks_to_cover(n, block);
  if (grid > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, "lookup_global_ldg");
  return glc_launch(lookup_global_ldg, "lookup_global_ldg", static_cast<unsigned>(grid), block, s,
                    n, table, idx, static_cast<int>(table_size), out);
}
