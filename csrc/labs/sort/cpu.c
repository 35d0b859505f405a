/* The sort lab's CPU variants (cpu.h). Both sort (ordered key, index) records -- the key's order
 * bits of cuda/sort/sort.h, NumPy's order, and its position -- and then gather the keys and values
 * through the sorted indices, so that the output holds the input's own bits (-0.0 stays -0.0). */
#include "cpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/sort/sort.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
  uint64_t key; /* the order bits, reversed for a descending sort */
  uint64_t index;
} record;

enum { QSORT = 100, OPENMP_RADIX = 101 };

static int key_bytes(int dtype) { return dtype == GLC_I64 || dtype == GLC_F64 ? 8 : 4; }

static uint64_t order_of(const void *keys, size_t i, int dtype, int descending) {
  if (key_bytes(dtype) == 8) {
    const uint64_t ordered = glc_sort_order_bits64(((const uint64_t *)keys)[i], dtype);
    return descending ? ~ordered : ordered;
  }
  const uint32_t ordered = glc_sort_order_bits32(((const uint32_t *)keys)[i], dtype);
  return descending ? (uint32_t)~ordered : ordered;
}

/* keys_out[i] = keys[r[i].index] and values_out[i] likewise (argsort: the index itself). */
static void gather(const record *r, size_t n, int dtype, const void *keys, void *keys_out,
                   int value_bytes, const void *values, void *values_out, int parallel) {
  const int kb = key_bytes(dtype);
#pragma omp parallel for if (parallel && n > (1 << 16))
  for (size_t i = 0; i < n; i++) {
    const size_t from = (size_t)r[i].index;
    if (keys_out) memcpy((char *)keys_out + i * kb, (const char *)keys + from * kb, kb);
    if (value_bytes && values == NULL)
      ((int64_t *)values_out)[i] = (int64_t)from;
    else if (value_bytes)
      memcpy((char *)values_out + i * value_bytes, (const char *)values + from * value_bytes,
             value_bytes);
  }
}

/* The index breaks ties between equal keys, which makes qsort's unstable sort a stable one. */
static int compare_records(const void *a, const void *b) {
  const record *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* One stable pass by the byte at `shift`: each thread counts its chunk's bytes, the counts are
 * laid out byte-major and thread-minor, and each thread writes its chunk in order from its
 * offsets. Returns 0 when every record has the same byte (the pass would change nothing). */
static int radix_pass(const record *from, record *to, size_t n, int shift, int threads,
                      size_t (*counts)[256]) {
  const size_t per = (n + (size_t)threads - 1) / (size_t)threads;
#pragma omp parallel for num_threads(threads)
  for (int t = 0; t < threads; t++) {
    const size_t begin = (size_t)t * per, end = begin + per < n ? begin + per : n;
    memset(counts[t], 0, sizeof counts[t]);
    for (size_t i = begin; i < end; i++) counts[t][(from[i].key >> shift) & 255]++;
  }
  size_t next = 0;
  for (int d = 0; d < 256; d++) {
    size_t digit_total = 0;
    for (int t = 0; t < threads; t++) {
      const size_t c = counts[t][d];
      counts[t][d] = next;
      next += c;
      digit_total += c;
    }
    if (digit_total == n) return 0;
  }
#pragma omp parallel for num_threads(threads)
  for (int t = 0; t < threads; t++) {
    const size_t begin = (size_t)t * per, end = begin + per < n ? begin + per : n;
    for (size_t i = begin; i < end; i++) to[counts[t][(from[i].key >> shift) & 255]++] = from[i];
  }
  return 1;
}

/* LSD radix by bytes, lowest first; returns the buffer that holds the result. */
static record *radix_sort(record *r, record *spare, size_t n, int bytes) {
#ifdef _OPENMP
  int threads = omp_get_max_threads();
#else
  int threads = 1;
#endif
  if ((size_t)threads > n) threads = (int)n;
  if (threads < 1) threads = 1;
  size_t(*counts)[256] = malloc(sizeof *counts * (size_t)threads);
  if (counts == NULL) return NULL;
  for (int b = 0; b < bytes; b++)
    if (radix_pass(r, spare, n, 8 * b, threads, counts)) {
      record *t = r;
      r = spare;
      spare = t;
    }
  free(counts);
  return r;
}

int glcpu_sort(int variant, int dtype, int descending, size_t n, const void *keys, void *keys_out,
               int value_bytes, const void *values, void *values_out) {
  if (dtype != GLC_I32 && dtype != GLC_U32 && dtype != GLC_I64 && dtype != GLC_F32 &&
      dtype != GLC_F64)
    return -1;
  if (variant != QSORT && variant != OPENMP_RADIX) return -1;
  record *r = malloc(sizeof *r * (n ? n : 1));
  record *spare = variant == OPENMP_RADIX ? malloc(sizeof *r * (n ? n : 1)) : NULL;
  int rc = -1;
  if (r && (variant == QSORT || spare)) {
#pragma omp parallel for if (variant == OPENMP_RADIX && n > (1 << 16))
    for (size_t i = 0; i < n; i++) r[i] = (record){order_of(keys, i, dtype, descending), i};
    const record *sorted = r;
    if (variant == QSORT)
      qsort(r, n, sizeof *r, compare_records);
    else
      sorted = radix_sort(r, spare, n, key_bytes(dtype));
    if (sorted) {
      gather(sorted, n, dtype, keys, keys_out, value_bytes, values, values_out,
             variant == OPENMP_RADIX);
      rc = 0;
    }
  }
  free(r);
  free(spare);
  return rc;
}
