// counter variants 0-4: S4's shared counter ("Let's see an example of not atomic vs atomic to
// increment a shared counter through many threads"). Every thread whose element is non-zero adds
// one to a single global counter; the final value, against the number of non-zero elements, says
// how many increments were lost. Variant 0 is the deliberate race; 1-4 are exact, and show what
// aggregation saves: S1 measured one global atomic per element at 1.5 GB/s against 35.7 GB/s with
// shared-memory atomics first (S1 "AtomicGlobal" and "AtomicShared").
//
// ptxas aggregates an atomicAdd of a constant to an address it can prove warp-uniform by itself:
// for variant 1 the sm_90 SASS is VOTEU.ANY, UPOPC and one REDG per warp, not 32. Variant 2 takes
// the address as counter + (lane & lane_mask) with lane_mask = 0 passed at run time, which ptxas
// cannot prove uniform, so every thread issues its own REDG: the cost S4's code had before
// compilers did this, and still has wherever the increment or the address varies by lane.
#include <cuda_runtime.h>

#include <cstddef>

#include "concepts.h"
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"

namespace {

using counter_t = unsigned long long;

__device__ __forceinline__ bool counts(const int *x, size_t n, size_t i) {
  return i < n && x[i] != 0;
}

// Variant 0: `counter = counter + 1`, a load and a store. The lanes of a warp that load the
// counter at once load the same value and store the same value plus one, and warps on other SMs
// overwrite each other's stores: most increments are lost. The final count is still at least 1
// (when any element counts) and at most the number of increments, since every stored value is a
// loaded value plus one. Deliberately not atomic; racecheck looks at shared memory only, so no
// sanitizer reports this global-memory race.
__global__ void count_racy(const int *__restrict__ x, size_t n, counter_t *counter, unsigned) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (counts(x, n, i)) *counter = *counter + 1;
}

// Variant 1: atomicAdd(counter, 1) as S4 writes it: exact; ptxas makes it one atomic per warp.
__global__ void count_atomic(const int *__restrict__ x, size_t n, counter_t *counter, unsigned) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (counts(x, n, i)) atomicAdd(counter, 1ull);
}

// Variant 2: one atomic per counting thread, all on one address, serialized at the L2 slice that
// owns it. lane_mask is 0: the address is the counter, but not provably so at compile time.
__global__ void count_atomic_per_thread(const int *__restrict__ x, size_t n, counter_t *counter,
                                        unsigned lane_mask) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (counts(x, n, i)) atomicAdd(counter + (threadIdx.x & lane_mask), 1ull);
}

// Variant 3: warp aggregation written out. The ballot has one bit per counting lane; lane 0 adds
// its popcount. Every lane of the warp reaches the ballot (no early return; blocks are whole
// warps), so the full mask is right.
__global__ void count_warp_aggregated(const int *__restrict__ x, size_t n, counter_t *counter,
                                      unsigned) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned ballot = __ballot_sync(0xffffffffu, counts(x, n, i));
  if ((threadIdx.x & 31) == 0 && ballot != 0)
    atomicAdd(counter, static_cast<counter_t>(__popc(ballot)));
}

// Variant 4: block aggregation. __syncthreads_count returns, to every thread, how many threads of
// the block passed a true predicate; thread 0 adds it: one atomic per block.
__global__ void count_block_aggregated(const int *__restrict__ x, size_t n, counter_t *counter,
                                       unsigned) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int block_count = __syncthreads_count(counts(x, n, i));
  if (threadIdx.x == 0 && block_count != 0) atomicAdd(counter, static_cast<counter_t>(block_count));
}

}  // namespace

extern "C" int glc_counter(int variant, int block, size_t n, const int *x, long long *count,
                           glc_stream stream) {
  using kernel_t = void (*)(const int *, size_t, counter_t *, unsigned);
  kernel_t kernel = nullptr;
  const char *name = nullptr;
  switch (variant) {
    case GLC_COUNTER_RACY:
      kernel = count_racy, name = "count_racy";
      break;
    case GLC_COUNTER_ATOMIC:
      kernel = count_atomic, name = "count_atomic";
      break;
    case GLC_COUNTER_ATOMIC_PER_THREAD:
      kernel = count_atomic_per_thread, name = "count_atomic_per_thread";
      break;
    case GLC_COUNTER_WARP_AGGREGATED:
      kernel = count_warp_aggregated, name = "count_warp_aggregated";
      break;
    case GLC_COUNTER_BLOCK_AGGREGATED:
      kernel = count_block_aggregated, name = "count_block_aggregated";
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_counter(variant)");
  }
  if (block < 32 || block > 1024 || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_counter(block)");
  if (!glc_all_aligned(sizeof(long long), count))
    return glc_fail(cudaErrorInvalidValue, "glc_counter(count)");
  if (n == 0) return glc_memset_async(count, 0, sizeof(long long), stream);
  if (!glc_all_aligned(sizeof(int), x)) return glc_fail(cudaErrorInvalidValue, "glc_counter(x)");
  const size_t grid = glc_blocks_to_cover(n, block);
  if (grid > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, name);
  // The counter lives in device memory: `count` may be mapped host memory, where the device's
  // atomics are not atomic and every access crosses PCIe.
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  GlcDeviceBuffer counter;
  int code = counter.allocate(sizeof(counter_t), s);
  GLC_TRY(code, glc_memset_async(counter.ptr, 0, sizeof(counter_t), stream));
  const unsigned lane_mask = 0;  // see count_atomic_per_thread
  GLC_TRY(code, glc_launch(kernel, name, static_cast<unsigned>(grid), block, s, x, n,
                           counter.as<counter_t>(), lane_mask));
  GLC_TRY(code, glc_memcpy_async(count, counter.ptr, sizeof(counter_t), stream));
  return code;
}
