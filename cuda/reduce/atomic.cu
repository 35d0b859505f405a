// Reduce variants 7-10: S1's "268M float reduction" kernels (Eurographics 2021 tutorial), one
// element per thread, each finishing with atomics on one global accumulator. CUDA has atomic
// add for float, double and 64-bit integers and atomic min/max for integers only, so these
// variants do sum on every dtype but min and max on int32 alone.
#include <type_traits>

#include "cuda/core/launch.cuh"
#include "ops.cuh"
#include "families.cuh"

namespace {

// Whether an atomic exists for combining Acc values with Op.
template <typename Acc, typename Op>
constexpr bool has_atomic = std::is_same_v<Op, glc_sum_op> ||
                            (std::is_same_v<Acc, int> && !std::is_same_v<Op, glc_sum_op>);

template <typename Op, typename Acc>
__device__ void atomic_combine(Acc *target, Acc v) {
  if constexpr (std::is_same_v<Op, glc_sum_op>) {
    if constexpr (std::is_same_v<Acc, long long>)
      atomicAdd(reinterpret_cast<unsigned long long *>(target), static_cast<unsigned long long>(v));
    else
      atomicAdd(target, v);
  } else if constexpr (std::is_same_v<Op, glc_min_op>) {
    atomicMin(target, v);
  } else {
    atomicMax(target, v);
  }
}

template <typename Acc, typename Op>
__global__ void set_identity(Acc *accumulator) {
  *accumulator = Op::template identity<Acc>();
}

template <typename Acc>
__global__ void copy_result(const Acc *accumulator, Acc *result) {
  *result = *accumulator;
}

template <typename In, typename Acc, typename Op>
__device__ Acc element_or_identity(const In *x, size_t n, size_t i) {
  return i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
}

// Variant 7, S1's SharedShuffle: the shared-memory tree down to 32 values, the last warp with
// shuffles, one global atomic per block.
template <typename In, typename Acc, typename Op>
__global__ void shared_shuffle(const In *x, size_t n, Acc *accumulator) {
  extern __shared__ __align__(16) unsigned char raw[];
  Acc *s = reinterpret_cast<Acc *>(raw);
  const unsigned tid = threadIdx.x;
  s[tid] =
      element_or_identity<In, Acc, Op>(x, n, static_cast<size_t>(blockIdx.x) * blockDim.x + tid);
  for (unsigned stride = blockDim.x / 2; stride > 16; stride >>= 1) {
    __syncthreads();
    if (tid < stride) s[tid] = Op::apply(s[tid], s[tid + stride]);
  }
  __syncthreads();
  if (tid < 32) {
    const Acc v = glc_warp_reduce<Op>(s[tid]);
    if (tid == 0) atomic_combine<Op>(accumulator, v);
  }
}

// Variant 8, S1's AtomicGlobal: every element is one atomic on the same global address.
template <typename In, typename Acc, typename Op>
__global__ void atomic_global(const In *x, size_t n, Acc *accumulator) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomic_combine<Op>(accumulator, static_cast<Acc>(x[i]));
}

// Variant 9, S1's AtomicShared: atomics on one shared variable per block, then one global.
template <typename In, typename Acc, typename Op>
__global__ void atomic_shared(const In *x, size_t n, Acc *accumulator) {
  __shared__ Acc block_value;
  if (threadIdx.x == 0) block_value = Op::template identity<Acc>();
  __syncthreads();
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomic_combine<Op>(&block_value, static_cast<Acc>(x[i]));
  __syncthreads();
  if (threadIdx.x == 0) atomic_combine<Op>(accumulator, block_value);
}

// Variant 10, S1's ReduceShared: the whole shared-memory tree, then one global atomic per block.
template <typename In, typename Acc, typename Op>
__global__ void reduce_shared(const In *x, size_t n, Acc *accumulator) {
  extern __shared__ __align__(16) unsigned char raw[];
  Acc *s = reinterpret_cast<Acc *>(raw);
  const unsigned tid = threadIdx.x;
  s[tid] =
      element_or_identity<In, Acc, Op>(x, n, static_cast<size_t>(blockIdx.x) * blockDim.x + tid);
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    __syncthreads();
    if (tid < stride) s[tid] = Op::apply(s[tid], s[tid + stride]);
  }
  if (tid == 0) atomic_combine<Op>(accumulator, s[0]);
}

template <typename In, typename Op>
int atomic_variant(int variant, int block, size_t n, const In *x, void *result,
                   cudaStream_t stream) {
  using Acc = typename glc_acc_of<In, Op>::type;
  if constexpr (!has_atomic<Acc, Op>) {
    return glc_fail(cudaErrorNotSupported, "glc_reduce");
  } else {
    using kernel_t = void (*)(const In *, size_t, Acc *);
    static constexpr kernel_t kernels[] = {shared_shuffle<In, Acc, Op>, atomic_global<In, Acc, Op>,
                                           atomic_shared<In, Acc, Op>, reduce_shared<In, Acc, Op>};
    static const char *const names[] = {"reduce_shared_shuffle", "reduce_atomic_global",
                                        "reduce_atomic_shared", "reduce_shared_tree_atomic"};
    const int k = variant - 7;
    const bool tree = variant == 7 || variant == 10;
    const size_t blocks = glc_blocks_to_cover(n, block);
    if (blocks > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, names[k]);
    // The accumulator lives in device memory: result may be mapped host memory, where atomics
    // from the device are not guaranteed.
    glc_reduce_scratch scratch(stream);
    void *accumulator = nullptr;
    int code = scratch.get(sizeof(Acc), &accumulator);
    Acc *acc = static_cast<Acc *>(accumulator);
    if (!code) code = glc_launch(set_identity<Acc, Op>, "reduce_set_identity", 1, 1, stream, acc);
    if (!code)
      code = glc_launch_shared(
          kernels[k], names[k], static_cast<unsigned>(blocks), static_cast<unsigned>(block),
          tree ? static_cast<unsigned>(block * sizeof(Acc)) : 0u, stream, x, n, acc);
    if (!code)
      code = glc_launch(copy_result<Acc>, "reduce_copy_result", 1, 1, stream, acc,
                        static_cast<Acc *>(result));
    return code;
  }
}

}  // namespace

int glc_reduce_atomic(int variant, int block, int op, int dtype, size_t n, const void *x,
                      void *result, cudaStream_t stream) {
  return glc_dispatch_reduce(op, dtype, "glc_reduce", [&](auto in, auto reduce_op) {
    using In = decltype(in);
    return atomic_variant<In, decltype(reduce_op)>(variant, block, n, static_cast<const In *>(x),
                                                   result, stream);
  });
}
