// glc_histogram: the histogram lab's entry point, from a variant id to its family (atomic.cu,
// lane_columns.cu); and the data range that range=None asks for.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "binning.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "histogram.h"

namespace {

size_t element_size(int dtype) {
  switch (dtype) {
    case GLC_U8:
    case GLC_I8:
      return 1;
    case GLC_U16:
    case GLC_I16:
      return 2;
    case GLC_I32:
    case GLC_F32:
      return 4;
    case GLC_F64:
      return 8;
    default:
      return 0;
  }
}

// Whether integer data of dtype can land in [lo, lo + bins] at all. When it can, lo lies within
// [type min - bins, type max], which the 32-bit subtraction of 8- and 16-bit data holds.
bool integer_range_meets_type(int dtype, long long lo, int bins) {
  long long low = INT32_MIN, high = INT32_MAX;
  if (dtype == GLC_U8) low = 0, high = UINT8_MAX;
  if (dtype == GLC_I8) low = INT8_MIN, high = INT8_MAX;
  if (dtype == GLC_U16) low = 0, high = UINT16_MAX;
  if (dtype == GLC_I16) low = INT16_MIN, high = INT16_MAX;
  return lo <= high && lo + bins >= low;
}

// range=None: each block's smallest and largest value and whether it saw a NaN, as three
// doubles; the host combines the blocks' partials.
template <typename T>
__global__ void histogram_data_range(const T *__restrict__ x, size_t n, double *partials) {
  __shared__ double warp_lo[32], warp_hi[32];
  __shared__ int warp_nan[32];
  double lo = INFINITY, hi = -INFINITY;
  int nan = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = static_cast<double>(x[i]);
    if (v != v) {
      nan = 1;
    } else {
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    lo = fmin(lo, __shfl_down_sync(0xffffffffu, lo, offset));
    hi = fmax(hi, __shfl_down_sync(0xffffffffu, hi, offset));
    nan |= __shfl_down_sync(0xffffffffu, nan, offset);
  }
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if ((threadIdx.x & 31) == 0) warp_lo[warp] = lo, warp_hi[warp] = hi, warp_nan[warp] = nan;
  __syncthreads();  // every warp's partial is in
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; ++w) {
      lo = fmin(lo, warp_lo[w]);
      hi = fmax(hi, warp_hi[w]);
      nan |= warp_nan[w];
    }
    partials[3 * blockIdx.x] = lo;
    partials[3 * blockIdx.x + 1] = hi;
    partials[3 * blockIdx.x + 2] = nan;
  }
}

template <typename T>
int data_range(size_t n, const T *x, double *lo, double *hi, int *has_nan, cudaStream_t stream) {
  constexpr int block = 256;
  auto kernel = histogram_data_range<T>;
  unsigned grid = 0;
  int code = histogram_grid(kernel, block, 0, n, 0, &grid);
  if (code) return code;
  GlcDeviceBuffer partials;
  std::vector<double> host(3 * static_cast<size_t>(grid));
  code = partials.allocate(host.size() * sizeof(double), stream);
  GLC_TRY(code, glc_launch(kernel, "histogram_data_range", grid, block, stream, x, n,
                           partials.as<double>()));
  GLC_TRY(code, glc_memcpy_async(host.data(), partials.ptr, host.size() * sizeof(double), stream));
  GLC_TRY(code, glc_stream_synchronize(stream));
  if (code) return code;
  *lo = INFINITY, *hi = -INFINITY, *has_nan = 0;
  for (unsigned b = 0; b < grid; ++b) {
    *lo = std::fmin(*lo, host[3 * b]);
    *hi = std::fmax(*hi, host[3 * b + 1]);
    *has_nan |= host[3 * b + 2] != 0.0;
  }
  return cudaSuccess;
}

}  // namespace

