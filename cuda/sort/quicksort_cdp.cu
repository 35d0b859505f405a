// Variant 6: S4 9's quicksort with CUDA dynamic parallelism (cdp_simple_quicksort): a grid of one
// block partitions its segment around a pivot and launches a grid for each side from the device,
// down to a depth limit; short sides are sorted by the partitioning block itself, without a
// launch. What changed from S4, and why:
//  - Stable: it sorts (ordered key, input index) records, whose order is total (no two are
//    equal), so the one sorted order is the stable one whatever the partition does with ties;
//    S4 sorts bare keys and swaps equal ones. The keys and values are then gathered through the
//    sorted indices, which serves sort, argsort and sort_pairs alike.
//  - The partition is a block's, not one thread's: 512 threads take 4096 records a tile, rank
//    them by ballots and a scan of the warps' counts, and write the smaller records forward from
//    the segment's start and the larger backward from its end, into the other of two buffers.
//    The pivot, a ninther of records sampled at hashed positions (sorted, reversed and
//    all-equal inputs split evenly), lands in its final place; each side is shorter than the
//    segment, so the recursion ends.
//  - CUDA 13 has only CDP2: no device-side cudaDeviceSynchronize. Children go to
//    cudaStreamFireAndForget and nobody waits for them: a grid completes only when every grid it
//    launched has, so the gather, next on the caller's stream, sees the whole tree done.
//  - Depth: CUDA nests at most 24 grids; at kMaxDepth a segment, whatever its length, is sorted
//    by its block alone with a bitonic network in global memory (slow, but correct for any
//    length), as is a side whose launch fails (the device runtime's launch pool full).
// Sorted records end in buffer 0: a segment at depth d is read from buffer d % 2, partitioned into
// the other, and the pivot and every finished side are written to buffer 0. Its cost
// (docs/labs/sort.md): the top segment is partitioned by one block on one SM, so time grows with n
// at one SM's bandwidth; calls beyond GLC_SORT_QUICKSORT_CDP_MAX are refused.
//
// Built with -rdc=true and device-linked against cudadevrt (setup.py: the *_cdp.cu files).
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"

