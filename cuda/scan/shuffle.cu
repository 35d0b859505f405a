// Variants 4-5: the bandwidth-bound scans. Each block owns a tile of threads x rounds x one
// 16-byte vector (tile.cuh: 256 x 4 for variant 4 and for variant 5's 8-byte inputs; variant 5's
// lookback_shape below for its 4-byte ones), scanned with warp shuffles and one barrier: in
// registers (variant 4), or a vector at a time from shared memory (variant 5).
//  4 warp_shuffle: reduce-then-scan on these tiles: reduce each tile (16-byte loads, shuffles),
//    scan the partials in one block (Blelloch), scan each tile from its prefix. x is read twice:
//    3 passes over n elements.
//  5 decoupled_lookback: one pass. Each tile takes the next id from a counter, publishes its
//    aggregate, scans itself, and its warp 0 looks back over its predecessors' published
//    aggregates and prefixes for its own prefix (tile.cuh), while the tile waits in shared
//    memory. x is read once and y written once, the copy's 2 passes.
#include <type_traits>

#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"
#include "ops.cuh"
#include "tile.cuh"

namespace {

// Threads per block of the one-block scan of the partials (65536 of them at 2^28 float32).
constexpr int partials_block = 1024;

// ---- the tiles' loads and stores (tools/emulate/scan.py runs this part on the CPU) ----

// S: the tile's shape (glc_tile_shape: threads, rounds); variant 4 takes the default one.
template <typename Op, typename In, typename Acc, typename S = glc_tile_shape<In>>
__device__ __forceinline__ void load_tile(const In *x, size_t n, size_t begin, bool vector_ok,
                                          Acc (&v)[S::rounds][S::vec]) {
  if (vector_ok && begin + S::tile <= n) {
#pragma unroll
    for (int r = 0; r < S::rounds; ++r) {
      In e[S::vec];
      glc_load16<In, S::vec>(x + glc_tile_index<In, S::threads>(begin, r, 0), e);
#pragma unroll
      for (int k = 0; k < S::vec; ++k) v[r][k] = static_cast<Acc>(e[k]);
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < S::rounds; ++r)
#pragma unroll
    for (int k = 0; k < S::vec; ++k) {
      const size_t i = glc_tile_index<In, S::threads>(begin, r, k);
      v[r][k] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
    }
}

// Writes the scan: v holds each group's thread-local inclusive scan; base[r] op prefix is what
// comes before the group.
template <typename Op, typename In, typename Acc, typename S = glc_tile_shape<In>>
__device__ __forceinline__ void store_tile(Acc *y, size_t n, size_t begin, bool vector_ok,
                                           bool inclusive, Acc prefix, Acc (&v)[S::rounds][S::vec],
                                           const Acc (&base)[S::rounds]) {
  const bool full = vector_ok && begin + S::tile <= n;
#pragma unroll
  for (int r = 0; r < S::rounds; ++r) {
    const Acc before = Op::apply(prefix, base[r]);
    if (inclusive) {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) v[r][k] = Op::apply(before, v[r][k]);
    } else {
#pragma unroll
      for (int k = S::vec - 1; k > 0; --k) v[r][k] = Op::apply(before, v[r][k - 1]);
      v[r][0] = before;
    }
    if (full) {
      glc_store16<Acc, S::vec>(y + glc_tile_index<In, S::threads>(begin, r, 0), v[r]);
    } else {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) {
        const size_t i = glc_tile_index<In, S::threads>(begin, r, k);
        if (i < n) y[i] = v[r][k];
      }
    }
  }
}

// ---- end of the tiles' loads and stores ----

