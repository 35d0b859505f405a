// Compaction variants 0-1 (S3 5.3: stream compaction is a scan of keep-flags, then a scatter):
// compact keeps the elements whose flag is set (a NumPy bool mask, or x != 0), nonzero writes
// their indices. Both on the tiles of the bandwidth-bound scans (tile.cuh): the flags of a
// thread's 16-byte group are scanned in registers, the block's with shuffles.
//  0 three_pass: count each tile's kept elements; scan the counts in one block (Blelloch);
//    scatter each tile from its offset. x (or the mask) is read twice.
//  1 single_pass: one pass on the decoupled look-back over the tiles' counts.
//  3 staged: single_pass with the tile's kept elements gathered in shared memory, in order, and
//    written out as contiguous runs of 16-byte stores (see compact_staged).
//  4 counted_staged: three_pass's count, scan and scatter, the count reading only the mask (where
//    there is one) and the scatter staged's tile with its offset from the scan.
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"
#include "ops.cuh"
#include "tile.cuh"

namespace {

constexpr int offsets_block = 1024;

// The tile's elements and keep-flags: values v, and flags f (1 kept, 0 not) in the registers the
// scan will use. mask == nullptr: keep x != 0 (NaN is kept, -0.0 is not: NumPy's x != 0).
template <typename T>
__device__ __forceinline__ void load_flagged(
    const T *x, const unsigned char *mask, size_t n, size_t begin, bool vector_ok,
    T (&v)[glc_tile_rounds][glc_tile_shape<T>::vec],
    long long (&f)[glc_tile_rounds][glc_tile_shape<T>::vec]) {
  using S = glc_tile_shape<T>;
  const bool full = vector_ok && begin + S::tile <= n;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r) {
    const size_t first = glc_tile_index<T>(begin, r, 0);
    if (full) {
      glc_load16<T, S::vec>(x + first, v[r]);
    } else {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) v[r][k] = first + k < n ? x[first + k] : T(0);
    }
#pragma unroll
    for (int k = 0; k < S::vec; ++k) {
      const bool in = first + k < n;
      const bool keep = mask ? (in && mask[first + k] != 0) : (in && v[r][k] != T(0));
      f[r][k] = keep ? 1 : 0;
    }
  }
}

// Writes the kept elements (or their indices) of the tile: f holds the thread-local inclusive
// counts, base[r] + prefix the kept elements before the group; keep_bits which were kept.
template <bool IndexOut, typename T>
__device__ __forceinline__ void scatter_tile(
    void *out, size_t begin, long long prefix,
    const T (&v)[glc_tile_rounds][glc_tile_shape<T>::vec],
    const long long (&f)[glc_tile_rounds][glc_tile_shape<T>::vec],
    const long long (&base)[glc_tile_rounds]) {
  using S = glc_tile_shape<T>;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r)
#pragma unroll
    for (int k = 0; k < S::vec; ++k) {
      const long long before = k == 0 ? 0 : f[r][k - 1];
      if (f[r][k] == before) continue;  // not kept
      const long long at = prefix + base[r] + before;
      if (IndexOut)
        static_cast<long long *>(out)[at] = static_cast<long long>(glc_tile_index<T>(begin, r, k));
      else
        static_cast<T *>(out)[at] = v[r][k];
    }
}

// Variant 0, pass 1: counts[b] = the kept elements of tile b.
template <typename T>
__global__ void __launch_bounds__(glc_tile_threads)
    count_tiles(const T *x, const unsigned char *mask, size_t n, bool vector_ok,
                long long *counts) {
  using S = glc_tile_shape<T>;
  __shared__ long long warp_totals[glc_tile_warps];
  const size_t begin = blockIdx.x * S::tile;
  T v[glc_tile_rounds][S::vec];
  long long f[glc_tile_rounds][S::vec];
  load_flagged<T>(x, mask, n, begin, vector_ok, v, f);
  long long total = 0;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r)
#pragma unroll
    for (int k = 0; k < S::vec; ++k) total += f[r][k];
  const long long tile_total = glc_tile_block_sum<long long>(total, warp_totals);
  if (threadIdx.x == 0) counts[blockIdx.x] = tile_total;
}

