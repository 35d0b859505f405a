// Variants 4-5: the bandwidth-bound scans. Each block owns a tile of 256 threads x 4 rounds x
// one 16-byte vector (tile.cuh), scanned in registers with warp shuffles and one barrier.
//  4 warp_shuffle: reduce-then-scan on these tiles: reduce each tile (16-byte loads, shuffles),
//    scan the partials in one block (Blelloch), scan each tile from its prefix. x is read twice:
//    3 passes over n elements.
//  5 decoupled_lookback: one pass. Each tile takes the next id from a counter, scans itself,
//    publishes its aggregate, and its warp 0 looks back over its predecessors' published
//    aggregates and prefixes for its own prefix (tile.cuh). x is read once and y written once,
//    the copy's 2 passes; benchmarks/NOTES.md ("scan lab") has the prediction. With x on a
//    16-byte boundary (y anywhere) it runs as decoupled_lookback_pipelined: one wave of
//    persistent blocks, each holding the next 2 tiles' x in shared memory, loaded by cp.async
//    while its warp 0 looks back, so the SM keeps reading x through the look-back's wait (ncu:
//    62% of the one-tile kernel's warp cycles were that wait, with no load in flight). Otherwise
//    decoupled_lookback, one tile a block.
#include <atomic>
#include <type_traits>

#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"
#include "ops.cuh"
#include "tile.cuh"

namespace {

// Threads per block of the one-block scan of the partials (65536 of them at 2^28 float32).
constexpr int partials_block = 1024;

// ---- the tiles' loads and stores (tools/emulate/scan.py runs this part on the CPU)

template <typename Op, typename In, typename Acc>
__device__ __forceinline__ void load_tile(const In *x, size_t n, size_t begin, bool vector_ok,
                                          Acc (&v)[glc_tile_rounds][glc_tile_shape<In>::vec]) {
  using S = glc_tile_shape<In>;
  if (vector_ok && begin + S::tile <= n) {
#pragma unroll
    for (int r = 0; r < glc_tile_rounds; ++r) {
      In e[S::vec];
      glc_load16<In, S::vec>(x + glc_tile_index<In>(begin, r, 0), e);
#pragma unroll
      for (int k = 0; k < S::vec; ++k) v[r][k] = static_cast<Acc>(e[k]);
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r)
#pragma unroll
    for (int k = 0; k < S::vec; ++k) {
      const size_t i = glc_tile_index<In>(begin, r, k);
      v[r][k] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
    }
}

// Writes the scan: v holds each group's thread-local inclusive scan; base[r] op prefix is what
// comes before the group.
template <typename Op, typename In, typename Acc>
__device__ __forceinline__ void store_tile(Acc *y, size_t n, size_t begin, bool vector_ok,
                                           bool inclusive, Acc prefix,
                                           Acc (&v)[glc_tile_rounds][glc_tile_shape<In>::vec],
                                           const Acc (&base)[glc_tile_rounds]) {
  using S = glc_tile_shape<In>;
  const bool full = vector_ok && begin + S::tile <= n;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r) {
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
      glc_store16<Acc, S::vec>(y + glc_tile_index<In>(begin, r, 0), v[r]);
    } else {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) {
        const size_t i = glc_tile_index<In>(begin, r, k);
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

// ---- the pipelined variant 5's asynchronous copies (the emulation has its own)

// cp.async (sm_80 on): 16 bytes from global to shared memory, not through registers; the
// thread waits for them only at cp_async_wait. The L2 policy marks x evict-first, as __ldcs
// did in the one-tile kernel: x is read once, and the tile status words should stay in L2.
// Before sm_80 the copy is synchronous (a load and a shared store), which the waits then cover.
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
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "l"(policy)
               : "memory");
#else
  (void)policy;
  *static_cast<int4 *>(dst) = *static_cast<const int4 *>(src);
#endif
}

__device__ __forceinline__ void stage_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void stage_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
}

// ---- variant 5 (tools/emulate/scan.py runs this part on the CPU)

// Variant 5, one tile a block: what x off a 16-byte boundary takes (no cp.async of 16 bytes).
template <typename Op, typename In, typename Acc, typename Status>
__global__ void __launch_bounds__(glc_tile_threads, glc_look_back_min_blocks<In, Acc>())
    decoupled_lookback(const In *x, Acc *y, size_t n, bool vector_ok, bool inclusive,
                       unsigned *tile_counter, Status status) {
  using S = glc_tile_shape<In>;
  using Scan = glc_tile_scan<Op, Acc, S::vec>;
  __shared__ typename Scan::Shared shared;
  __shared__ unsigned tile_id;
  __shared__ Acc tile_prefix;
  // Ids in the order blocks start, not blockIdx: a block waits only on tiles that are running.
  if (threadIdx.x == 0) tile_id = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const size_t tile = tile_id;
  const size_t begin = tile * S::tile;
  Acc v[glc_tile_rounds][S::vec], base[glc_tile_rounds], aggregate;
  load_tile<Op, In, Acc>(x, n, begin, vector_ok, v);
  Scan::scan(v, base, aggregate, shared);
  if (threadIdx.x < 32) {
    const Acc exclusive = glc_look_back<Op>(status, tile, aggregate);
    if (threadIdx.x == 0) tile_prefix = exclusive;
  }
  __syncthreads();
  store_tile<Op, In, Acc>(y, n, begin, vector_ok, inclusive, tile_prefix, v, base);
}