// A named namespace, not an anonymous one: under -rdc a kernel with internal linkage gets an
// __nv_static_ symbol that does not demangle, and gl.inspect could not match it to the table.
namespace quicksort_cdp {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
// Records a thread loads per tile, all issued before the first is used: one block must keep
// enough loads in flight to approach an SM's bandwidth on the top segment.
constexpr int kItems = 8;
constexpr unsigned kTile = kThreads * kItems;
constexpr int kCounts = kItems * kWarps;  // a tile's (item, warp) counts, scanned by one warp
static_assert(kCounts % 32 == 0 && kTile < 65536, "counts are scanned 32 lanes wide, 16 bits each");
// A segment this short is sorted in the block's shared memory (24 KB of 8-byte keys and
// indices) rather than partitioned, and a side this short is never launched.
constexpr unsigned kSmall = 2048;
// Grids at depths 0 (the host's) to 22: 23 nested, under CUDA's limit of 24. A balanced tree at
// GLC_SORT_QUICKSORT_CDP_MAX needs log2(2^24 / kSmall) = 13 levels, but ninther trees simulated
// over 2^24 random keys went 20 to 21 deep (docs/labs/sort.md): their tails are segments just
// over kSmall that split unevenly, cheap to sort by one block when one does reach the limit.
constexpr int kMaxDepth = 22;
constexpr int kGatherBlock = 256;
// The device runtime counts a grid against its pool of pending launches from its launch until it
// is complete, its children included: at worst every grid of a call's tree at once. Only sides
// longer than kSmall are launched, and those of one depth are disjoint: a tree over
// GLC_SORT_QUICKSORT_CDP_MAX keys has fewer than 8192 grids a level, and a simulated one (random
// keys) had 12.9 K in all. 65536 covers that five times over, and is the image lab's setting too;
// a deeper, lopsided tree that runs out only loses speed (a failed launch's side is sorted by its
// parent's block).
constexpr size_t kPendingLaunches = 65536;

// The records in their two buffers; buffer 0 ends up sorted.
template <typename Key>
struct Records {
  Key *keys[2];
  unsigned *indices[2];
};

// One key's ordered bits and its input index: no two records are equal.
template <typename Key>
struct Record {
  Key key;
  unsigned index;
};

template <typename Key>
__device__ bool before(Record<Key> a, Record<Key> b) {
  return a.key < b.key || (a.key == b.key && a.index < b.index);
}

template <typename Key>
__device__ Record<Key> load(const Key *keys, const unsigned *indices, unsigned i) {
  return {keys[i], indices[i]};
}

template <typename Key>
__device__ void store(Key *keys, unsigned *indices, unsigned i, Record<Key> record) {
  keys[i] = record.key;
  indices[i] = record.index;
}

// Sorts the m records at keys/indices (shared or global memory) with the block's threads: a
// bitonic network in the form whose every comparator puts the lesser record first (each stage
// opens by comparing mirrored pairs), padded to a power of two with virtual records above every
// real one. Padding in that form never moves, so a comparator that reaches past m is skipped, and
// the network sorts any m. Every thread returns after the last step's barrier.
template <typename Key>
__device__ void block_bitonic(Key *keys, unsigned *indices, unsigned m) {
  unsigned padded = 1;
  while (padded < m) padded <<= 1;
  for (unsigned k = 2; k <= padded; k <<= 1)
    for (unsigned j = k / 2; j > 0; j >>= 1) {
      for (unsigned t = threadIdx.x; t < padded / 2; t += blockDim.x) {
        const unsigned low = 2 * j * (t / j) + t % j;
        const unsigned high = j == k / 2 ? low + 2 * (j - 1 - t % j) + 1 : low + j;
        if (high >= m) continue;
        const Record<Key> a = load(keys, indices, low), b = load(keys, indices, high);
        if (before(b, a)) {
          store(keys, indices, low, b);
          store(keys, indices, high, a);
        }
      }
      __syncthreads();
    }
}

// Records [lo, lo + m) of buffer `from`, m <= kSmall, sorted through shared memory into buffer 0.
template <typename Key>
__device__ void sort_small(const Records<Key> &r, int from, unsigned lo, unsigned m,
                           Key *shared_keys, unsigned *shared_indices) {
  for (unsigned i = threadIdx.x; i < m; i += blockDim.x) {
    store(shared_keys, shared_indices, i, load(r.keys[from], r.indices[from], lo + i));
  }
  __syncthreads();
  block_bitonic(shared_keys, shared_indices, m);
  for (unsigned i = threadIdx.x; i < m; i += blockDim.x) {
    store(r.keys[0], r.indices[0], lo + i, load(shared_keys, shared_indices, i));
  }
  __syncthreads();  // the shared arrays serve the block's next segment
}

// Records [lo, lo + m) of buffer `from`, of any length, sorted where they are by this block
// alone, then moved to buffer 0: the depth limit's and a failed launch's sort.
template <typename Key>
__device__ void sort_by_block(const Records<Key> &r, int from, unsigned lo, unsigned m) {
  block_bitonic(r.keys[from] + lo, r.indices[from] + lo, m);
  if (from == 0) return;
  for (unsigned i = threadIdx.x; i < m; i += blockDim.x) {
    store(r.keys[0], r.indices[0], lo + i, load(r.keys[from], r.indices[from], lo + i));
  }
}

// A position in [lo, lo + m) that depends on the segment and the draw, not on the keys: sorted,
// reversed and organ-pipe inputs cannot line their extremes up with the samples.
__device__ unsigned sample_position(unsigned lo, unsigned m, int depth, unsigned draw) {
  unsigned x = lo * 0x9e3779b9u ^ (m + draw) * 0x85ebca6bu ^ static_cast<unsigned>(depth);
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return lo + x % m;
}

template <typename Key>
__device__ Record<Key> median_of_three(Record<Key> a, Record<Key> b, Record<Key> c) {
  if (before(b, a)) {
    const Record<Key> lesser = b;
    b = a;
    a = lesser;
  }
  if (before(c, b)) b = before(c, a) ? a : c;
  return b;
}

// Tukey's ninther, the median of the medians of three triples sampled from the segment: a pivot
// closer to the middle than one median of three, so that a tree over GLC_SORT_QUICKSORT_CDP_MAX
// keys stays well within kMaxDepth. Every thread draws the same nine.
template <typename Key>
__device__ Record<Key> ninther(const Key *keys, const unsigned *indices, unsigned lo, unsigned m,
                               int depth) {
  Record<Key> medians[3];
  for (unsigned triple = 0; triple < 3; ++triple) {
    Record<Key> s[3];
    for (unsigned j = 0; j < 3; ++j)
      s[j] = load(keys, indices, sample_position(lo, m, depth, 3 * triple + j));
    medians[triple] = median_of_three(s[0], s[1], s[2]);
  }
  return median_of_three(medians[0], medians[1], medians[2]);
}

// A tile's (item, warp) counts, lesser in the low 16 bits and greater in the high 16, replaced
// by their exclusive prefix sums in the tile's order (item-major, as the records lie); the sums
// of both into *total. Run by warp 0.
__device__ void scan_tile_counts(unsigned *counts, unsigned *total) {
  constexpr int per_lane = kCounts / 32;
  const unsigned lane = threadIdx.x;
  unsigned own[per_lane], sum = 0;
  for (int j = 0; j < per_lane; ++j) {
    own[j] = counts[lane * per_lane + j];
    sum += own[j];
  }
  unsigned inclusive = sum;
  for (unsigned d = 1; d < 32; d <<= 1) {
    const unsigned up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  unsigned running = inclusive - sum;
  for (int j = 0; j < per_lane; ++j) {
    counts[lane * per_lane + j] = running;
    running += own[j];
  }
  if (lane == 31) *total = inclusive;
}

template <typename Key>
__global__ void quicksort_cdp_segment(Records<Key> r, unsigned lo, unsigned hi, int depth,
                                      int max_depth);

// A grid for [lo, hi) at depth, launched from the device; false when the launch failed.
template <typename Key>
__device__ bool launch_segment(const Records<Key> &r, unsigned lo, unsigned hi, int depth,
                               int max_depth) {
  quicksort_cdp_segment<Key>
      <<<1, kThreads, 0, cudaStreamFireAndForget>>>(r, lo, hi, depth, max_depth);
  return cudaGetLastError() == cudaSuccess;
}

// A side [lo, lo + m) of the partition, in buffer `from`, that no child grid took: sorted here.
template <typename Key>
__device__ void finish_side(const Records<Key> &r, int from, unsigned lo, unsigned m, bool launched,
                            Key *shared_keys, unsigned *shared_indices) {
  if (launched || m == 0) return;
  if (m <= kSmall)
    sort_small(r, from, lo, m, shared_keys, shared_indices);
  else
    sort_by_block(r, from, lo, m);
}

// One segment [lo, hi) at depth (the host's grid is depth 0), read from buffer depth % 2. Two
// blocks an SM (64 registers; ptxas wanted 66 and 77 for 4- and 8-byte keys, which left one):
// below the top levels the tree has more segments than SMs.
template <typename Key>
__global__ void __launch_bounds__(kThreads, 2)
    quicksort_cdp_segment(Records<Key> r, unsigned lo, unsigned hi, int depth, int max_depth) {
  __shared__ Key shared_keys[kSmall];
  __shared__ unsigned shared_indices[kSmall];
  __shared__ unsigned counts[2][kCounts];  // by tile parity: one barrier less a tile
  __shared__ unsigned totals[2];
  __shared__ bool launched[2];
  const int from = depth & 1, to = from ^ 1;
  const unsigned m = hi - lo;
  if (m <= kSmall) {  // only the host's grid: no shorter side is launched
    sort_small(r, from, lo, m, shared_keys, shared_indices);
    return;
  }
  if (depth >= max_depth) {
    sort_by_block(r, from, lo, m);
    return;
  }
  const Key *keys = r.keys[from];
  const unsigned *indices = r.indices[from];
  const Record<Key> pivot = ninther(keys, indices, lo, m, depth);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned lanes_below = (1u << lane) - 1;
  unsigned lesser = 0, greater = 0;  // records placed by earlier tiles
  for (unsigned base = lo, tile = 0; base < hi; base += kTile, ++tile) {
    Record<Key> tile_records[kItems];
    unsigned lesser_lanes[kItems], greater_lanes[kItems];
    unsigned *tile_counts = counts[tile & 1];
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const unsigned i = base + item * kThreads + threadIdx.x;
      if (i < hi) tile_records[item] = load(keys, indices, i);
    }
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const bool valid = base + item * kThreads + threadIdx.x < hi;
      const bool is_lesser = valid && before(tile_records[item], pivot);
      const bool is_greater = valid && before(pivot, tile_records[item]);
      lesser_lanes[item] = __ballot_sync(0xffffffffu, is_lesser);
      greater_lanes[item] = __ballot_sync(0xffffffffu, is_greater);
      if (lane == 0)
        tile_counts[item * kWarps + warp] =
            __popc(lesser_lanes[item]) | static_cast<unsigned>(__popc(greater_lanes[item])) << 16;
    }
    __syncthreads();
    if (warp == 0) scan_tile_counts(tile_counts, &totals[tile & 1]);
    __syncthreads();
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const unsigned prefix = tile_counts[item * kWarps + warp];
      const unsigned bit = 1u << lane;
      unsigned at;
      if (lesser_lanes[item] & bit)
        at = lo + lesser + (prefix & 0xffffu) + __popc(lesser_lanes[item] & lanes_below);
      else if (greater_lanes[item] & bit)
        at = hi - 1 - (greater + (prefix >> 16) + __popc(greater_lanes[item] & lanes_below));
      else
        continue;  // past the end, or the pivot itself
      store(r.keys[to], r.indices[to], at, tile_records[item]);
    }
    lesser += totals[tile & 1] & 0xffffu;
    greater += totals[tile & 1] >> 16;
  }
  // Every write of the partition is visible to thread 0 past this barrier, and so to the grids it
  // launches (CDP: a child sees what its launching thread saw).
  __syncthreads();
  const unsigned middle = lo + lesser;
  if (threadIdx.x == 0) {
    store(r.keys[0], r.indices[0], middle, pivot);
    launched[0] = lesser > kSmall && launch_segment(r, lo, middle, depth + 1, max_depth);
    launched[1] = greater > kSmall && launch_segment(r, middle + 1, hi, depth + 1, max_depth);
  }
  __syncthreads();
  finish_side(r, to, lo, lesser, launched[0], shared_keys, shared_indices);
  finish_side(r, to, middle + 1, greater, launched[1], shared_keys, shared_indices);
}