// Variant 0, pass 3: tile b scattered from offsets[b]; the last tile writes the count.
template <bool IndexOut, typename T>
__global__ void __launch_bounds__(glc_tile_threads)
    scatter_tiles(const T *x, const unsigned char *mask, size_t n, bool vector_ok, void *out,
                  const long long *offsets, long long *count) {
  using S = glc_tile_shape<T>;
  using Scan = glc_tile_scan<glc_scan_sum, long long, S::vec>;
  __shared__ typename Scan::Shared shared;
  const size_t begin = blockIdx.x * S::tile;
  T v[glc_tile_rounds][S::vec];
  long long f[glc_tile_rounds][S::vec], base[glc_tile_rounds], aggregate;
  load_flagged<T>(x, mask, n, begin, vector_ok, v, f);
  Scan::scan(f, base, aggregate, shared);
  const long long prefix = offsets[blockIdx.x];
  scatter_tile<IndexOut, T>(out, begin, prefix, v, f, base);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *count = prefix + aggregate;
}

// ---- the look-back tiles' start and offset (variants 1 and 3) ----
// The tile this block scans: ids are taken in the order blocks start, so every predecessor of a
// tile is running or done, which the look-back's wait needs.
__device__ __forceinline__ size_t claim_tile(unsigned *tile_counter) {
  __shared__ unsigned tile_id;
  if (threadIdx.x == 0) tile_id = atomicAdd(tile_counter, 1u);
  __syncthreads();
  return tile_id;
}

// The kept elements before the tile, for every thread, from warp 0's look-back over the tiles'
// counts; the last tile writes the total to *count. Ends with a barrier.
template <typename Status>
__device__ __forceinline__ long long tile_offset(const Status &status, size_t tile, size_t tiles,
                                                 long long kept, long long *count) {
  __shared__ long long tile_prefix;
  if (threadIdx.x < 32) {
    const long long exclusive = glc_look_back<glc_scan_sum>(status, tile, kept);
    if (threadIdx.x == 0) {
      tile_prefix = exclusive;
      if (tile == tiles - 1) *count = exclusive + kept;
    }
  }
  __syncthreads();
  return tile_prefix;
}
// ---- end of the look-back tiles' start and offset ----

// The fewest blocks a SM ptxas must leave room for (the largest bound with no spill: more resident
// tiles keep more loads in flight while a tile's warp 0 looks back, and a spill puts local-memory
// traffic on the path these kernels are bound by): nonzero's tile (the elements are dropped once
// flagged) fits 40 registers with no spill, 6 blocks instead of 5 at 44-48; compaction keeps its
// elements beside 16 int64 counts, needs 54-64 registers (4 blocks), and spills at 48: no bound (0;
// a bound of 1 would move its registers). Checked on sm_80 and sm_90.
template <bool IndexOut>
constexpr int compact_min_blocks() {
  return IndexOut ? 6 : 0;
}

// Variant 1: one pass; the tile's offset comes from the look-back over the tiles' counts.
template <bool IndexOut, typename T, typename Status>
__global__ void __launch_bounds__(glc_tile_threads, compact_min_blocks<IndexOut>())
    compact_lookback(const T *x, const unsigned char *mask, size_t n, bool vector_ok, void *out,
                     long long *count, unsigned *tile_counter, size_t tiles, Status status) {
  using S = glc_tile_shape<T>;
  using Scan = glc_tile_scan<glc_scan_sum, long long, S::vec>;
  __shared__ typename Scan::Shared shared;
  const size_t tile = claim_tile(tile_counter);
  const size_t begin = tile * S::tile;
  T v[glc_tile_rounds][S::vec];
  long long f[glc_tile_rounds][S::vec], base[glc_tile_rounds], aggregate;
  load_flagged<T>(x, mask, n, begin, vector_ok, v, f);
  Scan::scan(f, base, aggregate, shared);
  const long long prefix = tile_offset(status, tile, tiles, aggregate, count);
  scatter_tile<IndexOut, T>(out, begin, prefix, v, f, base);
}

// ---- variant 3, staged: the write-out of single_pass, gathered first ----
// single_pass stores each kept element from the thread that loaded it: one 4- or 8-byte store
// per element, a warp's store instruction touching every sector of its run with a few bytes
// each, 16 of them a thread. Here the tile's kept elements are first placed in shared memory at
// their rank in the tile; after the look-back the block writes that run to out + prefix with
// 16-byte stores, consecutive threads on consecutive vectors, so every store fills whole sectors.
// The flags are bits (one per element), the mask is read a 16-byte group's bytes at a time, and
// the block scans the rounds' counts as int (4 a thread, not single_pass's 16 int64). The
// elements leave the registers before the look-back, but the tile's load still sets the
// kernel's register count (staged_min_blocks).