extern "C" int glc_histogram(int variant, int block, int dtype, size_t n, const void *x,
                             long long lo, int bins, const glc_float_bins *float_bins,
                             long long *counts, glc_stream stream) {
  if (variant != GLC_HISTOGRAM_GLOBAL_ATOMIC && variant != GLC_HISTOGRAM_SHARED &&
      variant != GLC_HISTOGRAM_WARP_AGGREGATED && variant != GLC_HISTOGRAM_LANE_COLUMNS &&
      variant != GLC_HISTOGRAM_CUB)
    return glc_fail(cudaErrorInvalidValue, "glc_histogram(variant)");
  // CUB picks its own blocks: variant 4 has no block tunable, and the binding passes 0.
  if (variant != GLC_HISTOGRAM_CUB && (block < 32 || block > 1024 || (block & (block - 1)) != 0))
    return glc_fail(cudaErrorInvalidValue, "glc_histogram(block)");
  if (bins < 1 || bins > GLC_HISTOGRAM_MAX_BINS)
    return glc_fail(cudaErrorInvalidValue, "glc_histogram(bins)");
  const size_t element = element_size(dtype);
  if (element == 0) return glc_fail(cudaErrorInvalidValue, "glc_histogram(dtype)");
  const bool floating = dtype == GLC_F32 || dtype == GLC_F64;
  if (floating && variant == GLC_HISTOGRAM_CUB)
    return glc_fail(cudaErrorNotSupported, "glc_histogram(variant 4 takes integer data)");
  if (floating && (float_bins == nullptr || float_bins->edges == nullptr ||
                   (dtype == GLC_F64 && !float_bins->bin_f64) ||
                   (float_bins->bin_f64 && !float_bins->div_f64) || !(float_bins->denom > 0)))
    return glc_fail(cudaErrorInvalidValue, "glc_histogram(float_bins)");
  if (!glc_all_aligned(sizeof(long long), counts))
    return glc_fail(cudaErrorInvalidValue, "glc_histogram(counts)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  int code = glc_memset_async(counts, 0, static_cast<size_t>(bins) * sizeof(long long), stream);
  if (code || n == 0 || (!floating && !integer_range_meets_type(dtype, lo, bins))) return code;
  if (!glc_all_aligned(element, x)) return glc_fail(cudaErrorInvalidValue, "glc_histogram(x)");
  GlcDeviceBuffer edges;
  if (floating) {
    const size_t bytes = (static_cast<size_t>(bins) + 1) * (float_bins->bin_f64 ? 8 : 4);
    code = edges.allocate(bytes, s);
    GLC_TRY(code, glc_memcpy_async(edges.ptr, float_bins->edges, bytes, stream));
    if (code) return code;
  }
  auto *out = reinterpret_cast<unsigned long long *>(counts);
  if (variant == GLC_HISTOGRAM_CUB) return glc_histogram_cub(dtype, n, x, lo, bins, out, s);
  if (variant == GLC_HISTOGRAM_LANE_COLUMNS)
    return glc_histogram_lane_columns_family(block, dtype, n, x, lo, bins, float_bins, edges.ptr,
                                             out, s);
  return glc_histogram_atomic_family(variant, block, dtype, n, x, lo, bins, float_bins, edges.ptr,
                                     out, s);
}

extern "C" int glc_histogram_data_range(int dtype, size_t n, const void *x, double *lo, double *hi,
                                        int *has_nan, glc_stream stream) {
  if (n == 0 || lo == nullptr || hi == nullptr || has_nan == nullptr)
    return glc_fail(cudaErrorInvalidValue, "glc_histogram_data_range");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (dtype == GLC_F32 && glc_all_aligned(sizeof(float), x))
    return data_range(n, static_cast<const float *>(x), lo, hi, has_nan, s);
  if (dtype == GLC_F64 && glc_all_aligned(sizeof(double), x))
    return data_range(n, static_cast<const double *>(x), lo, hi, has_nan, s);
  return glc_fail(cudaErrorInvalidValue, "glc_histogram_data_range");
}
