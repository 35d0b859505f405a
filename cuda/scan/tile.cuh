// Internal to cuda/scan/: the tile of the bandwidth-bound variants (scan 4-5, compaction 0-1):
// its shape, its 16-byte loads and stores, the warp-shuffle scan of its registers, and the tile
// status of the decoupled look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", NVR-2016-002).
#ifndef GPULAB_SCAN_TILE_CUH
#define GPULAB_SCAN_TILE_CUH

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/core/vec16.cuh"
#include "ops.cuh"

// The default tile: 256 threads, each holding `rounds` groups of one 16-byte vector: 16 floats
// (4096 a tile) or 8 doubles. The prediction is that 16 4-byte items a thread keep enough loads in
// flight per SM (8 blocks x 256 threads x 64 bytes = 128 KiB) to stream at the copy rate on the
// H100. Every helper below takes the block's threads and rounds as template parameters defaulting
// to these, so that one kernel (scan variant 5) can try another shape (CUB's sm_90 scan tile: 128
// threads x 24 floats) while the others compile to the code they had.
constexpr int glc_tile_threads = 256;
constexpr int glc_tile_warps = glc_tile_threads / 32;
constexpr int glc_tile_rounds = 4;

template <typename In, int Threads = glc_tile_threads, int Rounds = glc_tile_rounds>
struct glc_tile_shape {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "whole warps, one block");
  static constexpr int threads = Threads;
  static constexpr int warps = Threads / 32;
  static constexpr int rounds = Rounds;
  static constexpr int vec = 16 / sizeof(In);  // elements in one 16-byte load
  static constexpr int round = Threads * vec;
  static constexpr size_t tile = static_cast<size_t>(round) * Rounds;
};

// Element (r, k) of thread t sits at tile_begin + r * round + t * vec + k: in each round the
// warp reads 512 contiguous bytes, and each thread's vec elements are consecutive.
template <typename In, int Threads = glc_tile_threads>
__device__ __forceinline__ size_t glc_tile_index(size_t tile_begin, int r, int k) {
  using S = glc_tile_shape<In, Threads>;
  return tile_begin + static_cast<size_t>(r) * S::round + threadIdx.x * S::vec + k;
}

// Streaming 16-byte loads and stores (__ldcs/__stcs: evict-first, the data are touched once).
template <typename T, int V>
__device__ __forceinline__ void glc_load16(const T *p, T (&out)[V]) {
  static_assert(V * sizeof(T) == 16, "one 16-byte vector");
  using W = typename glc_vec16<T>::type;
  const W w = __ldcs(reinterpret_cast<const W *>(p));
  const T *e = reinterpret_cast<const T *>(&w);
#pragma unroll
  for (int k = 0; k < V; ++k) out[k] = e[k];
}

// V values of T at p (16-byte aligned), in 16-byte stores.
template <typename T, int V>
__device__ __forceinline__ void glc_store16(T *p, const T (&v)[V]) {
  using W = typename glc_vec16<T>::type;
  constexpr int per = 16 / sizeof(T);
  static_assert(V % per == 0, "whole 16-byte vectors");
#pragma unroll
  for (int c = 0; c < V / per; ++c) {
    W w;
    T *e = reinterpret_cast<T *>(&w);
#pragma unroll
    for (int k = 0; k < per; ++k) e[k] = v[c * per + k];
    __stcs(reinterpret_cast<W *>(p) + c, w);
  }
}

// The block's scan of its registers. On entry v holds the tile's elements; on return v[r][k] is
// the inclusive scan of thread t's vec elements of round r, and
//   base[r] = op of every element of the tile before thread t's round-r group,
//   aggregate = op of the whole tile (every thread gets it).
// Each warp scans its 32 group totals of every round with shuffles (5 steps); lane 31 leaves the
// warp's total in shared memory; after one barrier every thread folds the warps' totals of every
// round itself (8 warps x 4 rounds = 32 broadcast reads in the default tile, 8 x 9 = 72 in
// 256 x 9), so the block needs no second shared-memory pass. The summation order (the thread's
// run, the warp's shuffles, the warps, the rounds) is the same for every shape.
template <typename Op, typename Acc, int V, int Threads = glc_tile_threads,
          int Rounds = glc_tile_rounds>
struct glc_tile_scan {
  static constexpr int warps = Threads / 32;
  struct Shared {
    Acc warp_totals[Rounds][warps];
  };