// The vec bytes of the mask beside a thread's vec elements, in one load.
template <int V>
struct staged_mask_word;
template <>
struct staged_mask_word<4> {
  using type = uchar4;
};
template <>
struct staged_mask_word<2> {
  using type = uchar2;
};

// Bit r * vec + k of the result: element (r, k) of the thread is kept (mask byte not zero, or
// without a mask x != 0: NaN kept, -0.0 not). v gets the elements (0 past n).
template <typename T>
__device__ __forceinline__ unsigned load_kept_bits(
    const T *x, const unsigned char *mask, size_t n, size_t begin, bool x_vectors, bool mask_words,
    T (&v)[glc_tile_rounds][glc_tile_shape<T>::vec]) {
  using S = glc_tile_shape<T>;
  static_assert(glc_tile_rounds * S::vec <= 32, "one bit an element");
  const bool full = begin + S::tile <= n;
  unsigned bits = 0;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r) {
    const size_t first = glc_tile_index<T>(begin, r, 0);
    if (full && x_vectors) {
      glc_load16<T, S::vec>(x + first, v[r]);
    } else {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) v[r][k] = first + k < n ? x[first + k] : T(0);
    }
    unsigned char m[S::vec];
    if (mask && full && mask_words) {
      using W = typename staged_mask_word<S::vec>::type;
      const W w = __ldcs(reinterpret_cast<const W *>(mask + first));
      memcpy(m, &w, sizeof m);
    } else if (mask) {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) m[k] = first + k < n ? mask[first + k] : 0;
    }
#pragma unroll
    for (int k = 0; k < S::vec; ++k) {
      const bool keep = mask ? m[k] != 0 : (first + k < n && v[r][k] != T(0));
      bits |= static_cast<unsigned>(keep) << (r * S::vec + k);
    }
  }
  return bits;
}

// What a tile stages: its kept elements, or (nonzero) their offsets in the tile, which the
// write-out turns into int64 indices.
template <bool IndexOut, typename T>
struct staged_types {
  using Staged = T;
  using Out = T;
};
template <typename T>
struct staged_types<true, T> {
  using Staged = unsigned;
  using Out = long long;
};

// out[prefix + i] = stage[i] (or begin + stage[i]) for i < kept, by the whole block: the few
// elements before out + prefix reaches a 16-byte boundary and the few after the last whole
// vector one a thread, the vectors between with 16-byte stores. Nothing at or past
// out + prefix + kept is written: out may end exactly there.
template <bool IndexOut, typename T>
__device__ __forceinline__ void write_staged(
    void *out, long long prefix, int kept, size_t begin,
    const typename staged_types<IndexOut, T>::Staged *stage) {
  using Out = typename staged_types<IndexOut, T>::Out;
  constexpr int per = 16 / sizeof(Out);
  Out *dst = static_cast<Out *>(out) + prefix;
  auto staged = [&](int i) {
    return IndexOut ? static_cast<Out>(begin + stage[i]) : static_cast<Out>(stage[i]);
  };
  const int misaligned = static_cast<int>(reinterpret_cast<uintptr_t>(dst) / sizeof(Out) % per);
  const int head = min(kept, (per - misaligned) % per);
  const int vectors = (kept - head) / per;
  const int tail = head + vectors * per;
  const int t = threadIdx.x;
  if (t < head) dst[t] = staged(t);
  if (t < kept - tail) dst[tail + t] = staged(tail + t);
  for (int j = t; j < vectors; j += glc_tile_threads) {
    Out e[per];
#pragma unroll
    for (int c = 0; c < per; ++c) e[c] = staged(head + j * per + c);
    glc_store16<Out, per>(dst + head + j * per, e);
  }
}

// compact_staged's fewest blocks a SM (as compact_min_blocks; nvcc 13.0): nonzero 6 (40 registers)
// and 8-byte elements 5 (48) with no spill on sm_90 and sm_80; 4-byte elements spill 8 bytes at 5
// and 24 at 6 on sm_90, so no bound (64 registers, 4 blocks).
template <bool IndexOut, typename T>
constexpr int staged_min_blocks() {
  return IndexOut ? 6 : sizeof(T) == 8 ? 5 : 0;
}

