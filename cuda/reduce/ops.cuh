// Internal to cuda/reduce/: what the reduce lab's kernels share: the combining operators, the
// accumulator types, warp and block reductions, and the dispatch from (op, dtype) to C++ types.
#ifndef GPULAB_REDUCE_OPS_CUH
#define GPULAB_REDUCE_OPS_CUH

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstddef>

#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/errors.cuh"
#include "reduce.h"

// The combining operators. min and max propagate NaN as NumPy does: a NaN on either side wins.
struct glc_sum_op {
  template <typename T>
  __host__ __device__ static T identity() {
    return T(0);
  }
  template <typename T>
  __host__ __device__ static T apply(T a, T b) {
    return a + b;
  }
  // CUB's form: accumulator first; the input converts to it (int32 into an int64 sum).
  template <typename A, typename B>
  __host__ __device__ A operator()(A a, B b) const {
    return apply(a, static_cast<A>(b));
  }
};

template <typename T>
__host__ __device__ inline bool glc_is_nan(T v) {
  return v != v;  // false for integers
}

template <typename T>
__host__ __device__ inline T glc_highest();
template <>
__host__ __device__ inline float glc_highest<float>() {
  return INFINITY;
}
template <>
__host__ __device__ inline double glc_highest<double>() {
  return INFINITY;
}
template <>
__host__ __device__ inline int glc_highest<int>() {
  return INT_MAX;
}

template <typename T>
__host__ __device__ inline T glc_lowest() {
  return -glc_highest<T>();
}
template <>
__host__ __device__ inline int glc_lowest<int>() {
  return INT_MIN;
}

struct glc_min_op {
  template <typename T>
  __host__ __device__ static T identity() {
    return glc_highest<T>();
  }
  template <typename T>
  __host__ __device__ static T apply(T a, T b) {
    return (a < b || glc_is_nan(a)) ? a : b;
  }
  template <typename A, typename B>
  __host__ __device__ A operator()(A a, B b) const {
    return apply(a, static_cast<A>(b));
  }
};

struct glc_max_op {
  template <typename T>
  __host__ __device__ static T identity() {
    return glc_lowest<T>();
  }
  template <typename T>
  __host__ __device__ static T apply(T a, T b) {
    return (a > b || glc_is_nan(a)) ? a : b;
  }
  template <typename A, typename B>
  __host__ __device__ A operator()(A a, B b) const {
    return apply(a, static_cast<A>(b));
  }
};

// The accumulator (and result) type of reducing In with Op: int32 sums widen to int64, as
// NumPy's do; everything else keeps its type.
template <typename In, typename Op>
struct glc_acc_of {
  using type = In;
};
template <>
struct glc_acc_of<int, glc_sum_op> {
  using type = long long;
};

// Warp reduction with shuffles: lane 0 ends with the warp's value. The full mask is right
// because every caller reaches it with all 32 lanes.
template <typename Op, typename T>
__device__ inline T glc_warp_reduce(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = Op::apply(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// Block reduction: warps reduce with shuffles, warp 0 reduces the warps' values. Thread 0 ends
// with the block's value. block must be a multiple of 32; every thread must call it. The first
// barrier lets a block call it twice: warp 0 may still be reading the first call's values.
template <typename Op, typename T>
__device__ inline T glc_block_reduce(T v) {
  __shared__ T warp_values[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  v = glc_warp_reduce<Op>(v);
  if (lane == 0) warp_values[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_values[lane] : Op::template identity<T>();
    v = glc_warp_reduce<Op>(v);
  }
  return v;
}

// The lab reduces float32, float64 and int32 with sum, min and max.
using glc_reduce_dtypes = glc_dtypes<GLC_F32, GLC_F64, GLC_I32>;
using glc_reduce_ops =
    glc_ops<glc_op_case<GLC_REDUCE_SUM, glc_sum_op>, glc_op_case<GLC_REDUCE_MIN, glc_min_op>,
            glc_op_case<GLC_REDUCE_MAX, glc_max_op>>;

// Calls body(In{}, Op{}) for the C++ input type and operator of (op, dtype).
template <typename Body>
int glc_dispatch_reduce(int op, int dtype, const char *caller, Body &&body) {
  return glc_dispatch_dtype_op(glc_reduce_dtypes{}, glc_reduce_ops{}, op, dtype, caller, body);
}

// Device memory that one reduction needs for its partial results, taken from the stream-ordered
// pool and given back on the same stream, so it is never touched after the work that uses it.
class glc_reduce_scratch {
 public:
  explicit glc_reduce_scratch(cudaStream_t stream) : stream_(stream) {}
  glc_reduce_scratch(const glc_reduce_scratch &) = delete;
  glc_reduce_scratch &operator=(const glc_reduce_scratch &) = delete;
  ~glc_reduce_scratch() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);
  }
  int get(size_t bytes, void **ptr) {
    int code = GLC_CUDA(cudaMallocAsync, &ptr_, bytes, stream_);
    *ptr = ptr_;
    return code;
  }

 private:
  cudaStream_t stream_;
  void *ptr_ = nullptr;
};

#endif
