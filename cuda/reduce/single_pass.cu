// Reduce variant 12, the lab's fastest for Hopper, and the same kernel applied to dot products
// and L2 norms (S3's "reductions for norms and dot products").
//
// One pass over the data: 16-byte loads, UNROLL of them in flight per thread before any is
// combined, a grid of two resident waves striding over tiles, shuffles within the block. Each
// block writes its partial; the last block to finish (an atomic ticket after a fence) reduces
// the partials in a fixed order and writes the result, so the result is bit-identical from run
// to run and no second launch is needed.
#include <cstdint>
#include <type_traits>

#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/core/vec16.cuh"
#include "ops.cuh"
#include "families.cuh"
#include "mirrored.h"

namespace {

// How each element becomes an accumulator value: itself, its square, or its product with the
// matching element of y.
struct map_value {
  template <typename Acc, typename In>
  __device__ static Acc apply(In a, In) {
    return static_cast<Acc>(a);
  }
  static constexpr bool reads_y = false;
};
struct map_square {
  template <typename Acc, typename In>
  __device__ static Acc apply(In a, In) {
    return static_cast<Acc>(a) * static_cast<Acc>(a);
  }
  static constexpr bool reads_y = false;
};
struct map_product {
  template <typename Acc, typename In>
  __device__ static Acc apply(In a, In b) {
    return static_cast<Acc>(a) * static_cast<Acc>(b);
  }
  static constexpr bool reads_y = true;
};

// Vectors each thread loads before combining any: enough bytes in flight to cover DRAM latency
// with a few blocks per SM.
constexpr int UNROLL = 4;

// Plain read-only loads. The evict-first hint (__ldcs) measured 3% slower on the H100
// (3020 -> 2920 GB/s at 2^28 float32, docs/labs/reduce.md).
template <typename V>
__device__ V load_streaming(const V *p) {
  return __ldg(p);
}

template <typename Op, typename Map, typename Acc, typename In, typename V>
__device__ Acc combine_vector(Acc acc, const V &a, const V &b) {
  constexpr int width = sizeof(V) / sizeof(In);
  const In *ac = reinterpret_cast<const In *>(&a);
  const In *bc = reinterpret_cast<const In *>(&b);
#pragma unroll
  for (int k = 0; k < width; ++k) acc = Op::apply(acc, Map::template apply<Acc>(ac[k], bc[k]));
  return acc;
}

template <bool SQRT, typename Out, typename Acc>
__device__ Out finish(Acc v) {
  if constexpr (SQRT)
    return static_cast<Out>(sqrt(v));
  else
    return static_cast<Out>(v);
}

// The result, and its mirror in host memory when the caller gave one.
template <typename Out>
__device__ __forceinline__ void store_result(Out value, Out *result, glc_scalar_mirror *mirror,
                                             unsigned tag) {
  *result = value;
  if (mirror) glc_write_mirror(mirror, tag, value);
}

struct layout {
  size_t head;     // scalar elements before the first 16-byte boundary
  size_t vectors;  // whole vectors after them
  size_t tail;     // scalar elements after the vectors
};

template <int BLOCK, bool VECTOR, typename In, typename Acc, typename Out, typename Op,
          typename Map, bool SQRT>
__global__ void __launch_bounds__(BLOCK)
    single_pass(const In *x, const In *y, layout shape, Acc *partials, unsigned *blocks_done,
                Out *result, glc_scalar_mirror *mirror, unsigned tag) {
  using V = std::conditional_t<VECTOR, typename glc_vec16<In>::type, In>;
  constexpr size_t width = sizeof(V) / sizeof(In);
  const unsigned tid = threadIdx.x;
  Acc acc = Op::template identity<Acc>();

  // The few scalars around the vectors.
  const size_t thread = static_cast<size_t>(blockIdx.x) * BLOCK + tid;
  const size_t body_end = shape.head + shape.vectors * width;
  if (thread < shape.head)
    acc = Op::apply(acc, Map::template apply<Acc>(x[thread], Map::reads_y ? y[thread] : In{}));
  if (thread < shape.tail) {
    const size_t i = body_end + thread;
    acc = Op::apply(acc, Map::template apply<Acc>(x[i], Map::reads_y ? y[i] : In{}));
  }

  const V *xv = reinterpret_cast<const V *>(x + shape.head);
  const V *yv = reinterpret_cast<const V *>((Map::reads_y ? y : x) + shape.head);
  const size_t tile = static_cast<size_t>(BLOCK) * UNROLL;
  const size_t step = tile * gridDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * tile + tid;
  for (; i + (UNROLL - 1) * BLOCK < shape.vectors; i += step) {
    V a[UNROLL], b[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      a[u] = load_streaming(xv + i + u * BLOCK);
      if (Map::reads_y) b[u] = load_streaming(yv + i + u * BLOCK);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      acc = combine_vector<Op, Map, Acc, In>(acc, a[u], Map::reads_y ? b[u] : a[u]);
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {  // the one partial tile
    const size_t k = i + u * BLOCK;
    if (k < shape.vectors) {
      const V a = load_streaming(xv + k);
      acc = combine_vector<Op, Map, Acc, In>(acc, a, Map::reads_y ? load_streaming(yv + k) : a);
    }
  }

  acc = glc_block_reduce<Op>(acc);
  if (gridDim.x == 1) {
    if (tid == 0) store_result(finish<SQRT, Out>(acc), result, mirror, tag);
    return;
  }
  __shared__ bool last_block;
  if (tid == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();  // the partial is visible device-wide before the ticket is taken
    last_block = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;
  Acc v = Op::template identity<Acc>();
  for (unsigned b = tid; b < gridDim.x; b += BLOCK) v = Op::apply(v, __ldcg(partials + b));
  v = glc_block_reduce<Op>(v);
  if (tid == 0) store_result(finish<SQRT, Out>(v), result, mirror, tag);
}

template <int BLOCK, bool VECTOR, typename In, typename Acc, typename Out, typename Op,
          typename Map, bool SQRT>
int launch_single_pass(const In *x, const In *y, size_t n, Out *result, cudaStream_t stream,
                       glc_scalar_mirror *mirror, unsigned tag) {
  constexpr auto kernel = single_pass<BLOCK, VECTOR, In, Acc, Out, Op, Map, SQRT>;
  using V = std::conditional_t<VECTOR, typename glc_vec16<In>::type, In>;
  constexpr size_t width = sizeof(V) / sizeof(In);
  layout shape{0, 0, 0};
  if (VECTOR) {
    const size_t misaligned = (reinterpret_cast<uintptr_t>(x) % sizeof(V)) / sizeof(In);
    shape.head = misaligned ? width - misaligned : 0;
    if (shape.head > n) shape.head = n;
  }
  shape.vectors = (n - shape.head) / width;
  shape.tail = n - shape.head - shape.vectors * width;
  size_t wave = 0;
  int code = glc_full_wave_blocks<kernel>(BLOCK, &wave);
  if (code) return code;
  // Two waves: the blocks of the second start as the first ones finish, which hides the
  // reduction tail of each block (+0.6% over one wave at 2^28 float32).
  wave *= 2;
  const size_t cover = glc_blocks_to_cover(shape.vectors, BLOCK * UNROLL);
  const unsigned blocks = static_cast<unsigned>(cover == 0 ? 1 : cover < wave ? cover : wave);
  Acc *partials = nullptr;
  unsigned *blocks_done = nullptr;
  glc_reduce_scratch scratch(stream);
  if (blocks > 1) {
    void *memory = nullptr;
    const size_t partial_bytes = (blocks * sizeof(Acc) + 15) / 16 * 16;
    if ((code = scratch.get(partial_bytes + sizeof(unsigned), &memory))) return code;
    partials = static_cast<Acc *>(memory);
    blocks_done = reinterpret_cast<unsigned *>(static_cast<char *>(memory) + partial_bytes);
    if ((code = GLC_CUDA(cudaMemsetAsync, blocks_done, 0, sizeof(unsigned), stream))) return code;
  }
  return glc_launch(kernel, "reduce_single_pass", blocks, BLOCK, stream, x, y, shape, partials,
                    blocks_done, result, mirror, tag);
}

template <bool VECTOR, typename In, typename Acc, typename Out, typename Op, typename Map,
          bool SQRT>
int by_block(int block, const In *x, const In *y, size_t n, Out *result, cudaStream_t stream,
             glc_scalar_mirror *mirror = nullptr, unsigned tag = 0) {
  switch (block) {
#define GLC_SINGLE_PASS_BLOCK(B)                                                               \
  case B:                                                                                      \
    return launch_single_pass<B, VECTOR, In, Acc, Out, Op, Map, SQRT>(x, y, n, result, stream, \
                                                                      mirror, tag);
    GLC_SINGLE_PASS_BLOCK(32)
    GLC_SINGLE_PASS_BLOCK(64)
    GLC_SINGLE_PASS_BLOCK(128)
    GLC_SINGLE_PASS_BLOCK(256)
    GLC_SINGLE_PASS_BLOCK(512)
    GLC_SINGLE_PASS_BLOCK(1024)
#undef GLC_SINGLE_PASS_BLOCK
    default:
      return glc_fail(cudaErrorInvalidValue, "reduce_single_pass");
  }
}

// 16-byte loads need x and y equally misaligned, so that one scalar head aligns both.
template <typename In>
bool vectors_fit(const In *x, const In *y) {
  return (reinterpret_cast<uintptr_t>(x) - reinterpret_cast<uintptr_t>(y)) % 16 == 0;
}

// Block size of dot and norm2: the best of the reduce sweep (docs/labs/reduce.md).
constexpr int MAP_BLOCK = 512;

template <typename Map, bool SQRT>
int mapped_sum(int dtype, size_t n, const void *x, const void *y, void *result,
               cudaStream_t stream) {
  return glc_dispatch_floating(dtype, "glc_dot", [&](auto zero) {
    using In = decltype(zero);
    const In *xt = static_cast<const In *>(x), *yt = static_cast<const In *>(y ? y : x);
    if (!glc_all_aligned(sizeof(In), xt, yt))
      return glc_fail(cudaErrorMisalignedAddress, "glc_dot");
    In *out = static_cast<In *>(result);
    // float64 accumulation: float32 products are exact in it, and squares cannot overflow.
    return vectors_fit(xt, yt) ? by_block<true, In, double, In, glc_sum_op, Map, SQRT>(
                                     MAP_BLOCK, xt, yt, n, out, stream)
                               : by_block<false, In, double, In, glc_sum_op, Map, SQRT>(
                                     MAP_BLOCK, xt, yt, n, out, stream);
  });
}

int reduce_values(int block, int op, int dtype, size_t n, const void *x, void *result,
                  cudaStream_t stream, glc_scalar_mirror *mirror, unsigned tag) {
  return glc_dispatch_reduce(op, dtype, "glc_reduce", [&](auto in, auto reduce_op) {
    using In = decltype(in);
    using Op = decltype(reduce_op);
    using Acc = typename glc_acc_of<In, Op>::type;
    const In *xt = static_cast<const In *>(x);
    Acc *out = static_cast<Acc *>(result);
    return by_block<true, In, Acc, Acc, Op, map_value, false>(block, xt, xt, n, out, stream, mirror,
                                                              tag);
  });
}

}  // namespace

int glc_reduce_single_pass(int block, int op, int dtype, size_t n, const void *x, void *result,
                           cudaStream_t stream) {
  return reduce_values(block, op, dtype, n, x, result, stream, nullptr, 0);
}

extern "C" int glc_reduce_mirrored(int variant, int block, int op, int dtype, size_t n,
                                   const void *x, void *result, glc_scalar_mirror *mirror,
                                   unsigned tag, glc_stream stream) {
  if (variant != 12) return glc_fail(cudaErrorNotSupported, "glc_reduce_mirrored");
  if (n == 0 || result == nullptr || mirror == nullptr)
    return glc_fail(cudaErrorInvalidValue, "glc_reduce_mirrored");
  if (!glc_all_aligned(dtype == GLC_F64 ? 8 : 4, x))
    return glc_fail(cudaErrorMisalignedAddress, "glc_reduce_mirrored");
  return reduce_values(block, op, dtype, n, x, result, static_cast<cudaStream_t>(stream), mirror,
                       tag);
}

extern "C" int glc_dot(int dtype, size_t n, const void *x, const void *y, void *result,
                       glc_stream stream) {
  return mapped_sum<map_product, false>(dtype, n, x, y, result, static_cast<cudaStream_t>(stream));
}

extern "C" int glc_norm2(int dtype, size_t n, const void *x, void *result, glc_stream stream) {
  return mapped_sum<map_square, true>(dtype, n, x, nullptr, result,
                                      static_cast<cudaStream_t>(stream));
}
