// Variants 2-3: many blocks, each scanning its part with Blelloch's tree (ops.cuh), and two ways
// to give each block the total of the blocks before it.
//  2 scan_then_propagate (S3 5.3's three kernels): scan each chunk and keep its total; scan the
//    totals (the same kernel, recursively, until one chunk holds them); add each chunk's prefix
//    to its elements. The output is written, read and written again: 4 passes over n elements.
//  3 reduce_then_scan: reduce each tile to one value; scan the partials in one block; scan each
//    tile again from its prefix. x is read twice and y written once: 3 passes, and the tile is
//    many chunks long, so the middle pass is small.
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"
#include "ops.cuh"

namespace {

// Variant 3's tile, in chunks of 2 x block: 8 chunks, 16 elements per thread.
constexpr unsigned reduce_then_scan_chunks = 8;

// Scans each chunk of 2 x blockDim.x elements; chunk_totals[b] = the chunk's total.
template <typename Op, typename In, typename Acc>
__global__ void scan_blocks(const In *x, Acc *y, size_t n, bool inclusive, Acc *chunk_totals) {
  extern __shared__ unsigned char shared_raw[];
  Acc *t = reinterpret_cast<Acc *>(shared_raw);
  const size_t width = 2 * static_cast<size_t>(blockDim.x);
  const size_t begin = blockIdx.x * width, end = begin + width < n ? begin + width : n;
  const Acc total =
      glc_blelloch_chunk<Op>(x, y, begin, end, Op::template identity<Acc>(), inclusive, t);
  if (threadIdx.x == 0) chunk_totals[blockIdx.x] = total;
}

// y[i] = op(prefix of i's chunk, y[i]); prefixes is the exclusive scan of the chunk totals.
template <typename Op, typename Acc>
__global__ void add_block_prefixes(Acc *y, size_t n, const Acc *prefixes) {
  if (blockIdx.x == 0) return;  // the first chunk's prefix is the identity
  const Acc prefix = prefixes[blockIdx.x];
  const size_t width = 2 * static_cast<size_t>(blockDim.x);
  const size_t i0 = blockIdx.x * width + threadIdx.x, i1 = i0 + blockDim.x;
  if (i0 < n) y[i0] = Op::apply(prefix, y[i0]);
  if (i1 < n) y[i1] = Op::apply(prefix, y[i1]);
}

// partials[b] = the total of tile b (chunks x 2 x blockDim.x elements): each thread folds its
// strided elements (coalesced), then a shared-memory tree with sequential addressing.
template <typename Op, typename In, typename Acc>
__global__ void reduce_tiles(const In *x, size_t n, size_t tile, Acc *partials) {
  extern __shared__ unsigned char shared_raw[];
  Acc *s = reinterpret_cast<Acc *>(shared_raw);
  const unsigned tid = threadIdx.x;
  const size_t begin = blockIdx.x * tile, end = begin + tile < n ? begin + tile : n;
  Acc v = Op::template identity<Acc>();
  for (size_t i = begin + tid; i < end; i += blockDim.x) v = Op::apply(v, static_cast<Acc>(x[i]));
  s[tid] = v;
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    __syncthreads();
    if (tid < stride) s[tid] = Op::apply(s[tid], s[tid + stride]);
  }
  if (tid == 0) partials[blockIdx.x] = s[0];
}

// Scans tile b from prefixes[b] (the exclusive scan of the partials), chunk after chunk.
template <typename Op, typename In, typename Acc>
__global__ void scan_tiles(const In *x, Acc *y, size_t n, size_t tile, bool inclusive,
                           const Acc *prefixes) {
  extern __shared__ unsigned char shared_raw[];
  Acc *t = reinterpret_cast<Acc *>(shared_raw);
  const size_t width = 2 * static_cast<size_t>(blockDim.x);
  const size_t tile_begin = blockIdx.x * tile;
  const size_t tile_end = tile_begin + tile < n ? tile_begin + tile : n;
  Acc carry = prefixes[blockIdx.x];
  for (size_t begin = tile_begin; begin < tile_end; begin += width) {
    const size_t end = begin + width < tile_end ? begin + width : tile_end;
    carry = Op::apply(carry, glc_blelloch_chunk<Op>(x, y, begin, end, carry, inclusive, t));
  }
}