  // The tile's op, in two steps around a barrier: each warp leaves the op of its threads'
  // `thread_total`s (xor shuffles) in warp_sums; after the barrier, the warps' in order. An order
  // other than scan's, read again from warp_sums where it is needed rather than held.
  __device__ __forceinline__ static void warp_sum(Acc thread_total, Acc (&warp_sums)[warps]) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      thread_total = Op::apply(thread_total, __shfl_xor_sync(0xffffffffu, thread_total, offset));
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = thread_total;
  }
  __device__ __forceinline__ static Acc tile_total(const Acc (&warp_sums)[warps]) {
    Acc total = warp_sums[0];
#pragma unroll
    for (int w = 1; w < warps; ++w) total = Op::apply(total, warp_sums[w]);
    return total;
  }

  // Round r's warp step: `inclusive` is this thread's group total. Returns what comes before
  // this lane's group within the warp (op's identity in lane 0); lane 31 leaves the warp's total
  // in s.
  __device__ __forceinline__ static Acc warp_part(int r, Acc inclusive, Shared &s) {
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const Acc up = __shfl_up_sync(0xffffffffu, inclusive, offset);
      if (lane >= offset) inclusive = Op::apply(up, inclusive);
    }
    const Acc before = __shfl_up_sync(0xffffffffu, inclusive, 1);
    const Acc exclusive = lane == 0 ? Op::template identity<Acc>() : before;
    if (lane == 31) s.warp_totals[r][warp] = inclusive;
    return exclusive;
  }

  // After the barrier that follows every round's warp_part: base[r], warp_part's result on
  // entry, becomes everything in the tile before this thread's round-r group. Returns the
  // tile's aggregate.
  __device__ __forceinline__ static Acc fold(Acc (&base)[Rounds], const Shared &s) {
    const unsigned warp = threadIdx.x / 32;
    Acc running = Op::template identity<Acc>();
#pragma unroll
    for (int r = 0; r < Rounds; ++r) {
      Acc before_warp = Op::template identity<Acc>(), round_total = before_warp;
#pragma unroll
      for (int w = 0; w < warps; ++w) {
        const Acc total = s.warp_totals[r][w];
        if (w < static_cast<int>(warp)) before_warp = Op::apply(before_warp, total);
        round_total = Op::apply(round_total, total);
      }
      base[r] = Op::apply(Op::apply(running, before_warp), base[r]);
      running = Op::apply(running, round_total);
    }
    return running;
  }

  __device__ __forceinline__ static void scan(Acc (&v)[Rounds][V], Acc (&base)[Rounds],
                                              Acc &aggregate, Shared &s) {
#pragma unroll
    for (int r = 0; r < Rounds; ++r) {
#pragma unroll
      for (int k = 1; k < V; ++k) v[r][k] = Op::apply(v[r][k - 1], v[r][k]);
      base[r] = warp_part(r, v[r][V - 1], s);
    }
    __syncthreads();
    aggregate = fold(base, s);
  }
};

// The sum of every thread's `value` over a block of glc_tile_threads threads, returned to thread
// 0 (the others get 0): each warp's shuffles, then thread 0 adds the warps' totals from shared
// memory in `Sum` (wider than T where a block's total may not fit T).
template <typename Sum, typename T>
__device__ __forceinline__ Sum glc_tile_block_sum(T value, T (&warp_totals)[glc_tile_warps]) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = value;
  __syncthreads();
  Sum total = 0;
  if (threadIdx.x == 0)
#pragma unroll
    for (int w = 0; w < glc_tile_warps; ++w) total += warp_totals[w];
  return total;
}

// ---- the decoupled look-back's tile status ----

enum : unsigned { glc_status_empty = 0, glc_status_aggregate = 1, glc_status_prefix = 2 };

// 4-byte values: the flag and the value share one 64-bit word, stored and loaded whole, so a
// reader can never see a flag with another publication's value.
template <typename Acc, bool Packed = sizeof(Acc) == 4>
struct glc_tile_status {
  unsigned long long *words;

  static size_t bytes(size_t tiles) { return tiles * sizeof(unsigned long long); }
  void place(void *scratch, size_t tiles) {
    (void)tiles;
    words = static_cast<unsigned long long *>(scratch);
  }
  // Bytes that must start zeroed (every flag empty).
  static size_t zeroed_bytes(size_t tiles) { return bytes(tiles); }

  __device__ __forceinline__ static unsigned bits_of(Acc value) {
    unsigned bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
  }
  __device__ __forceinline__ void publish(size_t tile, unsigned flag, Acc value) const {
    const unsigned long long word = (static_cast<unsigned long long>(flag) << 32) |
                                    static_cast<unsigned long long>(bits_of(value));
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(words[tile])
        .store(word, cuda::memory_order_relaxed);
  }
  __device__ __forceinline__ void read(size_t tile, unsigned &flag, Acc &value) const {
    const unsigned long long word =
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(words[tile])
            .load(cuda::memory_order_relaxed);
    flag = static_cast<unsigned>(word >> 32);
    const unsigned bits = static_cast<unsigned>(word);
    memcpy(&value, &bits, sizeof value);
  }
};

// 8-byte values (double, int64, the int64 sums of int32 and the compaction's offsets): a 64-bit
// value and its flag do not fit one word that every GPU stores atomically, so each tile has a flag
// and two value slots, one per kind of publication. The value is written first and the flag is
// stored with release; a reader loads the flag with acquire and then the slot that the flag
// names, which is never written again: the flag and its value are consistent.
template <typename Acc>
struct glc_tile_status<Acc, false> {
  unsigned *flags;
  Acc *aggregates;
  Acc *prefixes;