template <int Dtype>
__global__ void quicksort_cdp_prepare(const typename glc_sort_key<Dtype>::bits *keys, unsigned n,
                                      bool descending,
                                      Records<typename glc_sort_key<Dtype>::bits> r) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  r.keys[0][i] = glc_sort_key<Dtype>::order(keys[i], descending);
  r.indices[0][i] = i;
}

// Output i takes input sorted[i]'s key and value; argsort's values (values null, 8 bytes) are
// the indices themselves.
template <typename Key>
__global__ void quicksort_cdp_gather(const Key *keys, const unsigned *sorted, unsigned n,
                                     Key *keys_out, int value_bytes, const void *values,
                                     void *values_out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned source = sorted[i];
  if (keys_out != nullptr) keys_out[i] = keys[source];
  using Wide = unsigned long long;
  if (value_bytes == 4)
    static_cast<unsigned *>(values_out)[i] = static_cast<const unsigned *>(values)[source];
  else if (value_bytes == 8)
    static_cast<Wide *>(values_out)[i] =
        values == nullptr ? Wide(source) : static_cast<const Wide *>(values)[source];
}

// Raises the device runtime's pool of pending launches to kPendingLaunches where it is lower (the
// default is 2048); a higher setting is kept. It is not restored afterwards: the setting is the
// device's, shared with whatever else the process launches from the device, and lowering it
// could take slots from that work. Too few slots would cost speed only (a side whose launch fails
// is sorted by its parent's block).
int reserve_pending_launches() {
  size_t slots = 0;
  int code = GLC_CUDA(cudaDeviceGetLimit, &slots, cudaLimitDevRuntimePendingLaunchCount);
  if (!code && slots < kPendingLaunches)
    code = GLC_CUDA(cudaDeviceSetLimit, cudaLimitDevRuntimePendingLaunchCount, kPendingLaunches);
  return code;
}

