// Internal to cuda/histogram/: from an element to its bin (-1: not counted), the same arithmetic
// in every kernel and in the CPU variants (csrc/labs/histogram/cpu.c), and the dtype dispatch.
#ifndef GPULAB_HISTOGRAM_BINNING_CUH
#define GPULAB_HISTOGRAM_BINNING_CUH

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/core/errors.cuh"
#include "cuda/core/launch.cuh"
#include "histogram.h"

// uint8 data into bins 0-255 (range (0, 256)), the lab's headline case: every byte is its own
// bin, so the checks of IntBinner go; the kernels that ask whole_byte_range skip their tile's
// range test too.
struct ByteBinner {
  static constexpr bool whole_byte_range = true;
  __host__ __device__ int operator()(uint8_t v) const { return v; }
};

// Integer data: bin v - lo, and v == lo + bins in the last bin (np.histogram's closed last bin).
// 8- and 16-bit values subtract in 32 bits (the launcher passes such data only an lo within
// [-2^31 + 2^17, 2^31 - 2^17], where no difference overflows); int32 in 64.
template <typename T>
struct IntBinner {
  static constexpr bool whole_byte_range = false;
  using Wide = std::conditional_t<(sizeof(T) <= 2), int, long long>;
  Wide lo;
  int bins;
  __host__ __device__ int operator()(T v) const {
    const Wide b = static_cast<Wide>(v) - lo;
    if (b == bins) return bins - 1;
    // one unsigned compare tests 0 <= b < bins
    return static_cast<unsigned long long>(b) < static_cast<unsigned long long>(bins)
               ? static_cast<int>(b)
               : -1;
  }
};

// Float data: NumPy's multiply-then-correct (histogram.h, glc_float_bins). The rounding steps
// are written as intrinsics so that nvcc cannot contract them: the estimate must be NumPy's
// own, so that the one-step corrections against the edges land where NumPy's do.
template <typename T>
struct FloatBinner {
  static constexpr bool whole_byte_range = false;
  double lo_keep, hi_keep, lo_diff, denom;
  int bins;
  int bin_f64, div_f64;
  const void *edges;  // device memory, bins + 1 values of the bin type

  template <typename B>
  __device__ int correct(B xb, double f) const {
    const B *e = static_cast<const B *>(edges);
    f = fmin(fmax(f, 0.0), static_cast<double>(bins));
    int k = static_cast<int>(f);  // truncation, as astype(intp)
    if (k == bins) k = bins - 1;
    if (xb < __ldg(e + k)) {
      k -= 1;
    } else if (k != bins - 1 && xb >= __ldg(e + k + 1)) {
      k += 1;
    }
    return k < 0 ? 0 : k;  // only where NumPy itself would index outside its edges
  }

  __device__ int operator()(T x) const {
    const double xd = static_cast<double>(x);
    if (!(xd >= lo_keep && xd <= hi_keep)) return -1;  // outside the range, or NaN
    if (bin_f64) {
      const double d = __dsub_rn(xd, lo_diff);
      return correct<double>(xd, __dmul_rn(__ddiv_rn(d, denom), static_cast<double>(bins)));
    }
    // the bin type is float32 only for float32 data
    const float xb = static_cast<float>(x);
    const float d = __fsub_rn(xb, static_cast<float>(lo_diff));
    const double f = div_f64
                         ? __dmul_rn(__ddiv_rn(static_cast<double>(d), denom), bins)
                         : static_cast<double>(__fmul_rn(__fdiv_rn(d, static_cast<float>(denom)),
                                                         static_cast<float>(bins)));
    return correct<float>(xb, f);
  }
};

// Calls body(T{}, binner) with the C++ type of dtype and its binner; lo and float_bins as in
// glc_histogram. Unknown dtypes are refused with `caller` as the failed call.
template <typename Body>
int glc_dispatch_binner(int dtype, long long lo, int bins, const glc_float_bins *fb,
                        const void *edges, const char *caller, Body &&body) {
  auto ints = [&](auto v) {
    using T = decltype(v);
    IntBinner<T> b{static_cast<typename IntBinner<T>::Wide>(lo), bins};
    return body(v, b);
  };
  auto floats = [&](auto v) {
    using T = decltype(v);
    FloatBinner<T> b{fb->lo_keep, fb->hi_keep, fb->lo_diff, fb->denom,
                     bins,        fb->bin_f64, fb->div_f64, edges};
    return body(v, b);
  };
  switch (dtype) {
    case GLC_U8:
      return lo == 0 && bins == 256 ? body(uint8_t{}, ByteBinner{}) : ints(uint8_t{});
    case GLC_I8:
      return ints(int8_t{});
    case GLC_U16:
      return ints(uint16_t{});
    case GLC_I16:
      return ints(int16_t{});
    case GLC_I32:
      return ints(int32_t{});
    case GLC_F32:
      return floats(float{});
    case GLC_F64:
      return floats(double{});
    default:
      return glc_fail(cudaErrorInvalidValue, caller);
  }
}

// Blocks for a grid-stride histogram kernel: the blocks of `block` threads (with `shared_bytes` of
// dynamic shared memory) that one wave keeps resident, no more than `work` threads' worth of
// items need, and enough that no block counts more than 2^30 of the n elements, so that its
// 32-bit shared counts cannot overflow.
template <typename Kernel>
int histogram_grid(Kernel kernel, int block, size_t shared_bytes, size_t work, size_t n,
                   unsigned *grid) {
  int per_sm = 0, sm_count = 0;
  int code =
      GLC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, kernel, block, shared_bytes);
  if (!code) code = glc_current_sm_count(&sm_count);
  if (code) return code;
  size_t blocks = static_cast<size_t>(sm_count) * static_cast<size_t>(per_sm < 1 ? 1 : per_sm);
  const size_t needed = glc_blocks_to_cover(work, block);
  if (blocks > needed) blocks = needed;
  const size_t least = (n >> 30) + 1;
  if (blocks < least) blocks = least;
  if (blocks > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, "histogram_grid");
  *grid = static_cast<unsigned>(blocks);
  return cudaSuccess;
}

// The families' launchers (atomic.cu, lane_columns.cu), for glc_histogram (histogram.cu):
// counts are zeroed already and edges are in device memory.
int glc_histogram_atomic_family(int variant, int block, int dtype, size_t n, const void *x,
                                long long lo, int bins, const glc_float_bins *float_bins,
                                const void *edges, unsigned long long *counts, cudaStream_t stream);
int glc_histogram_lane_columns_family(int block, int dtype, size_t n, const void *x, long long lo,
                                      int bins, const glc_float_bins *float_bins, const void *edges,
                                      unsigned long long *counts, cudaStream_t stream);
// Variant 4 (cub.cu): integer data, lo + bins within reach of the type, n >= 1.
int glc_histogram_cub(int dtype, size_t n, const void *x, long long lo, int bins,
                      unsigned long long *counts, cudaStream_t stream);

#endif
