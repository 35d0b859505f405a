// Histogram variant 3: the bandwidth rung. Variants 1-2 read one element per thread per step
// and their shared atomics collide: lanes of a warp that hit one bin hit one address, and lanes
// whose bins share a bank conflict. Here each block's shared histogram has one column per lane
// (counts[bin][lane], 32 columns for up to 256 bins): lane l only ever adds to column l, whose
// words all sit in bank l, so every shared atomic of a warp is free of bank conflicts and of
// same-address collisions whatever the data, and 90%-skewed data runs as fast as uniform data.
// Warps of a block still share the columns; their atomics on one word queue in the shared
// memory unit, one instruction after another, with no replays. Each thread reads 16 bytes per
// load, four loads in flight, over a grid of one wave; the columns are summed once per block.
// Predictions and measurements: docs/labs/histogram.md.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "binning.cuh"
#include "cuda/core/launch.cuh"

namespace {

// 32 KiB of 32-bit counts per block: 256 bins x 32 columns. More bins take fewer columns
// (a power of two, down to 1), and past 8192 bins a tile of 8192 bins at a time.
constexpr int column_budget_words = 8192;
constexpr int vectors_in_flight = 4;

template <typename T, typename Count>
__device__ __forceinline__ void for_each_element(const uint4 &v, Count &&count) {
  constexpr int per_vector = 16 / sizeof(T);
  T e[per_vector];
  memcpy(e, &v, 16);
#pragma unroll
  for (int j = 0; j < per_vector; ++j) count(e[j]);
}

// x + head is 16-byte aligned; `vectors` 16-byte vectors follow it; the elements before it (the
// head) and after the vectors (the tail, fewer than one vector) are read one by one.
template <typename T, typename Binner>
__global__ void __launch_bounds__(1024)
    histogram_lane_columns(const T *__restrict__ x, size_t n, size_t head, size_t vectors,
                           Binner bin_of, int bins, int tile, int column_shift,
                           unsigned long long *counts) {
  extern __shared__ unsigned columns[];  // [tile][1 << column_shift]
  const unsigned column_mask = (1u << column_shift) - 1;
  const unsigned my_column = threadIdx.x & column_mask;
  const uint4 *body = reinterpret_cast<const uint4 *>(x + head);
  const size_t tail = head + vectors * (16 / sizeof(T));
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int tile0 = 0; tile0 < bins; tile0 += tile) {
    const int tile_bins = min(tile, bins - tile0);
    const int words = tile_bins << column_shift;
    for (int k = threadIdx.x; k < words; k += blockDim.x) columns[k] = 0;
    __syncthreads();  // zeroed before any thread counts
    auto count = [&](T v) {
      if constexpr (Binner::whole_byte_range) {  // one tile of 256 bins x 32 columns, no test
        atomicAdd(columns + ((bin_of(v) << 5) | (threadIdx.x & 31)), 1u);
        return;
      }
      const int b = bin_of(v) - tile0;
      if (static_cast<unsigned>(b) < static_cast<unsigned>(tile_bins))
        atomicAdd(columns + ((b << column_shift) | my_column), 1u);
    };
    if (tid < head) count(x[tid]);
    if (tid < n - tail) count(x[tail + tid]);
    size_t i = tid;
    for (; i + (vectors_in_flight - 1) * stride < vectors; i += vectors_in_flight * stride) {
      uint4 v[vectors_in_flight];
#pragma unroll
      for (int u = 0; u < vectors_in_flight; ++u) v[u] = __ldcs(body + i + u * stride);
#pragma unroll
      for (int u = 0; u < vectors_in_flight; ++u) for_each_element<T>(v[u], count);
    }
    for (; i < vectors; i += stride) for_each_element<T>(__ldcs(body + i), count);
    __syncthreads();  // every count is in before the merge reads it
    // Thread k sums bin k's columns starting at column k: the lanes of a warp read 32 banks.
    for (int k = threadIdx.x; k < tile_bins; k += blockDim.x) {
      unsigned sum = 0;
      for (unsigned c = 0; c <= column_mask; ++c)
        sum += columns[(k << column_shift) | ((c + k) & column_mask)];
      if (sum) atomicAdd(counts + tile0 + k, static_cast<unsigned long long>(sum));
    }
    // Several tiles only happen at column_shift 0, where thread k zeroes just the words it
    // merged, so racecheck sees no hazard without this barrier; it keeps the next tile's
    // zeroing safe should the tiling ever give a tile several columns.
    __syncthreads();
  }
}

template <typename T, typename Binner>
int launch_lane_columns(int block, size_t n, const T *x, Binner bin_of, int bins,
                        unsigned long long *counts, cudaStream_t stream) {
  int column_shift = 5;
  while (column_shift > 0 && (bins << column_shift) > column_budget_words) --column_shift;
  const int tile = min(bins, column_budget_words >> column_shift);
  const unsigned shared = static_cast<unsigned>((tile << column_shift) * sizeof(unsigned));
  const uintptr_t misaligned = reinterpret_cast<uintptr_t>(x) % 16;
  size_t head = misaligned ? (16 - misaligned) / sizeof(T) : 0;
  if (head > n) head = n;
  const size_t vectors = (n - head) / (16 / sizeof(T));
  auto kernel = histogram_lane_columns<T, Binner>;
  unsigned grid = 0;
  int code = histogram_grid(kernel, block, shared, vectors / vectors_in_flight + 1, n, &grid);
  return code ? code
              : glc_launch_shared(kernel, "histogram_lane_columns", grid, block, shared, stream, x,
                                  n, head, vectors, bin_of, bins, tile, column_shift, counts);
}

}  // namespace

int glc_histogram_lane_columns_family(int block, int dtype, size_t n, const void *x, long long lo,
                                      int bins, const glc_float_bins *float_bins, const void *edges,
                                      unsigned long long *counts, cudaStream_t stream) {
  return glc_dispatch_binner(dtype, lo, bins, float_bins, edges, "glc_histogram",
                             [&](auto v, auto bin_of) {
                               using T = decltype(v);
                               return launch_lane_columns(block, n, static_cast<const T *>(x),
                                                          bin_of, bins, counts, stream);
                             });
}
