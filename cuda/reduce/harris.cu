// Reduce variants 0-6: Mark Harris's seven reduction kernels (S0 chapter 5; the CUDA samples'
// numbering, so variant k is his kernel k+1). Each pass writes one partial per block; passes
// repeat over the partials until one value is left, as the samples do.
#include "cuda/core/launch.cuh"
#include "ops.cuh"
#include "families.cuh"

namespace {

template <typename T>
__device__ T *dynamic_shared() {
  extern __shared__ __align__(16) unsigned char glc_reduce_shared[];
  return reinterpret_cast<T *>(glc_reduce_shared);
}

// Variant 0: interleaved addressing. `tid % (2*stride)` leaves most threads of every warp idle
// and the modulo is slow.
template <typename In, typename Acc, typename Op>
__global__ void interleaved_divergent(const In *x, size_t n, Acc *out) {
  Acc *s = dynamic_shared<Acc>();
  const unsigned tid = threadIdx.x;
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + tid;
  s[tid] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (tid % (2 * stride) == 0) s[tid] = Op::apply(s[tid], s[tid + stride]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Variant 1: interleaved addressing with a strided index: no divergence, but threads of a warp
// hit the same shared-memory banks (2-way at stride 1, growing with the stride).
template <typename In, typename Acc, typename Op>
__global__ void interleaved_strided(const In *x, size_t n, Acc *out) {
  Acc *s = dynamic_shared<Acc>();
  const unsigned tid = threadIdx.x;
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + tid;
  s[tid] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    const unsigned index = 2 * stride * tid;
    if (index < blockDim.x) s[index] = Op::apply(s[index], s[index + stride]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Variant 2: sequential addressing: active threads are contiguous and conflict-free, but half
// of the threads are idle from the first step on.
template <typename In, typename Acc, typename Op>
__global__ void sequential(const In *x, size_t n, Acc *out) {
  Acc *s = dynamic_shared<Acc>();
  const unsigned tid = threadIdx.x;
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + tid;
  s[tid] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] = Op::apply(s[tid], s[tid + stride]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Two elements per thread, `span` apart, combined while loading (variants 3-6).
template <typename In, typename Acc, typename Op>
__device__ Acc load_pair(const In *x, size_t n, size_t i, unsigned span) {
  Acc v = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
  if (i + span < n) v = Op::apply(v, static_cast<Acc>(x[i + span]));
  return v;
}

// Variant 3: first add during load: a block reduces 2*block elements, so half the blocks.
template <typename In, typename Acc, typename Op>
__global__ void first_add_on_load(const In *x, size_t n, Acc *out) {
  Acc *s = dynamic_shared<Acc>();
  const unsigned tid = threadIdx.x;
  const size_t i = static_cast<size_t>(blockIdx.x) * 2 * blockDim.x + tid;
  s[tid] = load_pair<In, Acc, Op>(x, n, i, blockDim.x);
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] = Op::apply(s[tid], s[tid + stride]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// The last warp's six steps without __syncthreads. S0 and Harris run them on a `volatile`
// array and rely on the warp executing in lockstep; since Volta, independent thread scheduling
// lets lanes of a warp drift apart, so a lane may read its partner's slot before the partner
// wrote it. Here every step reads, then __syncwarp(), then writes, then __syncwarp(): the
// warp's lanes meet between each read and write. Called by threads 0-31 with their value v;
// lane 0 returns the block's result.
template <typename Op, typename Acc>
__device__ Acc last_warp(Acc *s, unsigned tid, unsigned block, Acc v) {
#pragma unroll
  for (unsigned offset = 32; offset > 0; offset >>= 1) {
    if (tid + offset < block) v = Op::apply(v, s[tid + offset]);
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  return v;
}

// Variant 4: variant 3 with the last warp unrolled (above).
template <typename In, typename Acc, typename Op>
__global__ void unroll_last_warp(const In *x, size_t n, Acc *out) {
  Acc *s = dynamic_shared<Acc>();
  const unsigned tid = threadIdx.x;
  const size_t i = static_cast<size_t>(blockIdx.x) * 2 * blockDim.x + tid;
  Acc v = load_pair<In, Acc, Op>(x, n, i, blockDim.x);
  s[tid] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
    if (tid < stride) s[tid] = v = Op::apply(v, s[tid + stride]);
    __syncthreads();
  }
  if (tid < 32) v = last_warp<Op>(s, tid, blockDim.x, v);
  if (tid == 0) out[blockIdx.x] = v;
}

// The tree of variants 5 and 6 with the block size known at compile time: every `if` on BLOCK
// and the loop vanish, leaving straight-line code.
template <unsigned BLOCK, typename Op, typename Acc>
__device__ Acc unrolled_tree(Acc *s, unsigned tid, Acc v) {
  s[tid] = v;
  __syncthreads();
#pragma unroll
  for (unsigned stride = 512; stride > 32; stride >>= 1) {
    if (BLOCK > stride) {
      if (tid < stride) s[tid] = v = Op::apply(v, s[tid + stride]);
      __syncthreads();
    }
  }
  if (tid < 32) v = last_warp<Op>(s, tid, BLOCK, v);
  return v;
}

// Variant 5: complete unroll, the block size a template parameter.
template <unsigned BLOCK, typename In, typename Acc, typename Op>
__global__ void __launch_bounds__(BLOCK) complete_unroll(const In *x, size_t n, Acc *out) {
  __shared__ Acc s[BLOCK];
  const unsigned tid = threadIdx.x;
  const size_t i = static_cast<size_t>(blockIdx.x) * 2 * BLOCK + tid;
  Acc v = unrolled_tree<BLOCK, Op>(s, tid, load_pair<In, Acc, Op>(x, n, i, BLOCK));
  if (tid == 0) out[blockIdx.x] = v;
}

// Variant 6: algorithm cascading: a grid of one resident wave, each thread first reducing many
// elements (two per step, a grid apart) in registers, then the tree of variant 5.
template <unsigned BLOCK, typename In, typename Acc, typename Op>
__global__ void __launch_bounds__(BLOCK) cascaded(const In *x, size_t n, Acc *out) {
  __shared__ Acc s[BLOCK];
  const unsigned tid = threadIdx.x;
  const size_t step = static_cast<size_t>(gridDim.x) * 2 * BLOCK;
  Acc v = Op::template identity<Acc>();
  for (size_t i = static_cast<size_t>(blockIdx.x) * 2 * BLOCK + tid; i < n; i += step)
    v = Op::apply(v, load_pair<In, Acc, Op>(x, n, i, BLOCK));
  v = unrolled_tree<BLOCK, Op>(s, tid, v);
  if (tid == 0) out[blockIdx.x] = v;
}

template <typename In, typename Acc>
using pass_kernel = void (*)(const In *, size_t, Acc *);

// The kernel of a pass and its launch shape.
template <typename In, typename Acc>
struct pass {
  pass_kernel<In, Acc> kernel;
  const char *name;
  unsigned shared_bytes;
  unsigned per_block;  // input elements one block reduces (0: grid-stride, any number)
};

// Kernel 5 or 6 for a block size: a template argument, so one instance per size.
template <typename In, typename Acc, typename Op, bool CASCADED>
pass_kernel<In, Acc> unrolled_for_block(int block) {
  switch (block) {
#define GLC_HARRIS_BLOCK(B) \
  case B:                   \
    return CASCADED ? cascaded<B, In, Acc, Op> : complete_unroll<B, In, Acc, Op>;
    GLC_HARRIS_BLOCK(32)
    GLC_HARRIS_BLOCK(64)
    GLC_HARRIS_BLOCK(128)
    GLC_HARRIS_BLOCK(256)
    GLC_HARRIS_BLOCK(512)
    GLC_HARRIS_BLOCK(1024)
#undef GLC_HARRIS_BLOCK
    default:
      return nullptr;
  }
}

template <typename In, typename Acc, typename Op>
pass<In, Acc> pass_of(int variant, int block) {
  const unsigned dynamic = static_cast<unsigned>(block * sizeof(Acc));
  const unsigned pair = 2u * static_cast<unsigned>(block), one = static_cast<unsigned>(block);
  switch (variant) {
    case 0:
      return {interleaved_divergent<In, Acc, Op>, "reduce_interleaved_divergent", dynamic, one};
    case 1:
      return {interleaved_strided<In, Acc, Op>, "reduce_interleaved_strided", dynamic, one};
    case 2:
      return {sequential<In, Acc, Op>, "reduce_sequential", dynamic, one};
    case 3:
      return {first_add_on_load<In, Acc, Op>, "reduce_first_add_on_load", dynamic, pair};
    case 4:
      return {unroll_last_warp<In, Acc, Op>, "reduce_unroll_last_warp", dynamic, pair};
    case 5:
      return {unrolled_for_block<In, Acc, Op, false>(block), "reduce_complete_unroll", 0, pair};
    default:
      return {unrolled_for_block<In, Acc, Op, true>(block), "reduce_cascaded", 0, 0};
  }
}

template <typename In, typename Acc>
int run_pass(const pass<In, Acc> &p, int block, size_t blocks, const In *x, size_t n, Acc *out,
             cudaStream_t stream) {
  if (p.kernel == nullptr) return glc_fail(cudaErrorInvalidValue, p.name);
  return glc_launch_shared(p.kernel, p.name, static_cast<unsigned>(blocks),
                           static_cast<unsigned>(block), p.shared_bytes, stream, x, n, out);
}

// Blocks of a pass over n elements. Variant 6 runs one resident wave first, then one block.
template <typename In, typename Acc>
int blocks_of(const pass<In, Acc> &p, int block, size_t n, bool first, size_t *blocks) {
  if (p.per_block) {
    *blocks = glc_blocks_to_cover(n, static_cast<int>(p.per_block));
    return *blocks > glc_max_grid_x ? glc_fail(cudaErrorInvalidConfiguration, p.name) : 0;
  }
  if (!first) {
    *blocks = 1;
    return 0;
  }
  int sm_count = 0, per_sm = 0;
  int code = glc_current_sm_count(&sm_count);
  if (!code)
    code = GLC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, p.kernel, block, 0);
  const size_t wave = static_cast<size_t>(sm_count) * static_cast<size_t>(per_sm > 0 ? per_sm : 1);
  const size_t cover = glc_blocks_to_cover(n, 2 * block);
  *blocks = cover < wave ? cover : wave;
  return code;
}

template <typename In, typename Op>
int harris(int variant, int block, size_t n, const In *x, void *result, cudaStream_t stream) {
  using Acc = typename glc_acc_of<In, Op>::type;
  const pass<In, Acc> first = pass_of<In, Acc, Op>(variant, block);
  const pass<Acc, Acc> later = pass_of<Acc, Acc, Op>(variant, block);
  size_t blocks = 0;
  int code = blocks_of(first, block, n, true, &blocks);
  if (code) return code;
  if (blocks == 1) return run_pass(first, block, 1, x, n, static_cast<Acc *>(result), stream);
  // Ping-pong buffers for the partials: the first pass's, and the largest later one's.
  size_t second = 0;
  if ((code = blocks_of(later, block, blocks, false, &second))) return code;
  glc_reduce_scratch scratch(stream);
  void *memory = nullptr;
  if ((code = scratch.get((blocks + second) * sizeof(Acc), &memory))) return code;
  Acc *buffers[2] = {static_cast<Acc *>(memory), static_cast<Acc *>(memory) + blocks};
  if ((code = run_pass(first, block, blocks, x, n, buffers[0], stream))) return code;
  for (int which = 0;; which ^= 1) {
    const size_t count = blocks;
    if ((code = blocks_of(later, block, count, false, &blocks))) return code;
    Acc *out = blocks == 1 ? static_cast<Acc *>(result) : buffers[which ^ 1];
    if ((code = run_pass(later, block, blocks, buffers[which], count, out, stream))) return code;
    if (blocks == 1) return 0;
  }
}

}  // namespace

int glc_reduce_harris(int variant, int block, int op, int dtype, size_t n, const void *x,
                      void *result, cudaStream_t stream) {
  return glc_dispatch_reduce(op, dtype, "glc_reduce", [&](auto in, auto reduce_op) {
    using In = decltype(in);
    return harris<In, decltype(reduce_op)>(variant, block, n, static_cast<const In *>(x), result,
                                           stream);
  });
}