// Tiles of x in shared memory per block of the pipelined kernel: while one tile is scanned and
// looked back for, the next pipeline_stages - 1 are loading, and once a tile's registers are
// filled its stage starts loading the tile after those. 2 stages of 16 KiB (32 KiB of static
// shared memory, under the 48 KiB that needs no opt-in) fit 6 blocks in the H100's 228 KiB a SM,
// all 6 x 32 = 192 KiB of them loading during a look-back: more than the ~50 KiB a SM that
// Little's law asks at 3 TB/s and ~2 us of loaded latency on 132 SMs. A third stage would cost
// blocks (4 a SM at 48 KiB) to keep loads in flight that the second already covers.
constexpr int pipeline_stages = 2;
// The pipelined kernel's second __launch_bounds__ argument (sm_90, nvcc 13: the largest bound
// with no spill; the table in benchmarks/NOTES.md, "Scan lab: the pipelined look-back"). Its
// loop keeps the pointers, the policy and the ids on top of the one-tile kernel's registers.
// Shared memory (2 stages, 32.1 KiB + 1 KiB reserved) caps every one at 6 blocks a SM.
//  - float: 6 (40 registers; 44-48 unbounded, 5 blocks).
//  - int32 max/min: 5 (48; 6 spills 16 bytes, unbounded 52 is 4 blocks).
//  - 8-byte accumulators: none. Unbounded 48-58 (4-5 blocks), int32 into int64 sums 72 (3);
//    a bound of 4 spills the int32 sums 12 bytes and gives the doubles 60 instead of 48.
// At 3-6 blocks every SM has 96-192 KiB of x loading during a look-back.
template <typename In, typename Acc>
constexpr int pipelined_min_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return sizeof(Acc) != 4 ? 0 : std::is_floating_point<In>::value ? 6 : 5;
#else
  return 0;
#endif
}

// Tile ids a block holds: the one being scanned, the stages' and the next refill's.
constexpr int pipeline_ids = pipeline_stages + 1;

// This thread's 16-byte vectors of tile `tile` into `stage`, at the positions it reads them back
// from (glc_tile_index's layout), so each thread reads only bytes that it copied itself: its own
// stage_wait is all the ordering the stage needs, and no barrier guards it. Issues nothing for
// an id past the last tile or for the partial last tile (read from x by load_tile); the caller
// commits a group either way, so that the groups stay one per tile.
template <typename In>
__device__ __forceinline__ void fill_stage(const In *x, size_t n, size_t tile, In *stage,
                                           unsigned long long policy) {
  using S = glc_tile_shape<In>;
  const size_t begin = tile * S::tile;
  if (begin + S::tile > n) return;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r)
    stage_copy16(stage + glc_tile_index<In>(0, r, 0), x + glc_tile_index<In>(begin, r, 0), policy);
}

template <typename In, typename Acc>
__device__ __forceinline__ void read_stage(const In *stage,
                                           Acc (&v)[glc_tile_rounds][glc_tile_shape<In>::vec]) {
  using S = glc_tile_shape<In>;
  using W = typename glc_vec16<In>::type;
#pragma unroll
  for (int r = 0; r < glc_tile_rounds; ++r) {
    const W w = *reinterpret_cast<const W *>(stage + glc_tile_index<In>(0, r, 0));
    const In *e = reinterpret_cast<const In *>(&w);
#pragma unroll
    for (int k = 0; k < S::vec; ++k) v[r][k] = static_cast<Acc>(e[k]);
  }
}