  static size_t flag_bytes(size_t tiles) { return (tiles * sizeof(unsigned) + 15) / 16 * 16; }
  static size_t bytes(size_t tiles) { return flag_bytes(tiles) + 2 * tiles * sizeof(Acc); }
  static size_t zeroed_bytes(size_t tiles) { return flag_bytes(tiles); }
  void place(void *scratch, size_t tiles) {
    flags = static_cast<unsigned *>(scratch);
    aggregates = reinterpret_cast<Acc *>(static_cast<char *>(scratch) + flag_bytes(tiles));
    prefixes = aggregates + tiles;
  }

  __device__ __forceinline__ void publish(size_t tile, unsigned flag, Acc value) const {
    (flag == glc_status_aggregate ? aggregates : prefixes)[tile] = value;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device>(flags[tile])
        .store(flag, cuda::memory_order_release);
  }
  __device__ __forceinline__ void read(size_t tile, unsigned &flag, Acc &value) const {
    flag = cuda::atomic_ref<unsigned, cuda::thread_scope_device>(flags[tile])
               .load(cuda::memory_order_acquire);
    if (flag == glc_status_aggregate) value = aggregates[tile];
    if (flag == glc_status_prefix) value = prefixes[tile];
  }
};

// The look-back's delays (glc_look_back) and the grid from which they apply (CUB's threshold).
constexpr unsigned glc_look_back_first_read_ns = 1140, glc_look_back_retry_ns = 688;
constexpr unsigned glc_look_back_delay_grid = 500;

// One thread of the tile with id `tile`: publishes its aggregate (tile 0: its prefix, the same).
template <typename Acc, typename Status>
__device__ __forceinline__ void glc_publish_aggregate(const Status &status, size_t tile,
                                                      Acc aggregate) {
  status.publish(tile, tile == 0 ? glc_status_prefix : glc_status_aggregate, aggregate);
}

// Called by warp 0 of the tile with id `tile` once its aggregate is published (tiles are numbered
// in the order their blocks started, so every predecessor is running or done: the wait below
// always ends). Walks back over the predecessors 32 at a time: a window with a prefix ends the
// walk at its nearest one; a window of aggregates only is folded in and the walk goes on.
// Publishes the tile's inclusive prefix and returns its exclusive one (every lane).
template <typename Op, typename Acc, typename Status>
__device__ Acc glc_look_back_walk(const Status &status, size_t tile, Acc aggregate) {
  const unsigned lane = threadIdx.x % 32;
  const Acc identity = Op::template identity<Acc>();
  if (tile == 0) return identity;
  // CUB's sm_90 float scan tuning (tuning_scan.cuh: fixed_delay_constructor_t<688, 1140>): in a
  // large grid, wait about an L2 write's latency before the first read, so that the tiles just
  // ahead have published, and sleep between reads. Reading at once and every 32 ns made 10 reads
  // a tile on the H100 at 2^28 float32, and the delays alone took 8% off the scan's time
  // (docs/labs/scan.md). A small grid has few tiles to wait for: no delay.
  const bool polite = gridDim.x >= glc_look_back_delay_grid;
  if (polite) __nanosleep(glc_look_back_first_read_ns);
  Acc exclusive = identity;
  long long nearest = static_cast<long long>(tile) - 1;
  for (;;) {
    const long long pred = nearest - static_cast<long long>(lane);
    unsigned flag = glc_status_prefix;
    Acc value = identity;
    for (;;) {
      if (pred >= 0) status.read(static_cast<size_t>(pred), flag, value);
      if (!__any_sync(0xffffffffu, flag == glc_status_empty)) break;
      __nanosleep(polite ? glc_look_back_retry_ns : 32);
    }
    const unsigned prefix_lanes = __ballot_sync(0xffffffffu, flag == glc_status_prefix);
    // lanes past the nearest prefix are already inside it
    const unsigned last = prefix_lanes ? __ffs(prefix_lanes) - 1 : 31;
    Acc window = lane <= last ? value : identity;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      window = Op::apply(window, __shfl_xor_sync(0xffffffffu, window, offset));
    exclusive = Op::apply(window, exclusive);
    if (prefix_lanes) break;
    nearest -= 32;
  }
  if (lane == 0) status.publish(tile, glc_status_prefix, Op::apply(exclusive, aggregate));
  return exclusive;
}

// Warp 0 of the tile: publishes its aggregate, then walks back (above).
template <typename Op, typename Acc, typename Status>
__device__ Acc glc_look_back(const Status &status, size_t tile, Acc aggregate) {
  if (threadIdx.x % 32 == 0) glc_publish_aggregate(status, tile, aggregate);
  return glc_look_back_walk<Op>(status, tile, aggregate);
}

// Scratch of the look-back: the tile counter (16 bytes, zeroed) and the status.
template <typename Status>
struct glc_look_back_scratch {
  static size_t bytes(size_t tiles) { return 16 + Status::bytes(tiles); }
  static size_t zeroed_bytes(size_t tiles) { return 16 + Status::zeroed_bytes(tiles); }
  static unsigned *counter(void *scratch) { return static_cast<unsigned *>(scratch); }
  static Status status(void *scratch, size_t tiles) {
    Status s;
    s.place(static_cast<char *>(scratch) + 16, tiles);
    return s;
  }
};

#endif