// Variant 4, pass 1: partials[b] = op over tile b.
template <typename Op, typename In, typename Acc>
__global__ void __launch_bounds__(glc_tile_threads)
    reduce_tiles_shuffle(const In *x, size_t n, bool vector_ok, Acc *partials) {
  using S = glc_tile_shape<In>;
  __shared__ Acc warp_totals[glc_tile_warps];
  const size_t begin = blockIdx.x * S::tile;
  Acc v[glc_tile_rounds][S::vec];
  load_tile<Op, In, Acc>(x, n, begin, vector_ok, v);
  Acc total = Op::template identity<Acc>();
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r)
#pragma unroll
    for (int k = 0; k < S::vec; ++k) total = Op::apply(total, v[r][k]);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    total = Op::apply(total, __shfl_xor_sync(0xffffffffu, total, offset));
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = total;
  __syncthreads();
  if (threadIdx.x == 0) {
    Acc tile_total = warp_totals[0];
#pragma unroll
    for (int w = 1; w < glc_tile_warps; ++w) tile_total = Op::apply(tile_total, warp_totals[w]);
    partials[blockIdx.x] = tile_total;
  }
}

// Variant 4, pass 3: tile b scanned from prefixes[b].
template <typename Op, typename In, typename Acc>
__global__ void __launch_bounds__(glc_tile_threads)
    scan_tiles_shuffle(const In *x, Acc *y, size_t n, bool vector_ok, bool inclusive,
                       const Acc *prefixes) {
  using S = glc_tile_shape<In>;
  using Scan = glc_tile_scan<Op, Acc, S::vec>;
  __shared__ typename Scan::Shared shared;
  const size_t begin = blockIdx.x * S::tile;
  Acc v[glc_tile_rounds][S::vec], base[glc_tile_rounds], aggregate;
  load_tile<Op, In, Acc>(x, n, begin, vector_ok, v);
  Scan::scan(v, base, aggregate, shared);
  store_tile<Op, In, Acc>(y, n, begin, vector_ok, inclusive, prefixes[blockIdx.x], v, base);
}

// ---- variant 5's copies into shared memory (tools/emulate/scan.py has its own) ----

// How the tile gets into shared memory. From sm_90, thread 0 issues one bulk copy of the whole tile
// (the TMA: one request instead of a 16-byte cp.async a thread and round) that completes on an
// mbarrier every thread waits on: 1.7% faster at 2^28 float32 on the H100, and steadier
// (docs/labs/scan.md). Before, each thread cp.asyncs its own 16-byte vectors (sm_80: L2
// evict-first, as __ldcs: x is read once, the status words should stay) and waits for them itself;
// before sm_80 a load and a shared store.
using stage_barrier = unsigned long long;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr bool stage_by_thread_0 = true;
#else
constexpr bool stage_by_thread_0 = false;
#endif

__device__ __forceinline__ unsigned stage_shared_address(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Thread 0, before the block's first barrier: an mbarrier of one arrival (thread 0's, below).
__device__ __forceinline__ void stage_barrier_init(stage_barrier *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(stage_shared_address(bar))
               : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  (void)bar;
#endif
}

// Thread 0 (stage_by_thread_0): the whole tile at x in one bulk copy; x and the stage 16-byte
// aligned, `bytes` a multiple of 16.
__device__ __forceinline__ void stage_bulk(void *stage, const void *x, unsigned bytes,
                                           stage_barrier *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = stage_shared_address(bar);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(stage_shared_address(stage)),
      "l"(x), "r"(bytes), "r"(b)
      : "memory");
#else
  (void)stage;
  (void)x;
  (void)bytes;
  (void)bar;
#endif
}

// Every thread (not stage_by_thread_0): its own 16-byte vectors, each with this policy.
__device__ __forceinline__ unsigned long long stage_evict_first_policy() {
  unsigned long long policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}

__device__ __forceinline__ void stage_copy16(void *dst, const void *src,
                                             unsigned long long policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(
                   stage_shared_address(dst)),
               "l"(src), "l"(policy)
               : "memory");
#else
  (void)policy;
  *static_cast<int4 *>(dst) = *static_cast<const int4 *>(src);
#endif
}

// Every thread, before it reads the stage: the bulk copy complete (the mbarrier's first phase),
// or its own cp.asyncs.
__device__ __forceinline__ void stage_wait(stage_barrier *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred done;\n STAGE_WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      " @!done bra STAGE_WAIT_%=;\n}\n" ::"r"(stage_shared_address(bar))
      : "memory");
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  (void)bar;
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
#else
  (void)bar;