// The chunk counts of every level of variant 2's recursion: n, ceil(n / width), ..., 1.
size_t level_scratch(size_t n, size_t width) {
  size_t total = 0;
  for (size_t count = glc_blocks_to_cover(n, width); count > 1;
       count = glc_blocks_to_cover(count, width))
    total += count;
  return total;
}

template <typename Op, typename In, typename Acc>
int scan_then_propagate_level(int block, bool inclusive, size_t n, const In *x, Acc *y,
                              Acc *scratch, cudaStream_t stream) {
  const size_t width = 2 * static_cast<size_t>(block);
  const size_t chunks = glc_blocks_to_cover(n, static_cast<int>(width));
  const unsigned shared = static_cast<unsigned>(width * sizeof(Acc));
  Acc *totals = scratch;  // chunks values; the next level's scratch follows
  int code = glc_launch_shared(scan_blocks<Op, In, Acc>, "scan_blocks", chunks, block, shared,
                               stream, x, y, n, inclusive, totals);
  if (code || chunks == 1) return code;
  // The totals' exclusive scan, in place: each block reads its chunk before writing it.
  code = scan_then_propagate_level<Op, Acc, Acc>(block, false, chunks, totals, totals,
                                                 scratch + chunks, stream);
  if (code) return code;
  return glc_launch(add_block_prefixes<Op, Acc>, "add_block_prefixes", chunks, block, stream, y, n,
                    static_cast<const Acc *>(totals));
}

template <typename Op, typename In>
int multi_block(int variant, int block, bool inclusive, size_t n, const In *x, void *out,
                cudaStream_t stream) {
  using Acc = typename glc_scan_acc<In, Op>::type;
  Acc *y = static_cast<Acc *>(out);
  const size_t width = 2 * static_cast<size_t>(block);
  GlcDeviceBuffer scratch;
  if (variant == GLC_SCAN_THEN_PROPAGATE) {
    // one slot at least: the last level's single total is written too
    const size_t slots = level_scratch(n, width) + 1;
    int code = scratch.allocate(slots * sizeof(Acc), stream);
    if (code) return code;
    return scan_then_propagate_level<Op, In, Acc>(block, inclusive, n, x, y, scratch.as<Acc>(),
                                                  stream);
  }
  const size_t tile = width * reduce_then_scan_chunks;
  const size_t tiles = glc_blocks_to_cover(n, static_cast<int>(tile));
  int code = scratch.allocate(tiles * sizeof(Acc), stream);
  if (code) return code;
  Acc *partials = scratch.as<Acc>();
  const unsigned shared = static_cast<unsigned>(width * sizeof(Acc));
  GLC_TRY(code, glc_launch_shared(reduce_tiles<Op, In, Acc>, "reduce_tiles", tiles, block,
                                  shared / 2, stream, x, n, tile, partials));
  GLC_TRY(code, (glc_blelloch_one_block<Op, Acc>(block, tiles, partials, partials, false, stream)));
  GLC_TRY(code,
          glc_launch_shared(scan_tiles<Op, In, Acc>, "scan_tiles", tiles, block, shared, stream, x,
                            y, n, tile, inclusive, static_cast<const Acc *>(partials)));
  return code;
}

}  // namespace

int glc_scan_multi_block(int variant, int block, int op, int inclusive, int dtype, size_t n,
                         const void *x, void *y, cudaStream_t stream) {
  return glc_dispatch_scan(op, dtype, "glc_scan", [&](auto in, auto scan_op) {
    using In = decltype(in);
    return multi_block<decltype(scan_op)>(variant, block, inclusive != 0, n,
                                          static_cast<const In *>(x), y, stream);
  });
}
