/* The concepts lab's CPU variants: the NumPy-checked baselines that run without a GPU, and for
 * the counter the same race between OpenMP threads. Plain C, no Python; 0 on success, -1 for an
 * unknown variant. Ids and constants: cuda/concepts/concepts.h. */
#ifndef GL_CONCEPTS_CPU_H
#define GL_CONCEPTS_CPU_H

#include <stddef.h>

#include "cuda/concepts/concepts.h"

/* out[i] = path[key[i] & 3](x[i]), the CUDA variants' arithmetic (fmaf: bit-identical). */
int glcpu_divergence(size_t n, const float *x, const int *key, int iterations, float *out);

/* Block sums over blocks of GLC_WARP_REDUCE_CPU_BLOCK elements (zeros past n), wrapping modulo
 * 2^32; wrong[b] = 0 (no warps here, nothing to race). */
int glcpu_warp_reduce(size_t n, const int *x, int *sums, int *wrong);

/* *count = the final value of a counter incremented once per non-zero element: variant 100 in
 * one thread, 101 by OpenMP threads that load and store it without atomicity (lost updates),
 * 102 by OpenMP threads with atomic increments. */
int glcpu_counter(int variant, size_t n, const int *x, long long *count);

/* out = sinf(x), the C library's. */
int glcpu_sin(size_t n, const float *x, float *out);

/* out[i] = table[clip(idx[i], 0, table_size - 1)], table_size >= 1. */
int glcpu_lookup(size_t table_size, const float *table, size_t n, const int *idx, float *out);

#endif