#endif
}

// ---- variant 5 (tools/emulate/scan.py runs this part on the CPU) ----

// Variant 5's tile: where input and accumulator are 4 bytes, 256 threads x 9 rounds of one
// 16-byte vector (9216 a tile, 36 KiB, 6 a SM: 2% faster than 128 x 8, 4096, on the H100 at
// 2^28 float32: the look-back's cost a tile is about fixed, so bigger tiles pay it less often;
// 256 x 10 or 11 and 384 or 512 threads were slower, 128 x 18 level but at 78 registers);
// int32 summed into int64, 256 x 6 (6144 a tile, 24 KiB staged, 48 registers, 5 a SM: 7% faster
// than 256 x 4 at 2^28, 256 x 8 unsteady); 8-byte inputs 256 x 4 (docs/labs/scan.md).
template <typename In, typename Acc>
constexpr bool lookback_four_byte = sizeof(In) == 4 && sizeof(Acc) == 4;
template <typename In, typename Acc>
constexpr int lookback_rounds = lookback_four_byte<In, Acc> ? 9
                                : sizeof(In) == 4           ? 6
                                                            : glc_tile_rounds;
template <typename In, typename Acc>
using lookback_shape = glc_tile_shape<In, glc_tile_threads, lookback_rounds<In, Acc>>;

// The kernel's second __launch_bounds__ argument: the fewest blocks a SM that ptxas must leave
// room for, the largest with no spill (nvcc 13.0, sm_90). No thread holds its tile through the
// look-back (it waits in shared memory), so registers are few, and the SM's shared memory (6
// tiles of 36 KiB) or its 2048 threads (8 blocks of 256) are the limit. At 6, int32 max/min
// spill 8 bytes, which float32 does not. Integer sums into int64 spill 12-28 bytes at 32
// registers: no bound (int64's keep 40, 6 blocks; int32's 48, 5 blocks of 24 KiB). Before sm_90
// nothing was measured: no bound.
template <typename Op, typename In, typename Acc>
constexpr int lookback_min_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (lookback_four_byte<In, Acc>) return 6;
  return std::is_same<Op, glc_scan_sum>::value && std::is_integral<Acc>::value ? 0 : 8;
#else
  return 0;
#endif
}

// Thread t's round-r group of vec elements: from the staged tile, or from x where the tile is
// not staged (the partial last tile, or x or y off a 16-byte boundary), op's identity past n.
template <typename Op, typename In, typename Acc, typename S>
__device__ __forceinline__ void round_group(const In *stage, const In *x, size_t n, size_t begin,
                                            bool staged, int r, Acc (&v)[S::vec]) {
  if (staged) {
    using W = typename glc_vec16<In>::type;
    const W w = *reinterpret_cast<const W *>(stage + glc_tile_index<In, S::threads>(0, r, 0));
    const In *e = reinterpret_cast<const In *>(&w);
#pragma unroll
    for (int k = 0; k < S::vec; ++k) v[k] = static_cast<Acc>(e[k]);
    return;
  }
#pragma unroll
  for (int k = 0; k < S::vec; ++k) {
    const size_t i = glc_tile_index<In, S::threads>(begin, r, k);
    v[k] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
  }
}

// Whether a tile is staged (copied whole into shared memory): x and y on 16-byte boundaries and
// the tile full. Thread 0 issues the bulk copy by it and every thread waits by it: one rule, or a
// thread would wait for a copy never issued (a hang, not a sanitizer's report).
template <typename S>
__device__ __forceinline__ bool tile_is_staged(size_t begin, size_t n, bool vector_ok) {
  return vector_ok && begin + S::tile <= n;
}

