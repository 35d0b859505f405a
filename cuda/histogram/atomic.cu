// Histogram variants 0-2: S4 section 8's histograms, from one global atomic per element to a
// per-block histogram in shared memory, then with a warp's equal bins added once. Every kernel
// reads one element per thread per grid-stride step (no wide loads: that is variant 3's change).
// Counts are exact: integer atomics lose nothing, whatever the order; only the time changes.
#include <cuda_runtime.h>

#include <cstddef>

#include "binning.cuh"
#include "cuda/core/launch.cuh"

namespace {

// Shared-memory histograms hold at most this many bins at a time (48 KiB of 32-bit counts, the
// dynamic shared memory a block gets without opting in); more bins are counted a tile of bins
// at a time, each tile a pass over the block's elements.
constexpr int shared_tile_bins = 12288;

// Variant 0 (S4): every element that lands in a bin adds one to its 64-bit global count. All
// threads that hit one bin serialize on its address at L2: skewed data is slow.
template <typename T, typename Binner>
__global__ void histogram_global_atomic(const T *__restrict__ x, size_t n, Binner bin_of,
                                        unsigned long long *counts) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int b = bin_of(x[i]);
    if (b >= 0) atomicAdd(counts + b, 1ull);
  }
}

// Variants 1 and 2: each block counts its grid-stride share in a 32-bit histogram in shared
// memory, then adds its non-zero counts to the global ones: one global atomic per bin per block
// instead of one per element. With Aggregate (variant 2), the lanes of a warp that hold the same
// bin find each other with __match_any_sync and the lowest of them adds their number: skewed
// data, where most lanes share a bin, takes one shared atomic per warp instead of 32 on one
// address. The element loop steps a whole warp at once (base is the warp's first index), so
// every lane reaches __match_any_sync with the full mask.
template <typename T, typename Binner, bool Aggregate>
__device__ void count_in_shared(const T *__restrict__ x, size_t n, Binner bin_of, int bins,
                                unsigned long long *counts) {
  extern __shared__ unsigned tile_counts[];
  const int lane = threadIdx.x & 31;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + (threadIdx.x & ~31u);
  for (int tile0 = 0; tile0 < bins; tile0 += shared_tile_bins) {
    const int tile_bins = min(shared_tile_bins, bins - tile0);
    for (int k = threadIdx.x; k < tile_bins; k += blockDim.x) tile_counts[k] = 0;
    __syncthreads();  // zeroed before any thread counts
    for (size_t base = first; base < n; base += stride) {
      const size_t i = base + lane;
      const int b = (i < n ? bin_of(x[i]) : -1) - tile0;
      const bool mine = b >= 0 && b < tile_bins;
      if constexpr (Aggregate) {
        const unsigned peers = __match_any_sync(0xffffffffu, mine ? b : -1);
        if (mine && lane == __ffs(peers) - 1) atomicAdd(tile_counts + b, __popc(peers));
      } else {
        if (mine) atomicAdd(tile_counts + b, 1u);
      }
    }
    __syncthreads();  // every count is in before the merge reads it
    for (int k = threadIdx.x; k < tile_bins; k += blockDim.x) {
      const unsigned c = tile_counts[k];
      if (c) atomicAdd(counts + tile0 + k, static_cast<unsigned long long>(c));
    }
    __syncthreads();  // merged before the next tile zeroes the counts
  }
}

template <typename T, typename Binner>
__global__ void histogram_shared(const T *__restrict__ x, size_t n, Binner bin_of, int bins,
                                 unsigned long long *counts) {
  count_in_shared<T, Binner, false>(x, n, bin_of, bins, counts);
}

template <typename T, typename Binner>
__global__ void histogram_warp_aggregated(const T *__restrict__ x, size_t n, Binner bin_of,
                                          int bins, unsigned long long *counts) {
  count_in_shared<T, Binner, true>(x, n, bin_of, bins, counts);
}

template <typename T, typename Binner>
int launch_family(int variant, int block, size_t n, const T *x, Binner bin_of, int bins,
                  unsigned long long *counts, cudaStream_t stream) {
  unsigned grid = 0;
  if (variant == GLC_HISTOGRAM_GLOBAL_ATOMIC) {
    auto kernel = histogram_global_atomic<T, Binner>;
    int code = histogram_grid(kernel, block, 0, n, n, &grid);
    return code ? code
                : glc_launch(kernel, "histogram_global_atomic", grid, block, stream, x, n, bin_of,
                             counts);
  }
  const unsigned shared = static_cast<unsigned>(min(bins, shared_tile_bins) * sizeof(unsigned));
  auto kernel = variant == GLC_HISTOGRAM_SHARED ? histogram_shared<T, Binner>
                                                : histogram_warp_aggregated<T, Binner>;
  const char *name =
      variant == GLC_HISTOGRAM_SHARED ? "histogram_shared" : "histogram_warp_aggregated";
  int code = histogram_grid(kernel, block, shared, n, n, &grid);
  return code ? code
              : glc_launch_shared(kernel, name, grid, block, shared, stream, x, n, bin_of, bins,
                                  counts);
}

}  // namespace

int glc_histogram_atomic_family(int variant, int block, int dtype, size_t n, const void *x,
                                long long lo, int bins, const glc_float_bins *float_bins,
                                const void *edges, unsigned long long *counts,
                                cudaStream_t stream) {
  return glc_dispatch_binner(dtype, lo, bins, float_bins, edges, "glc_histogram",
                             [&](auto v, auto bin_of) {
                               using T = decltype(v);
                               return launch_family(variant, block, n, static_cast<const T *>(x),
                                                    bin_of, bins, counts, stream);
                             });
}
