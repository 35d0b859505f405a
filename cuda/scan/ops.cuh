// Internal to cuda/scan/: the scan lab's combining operators, its accumulator types, the
// dispatch from (op, dtype) to C++ types, and the block-wide scans its kernels share.
#ifndef GPULAB_SCAN_OPS_CUH
#define GPULAB_SCAN_OPS_CUH

#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>

#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/errors.cuh"
#include "scan.h"

// The largest and smallest values of each accumulator type: the identities of min and max.
template <typename T>
struct glc_scan_limits;
template <>
struct glc_scan_limits<float> {
  __host__ __device__ static float highest() { return INFINITY; }
  __host__ __device__ static float lowest() { return -INFINITY; }
};
template <>
struct glc_scan_limits<double> {
  __host__ __device__ static double highest() { return INFINITY; }
  __host__ __device__ static double lowest() { return -INFINITY; }
};
template <>
struct glc_scan_limits<int> {
  __host__ __device__ static int highest() { return INT_MAX; }
  __host__ __device__ static int lowest() { return INT_MIN; }
};
template <>
struct glc_scan_limits<long long> {
  __host__ __device__ static long long highest() { return LLONG_MAX; }
  __host__ __device__ static long long lowest() { return LLONG_MIN; }
};

// The operators. max and min propagate NaN as np.maximum.accumulate does: once a NaN is seen,
// every later prefix is NaN (NaN wins on either side, which keeps the operator associative).
struct glc_scan_sum {
  template <typename T>
  __host__ __device__ static T identity() {
    return T(0);
  }
  template <typename T>
  __host__ __device__ static T apply(T a, T b) {
    return a + b;
  }
  // CUB's form.
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

struct glc_scan_max {
  template <typename T>
  __host__ __device__ static T identity() {
    return glc_scan_limits<T>::lowest();
  }
  template <typename T>
  __host__ __device__ static T apply(T a, T b) {
    return (a != a || a > b) ? a : b;  // b when b is NaN and a is not
  }
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return apply(a, b);
  }
};

struct glc_scan_min {
  template <typename T>
  __host__ __device__ static T identity() {
    return glc_scan_limits<T>::highest();
  }
  template <typename T>
  __host__ __device__ static T apply(T a, T b) {
    return (a != a || a < b) ? a : b;
  }
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return apply(a, b);
  }
};

// The accumulator (and output) type: the input's, but int32 sums accumulate and return int64,
// as NumPy's cumsum does.
template <typename In, typename Op>
struct glc_scan_acc {
  using type = In;
};
template <>
struct glc_scan_acc<int, glc_scan_sum> {
  using type = long long;
};

// The lab scans float32, float64, int32 and int64 with sum, max and min, and compacts them.
using glc_scan_dtypes = glc_dtypes<GLC_F32, GLC_F64, GLC_I32, GLC_I64>;
using glc_scan_ops =
    glc_ops<glc_op_case<GLC_SCAN_SUM, glc_scan_sum>, glc_op_case<GLC_SCAN_MAX, glc_scan_max>,
            glc_op_case<GLC_SCAN_MIN, glc_scan_min>>;

// Calls body(In{}, Op{}) for (op, dtype); other codes are refused with cudaErrorInvalidValue.
template <typename Body>
int glc_dispatch_scan(int op, int dtype, const char *caller, Body &&body) {
  return glc_dispatch_dtype_op(glc_scan_dtypes{}, glc_scan_ops{}, op, dtype, caller, body);
}

// Calls body(T{}) for the element type of dtype (compaction moves elements, whatever they are).
template <typename Body>
int glc_dispatch_element(int dtype, const char *caller, Body &&body) {
  return glc_dispatch_dtype(glc_scan_dtypes{}, dtype, caller, body);
}

// Blelloch's work-efficient scan (S3 5.3) of one chunk of 2 x blockDim.x elements [begin, end)
// of x, in t (shared, 2 x blockDim.x values): an up-sweep builds partial sums in place, the root
// is cleared, a down-sweep hands each node its exclusive prefix. Writes op(carry, scan) to y
// and returns the chunk's total to every thread. The tree reads and writes only t, never x or y:
// S3's listing reads the output array where it means the input (GPU Gems 3's erratum).
template <typename Op, typename In, typename Acc>
__device__ Acc glc_blelloch_chunk(const In *x, Acc *y, size_t begin, size_t end, Acc carry,
                                  bool inclusive, Acc *t) {
  const unsigned tid = threadIdx.x, half = blockDim.x, width = 2 * half;
  const size_t i0 = begin + tid, i1 = begin + half + tid;
  const Acc a0 = i0 < end ? static_cast<Acc>(x[i0]) : Op::template identity<Acc>();
  const Acc a1 = i1 < end ? static_cast<Acc>(x[i1]) : Op::template identity<Acc>();
  t[tid] = a0;
  t[half + tid] = a1;
  unsigned offset = 1;
  for (unsigned d = half; d > 0; d >>= 1, offset <<= 1) {
    __syncthreads();
    if (tid < d) {
      const unsigned left = offset * (2 * tid + 1) - 1, right = offset * (2 * tid + 2) - 1;
      t[right] = Op::apply(t[left], t[right]);
    }
  }
  __syncthreads();
  const Acc total = t[width - 1];
  __syncthreads();  // every thread has the total before the root is cleared
  if (tid == 0) t[width - 1] = Op::template identity<Acc>();
  for (unsigned d = 1; d < width; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (tid < d) {
      const unsigned left = offset * (2 * tid + 1) - 1, right = offset * (2 * tid + 2) - 1;
      const Acc left_sum = t[left];
      t[left] = t[right];
      t[right] = Op::apply(t[right], left_sum);
    }
  }
  __syncthreads();
  const Acc e0 = t[tid], e1 = t[half + tid];
  if (i0 < end) y[i0] = Op::apply(carry, inclusive ? Op::apply(e0, a0) : e0);
  if (i1 < end) y[i1] = Op::apply(carry, inclusive ? Op::apply(e1, a1) : e1);
  __syncthreads();  // t is free for the next chunk
  return total;
}

#endif