// Variant 5: the whole scan in one pass, a tile of shape S a block. The tile waits for its prefix
// in shared memory, not in registers: thread 0 copies it there in bulk as soon as it has its id
// (sm_90; before, each thread cp.asyncs its own vectors), every thread waits for the copy, then
// goes over its rounds three times, a vector at a time: for the tile's aggregate, which thread 0
// publishes at once; for what comes before each of its groups; then, with the prefix, for the
// writes. Few registers (32-40 instead of 48) let a SM hold 16 tiles of 12 KiB instead of 10 while
// their look-backs wait: 0.827 ms against 0.95 at 2^28 float32 on the H100; the bulk copy and 13
// tiles of 16 KiB took 2% more, 6 of 36 KiB and the early aggregate 5% more (docs/labs/scan.md).
// The outputs' sums are glc_tile_scan's, in its order: the thread's run, the warp's shuffles, the
// warps, the rounds; the aggregate's, tile_total's.
template <typename Op, typename In, typename Acc, typename Status, typename S>
__global__ void __launch_bounds__(S::threads, lookback_min_blocks<Op, In, Acc>())
    decoupled_lookback(const In *x, Acc *y, size_t n, bool vector_ok, bool inclusive,
                       unsigned *tile_counter, Status status) {
  using Scan = glc_tile_scan<Op, Acc, S::vec, S::threads, S::rounds>;
  __shared__ __align__(16) In stage[S::tile];
  __shared__ typename Scan::Shared shared;
  __shared__ Acc warp_sums[S::warps];
  __shared__ unsigned tile_id;
  __shared__ Acc tile_prefix;
  __shared__ stage_barrier staged_bar;
  // Ids in the order blocks start, not blockIdx: a block waits only on tiles that are running.
  if (threadIdx.x == 0) {
    stage_barrier_init(&staged_bar);
    const unsigned id = atomicAdd(tile_counter, 1u);
    tile_id = id;
    const size_t first = static_cast<size_t>(id) * S::tile;
    if (stage_by_thread_0 && tile_is_staged<S>(first, n, vector_ok))
      stage_bulk(stage, x + first, S::tile * sizeof(In), &staged_bar);
  }
  __syncthreads();
  const size_t tile = tile_id;
  const size_t begin = tile * S::tile;
  const bool staged = tile_is_staged<S>(begin, n, vector_ok);
  if (staged) {
    if (!stage_by_thread_0) {
      const unsigned long long policy = stage_evict_first_policy();
#pragma unroll
      for (int r = 0; r < S::rounds; ++r)
        stage_copy16(stage + glc_tile_index<In, S::threads>(0, r, 0),
                     x + glc_tile_index<In, S::threads>(begin, r, 0), policy);
    }
    stage_wait(&staged_bar);
  }
  // The tile's aggregate first, published before its rounds are scanned: the successors' walks
  // wait on it, and the scans' 5 dependent shuffles a round took ~2.5 us a tile among 48 warps
  // a SM (publishing first: -3.4% at 2^28 float32 on the H100, docs/labs/scan.md).
  Acc thread_total = Op::template identity<Acc>();
#pragma unroll
  for (int r = 0; r < S::rounds; ++r) {
    Acc v[S::vec];
    round_group<Op, In, Acc, S>(stage, x, n, begin, staged, r, v);
#pragma unroll
    for (int k = 0; k < S::vec; ++k) thread_total = Op::apply(thread_total, v[k]);
  }
  Scan::warp_sum(thread_total, warp_sums);
  __syncthreads();
  if (threadIdx.x == 0) glc_publish_aggregate(status, tile, Scan::tile_total(warp_sums));
  // Pass 1: each round's group total, scanned across the warp, then the warps' totals folded:
  // what comes before each of this thread's groups.
  Acc before[S::rounds];
#pragma unroll
  for (int r = 0; r < S::rounds; ++r) {
    Acc v[S::vec];
    round_group<Op, In, Acc, S>(stage, x, n, begin, staged, r, v);
    Acc total = v[0];
#pragma unroll
    for (int k = 1; k < S::vec; ++k) total = Op::apply(total, v[k]);
    before[r] = Scan::warp_part(r, total, shared);
  }
  __syncthreads();
  Scan::fold(before, shared);  // its aggregate, summed in another order, is not the one published
  if (threadIdx.x < 32) {
    const Acc exclusive = glc_look_back_walk<Op>(status, tile, Scan::tile_total(warp_sums));
    if (threadIdx.x == 0) tile_prefix = exclusive;
  }
  __syncthreads();
  const Acc prefix = tile_prefix;
  // Pass 2: the writes.
#pragma unroll
  for (int r = 0; r < S::rounds; ++r) {
    Acc v[S::vec], out[S::vec];
    round_group<Op, In, Acc, S>(stage, x, n, begin, staged, r, v);
    const Acc start = Op::apply(prefix, before[r]);
    Acc run = v[0];
    out[0] = inclusive ? Op::apply(start, run) : start;
#pragma unroll
    for (int k = 1; k < S::vec; ++k) {
      if (!inclusive) out[k] = Op::apply(start, run);
      run = Op::apply(run, v[k]);
      if (inclusive) out[k] = Op::apply(start, run);
    }
    if (staged) {
      glc_store16<Acc, S::vec>(y + glc_tile_index<In, S::threads>(begin, r, 0), out);
    } else {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) {
        const size_t i = glc_tile_index<In, S::threads>(begin, r, k);
        if (i < n) y[i] = out[k];
      }
    }
  }
}

