// Variant 0: Batcher's bitonic network (S4 9, with its index bugs fixed: S4's loop over k stops at
// k <= 1 and stores inside it). It sorts (ordered key, index) pairs: the index breaks ties, so
// the result is the stable one, and the padding up to a power of two N (keys of all ones, indices
// n..N-1) sorts after every real key, NaN included, and is never seen. Stage k (2, 4, ..., N)
// merges bitonic runs of k with steps j = k/2, ..., 1; element i's run is ascending when
// (i & k) == 0. Steps with j < 2048 stay in shared memory:
//  bitonic_prepare       the pairs, padded to N;
//  bitonic_sort_shared   every stage up to the chunk (2048 pairs, or N) in one block's shared
//  memory; bitonic_merge_global  one step j >= 2048 of a later stage, a compare-exchange a thread;
//  bitonic_merge_shared  the steps j < 2048 of a later stage, in shared memory;
//  bitonic_gather        keys and values through the sorted indices.
// log2(N)(log2(N)+1)/2 steps in all; at N = 2^28, 153 of them in global memory, each reading and
// writing 12 B a pair (16 B for 8-byte keys).
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"

namespace {

// Pairs a block holds in shared memory: 16 KB of 8-byte keys and 8 KB of indices.
constexpr unsigned bitonic_chunk = 2048;
constexpr int gather_block = 256;

template <typename Key>
__device__ bool after(Key key_a, unsigned index_a, Key key_b, unsigned index_b) {
  return key_a > key_b || (key_a == key_b && index_a > index_b);
}

// Orders pair i and pair i + j: ascending, the smaller first.
template <typename Key>
__device__ void compare_exchange(Key *keys, unsigned *indices, size_t i, size_t j, bool ascending) {
  const Key a = keys[i], b = keys[i + j];
  const unsigned ia = indices[i], ib = indices[i + j];
  if (after(a, ia, b, ib) == ascending) {
    keys[i] = b;
    keys[i + j] = a;
    indices[i] = ib;
    indices[i + j] = ia;
  }
}

// The first of the pair that thread t orders in step j: pairs (i, i + j) with bit j of i clear.
__device__ size_t pair_first(size_t t, size_t j) { return 2 * j * (t / j) + t % j; }

template <int Dtype>
__global__ void bitonic_prepare(const typename glc_sort_key<Dtype>::bits *keys, size_t n,
                                size_t padded, bool descending,
                                typename glc_sort_key<Dtype>::bits *sort_keys, unsigned *indices) {
  using Key = typename glc_sort_key<Dtype>::bits;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < padded;
       i += stride) {
    sort_keys[i] = i < n ? glc_sort_key<Dtype>::order(keys[i], descending) : ~Key(0);
    indices[i] = static_cast<unsigned>(i);
  }
}

// The steps j = from, from / 2, ..., 1 of stage k over this block's chunk of `chunk` pairs in
// shared memory (chunk / 2 threads, one compare-exchange each a step).
template <typename Key>
__device__ void merge_in_shared(Key *keys, unsigned *indices, size_t base, size_t k,
                                unsigned from) {
  for (unsigned j = from; j > 0; j >>= 1) {
    const size_t i = pair_first(threadIdx.x, j);
    compare_exchange(keys, indices, i, j, ((base + i) & k) == 0);
    __syncthreads();
  }
}

template <typename Key>
__device__ void load_chunk(const Key *keys, const unsigned *indices, size_t base, Key *shared_keys,
                           unsigned *shared_indices) {
  for (unsigned i = threadIdx.x; i < 2 * blockDim.x; i += blockDim.x) {
    shared_keys[i] = keys[base + i];
    shared_indices[i] = indices[base + i];
  }
  __syncthreads();
}

template <typename Key>
__device__ void store_chunk(const Key *shared_keys, const unsigned *shared_indices, size_t base,
                            Key *keys, unsigned *indices) {
  for (unsigned i = threadIdx.x; i < 2 * blockDim.x; i += blockDim.x) {
    keys[base + i] = shared_keys[i];
    indices[base + i] = shared_indices[i];
  }
}

// Stages 2 .. chunk (chunk = 2 x blockDim.x pairs) of the network on this block's chunk.
template <typename Key>
__global__ void bitonic_sort_shared(Key *keys, unsigned *indices) {
  __shared__ Key shared_keys[bitonic_chunk];
  __shared__ unsigned shared_indices[bitonic_chunk];
  const unsigned chunk = 2 * blockDim.x;
  const size_t base = static_cast<size_t>(blockIdx.x) * chunk;
  load_chunk(keys, indices, base, shared_keys, shared_indices);
  for (unsigned k = 2; k <= chunk; k <<= 1)
    merge_in_shared(shared_keys, shared_indices, base, k, k / 2);
  store_chunk(shared_keys, shared_indices, base, keys, indices);
}