// A tile's kept elements (or their offsets in the tile) placed in stage at their rank; returns
// how many. Ends before any barrier that orders the staging: the caller's comes next.
template <bool IndexOut, typename T>
__device__ __forceinline__ int stage_kept(const T *x, const unsigned char *mask, size_t n,
                                          size_t begin, bool x_vectors, bool mask_words,
                                          typename staged_types<IndexOut, T>::Staged *stage) {
  using S = glc_tile_shape<T>;
  using Staged = typename staged_types<IndexOut, T>::Staged;
  using Scan = glc_tile_scan<glc_scan_sum, int, 1>;
  __shared__ typename Scan::Shared shared;
  T v[glc_tile_rounds][S::vec];
  const unsigned bits = load_kept_bits<T>(x, mask, n, begin, x_vectors, mask_words, v);
  constexpr unsigned group = (1u << S::vec) - 1u;
  int counts[glc_tile_rounds][1], base[glc_tile_rounds], kept;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r) counts[r][0] = __popc((bits >> (r * S::vec)) & group);
  Scan::scan(counts, base, kept, shared);
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r)
#pragma unroll
    for (int k = 0; k < S::vec; ++k) {
      const unsigned round_bits = bits >> (r * S::vec);
      if (!((round_bits >> k) & 1u)) continue;
      const int at = base[r] + __popc(round_bits & ((1u << k) - 1u));
      if (IndexOut)
        stage[at] = static_cast<Staged>(r * S::round + threadIdx.x * S::vec + k);
      else
        stage[at] = static_cast<Staged>(v[r][k]);
    }
  return kept;
}

// Variant 3: single_pass's tiles and look-back, the write-out staged (above).
template <bool IndexOut, typename T, typename Status>
__global__ void __launch_bounds__(glc_tile_threads, staged_min_blocks<IndexOut, T>())
    compact_staged(const T *x, const unsigned char *mask, size_t n, bool x_vectors, bool mask_words,
                   void *out, long long *count, unsigned *tile_counter, size_t tiles,
                   Status status) {
  using S = glc_tile_shape<T>;
  __shared__ __align__(16) typename staged_types<IndexOut, T>::Staged stage[S::tile];
  const size_t tile = claim_tile(tile_counter);
  const size_t begin = tile * S::tile;
  const int kept = stage_kept<IndexOut, T>(x, mask, n, begin, x_vectors, mask_words, stage);
  // tile_offset's barrier also orders the staging before the write-out's reads
  const long long prefix = tile_offset(status, tile, tiles, static_cast<long long>(kept), count);
  write_staged<IndexOut, T>(out, prefix, kept, begin, stage);
}
// ---- end of variant 3 ----

// ---- variant 4, counted_staged: three_pass's plan with staged's write-out ----
// Pass 1 reads only what decides a tile's count (the mask's bytes where there is one, in one
// 8- or 16-byte load a thread where aligned; x otherwise); pass 2 scans the counts in one block;
// pass 3 is staged's tile with its offset read from the scan instead of looked back, so no tile
// waits on another and no warp waits at a barrier for a look-back (56% of compact_staged's
// stalls in ncu).

// The nonzero bytes of a 4-byte word, as 0-4.
__device__ __forceinline__ int nonzero_bytes(unsigned w) { return __popc(__vcmpne4(w, 0u)) / 8; }

// Pass 1: counts[b] = the kept elements of tile b.
template <typename T>
__global__ void __launch_bounds__(glc_tile_threads)
    count_kept_tiles(const T *x, const unsigned char *mask, size_t n, bool x_vectors,
                     bool mask_vectors, long long *counts) {
  using S = glc_tile_shape<T>;
  constexpr int per = S::tile / glc_tile_threads;  // mask bytes a thread: 16, or 8 for 8-byte T
  static_assert(per == 16 || per == 8, "a thread's mask bytes in one load");
  __shared__ int warp_totals[glc_tile_warps];
  const size_t begin = blockIdx.x * S::tile;
  int kept = 0;
  if (mask != nullptr) {
    const size_t first = begin + threadIdx.x * per;
    if (mask_vectors && first + per <= n) {
      unsigned w[per / 4];
      if (per == 16) {
        const uint4 q = __ldcs(reinterpret_cast<const uint4 *>(mask + first));
        memcpy(w, &q, per);
      } else {
        const uint2 q = __ldcs(reinterpret_cast<const uint2 *>(mask + first));
        memcpy(w, &q, per);
      }
#pragma unroll
      for (int k = 0; k < per / 4; ++k) kept += nonzero_bytes(w[k]);
    } else {
      for (int k = 0; k < per; ++k) kept += first + k < n && mask[first + k] != 0;
    }
  } else {
    T v[glc_tile_rounds][S::vec];
    kept = __popc(load_kept_bits<T>(x, nullptr, n, begin, x_vectors, false, v));
  }
  const long long tile_total = glc_tile_block_sum<long long>(kept, warp_totals);
  if (threadIdx.x == 0) counts[blockIdx.x] = tile_total;
}