// ---- end of variant 5 ----

template <typename Op, typename In>
int shuffle_scan(int variant, bool inclusive, size_t n, const In *x, void *out,
                 cudaStream_t stream) {
  using Acc = typename glc_scan_acc<In, Op>::type;
  using S = lookback_shape<In, Acc>;  // variant 5's; variant 4 has the default shape
  Acc *y = static_cast<Acc *>(out);
  const bool vector_ok = glc_all_aligned(16, x, y);
  const size_t tile = variant == GLC_SCAN_WARP_SHUFFLE ? glc_tile_shape<In>::tile : S::tile;
  const size_t tiles = glc_blocks_to_cover(n, static_cast<int>(tile));
  if (tiles > glc_max_grid_x) return glc_fail(cudaErrorInvalidValue, "glc_scan");
  GlcDeviceBuffer scratch;
  int code = 0;
  if (variant == GLC_SCAN_WARP_SHUFFLE) {
    code = scratch.allocate(tiles * sizeof(Acc), stream);
    Acc *partials = scratch.as<Acc>();
    GLC_TRY(code, glc_launch(reduce_tiles_shuffle<Op, In, Acc>, "reduce_tiles_shuffle", tiles,
                             glc_tile_threads, stream, x, n, vector_ok, partials));
    GLC_TRY(code, (glc_blelloch_one_block<Op, Acc>(partials_block, tiles, partials, partials, false,
                                                   stream)));
    GLC_TRY(code, glc_launch(scan_tiles_shuffle<Op, In, Acc>, "scan_tiles_shuffle", tiles,
                             glc_tile_threads, stream, x, y, n, vector_ok, inclusive,
                             static_cast<const Acc *>(partials)));
    return code;
  }
  using Status = glc_tile_status<Acc>;
  using Scratch = glc_look_back_scratch<Status>;
  code = scratch.allocate(Scratch::bytes(tiles), stream);
  GLC_TRY(code, GLC_CUDA(cudaMemsetAsync, scratch.ptr, 0, Scratch::zeroed_bytes(tiles), stream));
  GLC_TRY(code, glc_launch(decoupled_lookback<Op, In, Acc, Status, S>, "decoupled_lookback", tiles,
                           S::threads, stream, x, y, n, vector_ok, inclusive,
                           Scratch::counter(scratch.ptr), Scratch::status(scratch.ptr, tiles)));
  return code;
}

}  // namespace

int glc_scan_shuffle(int variant, int op, int inclusive, int dtype, size_t n, const void *x,
                     void *y, cudaStream_t stream) {
  return glc_dispatch_scan(op, dtype, "glc_scan", [&](auto in, auto scan_op) {
    using In = decltype(in);
    return shuffle_scan<decltype(scan_op)>(variant, inclusive != 0, n, static_cast<const In *>(x),
                                           y, stream);
  });
}