// Variant 5 for x on a 16-byte boundary: persistent blocks (about one full wave of them), each
// taking tile ids from the counter pipeline_ids ahead of the tile it scans and keeping the x of
// the next pipeline_stages in shared memory, loading by cp.async while its warp 0 looks back
// (ncu showed the one-tile kernel's blocks idle at that barrier with no load in flight). A
// tile's scan is the one-tile kernel's: tile-local scan, then the prefix, in the same order.
//
// Why the look-back cannot deadlock: a block takes ids from the counter only while it runs, and
// scans them in the order it took them (increasing). Take the smallest id t that has been taken
// and whose prefix is not yet published. Every id below t is published, so t's look-back ends;
// and the block holding t has no earlier unpublished id, so t is the tile it is working on (it
// is not stuck behind one of its own later tiles). Nothing here needs every block resident at
// once: the grid of one wave is for speed (the fewest blocks that fill the SMs, each streaming
// many tiles), not for progress.
template <typename Op, typename In, typename Acc, typename Status>
__global__ void __launch_bounds__(glc_tile_threads, pipelined_min_blocks<In, Acc>())
    decoupled_lookback_pipelined(const In *x, Acc *y, size_t n, bool y_vectors, bool inclusive,
                                 unsigned *tile_counter, Status status) {
  using S = glc_tile_shape<In>;
  using Scan = glc_tile_scan<Op, Acc, S::vec>;
  __shared__ __align__(16) In stages[pipeline_stages][S::tile];
  __shared__ typename Scan::Shared shared;
  __shared__ unsigned tile_ids[pipeline_ids];
  __shared__ Acc tile_prefix;
  const size_t tiles = (n + S::tile - 1) / S::tile;
  const unsigned long long policy = stage_evict_first_policy();
  if (threadIdx.x == 0)
    for (int s = 0; s < pipeline_ids; ++s) tile_ids[s] = atomicAdd(tile_counter, 1u);
  __syncthreads();
#pragma unroll
  for (int s = 0; s < pipeline_stages; ++s) {
    fill_stage<In>(x, n, tile_ids[s], stages[s], policy);
    stage_commit();
  }
  // Iteration j scans the tile of tile_ids[j % pipeline_ids] from stage j % pipeline_stages.
  for (unsigned j = 0;; ++j) {
    const unsigned id_slot = j % pipeline_ids;
    const size_t tile = tile_ids[id_slot];
    if (tile >= tiles) break;  // ids only grow: every later one is past the end too
    In *stage = stages[j % pipeline_stages];
    const size_t begin = tile * S::tile;
    Acc v[glc_tile_rounds][S::vec], base[glc_tile_rounds], aggregate;
    // pipeline_stages groups before the loop and one an iteration: group j is done when no more
    // than the pipeline_stages - 1 after it are in flight.
    stage_wait<pipeline_stages - 1>();
    if (begin + S::tile <= n)
      read_stage<In, Acc>(stage, v);
    else
      load_tile<Op, In, Acc>(x, n, begin, false, v);
    Scan::scan(v, base, aggregate, shared);
    // Refilled only past the scan's barrier: by then v is consumed, so the copy cannot land
    // before this thread's reads of the stage (cp.async orders nothing by itself).
    fill_stage<In>(x, n, tile_ids[(j + pipeline_stages) % pipeline_ids], stage, policy);
    stage_commit();
    if (threadIdx.x < 32) {
      const Acc exclusive = glc_look_back<Op>(status, tile, aggregate);
      if (threadIdx.x == 0) tile_prefix = exclusive;
    } else if (threadIdx.x == 32) {
      // warp 1 takes the next id, off warp 0's path; everyone has read this slot's old id
      tile_ids[id_slot] = atomicAdd(tile_counter, 1u);
    }
    __syncthreads();
    store_tile<Op, In, Acc>(y, n, begin, y_vectors, inclusive, tile_prefix, v, base);
  }
  stage_wait<0>();
}

// ---- end of variant 5 ----

// Asks for the largest shared-memory carveout for `kernel`, once per device: its blocks are
// counted by glc_full_wave_blocks at the carveout that fits the most of them, and a launch at a
// smaller one (the driver's choice otherwise) would leave SMs with fewer resident blocks.
template <auto kernel>
int prefer_shared_memory() {
  static std::atomic<unsigned long long> done{0};  // a bit per device
  int device = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  const unsigned long long bit = device >= 0 && device < 64 ? 1ull << device : 0;
  if (bit && (done.load(std::memory_order_relaxed) & bit)) return cudaSuccess;
  code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                  static_cast<int>(cudaSharedmemCarveoutMaxShared));
  if (!code) done.fetch_or(bit, std::memory_order_relaxed);
  return code;
}

template <typename Op, typename In>
int shuffle_scan(int variant, bool inclusive, size_t n, const In *x, void *out,
                 cudaStream_t stream) {
  using Acc = typename glc_scan_acc<In, Op>::type;
  using S = glc_tile_shape<In>;
  Acc *y = static_cast<Acc *>(out);
  const bool vector_ok = glc_all_aligned(16, x, y);
  const size_t tiles = glc_blocks_to_cover(n, static_cast<int>(S::tile));
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
  unsigned *counter = Scratch::counter(scratch.ptr);
  const Status status = Scratch::status(scratch.ptr, tiles);
  if (!glc_all_aligned(16, x)) {
    GLC_TRY(code,
            glc_launch(decoupled_lookback<Op, In, Acc, Status>, "decoupled_lookback", tiles,
                       glc_tile_threads, stream, x, y, n, vector_ok, inclusive, counter, status));
    return code;
  }
  constexpr auto pipelined = decoupled_lookback_pipelined<Op, In, Acc, Status>;
  size_t wave = 0;
  GLC_TRY(code, prefer_shared_memory<pipelined>());
  GLC_TRY(code, glc_full_wave_blocks<pipelined>(glc_tile_threads, &wave));
  GLC_TRY(code, glc_launch(pipelined, "decoupled_lookback_pipelined", tiles < wave ? tiles : wave,
                           glc_tile_threads, stream, x, y, n, glc_all_aligned(16, y), inclusive,
                           counter, status));
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