// scatter_staged's fewest blocks a SM: 5 (48 registers; 4-byte elements spill 4 bytes at sm_90,
// 4-8 at sm_80; 726 us against 791 at 4 blocks and 62 registers on the H100), and none
// for nonzero's tile, which spills 48 bytes at 6 and 96 at 5 without the look-back: 64
// registers, no spill (sm_90 and sm_80, nvcc 13.0).
template <bool IndexOut, typename T>
constexpr int counted_min_blocks() {
  return IndexOut ? 0 : 5;
}

// Pass 3: tile b staged and written from offsets[b]; the last tile writes the count.
template <bool IndexOut, typename T>
__global__ void __launch_bounds__(glc_tile_threads, counted_min_blocks<IndexOut, T>())
    scatter_staged(const T *x, const unsigned char *mask, size_t n, bool x_vectors, bool mask_words,
                   void *out, const long long *offsets, long long *count) {
  using S = glc_tile_shape<T>;
  __shared__ __align__(16) typename staged_types<IndexOut, T>::Staged stage[S::tile];
  const size_t begin = blockIdx.x * S::tile;
  const int kept = stage_kept<IndexOut, T>(x, mask, n, begin, x_vectors, mask_words, stage);
  const long long prefix = offsets[blockIdx.x];
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *count = prefix + kept;
  __syncthreads();  // the staging before the write-out's reads
  write_staged<IndexOut, T>(out, prefix, kept, begin, stage);
}
// ---- end of variant 4 ----

// ---- end of variant 3 ----

template <bool IndexOut, typename T>
int compact_ours(int variant, size_t n, const T *x, const unsigned char *mask, void *out,
                 long long *count, cudaStream_t stream) {
  using S = glc_tile_shape<T>;
  // 16-byte loads of x; the mask is read a byte at a time (coalesced: a warp's 128 bytes).
  const bool vector_ok = glc_all_aligned(16, x);
  const size_t tiles = glc_blocks_to_cover(n, static_cast<int>(S::tile));
  if (tiles > glc_max_grid_x) return glc_fail(cudaErrorInvalidValue, "glc_compact");
  GlcDeviceBuffer scratch;
  int code = 0;
  // the mask's vec bytes beside each 16-byte vector of x in one load, where it is aligned
  const bool mask_words = mask != nullptr && glc_all_aligned(S::vec, mask);
  if (variant == GLC_COMPACT_COUNTED_STAGED) {
    code = scratch.allocate(2 * tiles * sizeof(long long), stream);
    long long *counts = scratch.as<long long>(), *offsets = counts + tiles;
    const bool mask_vectors = mask != nullptr && glc_all_aligned(S::tile / glc_tile_threads, mask);
    GLC_TRY(code, glc_launch(count_kept_tiles<T>, "count_kept_tiles", tiles, glc_tile_threads,
                             stream, x, mask, n, vector_ok, mask_vectors, counts));
    // the counts' exclusive scan by variant 5 (one pass over ~tiles / 2048 tiles): Blelloch in
    // one block took 194 us for 65 536 counts on the H100, a sixth of the call
    GLC_TRY(code, glc_scan_shuffle(GLC_SCAN_DECOUPLED_LOOKBACK, GLC_SCAN_SUM, 0, GLC_I64, tiles,
                                   counts, offsets, stream));
    GLC_TRY(code, glc_launch(scatter_staged<IndexOut, T>, "scatter_staged", tiles, glc_tile_threads,
                             stream, x, mask, n, vector_ok, mask_words, out,
                             static_cast<const long long *>(offsets), count));
    return code;
  }
  if (variant == GLC_COMPACT_THREE_PASS) {
    code = scratch.allocate(2 * tiles * sizeof(long long), stream);
    long long *counts = scratch.as<long long>(), *offsets = counts + tiles;
    GLC_TRY(code, glc_launch(count_tiles<T>, "count_tiles", tiles, glc_tile_threads, stream, x,
                             mask, n, vector_ok, counts));
    GLC_TRY(code, (glc_blelloch_one_block<glc_scan_sum, long long>(offsets_block, tiles, counts,
                                                                   offsets, false, stream)));
    GLC_TRY(code,
            glc_launch(scatter_tiles<IndexOut, T>, "scatter_tiles", tiles, glc_tile_threads, stream,
                       x, mask, n, vector_ok, out, static_cast<const long long *>(offsets), count));
    return code;
  }
  using Status = glc_tile_status<long long>;
  using Scratch = glc_look_back_scratch<Status>;
  code = scratch.allocate(Scratch::bytes(tiles), stream);
  GLC_TRY(code, GLC_CUDA(cudaMemsetAsync, scratch.ptr, 0, Scratch::zeroed_bytes(tiles), stream));
  if (variant == GLC_COMPACT_STAGED) {
    GLC_TRY(code,
            glc_launch(compact_staged<IndexOut, T, Status>, "compact_staged", tiles,
                       glc_tile_threads, stream, x, mask, n, vector_ok, mask_words, out, count,
                       Scratch::counter(scratch.ptr), tiles, Scratch::status(scratch.ptr, tiles)));
    return code;
  }
  GLC_TRY(code,
          glc_launch(compact_lookback<IndexOut, T, Status>, "compact_lookback", tiles,
                     glc_tile_threads, stream, x, mask, n, vector_ok, out, count,
                     Scratch::counter(scratch.ptr), tiles, Scratch::status(scratch.ptr, tiles)));
  return code;
}

