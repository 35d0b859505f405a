// Variant 3: a merge sort whose merges are split by merge path (Green, McColl & Bader 2012; Odeh
// et al. 2012; the block sort and merge passes of ModernGPU, written plainly). Stable: every merge
// takes the left run's key first on equal keys, and the left run holds the earlier keys.
//  merge_sort_tiles  each block sorts a tile of 2048 keys (256 threads x 8): each thread sorts its
//                    8 (ordered key, index) pairs in registers by odd-even transposition, then 8
//                    rounds merge runs of 8, 16, ..., 1024 pairs in shared memory; the keys and
//                    values are then gathered from the tile through the sorted indices and
//                    written coalesced. A short last tile is padded with the largest ordered key,
//                    whose indices come after every real key's: the padding sorts last and is
//                    never written.
//  merge_partition   for a pass that merges pairs of sorted runs of `width` keys: where each
//                    block's 2048 outputs begin in its pair's left run, a binary search along the
//                    cross diagonal, a thread a block.
//  merge_pass        each block loads its slices of the two runs into shared memory, each thread
//                    finds its own split of them (merge path again) and merges its 8 outputs, and
//                    the block writes them coalesced through shared memory.
// ceil(log2(n / 2048)) passes, ping-ponging between a spare buffer and the output so that the
// last lands in the output. Every pass reads and writes every key (and value) once: 8 B a 4-byte
// key a pass, 8 x (1 + passes) B in all, O(n log n) bytes (docs/labs/sort.md).
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"