// The whole sort, nesting at most max_depth grids (kMaxDepth; the emulation also tries less).
template <int Dtype>
int sort(const glc_sort_call &call, int max_depth) {
  using Key = typename glc_sort_key<Dtype>::bits;
  cudaStream_t s = call.stream;
  const unsigned n = static_cast<unsigned>(call.n);  // <= GLC_SORT_QUICKSORT_CDP_MAX
  int code = reserve_pending_launches();
  GlcDeviceBuffer keys[2], indices[2];
  for (int b = 0; b < 2; ++b) {
    GLC_TRY(code, keys[b].allocate(n * sizeof(Key), s));
    GLC_TRY(code, indices[b].allocate(n * sizeof(unsigned), s));
  }
  if (code) return code;
  const Records<Key> r = {{keys[0].as<Key>(), keys[1].as<Key>()},
                          {indices[0].as<unsigned>(), indices[1].as<unsigned>()}};
  const size_t blocks = glc_blocks_to_cover(n, kGatherBlock);
  GLC_TRY(code,
          glc_launch(quicksort_cdp_prepare<Dtype>, "quicksort_cdp_prepare", blocks, kGatherBlock, s,
                     static_cast<const Key *>(call.keys), n, call.descending, r));
  GLC_TRY(code, glc_launch(quicksort_cdp_segment<Key>, "quicksort_cdp_segment", 1, kThreads, s, r,
                           0u, n, 0, max_depth));
  GLC_TRY(code, glc_launch(quicksort_cdp_gather<Key>, "quicksort_cdp_gather", blocks, kGatherBlock,
                           s, static_cast<const Key *>(call.keys), indices[0].as<unsigned>(), n,
                           static_cast<Key *>(call.keys_out), call.value_bytes, call.values,
                           call.values_out));
  return code;
}

}  // namespace quicksort_cdp

int glc_sort_quicksort_cdp(const glc_sort_call &call) {
  return glc_dispatch_sort_key(call.dtype, "glc_sort", [&](auto dtype) {
    return quicksort_cdp::sort<decltype(dtype)::value>(call, quicksort_cdp::kMaxDepth);
  });
}
