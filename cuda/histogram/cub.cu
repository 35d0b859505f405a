// Histogram variant 4: CUB's DeviceHistogram::HistogramEven from the toolkit (CCCL), the
// reference the ladder is measured against, for integer data. CUB's levels are half-open, so
// the value lo + bins, which np.histogram's closed last bin counts, is moved into the last bin on
// the way in (a transform iterator: CUB reads through it, no kernel of ours runs). Float data is
// not offered: CUB's float binning ((x - lo) * scale) puts some values on an edge in another bin
// than NumPy's multiply-then-correct does.
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_histogram.cuh>
#include <cstdint>
#include <type_traits>

#include "binning.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"

namespace {

// v, with the closed right edge hi moved into the last bin. 8- and 16-bit data widen to int,
// int32 to long long (lo + bins may pass INT32_MAX).
template <typename T, typename W>
struct CloseLastBin {
  W hi;
  __host__ __device__ W operator()(T v) const {
    const W w = static_cast<W>(v);
    return w == hi ? hi - 1 : w;
  }
};

template <typename T>
int cub_histogram(size_t n, const T *x, long long lo, int bins, unsigned long long *counts,
                  cudaStream_t stream) {
  using W = std::conditional_t<(sizeof(T) <= 2), int, long long>;
  const W lower = static_cast<W>(lo), upper = static_cast<W>(lo + bins);
  auto samples = thrust::make_transform_iterator(x, CloseLastBin<T, W>{upper});
  const long long items = static_cast<long long>(n);
  return glc_with_cub_scratch(
      [&](void *temp, size_t &bytes) {
        return GLC_CUDA(cub::DeviceHistogram::HistogramEven, temp, bytes, samples, counts, bins + 1,
                        lower, upper, items, stream);
      },
      stream);
}

}  // namespace

// Called by glc_histogram with integer data whose range meets the type (so lo and lo + bins fit
// W) and n >= 1; counts are zeroed already.
int glc_histogram_cub(int dtype, size_t n, const void *x, long long lo, int bins,
                      unsigned long long *counts, cudaStream_t stream) {
  switch (dtype) {
    case GLC_U8:
      return cub_histogram(n, static_cast<const uint8_t *>(x), lo, bins, counts, stream);
    case GLC_I8:
      return cub_histogram(n, static_cast<const int8_t *>(x), lo, bins, counts, stream);
    case GLC_U16:
      return cub_histogram(n, static_cast<const uint16_t *>(x), lo, bins, counts, stream);
    case GLC_I16:
      return cub_histogram(n, static_cast<const int16_t *>(x), lo, bins, counts, stream);
    case GLC_I32:
      return cub_histogram(n, static_cast<const int32_t *>(x), lo, bins, counts, stream);
    default:
      return glc_fail(cudaErrorNotSupported, "glc_histogram_cub(dtype)");
  }
}
