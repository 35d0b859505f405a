// warp_reduce variants 0-3: S0's block sum ("Reduction #5: Unrolling the Last Warp") with its
// last warp written four ways, each run `trials` times over the same data, counting the block
// sums that come out wrong. S0 drops the barriers for the last 32 lanes because "the natural
// lock-step execution of the warp guarantees synchronization"; S0 ch. 5 ("Independent Thread
// Scheduling") and S1 say that since Volta it no longer does. Variants 0 and 1 keep that
// assumption (deliberate shared-memory races, which racecheck reports: tools/sanitize/concepts.py
// --expect-race); 2 and 3 are the correct forms.
//
// int32 data, summed in unsigned arithmetic (wrapping like NumPy's int32 sums): a sum is either
// right or wrong, with no rounding to blur the count.
#include <cuda_runtime.h>

#include <cstddef>

#include "concepts.h"
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"

namespace {

// Variants 0 and 1: S0's six unrolled steps with no __syncwarp(), on a plain or a volatile view of
// the shared array (Word = unsigned or volatile unsigned): the one qualifier is all that differs.
//
// Variant 0, S0's code as written (neither __syncwarp() nor volatile). Two things may break it.
// The compiler, which sees one thread, may keep s[tid] in a register and load s[tid + 16] before
// the lane that owns it has stored its step-32 value (the sm_90 SASS does: docs/labs/concepts.md);
// and since Volta the lanes of a warp are not promised to run a step together. The kernel is kept
// exactly as written so that the count of wrong sums says what happens.
//
// Variant 1, the pre-Volta idiom (Harris's kernel 5): volatile forces every load and store to
// happen, in order, in each thread, which fixes the compiler half of variant 0. A lane may still
// read its partner's slot before the partner wrote it unless the warp runs each step in lockstep,
// which independent thread scheduling does not promise.
template <typename Word>
__device__ __forceinline__ unsigned last_warp_lockstep(Word *s, unsigned tid) {
  if (tid < 32) s[tid] += s[tid + 32];
  if (tid < 16) s[tid] += s[tid + 16];
  if (tid < 8) s[tid] += s[tid + 8];
  if (tid < 4) s[tid] += s[tid + 4];
  if (tid < 2) s[tid] += s[tid + 2];
  if (tid < 1) s[tid] += s[tid + 1];
  return tid == 0 ? s[0] : 0u;  // lane 0 reads its own last store; other warps never touch s[0]
}

// Variant 2, the CUDA Programming Guide's form: in each step every lane reads, the warp syncs,
// every lane writes, the warp syncs again. __syncwarp() orders the lanes' shared-memory accesses
// (it is a memory barrier among them), so no volatile is needed. All 32 lanes take every step;
// the upper ones compute values nobody reads, which costs less than masking them.
__device__ __forceinline__ unsigned last_warp_syncwarp(unsigned *s, unsigned tid) {
  if (tid >= 32) return 0;
  unsigned v = s[tid] + s[tid + 32];
  s[tid] = v;
  __syncwarp();
  for (unsigned offset = 16; offset > 0; offset >>= 1) {
    v += s[tid + offset];
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  return v;
}

// Variant 3: the partial sums move between registers with __shfl_down_sync, whose mask names the
// lanes that take part and which synchronizes them; shared memory is not touched after the tree.
__device__ __forceinline__ unsigned last_warp_shuffle(unsigned *s, unsigned tid) {
  if (tid >= 32) return 0;
  unsigned v = s[tid] + s[tid + 32];
  for (unsigned offset = 16; offset > 0; offset >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

template <int Variant>
__device__ __forceinline__ unsigned last_warp(unsigned *s, unsigned tid) {
  if constexpr (Variant == GLC_WARP_REDUCE_LOCKSTEP_PLAIN) return last_warp_lockstep(s, tid);
  if constexpr (Variant == GLC_WARP_REDUCE_LOCKSTEP_VOLATILE)
    return last_warp_lockstep(static_cast<volatile unsigned *>(s), tid);
  if constexpr (Variant == GLC_WARP_REDUCE_SYNCWARP) return last_warp_syncwarp(s, tid);
  if constexpr (Variant == GLC_WARP_REDUCE_SHUFFLE) return last_warp_shuffle(s, tid);
}

// The exact block sums, by atomics on one shared word: addition of integers in any order gives the
// same sum, so no schedule can make this wrong. Blocks of blockDim.x elements, zeros past n.
__global__ void block_sums_atomic(const int *__restrict__ x, size_t n,
                                  unsigned *__restrict__ exact) {
  __shared__ unsigned total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&total, static_cast<unsigned>(x[i]));
  __syncthreads();
  if (threadIdx.x == 0) exact[blockIdx.x] = total;
}

// One element per thread into shared memory, the tree with __syncthreads() down to 64 partial
// sums, then the variant's last warp; `trials` times, thread 0 counting the sums that differ from
// exact[blockIdx.x]. blockDim.x is a power of two >= 64; dynamic shared memory holds blockDim.x
// words.
template <int Variant>
__global__ void block_sums_trials(const int *__restrict__ x, size_t n, int trials,
                                  const unsigned *__restrict__ exact, int *__restrict__ sums,
                                  int *__restrict__ wrong) {
  extern __shared__ unsigned s[];
  const unsigned tid = threadIdx.x;
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + tid;
  const unsigned value = i < n ? static_cast<unsigned>(x[i]) : 0u;
  const unsigned want = tid == 0 ? exact[blockIdx.x] : 0u;
  unsigned sum = 0, misses = 0;
  for (int trial = 0; trial < trials; ++trial) {
    s[tid] = value;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
      if (tid < stride) s[tid] += s[tid + stride];
      __syncthreads();
    }
    sum = last_warp<Variant>(s, tid);
    misses += tid == 0 && sum != want;
    __syncthreads();  // the next trial overwrites s
  }
  if (tid == 0) {
    sums[blockIdx.x] = static_cast<int>(sum);
    wrong[blockIdx.x] = static_cast<int>(misses);
  }
}

}  // namespace

extern "C" int glc_warp_reduce(int variant, int block, size_t n, const int *x, int trials,
                               int *sums, int *wrong, glc_stream stream) {
  using kernel_t = void (*)(const int *, size_t, int, const unsigned *, int *, int *);
  kernel_t kernel = nullptr;
  const char *name = nullptr;
  switch (variant) {
    case GLC_WARP_REDUCE_LOCKSTEP_PLAIN:
      kernel = block_sums_trials<GLC_WARP_REDUCE_LOCKSTEP_PLAIN>, name = "block_sums_plain";
      break;
    case GLC_WARP_REDUCE_LOCKSTEP_VOLATILE:
      kernel = block_sums_trials<GLC_WARP_REDUCE_LOCKSTEP_VOLATILE>, name = "block_sums_volatile";
      break;
    case GLC_WARP_REDUCE_SYNCWARP:
      kernel = block_sums_trials<GLC_WARP_REDUCE_SYNCWARP>, name = "block_sums_syncwarp";
      break;
    case GLC_WARP_REDUCE_SHUFFLE:
      kernel = block_sums_trials<GLC_WARP_REDUCE_SHUFFLE>, name = "block_sums_shuffle";
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_warp_reduce(variant)");
  }
  if (block < 64 || block > 1024 || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_warp_reduce(block)");
  if (trials < 1 || trials > GLC_WARP_REDUCE_MAX_TRIALS)
    return glc_fail(cudaErrorInvalidValue, "glc_warp_reduce(trials)");
  if (n == 0) return cudaSuccess;
  if (!glc_all_aligned(sizeof(int), x, sums, wrong))
    return glc_fail(cudaErrorInvalidValue, "glc_warp_reduce(pointers)");
  const size_t grid = glc_blocks_to_cover(n, block);
  if (grid > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, name);
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  GlcDeviceBuffer exact;
  int code = exact.allocate(grid * sizeof(unsigned), s);
  GLC_TRY(code, glc_launch(block_sums_atomic, "block_sums_atomic", static_cast<unsigned>(grid),
                           block, s, x, n, exact.as<unsigned>()));
  GLC_TRY(code, glc_launch_shared(kernel, name, static_cast<unsigned>(grid), block,
                                  static_cast<unsigned>(block * sizeof(unsigned)), s, x, n, trials,
                                  exact.as<const unsigned>(), sums, wrong));
  return code;
}
