// Variant 1: LSD radix sort (S4 9; Merrill & Grimshaw 2011's reduce-then-scan passes, written
// plainly). Each pass sorts stably by one digit of `bits` bits of the ordered key (sort.h), lowest
// digit first, so after the last pass the keys are in order and equal keys in input order. A pass
// is three kernels over a fixed grid of blocks, block b owning one contiguous segment of the keys:
//  radix_histogram    each block counts the digits of its segment (shared-memory atomics);
//  radix_scan_counts  one block scans the counts laid out digit-major (counts[d * grid + b]), so
//                     that entry (d, b) becomes where block b's first key of digit d goes;
//  radix_scatter      each block walks its segment 256 keys at a time, ranks each key among the
//                     keys of its digit before it (a warp's peers by __match_any_sync, earlier
//                     warps by a scan over the warps' digit counts) and writes it to its place.
// A pass reads the keys twice and writes them once: 12 B a key for 4-byte keys, plus 16 B for
// 8-byte values (docs/labs/sort.md). The scatter's writes land one digit bucket per key, 256
// buckets apart: not coalesced, the cost a local sort in shared memory before the write (the next
// rung, onesweep) removes.
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"
#include "passes.cuh"

namespace {

// One warp's keys a round: a block of 8 warps ranks 256 keys between two barriers.
constexpr int radix_block = 256;
constexpr int radix_warps = radix_block / 32;
// Rounds a block walks at least: fewer, larger blocks for short inputs, so that the one-block
// scan of radix_size x grid counts stays short (at 2^20, 256 blocks and 65 K counts).
constexpr size_t min_rounds_per_block = 16;
// The counts' scan: one block of 1024 threads, 8 counts a thread a chunk (8 loads in flight).
constexpr int scan_block = 1024;
constexpr int scan_items = 8;

template <int Bits>
constexpr unsigned radix_size = 1u << Bits;

template <int Dtype, int Bits>
__device__ unsigned digit_of(typename glc_sort_key<Dtype>::bits key, int shift, bool descending) {
  return static_cast<unsigned>(glc_sort_key<Dtype>::order(key, descending) >> shift) &
         (radix_size<Bits> - 1);
}

// counts[d * gridDim.x + blockIdx.x] = how many keys of this block's segment have digit d.
template <int Dtype, int Bits>
__global__ void radix_histogram(const typename glc_sort_key<Dtype>::bits *keys, size_t n,
                                size_t segment, int shift, bool descending,
                                unsigned long long *counts) {
  __shared__ unsigned bins[radix_size<Bits>];
  for (unsigned d = threadIdx.x; d < radix_size<Bits>; d += blockDim.x) bins[d] = 0;
  __syncthreads();
  const size_t begin = blockIdx.x * segment;
  const size_t end = begin + segment < n ? begin + segment : n;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    atomicAdd(&bins[digit_of<Dtype, Bits>(keys[i], shift, descending)], 1u);
  __syncthreads();
  for (unsigned d = threadIdx.x; d < radix_size<Bits>; d += blockDim.x)
    counts[static_cast<size_t>(d) * gridDim.x + blockIdx.x] = bins[d];
}

// counts = its exclusive prefix sum, in place, by one block: each thread adds up its run of
// scan_items, the block scans the threads' sums (warp shuffles, then the warps' totals), and the
// chunk's total carries into the next chunk. There are radix_size x grid counts, a few hundred
// thousand at most: one block takes microseconds.
__global__ void radix_scan_counts(unsigned long long *counts, size_t m) {
  __shared__ unsigned long long warp_totals[scan_block / 32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned warps = blockDim.x / 32;
  unsigned long long carry = 0;
  for (size_t base = 0; base < m; base += static_cast<size_t>(blockDim.x) * scan_items) {
    const size_t first = base + static_cast<size_t>(threadIdx.x) * scan_items;
    unsigned long long v[scan_items], sum = 0;
    for (int k = 0; k < scan_items; ++k) {
      v[k] = first + k < m ? counts[first + k] : 0;
      sum += v[k];
    }
    unsigned long long inclusive = sum;
    for (unsigned offset = 1; offset < 32; offset <<= 1) {
      const unsigned long long left = __shfl_up_sync(0xffffffffu, inclusive, offset);
      if (lane >= offset) inclusive += left;
    }
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
      unsigned long long total = lane < warps ? warp_totals[lane] : 0;
      for (unsigned offset = 1; offset < 32; offset <<= 1) {
        const unsigned long long left = __shfl_up_sync(0xffffffffu, total, offset);
        if (lane >= offset) total += left;
      }
      if (lane < warps) warp_totals[lane] = total;
    }
    __syncthreads();
    unsigned long long prefix = carry + (warp > 0 ? warp_totals[warp - 1] : 0) + inclusive - sum;
    for (int k = 0; k < scan_items; ++k) {
      if (first + k < m) counts[first + k] = prefix;
      prefix += v[k];
    }
    carry += warp_totals[warps - 1];
    __syncthreads();  // every thread has read warp_totals before the next chunk rewrites it
  }
}

// Moves each key of this block's segment (and its value) to its place for this digit, stably.
// offsets[d * gridDim.x + blockIdx.x]: where the segment's first key of digit d goes. Values:
// Value's bits moved with the keys when HasValues; Iota (the first pass of an argsort) writes
// each key's index instead of reading a value.
template <int Dtype, int Bits, typename Value, bool HasValues, bool Iota>
__global__ void __launch_bounds__(radix_block)
    radix_scatter(const typename glc_sort_key<Dtype>::bits *keys,
                  typename glc_sort_key<Dtype>::bits *keys_out, const Value *values,
                  Value *values_out, size_t n, size_t segment, int shift, bool descending,
                  const unsigned long long *offsets) {
  constexpr unsigned radix = radix_size<Bits>;
  constexpr unsigned no_digit = radix;              // the lanes past the end
  __shared__ unsigned long long digit_next[radix];  // where the digit's next key goes
  __shared__ unsigned warp_counts[radix_warps][radix];
  __shared__ unsigned long long warp_starts[radix_warps][radix];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned lanes_before = (1u << lane) - 1;
  for (unsigned d = threadIdx.x; d < radix; d += blockDim.x) {
    digit_next[d] = offsets[static_cast<size_t>(d) * gridDim.x + blockIdx.x];
    for (int w = 0; w < radix_warps; ++w) warp_counts[w][d] = 0;
  }
  __syncthreads();
  const size_t begin = blockIdx.x * segment;
  const size_t end = begin + segment < n ? begin + segment : n;
  // Every thread runs every round (the bound is the block's), so the barriers are reached by all.
  for (size_t round = begin; round < end; round += radix_block) {
    const size_t i = round + threadIdx.x;
    const bool valid = i < end;
    const auto key = valid ? keys[i] : 0;
    const unsigned d = valid ? digit_of<Dtype, Bits>(key, shift, descending) : no_digit;
    const unsigned peers = __match_any_sync(0xffffffffu, d);
    const unsigned rank = __popc(peers & lanes_before);  // same-digit keys before mine
    if (valid && rank == 0) warp_counts[warp][d] = __popc(peers);
    __syncthreads();
    for (unsigned digit = threadIdx.x; digit < radix; digit += blockDim.x) {
      unsigned long long next = digit_next[digit];
      for (int w = 0; w < radix_warps; ++w) {
        warp_starts[w][digit] = next;
        next += warp_counts[w][digit];
        warp_counts[w][digit] = 0;  // for the next round, whose leaders set only their digits
      }
      digit_next[digit] = next;
    }
    __syncthreads();
    if (valid) {
      const size_t to = warp_starts[warp][d] + rank;
      keys_out[to] = key;
      if constexpr (HasValues) values_out[to] = Iota ? static_cast<Value>(i) : values[i];
    }
  }
}

// The grid of every pass: a block per min_rounds_per_block rounds of 256 keys, up to one full
// wave of resident scatter blocks; the segments are whole rounds.
template <auto scatter>
int radix_grid(size_t n, size_t *grid, size_t *segment) {
  size_t wave = 0;
  int code = glc_full_wave_blocks<scatter>(radix_block, &wave);
  if (code) return code;
  const size_t rounds = glc_blocks_to_cover(n, radix_block);
  const size_t wanted = rounds > min_rounds_per_block ? rounds / min_rounds_per_block : 1;
  *grid = wanted < wave ? wanted : wave;
  *segment = glc_blocks_to_cover(rounds, static_cast<int>(*grid)) * radix_block;
  *grid = glc_blocks_to_cover(n, static_cast<int>(*segment));  // no block without keys
  return cudaSuccess;
}

// Iota: argsort, whose values are the indices, written by the first pass.
template <int Dtype, int Bits, typename Value, bool HasValues, bool Iota>
int lsd_radix(const glc_sort_call &call) {
  using Key = typename glc_sort_key<Dtype>::bits;
  constexpr int passes = static_cast<int>(8 * sizeof(Key)) / Bits;  // even: 4, 8 or 16
  constexpr auto first_scatter = radix_scatter<Dtype, Bits, Value, HasValues, Iota>;
  constexpr auto scatter = radix_scatter<Dtype, Bits, Value, HasValues, false>;
  cudaStream_t s = call.stream;
  const size_t n = call.n;
  size_t grid = 0, segment = 0;
  int code = radix_grid<scatter>(n, &grid, &segment);
  if (code) return code;
  GlcDeviceBuffer counts;
  glc_sort_passes<Key, Value, HasValues> buffers;
  GLC_TRY(code, counts.allocate(radix_size<Bits> * grid * sizeof(unsigned long long), s));
  GLC_TRY(code, buffers.allocate(call));
  if (code) return code;
  const Key *key_from = static_cast<const Key *>(call.keys);
  const Value *value_from = static_cast<const Value *>(call.values);
  unsigned long long *counters = counts.as<unsigned long long>();
  const size_t m = radix_size<Bits> * grid;
  for (int pass = 0; pass < passes && !code; ++pass) {
    Key *key_to = buffers.keys_to(pass, passes);
    Value *value_to = buffers.values_to(pass, passes);
    const int shift = pass * Bits;
    GLC_TRY(code, glc_launch(radix_histogram<Dtype, Bits>, "radix_histogram", grid, radix_block, s,
                             key_from, n, segment, shift, call.descending, counters));
    GLC_TRY(code,
            glc_launch(radix_scan_counts, "radix_scan_counts", 1, scan_block, s, counters, m));
    GLC_TRY(code,
            glc_launch(pass == 0 ? first_scatter : scatter, "radix_scatter", grid, radix_block, s,
                       key_from, key_to, value_from, value_to, n, segment, shift, call.descending,
                       static_cast<const unsigned long long *>(counters)));
    key_from = key_to;
    value_from = value_to;
  }
  return code;
}

}  // namespace

int glc_sort_lsd_radix(const glc_sort_call &call, int bits) {
  return glc_dispatch_sort_key(call.dtype, "glc_sort", [&](auto dtype) {
    constexpr int Dtype = decltype(dtype)::value;
    auto with_bits = [&](auto width) {
      constexpr int Bits = decltype(width)::value;
      return glc_dispatch_sort_values(call, [&](auto values) {
        using V = decltype(values);
        return lsd_radix<Dtype, Bits, typename V::Value, V::has_values, V::iota>(call);
      });
    };
    return bits == 4 ? with_bits(std::integral_constant<int, 4>{})
                     : with_bits(std::integral_constant<int, 8>{});
  });
}
