// Variant 5: quicksort with a scan-based partition (S4 9: flags isLess / isGreater, exclusive
// scans, a scatter), made a stable GPU sort for any n. Each level partitions ALL its active
// segments at once, three ways around each segment's pivot (the median of the order keys of its
// first, middle and last key): less, equal, greater, each class in input order, so the partition
// is stable and the equal class is finished where it lands. A level is five launches:
//  quicksort_plan     one block: each segment's first tile (an exclusive scan of their tile
//                     counts);
//  quicksort_count    a block a tile of 4096 keys: how many are less than and equal to the pivot;
//  quicksort_scan     one block: the tiles' counts scanned (less counts, then equal counts), so
//                     that differences give each tile's place within its segment's classes;
//  quicksort_scatter  a block a tile, 256 keys a round: a block scan of the (less, equal) flags
//                     ranks each key in its class; less and greater keys (and values) go to the
//                     other buffer, equal ones straight to the output;
//  quicksort_split    a thread a segment: its two children, the ones over 2048 keys with their
//                     pivots into the next level's list, the others into the level's leaves;
// then the host reads the two list lengths back (one 16-byte copy and a stream synchronisation a
// level) and quicksort_leaf sorts each leaf in one block's shared memory: a bitonic network on
// (order key, position in the leaf), stable because the position breaks ties, and position order
// is input order within a segment. Past 64 levels (an adversary can make median-of-three peel
// off two keys a level) the remaining segments are finished by a stable merge sort: chunks of
// 2048 by the same shared network (quicksort_fallback_chunks), then merge passes in which each
// key finds its place by a binary search in the other run (quicksort_merge_pass).
// Bytes a level, 4-byte keys alone: the count reads the key (4 B), the scatter reads and writes
// it (8 B): 12 B a key a level (8-byte values: 16 B more), ~1.2 log2(n / 2048) levels a key on
// random input (docs/labs/sort.md).
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"

