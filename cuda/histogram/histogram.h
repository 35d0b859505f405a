/* The histogram lab's C ABI: histogram (NumPy's np.histogram with equal bins, and a bincount-like
 * path for integer data) and histogram_rgb (S4 section 8's per-channel histograms of an RGB image).
 * Every function returns a CUDA error code, as cuda/core/gpulab_core.h says; the variant ids below
 * are shared by the ladders (csrc/labs/histogram/variants.c), the dispatch and the CPU variants. */
#ifndef GPULAB_CUDA_HISTOGRAM_H
#define GPULAB_CUDA_HISTOGRAM_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GLC_HISTOGRAM_MAX_BINS 65536
#define GLC_HISTOGRAM_RGB_BINS 256

enum glc_histogram_variant {
  GLC_HISTOGRAM_GLOBAL_ATOMIC = 0,   /* S4: one 64-bit global atomic per element */
  GLC_HISTOGRAM_SHARED = 1,          /* a 32-bit histogram per block in shared memory */
  GLC_HISTOGRAM_WARP_AGGREGATED = 2, /* ... with equal bins of a warp added once (match_any) */
  GLC_HISTOGRAM_LANE_COLUMNS = 3,    /* one column per lane, 16-byte loads */
  GLC_HISTOGRAM_CUB = 4,             /* CUB DeviceHistogram::HistogramEven, integer data */
  GLC_HISTOGRAM_CPU_SERIAL = 100,
  GLC_HISTOGRAM_CPU_OPENMP = 101
};

enum glc_histogram_rgb_variant {
  GLC_HISTOGRAM_RGB_GLOBAL_ATOMIC = 0, /* S4's kernel: three global atomics per pixel */
  GLC_HISTOGRAM_RGB_PRIVATIZED = 1,    /* 3x256 per block in shared memory, 16-byte loads */
  GLC_HISTOGRAM_RGB_CPU = 100
};

/* How float data is binned: NumPy's np.histogram arithmetic, step by step (its parameters are
 * worked out by gpulab/labs/histogram.py from NumPy's own dtype rules):
 *   x counts when lo_keep <= x <= hi_keep (compared exactly, in float64; NaN never counts);
 *   xb = x in the bin type (float64 when bin_f64, else float32); d = xb - lo_diff in that type;
 *   f = d / denom * bins in float64 when div_f64, else in float32; e = trunc(f), clamped to
 *   [0, bins], and bins becomes bins - 1 (the last bin is closed);
 *   then e - 1 when xb < edges[e], or e + 1 when xb >= edges[e + 1] and e != bins - 1.
 * edges: bins + 1 values of the bin type, in host memory (the CUDA entry copies them). */
typedef struct {
  double lo_keep, hi_keep;
  double lo_diff;
  double denom;
  int bin_f64;
  int div_f64;
  const void *edges;
} glc_float_bins;

/* counts[k] (int64, bins of them, 1 <= bins <= GLC_HISTOGRAM_MAX_BINS) = how many of the n
 * elements of x land in bin k. Integer dtypes (GLC_U8, GLC_I8, GLC_U16, GLC_I16, GLC_I32): bin
 * v - lo for lo <= v < lo + bins, and v == lo + bins in the last bin; float_bins is unused.
 * Float dtypes (GLC_F32, GLC_F64): float_bins says how; lo is unused. counts is device memory;
 * it is overwritten (zeroed first). block: threads per block. */
/* Variant GLC_HISTOGRAM_CUB takes integer data only (cudaErrorNotSupported for float data). */
GLC_API int glc_histogram(int variant, int block, int dtype, size_t n, const void *x, long long lo,
                          int bins, const glc_float_bins *float_bins, long long *counts,
                          glc_stream stream);

/* The smallest and largest of n >= 1 float elements of x and whether any is NaN (then *lo and
 * *hi are the extremes of the others), for range=None. Waits for the device. */
GLC_API int glc_histogram_data_range(int dtype, size_t n, const void *x, double *lo, double *hi,
                                     int *has_nan, glc_stream stream);

/* counts (3 x 256 int64, device memory) = the per-channel histograms of `pixels` interleaved
 * RGB pixels (3 * pixels elements): uint8 values v in bin v; float32 values v in bin
 * clamp(floor(v * 256), 0, 255), NaN not counted. dtype GLC_U8 or GLC_F32. */
GLC_API int glc_histogram_rgb(int variant, int block, int dtype, size_t pixels, const void *img,
                              long long *counts, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
