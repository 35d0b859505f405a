/* The histogram lab on the host (cpu.h). The binning is the CUDA kernels' (binning.cuh), step
 * for step: the same roundings in the same order, so the counts agree exactly. */
#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csrc/core/host.h"

/* Below this many elements a parallel region's fork and join cost more than they save. */
#define HG_PARALLEL_MIN ((size_t)1 << 16)

/* ---- binning: one element to its bin, -1 when it does not count ---- */

static int int_bin(long long v, long long lo, int bins) {
  const long long b = v - lo;
  if (b == bins) return bins - 1; /* np.histogram's last bin is closed */
  return b >= 0 && b < bins ? (int)b : -1;
}

static int clamp_estimate(double f, int bins) {
  f = fmin(fmax(f, 0.0), (double)bins);
  int k = (int)f; /* truncation, as astype(intp) */
  return k == bins ? bins - 1 : k;
}

static int float_bin(double xd, const glc_float_bins *p, int bins) {
  if (!(xd >= p->lo_keep && xd <= p->hi_keep)) return -1; /* outside the range, or NaN */
  int k;
  if (p->bin_f64) {
    const double *e = p->edges;
    k = clamp_estimate((xd - p->lo_diff) / p->denom * (double)bins, bins);
    if (xd < e[k])
      k -= 1;
    else if (k != bins - 1 && xd >= e[k + 1])
      k += 1;
  } else {
    const float *e = p->edges;
    const float xb = (float)xd, d = xb - (float)p->lo_diff;
    const double f = p->div_f64 ? (double)d / p->denom * (double)bins
                                : (double)(d / (float)p->denom * (float)bins);
    k = clamp_estimate(f, bins);
    if (xb < e[k])
      k -= 1;
    else if (k != bins - 1 && xb >= e[k + 1])
      k += 1;
  }
  return k < 0 ? 0 : k;
}

/* counts += the histogram of x[begin, end). */
static int count_range(int dtype, const void *x, size_t begin, size_t end, long long lo, int bins,
                       const glc_float_bins *fb, long long *counts) {
#define HG_COUNT(type, bin_expr)           \
  do {                                     \
    const type *v = (const type *)x;       \
    for (size_t i = begin; i < end; i++) { \
      const int b = (bin_expr);            \
      if (b >= 0) counts[b]++;             \
    }                                      \
  } while (0)
  switch (dtype) {
    case GLC_U8:
      HG_COUNT(uint8_t, int_bin(v[i], lo, bins));
      return 0;
    case GLC_I8:
      HG_COUNT(int8_t, int_bin(v[i], lo, bins));
      return 0;
    case GLC_U16:
      HG_COUNT(uint16_t, int_bin(v[i], lo, bins));
      return 0;
    case GLC_I16:
      HG_COUNT(int16_t, int_bin(v[i], lo, bins));
      return 0;
    case GLC_I32:
      HG_COUNT(int32_t, int_bin(v[i], lo, bins));
      return 0;
    case GLC_F32:
      HG_COUNT(float, float_bin(v[i], fb, bins));
      return 0;
    case GLC_F64:
      HG_COUNT(double, float_bin(v[i], fb, bins));
      return 0;
    default:
      return -1;
  }
#undef HG_COUNT
}

int glcpu_histogram(int variant, int dtype, size_t n, const void *x, long long lo, int bins,
                    const glc_float_bins *float_bins, long long *counts) {
  if (bins < 1 || ((dtype == GLC_F32 || dtype == GLC_F64) && !float_bins)) return -1;
  memset(counts, 0, sizeof(long long) * (size_t)bins);
  if (variant == GLC_HISTOGRAM_CPU_SERIAL)
    return count_range(dtype, x, 0, n, lo, bins, float_bins, counts);
  if (variant != GLC_HISTOGRAM_CPU_OPENMP) return -1;
  /* A private histogram per thread: no two threads ever write one count. They are added up in
   * thread order at the end (integer sums: any order gives the same counts). */
  const int threads = n >= HG_PARALLEL_MIN ? glcpu_max_threads() : 1;
  long long *private_counts = calloc((size_t)threads * (size_t)bins, sizeof(long long));
  if (!private_counts) return -1;
  const long long chunks = (long long)((n + 65535) / 65536);
  int failed = 0;
#pragma omp parallel num_threads(threads) reduction(| : failed)
  {
#ifdef _OPENMP
    long long *mine = private_counts + (size_t)omp_get_thread_num() * (size_t)bins;
#else
    long long *mine = private_counts;
#endif
#pragma omp for schedule(static)
    for (long long chunk = 0; chunk < chunks; chunk++) {
      const size_t begin = (size_t)chunk * 65536, end = begin + 65536 < n ? begin + 65536 : n;
      failed |= count_range(dtype, x, begin, end, lo, bins, float_bins, mine) != 0;
    }
  }
  for (int t = 0; t < threads; t++)
    for (int b = 0; b < bins; b++) counts[b] += private_counts[(size_t)t * (size_t)bins + b];
  free(private_counts);
  return failed ? -1 : 0;
}

int glcpu_histogram_data_range(int dtype, size_t n, const void *x, double *lo, double *hi,
                               int *has_nan) {
  double l = INFINITY, h = -INFINITY;
  int nan = 0;
  for (size_t i = 0; i < n; i++) {
    const double v = dtype == GLC_F32 ? ((const float *)x)[i] : ((const double *)x)[i];
    if (v != v) {
      nan = 1;
    } else {
      l = fmin(l, v);
      h = fmax(h, v);
    }
  }
  if (dtype != GLC_F32 && dtype != GLC_F64) return -1;
  *lo = l, *hi = h, *has_nan = nan;
  return 0;
}

static int channel_bin_float(float v) {
  if (v != v) return -1;
  const float scaled = floorf(v * 256.0f); /* exact: a power of two */
  return scaled < 0.0f ? 0 : scaled > 255.0f ? 255 : (int)scaled;
}

int glcpu_histogram_rgb(int dtype, size_t pixels, const void *img, long long *counts) {
  memset(counts, 0, sizeof(long long) * 3 * GLC_HISTOGRAM_RGB_BINS);
  for (size_t i = 0; i < 3 * pixels; i++) {
    const int channel = (int)(i % 3);
    int b;
    if (dtype == GLC_U8)
      b = ((const uint8_t *)img)[i];
    else if (dtype == GLC_F32)
      b = channel_bin_float(((const float *)img)[i]);
    else
      return -1;
    if (b >= 0) counts[channel * GLC_HISTOGRAM_RGB_BINS + b]++;
  }
  return 0;
}