namespace {

constexpr int qs_block = 256;
constexpr int qs_rounds = 16;
constexpr size_t qs_tile = static_cast<size_t>(qs_block) * qs_rounds;
// A leaf: the segments one block sorts in shared memory, 2048 keys, a compare-exchange a thread.
constexpr unsigned qs_leaf = 2048;
constexpr int qs_leaf_block = qs_leaf / 2;
constexpr int qs_scan_block = 1024;
constexpr int qs_scan_items = 8;
constexpr int qs_max_levels = 64;

// [begin, end) of the keys, and the pivot's order key (of a segment of an active list).
struct qs_segment {
  size_t begin, end;
  unsigned long long pivot;
};

// The list lengths that quicksort_split counts: the next level's segments and this level's leaves.
constexpr int qs_next = 0, qs_leaves = 1;

template <int Dtype>
using qs_key = typename glc_sort_key<Dtype>::bits;

// The exclusive prefix of value over the block's threads, in thread order, and the block's total.
template <typename T>
__device__ T block_exclusive_scan(T value, T *total) {
  __shared__ T warp_sums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  T inclusive = value;
  for (unsigned offset = 1; offset < 32; offset <<= 1) {
    const T left = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += left;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  T before = 0, sum = 0;
  for (unsigned w = 0; w < warps; ++w) {
    if (w == warp) before = sum;
    sum += warp_sums[w];
  }
  __syncthreads();  // every thread has read warp_sums before the next call rewrites it
  *total = sum;
  return before + inclusive - value;
}

// An exclusive scan of length values by one block: value_at(i) in, store(i, prefix) out, in runs
// of qs_scan_items a thread, the runs' totals scanned by the block, a carry between chunks.
template <typename ValueAt, typename Store>
__device__ unsigned long long block_scan_all(size_t length, ValueAt value_at, Store store) {
  unsigned long long carry = 0;
  for (size_t base = 0; base < length; base += static_cast<size_t>(blockDim.x) * qs_scan_items) {
    const size_t first = base + static_cast<size_t>(threadIdx.x) * qs_scan_items;
    unsigned long long v[qs_scan_items], sum = 0;
    for (int k = 0; k < qs_scan_items; ++k) {
      v[k] = first + k < length ? value_at(first + k) : 0;
      sum += v[k];
    }
    unsigned long long total = 0;
    unsigned long long prefix = carry + block_exclusive_scan(sum, &total);
    for (int k = 0; k < qs_scan_items; ++k) {
      if (first + k < length) store(first + k, prefix);
      prefix += v[k];
    }
    carry += total;
  }
  return carry;
}

// The segment whose tiles hold tile: the last s with tile_first[s] <= tile.
__device__ size_t segment_of(const size_t *tile_first, size_t m, size_t tile) {
  size_t lo = 0, hi = m - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    if (tile_first[mid] <= tile)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

template <int Dtype>
__device__ unsigned long long median_of_three(const qs_key<Dtype> *keys, size_t begin, size_t end,
                                              bool descending) {
  const unsigned long long a = glc_sort_key<Dtype>::order(keys[begin], descending);
  const unsigned long long b =
      glc_sort_key<Dtype>::order(keys[begin + (end - begin) / 2], descending);
  const unsigned long long c = glc_sort_key<Dtype>::order(keys[end - 1], descending);
  const unsigned long long low = a < b ? a : b, high = a < b ? b : a;
  return c < low ? low : c > high ? high : c;
}

// The whole input as the first segment.
template <int Dtype>
__global__ void quicksort_root(const qs_key<Dtype> *keys, size_t n, bool descending,
                               qs_segment *segments) {
  segments[0] = {0, n, median_of_three<Dtype>(keys, 0, n, descending)};
}

// Argsort's values: the indices, which the levels then move like any value.
__global__ void quicksort_iota(unsigned long long *values, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    values[i] = i;
}

// tile_first[s] = the first tile (of `tile` keys) of segment s, tile_first[m] = all the tiles;
// the list lengths reset for quicksort_split.
__global__ void quicksort_plan(const qs_segment *segments, size_t m, size_t tile,
                               size_t *tile_first, unsigned long long *lengths) {
  const unsigned long long tiles = block_scan_all(
      m, [&](size_t s) { return (segments[s].end - segments[s].begin + tile - 1) / tile; },
      [&](size_t s, unsigned long long prefix) { tile_first[s] = prefix; });
  if (threadIdx.x == 0) {
    tile_first[m] = tiles;
    lengths[qs_next] = lengths[qs_leaves] = 0;
  }
}

// A tile's keys and its segment.
struct qs_tile_span {
  size_t segment, tile, begin, end;
};

__device__ bool tile_span(const size_t *tile_first, size_t m, const qs_segment *segments,
                          size_t tile_keys, qs_tile_span *span) {
  span->tile = blockIdx.x;
  if (span->tile >= tile_first[m]) return false;  // the grid is a bound on the tiles
  span->segment = segment_of(tile_first, m, span->tile);
  const qs_segment segment = segments[span->segment];
  span->begin = segment.begin + (span->tile - tile_first[span->segment]) * tile_keys;
  span->end = span->begin + tile_keys < segment.end ? span->begin + tile_keys : segment.end;
  return true;
}

// (less, equal) counts packed in one word, less in the low 16 bits: a tile has 4096 keys.
constexpr unsigned qs_equal_shift = 16, qs_less_mask = (1u << qs_equal_shift) - 1;

template <int Dtype>
__device__ unsigned class_flags(qs_key<Dtype> key, unsigned long long pivot, bool descending) {
  const unsigned long long ordered = glc_sort_key<Dtype>::order(key, descending);
  return ordered < pivot ? 1u : ordered == pivot ? 1u << qs_equal_shift : 0u;
}

// counts[tile] = the tile's keys less than its segment's pivot, counts[tiles + 1 + tile] those
// equal to it; counts[tiles] and counts[2 tiles + 1] are 0, so that the scan puts each list's
// total there.
template <int Dtype>
__global__ void __launch_bounds__(qs_block)
    quicksort_count(const qs_key<Dtype> *keys, const qs_segment *segments, size_t m,
                    const size_t *tile_first, bool descending, unsigned long long *counts) {
  qs_tile_span span;
  if (!tile_span(tile_first, m, segments, qs_tile, &span)) return;
  const unsigned long long pivot = segments[span.segment].pivot;
  unsigned flags = 0;
  for (size_t i = span.begin + threadIdx.x; i < span.end; i += qs_block)
    flags += class_flags<Dtype>(keys[i], pivot, descending);
  unsigned total = 0;
  block_exclusive_scan(flags, &total);
  if (threadIdx.x != 0) return;
  const size_t tiles = tile_first[m];
  counts[span.tile] = total & qs_less_mask;
  counts[tiles + 1 + span.tile] = total >> qs_equal_shift;
  if (span.tile == 0) counts[tiles] = counts[2 * tiles + 1] = 0;
}

__global__ void quicksort_scan(unsigned long long *counts, const size_t *tile_first, size_t m) {
  block_scan_all(
      2 * (tile_first[m] + 1), [&](size_t i) { return counts[i]; },
      [&](size_t i, unsigned long long prefix) { counts[i] = prefix; });
}

// Where a segment's classes start, and how many of its less and equal keys precede a tile.
struct qs_places {
  size_t less, equal, greater;       // the first place of each class
  size_t less_before, equal_before;  // the tile's keys' ranks start here
};

__device__ qs_places places_of(const unsigned long long *offsets, const size_t *tile_first,
                               size_t m, size_t segment, size_t tile, size_t begin) {
  const size_t tiles = tile_first[m], first = tile_first[segment], last = tile_first[segment + 1];
  const unsigned long long *equal = offsets + tiles + 1;
  const size_t less_count = offsets[last] - offsets[first];
  const size_t equal_count = equal[last] - equal[first];
  return {begin, begin + less_count, begin + less_count + equal_count,
          offsets[tile] - offsets[first], equal[tile] - equal[first]};
}

// Moves each key of the tile (and its value) to its class's place, in input order within each
// class: less and greater into the other buffer, equal (finished) to the output.
template <int Dtype, typename Value, bool HasValues>
__global__ void __launch_bounds__(qs_block)
    quicksort_scatter(const qs_key<Dtype> *keys, const Value *values, qs_key<Dtype> *keys_to,
                      Value *values_to, qs_key<Dtype> *keys_out, Value *values_out,
                      const qs_segment *segments, size_t m, const size_t *tile_first,
                      const unsigned long long *offsets, bool descending) {
  qs_tile_span span;
  if (!tile_span(tile_first, m, segments, qs_tile, &span)) return;
  const qs_segment segment = segments[span.segment];
  const qs_places at = places_of(offsets, tile_first, m, span.segment, span.tile, segment.begin);
  size_t less_next = at.less + at.less_before, equal_next = at.equal + at.equal_before;
  size_t greater_next =
      at.greater + (span.begin - segment.begin) - at.less_before - at.equal_before;
  // Every thread runs every round (the bound is the block's), so the barriers are reached by all.
  for (size_t round = span.begin; round < span.end; round += qs_block) {
    const size_t i = round + threadIdx.x;
    const bool valid = i < span.end;
    const qs_key<Dtype> key = valid ? keys[i] : 0;
    const unsigned flags = valid ? class_flags<Dtype>(key, segment.pivot, descending) : 0;
    unsigned total = 0;
    const unsigned before = block_exclusive_scan(flags, &total);
    const unsigned less_rank = before & qs_less_mask, equal_rank = before >> qs_equal_shift;
    if (valid) {
      const Value value = HasValues ? values[i] : Value();
      if (flags & qs_less_mask) {
        keys_to[less_next + less_rank] = key;
        if (HasValues) values_to[less_next + less_rank] = value;
      } else if (flags) {
        if (keys_out != nullptr) keys_out[equal_next + equal_rank] = key;
        if (HasValues) values_out[equal_next + equal_rank] = value;
      } else {
        const size_t to = greater_next + threadIdx.x - less_rank - equal_rank;
        keys_to[to] = key;
        if (HasValues) values_to[to] = value;
      }
    }
    const size_t in_round = span.end - round < qs_block ? span.end - round : qs_block;
    less_next += total & qs_less_mask;
    equal_next += total >> qs_equal_shift;
    greater_next += in_round - (total & qs_less_mask) - (total >> qs_equal_shift);
  }
}

// Segment s's less and greater children: over a leaf, with their pivots into the next list; up
// to a leaf, into the leaves; a single key, straight to the output.
template <int Dtype, typename Value, bool HasValues>
__global__ void quicksort_split(const qs_key<Dtype> *keys, const Value *values,
                                qs_key<Dtype> *keys_out, Value *values_out,
                                const qs_segment *segments, size_t m, const size_t *tile_first,
                                const unsigned long long *offsets, bool descending,
                                qs_segment *next, qs_segment *leaves, unsigned long long *lengths) {
  const size_t s = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (s >= m) return;
  const qs_segment segment = segments[s];
  const qs_places at = places_of(offsets, tile_first, m, s, tile_first[s], segment.begin);
  const size_t bounds[2][2] = {{at.less, at.equal}, {at.greater, segment.end}};
  for (const auto &child : bounds) {
    const size_t begin = child[0], end = child[1];
    if (end - begin == 1) {
      if (keys_out != nullptr) keys_out[begin] = keys[begin];
      if (HasValues) values_out[begin] = values[begin];
    } else if (end - begin > qs_leaf) {
      next[atomicAdd(&lengths[qs_next], 1ull)] = {
          begin, end, median_of_three<Dtype>(keys, begin, end, descending)};
    } else if (end > begin) {
      leaves[atomicAdd(&lengths[qs_leaves], 1ull)] = {begin, end, 0};
    }
  }
}

// Sorts keys[begin, begin + size) (size <= qs_leaf) in shared memory by (order key, position),
// writing the keys and values to *_to at the same places: a bitonic network padded to a power of
// two with keys of all ones at the last positions, which sort after every real key.
template <int Dtype, typename Value, bool HasValues>
__device__ void sort_leaf(const qs_key<Dtype> *keys, const Value *values, qs_key<Dtype> *keys_to,
                          Value *values_to, size_t begin, unsigned size, bool descending) {
  using Key = qs_key<Dtype>;
  __shared__ Key ordered[qs_leaf];
  __shared__ unsigned short position[qs_leaf];
  unsigned padded = 1;
  while (padded < size) padded <<= 1;
  for (unsigned p = threadIdx.x; p < padded; p += blockDim.x) {
    ordered[p] = p < size ? glc_sort_key<Dtype>::order(keys[begin + p], descending) : ~Key(0);
    position[p] = static_cast<unsigned short>(p);
  }
  __syncthreads();
  for (unsigned k = 2; k <= padded; k <<= 1)
    for (unsigned j = k / 2; j > 0; j >>= 1) {
      const unsigned t = threadIdx.x;
      if (t < padded / 2) {
        const unsigned i = 2 * j * (t / j) + t % j;
        const Key a = ordered[i], b = ordered[i + j];
        const unsigned short pa = position[i], pb = position[i + j];
        const bool a_after = a > b || (a == b && pa > pb);
        if (a_after == ((i & k) == 0)) {
          ordered[i] = b;
          ordered[i + j] = a;
          position[i] = pb;
          position[i + j] = pa;
        }
      }
      __syncthreads();
    }
  for (unsigned p = threadIdx.x; p < size; p += blockDim.x) {
    const size_t from = begin + position[p];
    if (keys_to != nullptr) keys_to[begin + p] = keys[from];
    if (HasValues) values_to[begin + p] = values[from];
  }
}

template <int Dtype, typename Value, bool HasValues>
__global__ void __launch_bounds__(qs_leaf_block)
    quicksort_leaf(const qs_key<Dtype> *keys, const Value *values, qs_key<Dtype> *keys_out,
                   Value *values_out, const qs_segment *leaves, bool descending) {
  const qs_segment leaf = leaves[blockIdx.x];
  sort_leaf<Dtype, Value, HasValues>(keys, values, keys_out, values_out, leaf.begin,
                                     static_cast<unsigned>(leaf.end - leaf.begin), descending);
}

// The fallback's first step: each chunk of qs_leaf keys of each segment sorted, into *_to.
template <int Dtype, typename Value, bool HasValues>
__global__ void __launch_bounds__(qs_leaf_block)
    quicksort_fallback_chunks(const qs_key<Dtype> *keys, const Value *values,
                              qs_key<Dtype> *keys_to, Value *values_to, const qs_segment *segments,
                              size_t m, const size_t *tile_first, bool descending) {
  qs_tile_span span;
  if (!tile_span(tile_first, m, segments, qs_leaf, &span)) return;
  sort_leaf<Dtype, Value, HasValues>(keys, values, keys_to, values_to, span.begin,
                                     static_cast<unsigned>(span.end - span.begin), descending);
}

// How many keys of sorted run[0, length) order before `ordered`: those less than it
// (inclusive false), or less than or equal to it (inclusive true).
template <int Dtype>
__device__ size_t rank_in(const qs_key<Dtype> *run, size_t length, unsigned long long ordered,
                          bool inclusive, bool descending) {
  size_t lo = 0, hi = length;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const unsigned long long other = glc_sort_key<Dtype>::order(run[mid], descending);
    if (other < ordered || (inclusive && other == ordered))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// One merge pass of the fallback: runs of `width` keys of each segment merged in pairs, stably
// (a key of the first run goes before the second run's equal keys). A key's place is its rank in
// its own run plus its rank in the other. The pass that makes a segment one run writes to the
// output; segments already one run sit this pass out.
template <int Dtype, typename Value, bool HasValues>
__global__ void __launch_bounds__(qs_block)
    quicksort_merge_pass(const qs_key<Dtype> *keys, const Value *values, qs_key<Dtype> *keys_to,
                         Value *values_to, qs_key<Dtype> *keys_out, Value *values_out,
                         const qs_segment *segments, size_t m, const size_t *tile_first,
                         size_t width, bool descending) {
  qs_tile_span span;
  if (!tile_span(tile_first, m, segments, qs_leaf, &span)) return;
  const qs_segment segment = segments[span.segment];
  const size_t size = segment.end - segment.begin;
  if (width >= size) return;
  const bool last = 2 * width >= size;
  qs_key<Dtype> *key_dst = last ? keys_out : keys_to;
  Value *value_dst = last ? values_out : values_to;
  for (size_t i = span.begin + threadIdx.x; i < span.end; i += qs_block) {
    const size_t q = i - segment.begin, pair = q - q % (2 * width);
    const size_t first_length = width < size - pair ? width : size - pair;
    const size_t rest = size - pair - first_length;
    const size_t second_length = width < rest ? width : rest;
    const size_t first = segment.begin + pair, second = first + first_length;
    const unsigned long long ordered = glc_sort_key<Dtype>::order(keys[i], descending);
    const size_t to =
        q - pair < first_length
            ? i + rank_in<Dtype>(keys + second, second_length, ordered, false, descending)
            : i - first_length +
                  rank_in<Dtype>(keys + first, first_length, ordered, true, descending);
    if (key_dst != nullptr) key_dst[to] = keys[i];
    if (HasValues) value_dst[to] = values[i];
  }
}

// Keys and values that a level reads and the other buffer it writes; they swap after a level.
template <typename Key, typename Value>
struct qs_buffers {
  const Key *keys;
  const Value *values;
  Key *keys_to;
  Value *values_to;
  Key *spare_keys;  // the buffers that are not the call's input, for the swaps
  Value *spare_values;
  void swap() {
    Key *k = keys_to == spare_keys ? const_cast<Key *>(keys) : spare_keys;
    Value *v = values_to == spare_values ? const_cast<Value *>(values) : spare_values;
    keys = keys_to;
    values = values_to;
    keys_to = k;
    values_to = v;
  }
};

// The stable merge sort of the segments left after the last level (their keys in b.keys).
template <int Dtype, typename Value, bool HasValues>
int fallback(const glc_sort_call &call, qs_buffers<qs_key<Dtype>, Value> b,
             const qs_segment *segments, size_t m, size_t *tile_first,
             unsigned long long *lengths) {
  using Key = qs_key<Dtype>;
  cudaStream_t s = call.stream;
  const size_t grid = glc_blocks_to_cover(call.n, qs_leaf) + m;
  Key *keys_out = static_cast<Key *>(call.keys_out);
  Value *values_out = static_cast<Value *>(call.values_out);
  int code = glc_launch(quicksort_plan, "quicksort_plan", 1, qs_scan_block, s, segments, m,
                        static_cast<size_t>(qs_leaf), tile_first, lengths);
  GLC_TRY(code, glc_launch(quicksort_fallback_chunks<Dtype, Value, HasValues>,
                           "quicksort_fallback_chunks", grid, qs_leaf_block, s, b.keys, b.values,
                           b.keys_to, b.values_to, segments, m,
                           static_cast<const size_t *>(tile_first), call.descending));
  b.swap();
  for (size_t width = qs_leaf; width < call.n && !code; width *= 2) {
    code = glc_launch(quicksort_merge_pass<Dtype, Value, HasValues>, "quicksort_merge_pass", grid,
                      qs_block, s, b.keys, b.values, b.keys_to, b.values_to, keys_out, values_out,
                      segments, m, static_cast<const size_t *>(tile_first), width, call.descending);
    b.swap();
  }
  return code;
}

// The levels, up to max_levels of them, then the fallback for what is left.
template <int Dtype, typename Value, bool HasValues, bool Iota>
int quicksort(const glc_sort_call &call, int max_levels) {
  using Key = qs_key<Dtype>;
  cudaStream_t s = call.stream;
  const size_t n = call.n;
  // Active segments each hold more than a leaf; a level's leaves are at most two a segment.
  const size_t max_segments = n / (qs_leaf + 1) + 1;
  const size_t max_tiles = glc_blocks_to_cover(n, qs_leaf) + max_segments;
  GlcDeviceBuffer key_spare, key_other, value_spare, value_other, lists[2], leaf_list, firsts,
      counts, lengths;
  int code = key_spare.allocate(n * sizeof(Key), s);
  GLC_TRY(code, key_other.allocate(n * sizeof(Key), s));
  if (HasValues) {
    GLC_TRY(code, value_spare.allocate(n * sizeof(Value), s));
    GLC_TRY(code, value_other.allocate(n * sizeof(Value), s));
  }
  for (auto &list : lists) GLC_TRY(code, list.allocate(max_segments * sizeof(qs_segment), s));
  GLC_TRY(code, leaf_list.allocate(2 * max_segments * sizeof(qs_segment), s));
  GLC_TRY(code, firsts.allocate((max_segments + 1) * sizeof(size_t), s));
  GLC_TRY(code, counts.allocate(2 * (max_tiles + 1) * sizeof(unsigned long long), s));
  GLC_TRY(code, lengths.allocate(2 * sizeof(unsigned long long), s));
  if (code) return code;
  qs_buffers<Key, Value> b = {static_cast<const Key *>(call.keys),
                              static_cast<const Value *>(call.values),
                              key_other.as<Key>(),
                              value_other.as<Value>(),
                              key_spare.as<Key>(),
                              value_spare.as<Value>()};
  if (Iota) {  // the indices start in the spare buffer, which the first level only reads
    GLC_TRY(code, glc_launch(quicksort_iota, "quicksort_iota", glc_blocks_to_cover(n, qs_block),
                             qs_block, s, value_spare.as<unsigned long long>(), n));
    b.values = value_spare.as<Value>();
  }
  Key *keys_out = static_cast<Key *>(call.keys_out);
  Value *values_out = static_cast<Value *>(call.values_out);
  qs_segment *active = lists[0].as<qs_segment>(), *next = lists[1].as<qs_segment>();
  qs_segment *leaves = leaf_list.as<qs_segment>();
  size_t *tile_first = firsts.as<size_t>();
  unsigned long long *offsets = counts.as<unsigned long long>();
  unsigned long long *list_lengths = lengths.as<unsigned long long>();
  GLC_TRY(code, glc_launch(quicksort_root<Dtype>, "quicksort_root", 1, 1, s, b.keys, n,
                           call.descending, active));
  if (n <= qs_leaf)
    return code ? code
                : glc_launch(quicksort_leaf<Dtype, Value, HasValues>, "quicksort_leaf", 1,
                             qs_leaf_block, s, b.keys, b.values, keys_out, values_out,
                             static_cast<const qs_segment *>(active), call.descending);
  size_t m = 1;
  for (int level = 0; level < max_levels && m > 0 && !code; ++level) {
    const size_t grid = glc_blocks_to_cover(n, static_cast<int>(qs_tile)) + m;
    const qs_segment *segments = active;
    const size_t *firsts_of = tile_first;
    GLC_TRY(code, glc_launch(quicksort_plan, "quicksort_plan", 1, qs_scan_block, s, segments, m,
                             qs_tile, tile_first, list_lengths));
    GLC_TRY(code, glc_launch(quicksort_count<Dtype>, "quicksort_count", grid, qs_block, s, b.keys,
                             segments, m, firsts_of, call.descending, offsets));
    GLC_TRY(code, glc_launch(quicksort_scan, "quicksort_scan", 1, qs_scan_block, s, offsets,
                             firsts_of, m));
    const unsigned long long *scanned = offsets;
    GLC_TRY(code, glc_launch(quicksort_scatter<Dtype, Value, HasValues>, "quicksort_scatter", grid,
                             qs_block, s, b.keys, b.values, b.keys_to, b.values_to, keys_out,
                             values_out, segments, m, firsts_of, scanned, call.descending));
    GLC_TRY(code,
            glc_launch(quicksort_split<Dtype, Value, HasValues>, "quicksort_split",
                       glc_blocks_to_cover(m, qs_block), qs_block, s,
                       static_cast<const Key *>(b.keys_to), static_cast<const Value *>(b.values_to),
                       keys_out, values_out, segments, m, firsts_of, scanned, call.descending, next,
                       leaves, list_lengths));
    unsigned long long counted[2] = {0, 0};
    GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, counted, list_lengths, sizeof counted,
                           cudaMemcpyDeviceToHost, s));
    GLC_TRY(code, GLC_CUDA(cudaStreamSynchronize, s));
    if (!code && counted[qs_leaves] > 0)
      code = glc_launch(quicksort_leaf<Dtype, Value, HasValues>, "quicksort_leaf",
                        counted[qs_leaves], qs_leaf_block, s, static_cast<const Key *>(b.keys_to),
                        static_cast<const Value *>(b.values_to), keys_out, values_out,
                        static_cast<const qs_segment *>(leaves), call.descending);
    b.swap();
    m = counted[qs_next];
    qs_segment *done = active;
    active = next;
    next = done;
  }
  if (!code && m > 0)
    code = fallback<Dtype, Value, HasValues>(call, b, active, m, tile_first, list_lengths);
  return code;
}

template <int Dtype>
int quicksort_of(const glc_sort_call &call, int max_levels) {
  return glc_dispatch_sort_values(call, [&](auto values) {
    using V = decltype(values);
    return quicksort<Dtype, typename V::Value, V::has_values, V::iota>(call, max_levels);
  });
}

// With a level limit of its own: the emulation (tools/emulate/sort.py) lowers it to reach the
// fallback.
int quicksort_with_levels(const glc_sort_call &call, int max_levels) {
  return glc_dispatch_sort_key(call.dtype, "glc_sort", [&](auto dtype) {
    return quicksort_of<decltype(dtype)::value>(call, max_levels);
  });
}

}  // namespace

int glc_sort_quicksort(const glc_sort_call &call) {
  return quicksort_with_levels(call, qs_max_levels);
}