namespace {

// 2048 keys a block: a pass's shared memory holds 16 KB of 8-byte keys and 16 KB of values, and
// a thread's 8 merged keys and values stay in registers (30-48 of them, no spills). Not tuned.
constexpr int merge_block = 256;
constexpr int merge_items = 8;
constexpr unsigned merge_tile = merge_block * merge_items;
constexpr int partition_block = 256;

// How many of the first `diagonal` outputs of the merge of runs a and b come from a: where the
// merge path crosses that cross diagonal, by binary search. a_first(i, j): whether a[i] goes
// before b[j], true for equal keys (the left run first, so the merge is stable).
template <typename Index, typename AFirst>
__device__ Index merge_path(Index a_length, Index b_length, Index diagonal, AFirst a_first) {
  Index low = diagonal > b_length ? diagonal - b_length : 0;
  Index high = diagonal < a_length ? diagonal : a_length;
  while (low < high) {
    const Index middle = low + (high - low) / 2;
    if (a_first(middle, diagonal - 1 - middle))
      low = middle + 1;
    else
      high = middle;
  }
  return low;
}

// Rounds of merges in shared memory, from the threads' sorted runs of merge_items pairs to the
// whole tile: in the round with runs of `width`, `coop` threads merge each pair of runs, each
// thread the merge_items outputs from its cross diagonal on. order and index hold the thread's
// pairs in and out (its outputs at threadIdx.x * merge_items).
template <typename Order>
__device__ void merge_rounds_in_shared(Order (&order)[merge_items], unsigned (&index)[merge_items],
                                       Order *shared_order, unsigned *shared_index) {
  for (unsigned coop = 2; coop <= merge_block; coop *= 2) {
    const unsigned mine = threadIdx.x * merge_items;
    for (int k = 0; k < merge_items; ++k) {
      shared_order[mine + k] = order[k];
      shared_index[mine + k] = index[k];
    }
    __syncthreads();
    const unsigned width = coop / 2 * merge_items;
    const unsigned a_begin = threadIdx.x / coop * coop * merge_items, b_begin = a_begin + width;
    const unsigned diagonal = threadIdx.x % coop * merge_items;
    const Order *a_run = shared_order + a_begin, *b_run = shared_order + b_begin;
    const unsigned split = merge_path<unsigned>(
        width, width, diagonal, [&](unsigned i, unsigned j) { return a_run[i] <= b_run[j]; });
    unsigned a = a_begin + split, b = b_begin + diagonal - split;
    for (int k = 0; k < merge_items; ++k) {
      const bool take_a =
          a < b_begin && (b >= b_begin + width || shared_order[a] <= shared_order[b]);
      const unsigned from = take_a ? a++ : b++;
      order[k] = shared_order[from];
      index[k] = shared_index[from];
    }
    __syncthreads();  // every thread has read its runs before the next round stores
  }
}

// Sorts tile blockIdx.x of the keys (and values) into keys_out (and values_out). Iota: argsort,
// whose values are the keys' indices.
template <int Dtype, typename Value, bool HasValues, bool Iota>
__global__ void __launch_bounds__(merge_block)
    merge_sort_tiles(const typename glc_sort_key<Dtype>::bits *keys,
                     typename glc_sort_key<Dtype>::bits *keys_out, const Value *values,
                     Value *values_out, size_t n, bool descending) {
  using Order = typename glc_sort_key<Dtype>::bits;
  __shared__ Order shared_order[merge_tile];
  __shared__ unsigned shared_index[merge_tile];
  const size_t base = blockIdx.x * static_cast<size_t>(merge_tile);
  const unsigned count = n - base < merge_tile ? static_cast<unsigned>(n - base) : merge_tile;
  for (unsigned i = threadIdx.x; i < merge_tile; i += merge_block)
    shared_order[i] =
        i < count ? glc_sort_key<Dtype>::order(keys[base + i], descending) : ~Order(0);
  __syncthreads();
  Order order[merge_items];
  unsigned index[merge_items];
#pragma unroll
  for (int k = 0; k < merge_items; ++k) {
    index[k] = threadIdx.x * merge_items + k;
    order[k] = shared_order[index[k]];
  }
  // Odd-even transposition: merge_items rounds of neighbour swaps, only of strictly greater
  // keys, which keeps equal keys in index order.
#pragma unroll
  for (int round = 0; round < merge_items; ++round)
#pragma unroll
    for (int k = round % 2; k + 1 < merge_items; k += 2)
      if (order[k] > order[k + 1]) {
        const Order o = order[k];
        order[k] = order[k + 1];
        order[k + 1] = o;
        const unsigned i = index[k];
        index[k] = index[k + 1];
        index[k + 1] = i;
      }
  // No barrier: each thread read only its own pairs, which only it stores back.
  merge_rounds_in_shared(order, index, shared_order, shared_index);
  for (int k = 0; k < merge_items; ++k) shared_index[threadIdx.x * merge_items + k] = index[k];
  __syncthreads();
  // The tile was read just above: these gathers hit in cache, and the writes are coalesced.
  for (unsigned i = threadIdx.x; i < count; i += merge_block) {
    const size_t from = base + shared_index[i];
    keys_out[base + i] = keys[from];
    if constexpr (HasValues) values_out[base + i] = Iota ? static_cast<Value>(from) : values[from];
  }
}

// The pair of sorted runs of `width` keys that output position `output` falls in: the left run
// [a_begin, b_begin), the right one [b_begin, b_end), either cut short by n (the right one empty
// where the runs are odd in number).
struct run_pair {
  size_t a_begin, b_begin, b_end;
};

__device__ run_pair pair_of(size_t output, size_t n, size_t width) {
  const size_t a_begin = output / (2 * width) * (2 * width);
  const size_t b_begin = n - a_begin > width ? a_begin + width : n;
  const size_t b_end = n - b_begin > width ? b_begin + width : n;
  return {a_begin, b_begin, b_end};
}

// splits[b]: how many of the outputs of block b's pair of runs that come before block b's first
// one (output b x merge_tile) are from the left run.
template <int Dtype>
__global__ void merge_partition(const typename glc_sort_key<Dtype>::bits *keys, size_t n,
                                size_t width, bool descending, size_t blocks, size_t *splits) {
  const size_t block = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (block >= blocks) return;
  const size_t output = block * merge_tile;
  const run_pair pair = pair_of(output, n, width);
  const auto *a_run = keys + pair.a_begin, *b_run = keys + pair.b_begin;
  splits[block] = merge_path<size_t>(pair.b_begin - pair.a_begin, pair.b_end - pair.b_begin,
                                     output - pair.a_begin, [&](size_t i, size_t j) {
                                       return glc_sort_key<Dtype>::order(a_run[i], descending) <=
                                              glc_sort_key<Dtype>::order(b_run[j], descending);
                                     });
}

// Merges block blockIdx.x's merge_tile outputs of its pair of runs of `width` keys (and values)
// from keys into keys_out, starting where splits (merge_partition's) says.
template <int Dtype, typename Value, bool HasValues>
__global__ void __launch_bounds__(merge_block)
    merge_pass(const typename glc_sort_key<Dtype>::bits *keys,
               typename glc_sort_key<Dtype>::bits *keys_out, const Value *values, Value *values_out,
               size_t n, size_t width, bool descending, const size_t *splits) {
  using Key = typename glc_sort_key<Dtype>::bits;
  __shared__ Key shared_keys[merge_tile];
  __shared__ Value shared_values[HasValues ? merge_tile : 1];
  const size_t output = blockIdx.x * static_cast<size_t>(merge_tile);
  const run_pair pair = pair_of(output, n, width);
  const size_t diagonal = output - pair.a_begin, pair_length = pair.b_end - pair.a_begin;
  const size_t diagonal_end =
      pair_length - diagonal > merge_tile ? diagonal + merge_tile : pair_length;
  // The next block's split is where this block ends, unless the pair ends first (the next block
  // then starts the next pair): its left run is used up.
  const size_t a_split = splits[blockIdx.x];
  const size_t a_split_end =
      diagonal_end == pair_length ? pair.b_begin - pair.a_begin : splits[blockIdx.x + 1];
  const unsigned a_count = static_cast<unsigned>(a_split_end - a_split);
  const unsigned count = static_cast<unsigned>(diagonal_end - diagonal);
  const unsigned b_count = count - a_count;
  const size_t a_from = pair.a_begin + a_split, b_from = pair.b_begin + (diagonal - a_split);
  for (unsigned i = threadIdx.x; i < count; i += merge_block) {
    const size_t from = i < a_count ? a_from + i : b_from + (i - a_count);
    shared_keys[i] = keys[from];
    if constexpr (HasValues) shared_values[i] = values[from];
  }
  __syncthreads();
  const Key *a_run = shared_keys, *b_run = shared_keys + a_count;
  auto a_first = [&](unsigned i, unsigned j) {
    return glc_sort_key<Dtype>::order(a_run[i], descending) <=
           glc_sort_key<Dtype>::order(b_run[j], descending);
  };
  const unsigned mine = threadIdx.x * merge_items < count ? threadIdx.x * merge_items : count;
  const unsigned mine_end = count - mine > merge_items ? mine + merge_items : count;
  const unsigned split = merge_path<unsigned>(a_count, b_count, mine, a_first);
  unsigned a = split, b = mine - split;
  Key key[merge_items];
  Value value[merge_items];
#pragma unroll
  for (int k = 0; k < merge_items; ++k)
    if (mine + k < mine_end) {
      const bool take_a = a < a_count && (b >= b_count || a_first(a, b));
      const unsigned from = take_a ? a++ : a_count + b++;
      key[k] = shared_keys[from];
      if constexpr (HasValues) value[k] = shared_values[from];
    }
  __syncthreads();  // every thread has read its slices before the outputs overwrite them
#pragma unroll
  for (int k = 0; k < merge_items; ++k)
    if (mine + k < mine_end) {
      shared_keys[mine + k] = key[k];
      if constexpr (HasValues) shared_values[mine + k] = value[k];
    }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < count; i += merge_block) {
    keys_out[output + i] = shared_keys[i];
    if constexpr (HasValues) values_out[output + i] = shared_values[i];
  }
}