// ---- the binding's sizing pass (glc_count_true) ----
// The mask's nonzero bytes, 16 a thread a step where the mask is 16-byte aligned (one byte at a
// time otherwise, and for the last n % 16), each block's sum added to *count (zeroed first).
// CUB's DeviceReduce over a transform iterator read the mask a byte a thread at 2.1 TB/s (ncu).
// Blocks of glc_tile_threads.
__global__ void __launch_bounds__(glc_tile_threads)
    count_true(const unsigned char *mask, size_t n, bool vectors, unsigned long long *count) {
  __shared__ unsigned long long warp_totals[glc_tile_warps];
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t words = vectors ? n / 16 : 0;
  unsigned long long kept = 0;
  for (size_t i = first; i < words; i += stride) {
    const uint4 q = __ldcs(reinterpret_cast<const uint4 *>(mask) + i);
    kept += nonzero_bytes(q.x) + nonzero_bytes(q.y) + nonzero_bytes(q.z) + nonzero_bytes(q.w);
  }
  for (size_t i = words * 16 + first; i < n; i += stride) kept += mask[i] != 0;
  const unsigned long long block_total = glc_tile_block_sum<unsigned long long>(kept, warp_totals);
  if (threadIdx.x == 0) atomicAdd(count, block_total);
}
// ---- end of the sizing pass ----

}  // namespace

extern "C" int glc_count_true(size_t n, const unsigned char *mask, long long *count,
                              glc_stream stream) {
  if (n == 0 || mask == nullptr || !glc_all_aligned(sizeof(long long), count))
    return glc_fail(cudaErrorInvalidValue, "glc_count_true");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  size_t wave = 0;
  int code = glc_full_wave_blocks<count_true>(glc_tile_threads, &wave);
  const size_t blocks = std::min(wave, glc_blocks_to_cover((n + 15) / 16, glc_tile_threads));
  GLC_TRY(code, glc_memset_async(count, 0, sizeof(long long), stream));
  GLC_TRY(code, glc_launch(count_true, "count_true", static_cast<unsigned>(blocks),
                           glc_tile_threads, s, mask, n, glc_all_aligned(16, mask),
                           reinterpret_cast<unsigned long long *>(count)));
  return code;
}

int glc_compact_ours(int variant, int dtype, size_t n, const void *x, const unsigned char *mask,
                     void *out, bool index_out, long long *count, cudaStream_t stream) {
  return glc_dispatch_element(dtype, "glc_compact", [&](auto element) {
    using T = decltype(element);
    const T *xs = static_cast<const T *>(x);
    return index_out ? compact_ours<true, T>(variant, n, xs, mask, out, count, stream)
                     : compact_ours<false, T>(variant, n, xs, mask, out, count, stream);
  });
}
