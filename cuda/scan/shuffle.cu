// Variants 4-5: the bandwidth-bound scans. Each block owns a tile of threads x rounds x one
// 16-byte vector (tile.cuh: 256 x 4 for variant 4 and for variant 5's 8-byte inputs, 128 x 6 for
// variant 5's 4-byte inputs), scanned in registers with warp shuffles and one barrier.
//  4 warp_shuffle: reduce-then-scan on these tiles: reduce each tile (16-byte loads, shuffles),
//    scan the partials in one block (Blelloch), scan each tile from its prefix. x is read twice:
//    3 passes over n elements.
//  5 decoupled_lookback: one pass. Each tile takes the next id from a counter, scans itself,
//    publishes its aggregate, and its warp 0 looks back over its predecessors' published
//    aggregates and prefixes for its own prefix (tile.cuh). x is read once and y written once,
//    the copy's 2 passes; benchmarks/NOTES.md ("scan lab") has the prediction.
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

// ---- variant 5 (tools/emulate/scan.py runs this part on the CPU) ----

// Variant 5's tile: CUB's sm_90 shape where input and accumulator are 4 bytes (tuning_scan.cuh's
// sm90_tuning: 128 threads x 24 items, here 6 rounds of one 16-byte vector: 3072 a tile), 256 x 4
// otherwise. With 128 threads the barrier where the tile waits for warp 0's look-back idles 3
// warps, not 7, and a SM holds 10 float tiles, not 6, each of which looks back on its own: 4-5%
// faster at 2^28 float32 on the H100. int32 sums into int64 need 92 registers at 128 x 6 (5 tiles
// a SM) and ran 1-4% slower there, so they keep 256 x 4 (benchmarks/NOTES.md, "Scan lab: CUB's
// tile shape and a fair CUB rung", and its outcome).
template <typename In, typename Acc>
using lookback_shape =
    glc_tile_shape<In, sizeof(In) == 4 && sizeof(Acc) == 4 ? 128 : glc_tile_threads,
                   sizeof(In) == 4 && sizeof(Acc) == 4 ? 6 : glc_tile_rounds>;

// Variant 5: the whole scan in one pass, on tiles of shape S.
template <typename Op, typename In, typename Acc, typename Status, typename S>
__global__ void __launch_bounds__(S::threads, glc_look_back_min_blocks<In, Acc, S::threads>())
    decoupled_lookback(const In *x, Acc *y, size_t n, bool vector_ok, bool inclusive,
                       unsigned *tile_counter, Status status) {
  using Scan = glc_tile_scan<Op, Acc, S::vec, S::threads, S::rounds>;
  __shared__ typename Scan::Shared shared;
  __shared__ unsigned tile_id;
  __shared__ Acc tile_prefix;
  // Ids in the order blocks start, not blockIdx: a block waits only on tiles that are running.
  if (threadIdx.x == 0) tile_id = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const size_t tile = tile_id;
  const size_t begin = tile * S::tile;
  Acc v[S::rounds][S::vec], base[S::rounds], aggregate;
  load_tile<Op, In, Acc, S>(x, n, begin, vector_ok, v);
  Scan::scan(v, base, aggregate, shared);
  if (threadIdx.x < 32) {
    const Acc exclusive = glc_look_back<Op>(status, tile, aggregate);
    if (threadIdx.x == 0) tile_prefix = exclusive;
  }
  __syncthreads();
  store_tile<Op, In, Acc, S>(y, n, begin, vector_ok, inclusive, tile_prefix, v, base);
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