template <int Dtype, typename Value, bool HasValues, bool Iota>
int merge_sort(const glc_sort_call &call) {
  using Key = typename glc_sort_key<Dtype>::bits;
  cudaStream_t s = call.stream;
  const size_t n = call.n;
  const size_t blocks = glc_blocks_to_cover(n, merge_tile);
  int passes = 0;
  for (size_t width = merge_tile; width < n; width *= 2) ++passes;
  GlcDeviceBuffer key_result, key_spare, value_spare, splits;
  int code = cudaSuccess;
  Key *keys_out = static_cast<Key *>(call.keys_out);
  if (keys_out == nullptr) {  // argsort: the keys are merged all the same, in buffers of ours
    GLC_TRY(code, key_result.allocate(n * sizeof(Key), s));
    keys_out = key_result.as<Key>();
  }
  if (passes > 0) {
    GLC_TRY(code, key_spare.allocate(n * sizeof(Key), s));
    if (HasValues) GLC_TRY(code, value_spare.allocate(n * sizeof(Value), s));
    GLC_TRY(code, splits.allocate(blocks * sizeof(size_t), s));
  }
  if (code) return code;
  Key *key_buffers[2] = {keys_out, key_spare.as<Key>()};
  Value *value_buffers[2] = {static_cast<Value *>(call.values_out), value_spare.as<Value>()};
  int at = passes % 2;  // the tiles go where the passes, alternating, end on the output
  GLC_TRY(code, glc_launch(merge_sort_tiles<Dtype, Value, HasValues, Iota>, "merge_sort_tiles",
                           blocks, merge_block, s, static_cast<const Key *>(call.keys),
                           key_buffers[at], static_cast<const Value *>(call.values),
                           value_buffers[at], n, call.descending));
  for (size_t width = merge_tile; width < n && !code; width *= 2, at = 1 - at) {
    GLC_TRY(code, glc_launch(merge_partition<Dtype>, "merge_partition",
                             glc_blocks_to_cover(blocks, partition_block), partition_block, s,
                             static_cast<const Key *>(key_buffers[at]), n, width, call.descending,
                             blocks, splits.as<size_t>()));
    GLC_TRY(code,
            glc_launch(merge_pass<Dtype, Value, HasValues>, "merge_pass", blocks, merge_block, s,
                       static_cast<const Key *>(key_buffers[at]), key_buffers[1 - at],
                       static_cast<const Value *>(value_buffers[at]), value_buffers[1 - at], n,
                       width, call.descending, static_cast<const size_t *>(splits.as<size_t>())));
  }
  return code;
}

}  // namespace

int glc_sort_merge_path(const glc_sort_call &call) {
  return glc_dispatch_sort_key(call.dtype, "glc_sort", [&](auto dtype) {
    constexpr int Dtype = decltype(dtype)::value;
    return glc_dispatch_sort_values(call, [&](auto values) {
      using V = decltype(values);
      return merge_sort<Dtype, typename V::Value, V::has_values, V::iota>(call);
    });
  });
}
