// Scan variant 6 and compaction variant 2: CUB's DeviceScan and DeviceSelect from the toolkit
// (CCCL), the references the ladders are measured against. Sums call DeviceScan::InclusiveSum /
// ExclusiveSum: only a primitive operator (cuda::std::plus) gets CUB's tuned policy for the
// architecture (sm90_tuning in cub/device/dispatch/tuning/tuning_scan.cuh). On the raw pointers
// where the input is the accumulator (float32, float64, int64: its vectorized, warp-transposed
// loads; 0.875 ms against 1.018 through a functor and an iterator at 2^28 float32 on the H100);
// through an iterator that converts int32 to int64 otherwise (1.29 ms against 1.58 through the
// lab's functor at 2^28; docs/labs/scan.md), so the reference is CUB at its best. Max and min take
// the lab's NaN-propagating operators through the same iterator (DeviceScan::InclusiveScan /
// ExclusiveScan, CUB's generic policy).
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <type_traits>

#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"
#include "ops.cuh"

namespace {

template <typename Acc>
struct convert_to {
  template <typename In>
  __host__ __device__ Acc operator()(In v) const {
    return static_cast<Acc>(v);
  }
};

template <typename T>
struct is_nonzero {
  __host__ __device__ bool operator()(T v) const { return v != T(0); }
};

template <typename Op, typename In>
int cub_scan(bool inclusive, size_t n, const In *x, void *out, cudaStream_t stream) {
  using Acc = typename glc_scan_acc<In, Op>::type;
  Acc *y = static_cast<Acc *>(out);
  const long long items = static_cast<long long>(n);
  auto in = thrust::make_transform_iterator(x, convert_to<Acc>{});
  // the same sum as glc_scan_sum's a + b, through CUB's tuned path: on x itself where it is
  // already the accumulator type, through the conversion otherwise
  auto sum = [&](auto input) {
    auto run = [&](void *temp, size_t &bytes) {
      return inclusive
                 ? GLC_CUDA(cub::DeviceScan::InclusiveSum, temp, bytes, input, y, items, stream)
                 : GLC_CUDA(cub::DeviceScan::ExclusiveSum, temp, bytes, input, y, items, stream);
    };
    return glc_with_cub_scratch(run, stream);
  };
  if constexpr (std::is_same_v<Op, glc_scan_sum> && std::is_same_v<In, Acc>) {
    return sum(x);
  } else if constexpr (std::is_same_v<Op, glc_scan_sum>) {
    return sum(in);
  } else {
    const Acc init = Op::template identity<Acc>();
    auto run = [&](void *temp, size_t &bytes) {
      return inclusive
                 ? GLC_CUDA(cub::DeviceScan::InclusiveScan, temp, bytes, in, y, Op{}, items, stream)
                 : GLC_CUDA(cub::DeviceScan::ExclusiveScan, temp, bytes, in, y, Op{}, init, items,
                            stream);
    };
    return glc_with_cub_scratch(run, stream);
  }
}

template <typename T>
int cub_select(size_t n, const T *x, const unsigned char *mask, void *out, bool index_out,
               long long *count, cudaStream_t stream) {
  const long long items = static_cast<long long>(n);
  auto run = [&](void *temp, size_t &bytes) {
    if (index_out) {
      auto flags = thrust::make_transform_iterator(x, is_nonzero<T>{});
      return GLC_CUDA(cub::DeviceSelect::Flagged, temp, bytes,
                      thrust::counting_iterator<long long>(0), flags, static_cast<long long *>(out),
                      count, items, stream);
    }
    if (mask)
      return GLC_CUDA(cub::DeviceSelect::Flagged, temp, bytes, x, mask, static_cast<T *>(out),
                      count, items, stream);
    return GLC_CUDA(cub::DeviceSelect::If, temp, bytes, x, static_cast<T *>(out), count, items,
                    is_nonzero<T>{}, stream);
  };
  return glc_with_cub_scratch(run, stream);
}

}  // namespace

int glc_scan_cub(int op, int inclusive, int dtype, size_t n, const void *x, void *y,
                 cudaStream_t stream) {
  return glc_dispatch_scan(op, dtype, "glc_scan", [&](auto in, auto scan_op) {
    using In = decltype(in);
    return cub_scan<decltype(scan_op)>(inclusive != 0, n, static_cast<const In *>(x), y, stream);
  });
}

int glc_compact_cub(int dtype, size_t n, const void *x, const unsigned char *mask, void *out,
                    bool index_out, long long *count, cudaStream_t stream) {
  return glc_dispatch_element(dtype, "glc_compact", [&](auto element) {
    using T = decltype(element);
    return cub_select<T>(n, static_cast<const T *>(x), mask, out, index_out, count, stream);
  });
}
