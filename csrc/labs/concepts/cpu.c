/* The concepts lab on the host (cpu.h). */
#include "cpu.h"

#include <math.h>
#include <stdatomic.h>

/* Below this much work a parallel region's fork and join cost more than they save. */
#define CN_PARALLEL_MIN_WORK ((size_t)1 << 15)

static const float path_scale[GLC_DIVERGENCE_PATHS] = {
    GLC_DIVERGENCE_SCALE_0, GLC_DIVERGENCE_SCALE_1, GLC_DIVERGENCE_SCALE_2, GLC_DIVERGENCE_SCALE_3};
static const float path_shift[GLC_DIVERGENCE_PATHS] = {
    GLC_DIVERGENCE_SHIFT_0, GLC_DIVERGENCE_SHIFT_1, GLC_DIVERGENCE_SHIFT_2, GLC_DIVERGENCE_SHIFT_3};

int glcpu_divergence(size_t n, const float *x, const int *key, int iterations, float *out) {
  const size_t work = n * (size_t)(iterations + 1);
#pragma omp parallel for schedule(static) if (work >= CN_PARALLEL_MIN_WORK)
  for (size_t i = 0; i < n; i++) {
    const int k = key[i] & 3;
    float v = x[i];
    /* fmaf rounds once, as the GPU's FFMA does: the results are bit-identical. */
    for (int r = 0; r < iterations; r++) v = fmaf(v, path_scale[k], path_shift[k]);
    out[i] = v;
  }
  return 0;
}

int glcpu_warp_reduce(size_t n, const int *x, int *sums, int *wrong) {
  const size_t block = GLC_WARP_REDUCE_CPU_BLOCK;
  const size_t blocks = n / block + (n % block != 0);
  for (size_t b = 0; b < blocks; b++) {
    const size_t end = (b + 1) * block < n ? (b + 1) * block : n;
    unsigned sum = 0; /* unsigned: wraps modulo 2^32 without undefined behaviour */
    for (size_t i = b * block; i < end; i++) sum += (unsigned)x[i];
    sums[b] = (int)sum;
    wrong[b] = 0;
  }
  return 0;
}

int glcpu_counter(int variant, size_t n, const int *x, long long *count) {
  switch (variant) {
    case GLC_COUNTER_CPU_SERIAL: {
      long long c = 0;
      for (size_t i = 0; i < n; i++) c += x[i] != 0;
      *count = c;
      return 0;
    }
    case GLC_COUNTER_CPU_RACY: {
      /* The race of GPU variant 0 between OpenMP threads, written with relaxed atomics so that
       * it is defined C: each increment is a load and a separate store, and a store may
       * overwrite another thread's increments made since the load. */
      atomic_llong counter = 0;
#pragma omp parallel for schedule(static) if (n >= CN_PARALLEL_MIN_WORK)
      for (size_t i = 0; i < n; i++) {
        if (x[i] != 0) {
          const long long seen = atomic_load_explicit(&counter, memory_order_relaxed);
          atomic_store_explicit(&counter, seen + 1, memory_order_relaxed);
        }
      }
      *count = atomic_load(&counter);
      return 0;
    }
    case GLC_COUNTER_CPU_ATOMIC: {
      long long c = 0;
#pragma omp parallel for schedule(static) if (n >= CN_PARALLEL_MIN_WORK)
      for (size_t i = 0; i < n; i++) {
        if (x[i] != 0) {
#pragma omp atomic
          c++;
        }
      }
      *count = c;
      return 0;
    }
    default:
      return -1;
  }
}

int glcpu_sin(size_t n, const float *x, float *out) {
#pragma omp parallel for schedule(static) if (n >= CN_PARALLEL_MIN_WORK)
  for (size_t i = 0; i < n; i++) out[i] = sinf(x[i]);
  return 0;
}

int glcpu_lookup(size_t table_size, const float *table, size_t n, const int *idx, float *out) {
  if (table_size < 1) return -1;
  const long long last = (long long)table_size - 1;
#pragma omp parallel for schedule(static) if (n >= CN_PARALLEL_MIN_WORK)
  for (size_t i = 0; i < n; i++) {
    const long long k = idx[i] < 0 ? 0 : idx[i] > last ? last : idx[i];
    out[i] = table[k];
  }
  return 0;
}