// Step j (>= the chunk) of stage k over all `padded` pairs, one compare-exchange a thread.
template <typename Key>
__global__ void bitonic_merge_global(Key *keys, unsigned *indices, size_t padded, size_t k,
                                     size_t j) {
  const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (t >= padded / 2) return;
  const size_t i = pair_first(t, j);
  compare_exchange(keys, indices, i, j, (i & k) == 0);
}

// Steps chunk / 2 .. 1 of stage k (> the chunk) on this block's chunk.
template <typename Key>
__global__ void bitonic_merge_shared(Key *keys, unsigned *indices, size_t k) {
  __shared__ Key shared_keys[bitonic_chunk];
  __shared__ unsigned shared_indices[bitonic_chunk];
  const size_t base = static_cast<size_t>(blockIdx.x) * 2 * blockDim.x;
  load_chunk(keys, indices, base, shared_keys, shared_indices);
  merge_in_shared(shared_keys, shared_indices, base, k, blockDim.x);
  store_chunk(shared_keys, shared_indices, base, keys, indices);
}

// keys_out[i] = keys[indices[i]] (when asked) and values_out[i] = values[indices[i]], or the index
// itself for argsort (Iota).
template <typename Key, typename Value, bool HasValues, bool Iota>
__global__ void bitonic_gather(const Key *keys, const unsigned *indices, size_t n, Key *keys_out,
                               const Value *values, Value *values_out) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const unsigned from = indices[i];
  if (keys_out != nullptr) keys_out[i] = keys[from];
  if constexpr (HasValues) values_out[i] = Iota ? static_cast<Value>(from) : values[from];
}

template <typename Key, typename Value, bool HasValues, bool Iota>
int gather(const glc_sort_call &call, const unsigned *indices) {
  return glc_launch(bitonic_gather<Key, Value, HasValues, Iota>, "bitonic_gather",
                    glc_blocks_to_cover(call.n, gather_block), gather_block, call.stream,
                    static_cast<const Key *>(call.keys), indices, call.n,
                    static_cast<Key *>(call.keys_out), static_cast<const Value *>(call.values),
                    static_cast<Value *>(call.values_out));
}

template <int Dtype>
int bitonic(const glc_sort_call &call) {
  using Key = typename glc_sort_key<Dtype>::bits;
  cudaStream_t s = call.stream;
  size_t padded = 1;
  while (padded < call.n) padded <<= 1;
  const size_t chunk = padded < bitonic_chunk ? padded : bitonic_chunk;
  GlcDeviceBuffer sort_keys, indices;
  int code = sort_keys.allocate(padded * sizeof(Key), s);
  GLC_TRY(code, indices.allocate(padded * sizeof(unsigned), s));
  Key *k_pairs = sort_keys.as<Key>();
  unsigned *i_pairs = indices.as<unsigned>();
  const size_t fill_blocks = glc_blocks_to_cover(padded, gather_block);
  GLC_TRY(code, glc_launch(bitonic_prepare<Dtype>, "bitonic_prepare", fill_blocks, gather_block, s,
                           static_cast<const Key *>(call.keys), call.n, padded, call.descending,
                           k_pairs, i_pairs));
  if (padded > 1) {
    const size_t chunks = padded / chunk;
    const int half = static_cast<int>(chunk / 2);
    GLC_TRY(code, glc_launch(bitonic_sort_shared<Key>, "bitonic_sort_shared", chunks, half, s,
                             k_pairs, i_pairs));
    for (size_t k = 2 * chunk; k <= padded && !code; k <<= 1) {
      for (size_t j = k / 2; j >= chunk && !code; j >>= 1)
        code = glc_launch(bitonic_merge_global<Key>, "bitonic_merge_global",
                          glc_blocks_to_cover(padded / 2, gather_block), gather_block, s, k_pairs,
                          i_pairs, padded, k, j);
      GLC_TRY(code, glc_launch(bitonic_merge_shared<Key>, "bitonic_merge_shared", chunks, half, s,
                               k_pairs, i_pairs, k));
    }
  }
  if (code) return code;
  return glc_dispatch_sort_values(call, [&](auto values) {
    using V = decltype(values);
    return gather<Key, typename V::Value, V::has_values, V::iota>(call, i_pairs);
  });
}

}  // namespace

int glc_sort_bitonic(const glc_sort_call &call) {
  return glc_dispatch_sort_key(call.dtype, "glc_sort",
                               [&](auto dtype) { return bitonic<decltype(dtype)::value>(call); });
}
