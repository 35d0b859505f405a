/* The concepts lab's C ABI: five small ops, each showing one idea of the course texts with numbers:
 * warp divergence, independent thread scheduling, the atomic race, sinf against __sinf, and
 * constant memory. Every function returns a CUDA error code, as cuda/core/gpulab_core.h says; the
 * variant ids below are shared by the ladders (csrc/labs/concepts/variants.c), the dispatch and the
 * CPU variants. */
#ifndef GPULAB_CUDA_CONCEPTS_H
#define GPULAB_CUDA_CONCEPTS_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- divergence: out = path[key & 3](x) ----
 * Path k applies x <- fma(x, scale_k, shift_k) `iterations` times: the same arithmetic in every
 * path, with other constants, so that the paths cost the same and give different results. The
 * constants are exact in float32 (1 - (k+1)/1024 and multiples of 1/4), so a float64 reference
 * uses the very numbers the kernels use. */
#define GLC_DIVERGENCE_PATHS 4
#define GLC_DIVERGENCE_SCALE_0 0.9990234375f
#define GLC_DIVERGENCE_SCALE_1 0.998046875f
#define GLC_DIVERGENCE_SCALE_2 0.9970703125f
#define GLC_DIVERGENCE_SCALE_3 0.99609375f
#define GLC_DIVERGENCE_SHIFT_0 0.25f
#define GLC_DIVERGENCE_SHIFT_1 (-0.5f)
#define GLC_DIVERGENCE_SHIFT_2 0.75f
#define GLC_DIVERGENCE_SHIFT_3 (-1.0f)
#define GLC_DIVERGENCE_MAX_ITERATIONS (1 << 20)

enum glc_divergence_variant {
  GLC_DIVERGENCE_BRANCH = 0,      /* switch on the key: one loop per path */
  GLC_DIVERGENCE_BRANCH_FREE = 1, /* the key selects the constants of one loop */
  GLC_DIVERGENCE_ALL_PATHS = 2,   /* every path computed, the key selects the result */
  GLC_DIVERGENCE_CPU = 100
};

/* out[i] = path[key[i] & 3](x[i]) for n float32 elements; key is int32. */
GLC_API int glc_divergence(int variant, int block, size_t n, const float *x, const int *key,
                           int iterations, float *out, glc_stream stream);

/* ---- warp_reduce: block sums of int32 data, `trials` times ----
 * Each block of `block` threads sums its `block` elements (zeros past n) in shared memory; the
 * last warp finishes the tree in the variant's way. sums[b] gets the last trial's sum of block b
 * and wrong[b] the number of trials whose sum differed from the exact one (computed first by
 * shared-memory atomics, which no schedule can get wrong). Sums wrap modulo 2^32, as NumPy's
 * int32 sums do. */
#define GLC_WARP_REDUCE_MAX_TRIALS (1 << 20)
#define GLC_WARP_REDUCE_CPU_BLOCK 256 /* the block the CPU variant sums over */

enum glc_warp_reduce_variant {
  GLC_WARP_REDUCE_LOCKSTEP_PLAIN = 0,    /* S0: no __syncwarp, no volatile (a race) */
  GLC_WARP_REDUCE_LOCKSTEP_VOLATILE = 1, /* volatile, no __syncwarp (a race under ITS) */
  GLC_WARP_REDUCE_SYNCWARP = 2,          /* read, __syncwarp, write, __syncwarp */
  GLC_WARP_REDUCE_SHUFFLE = 3,           /* __shfl_down_sync */
  GLC_WARP_REDUCE_CPU = 100
};

/* block >= 64 (a power of two up to 1024); sums and wrong hold ceil(n / block) ints each. */
GLC_API int glc_warp_reduce(int variant, int block, size_t n, const int *x, int trials, int *sums,
                            int *wrong, glc_stream stream);

/* ---- counter: every thread whose element is non-zero increments one global counter ----
 * *count (device or mapped host memory) receives the final value of the counter. */
enum glc_counter_variant {
  GLC_COUNTER_RACY = 0,              /* counter = counter + 1: a load and a store, not atomic */
  GLC_COUNTER_ATOMIC = 1,            /* atomicAdd(counter, 1), which ptxas aggregates per warp */
  GLC_COUNTER_ATOMIC_PER_THREAD = 2, /* one atomicAdd per thread, aggregation defeated */
  GLC_COUNTER_WARP_AGGREGATED = 3,   /* one atomicAdd per warp, of its ballot's popcount */
  GLC_COUNTER_BLOCK_AGGREGATED = 4,  /* one atomicAdd per block, of __syncthreads_count */
  GLC_COUNTER_CPU_SERIAL = 100,
  GLC_COUNTER_CPU_RACY = 101,  /* OpenMP threads: relaxed load, then relaxed store */
  GLC_COUNTER_CPU_ATOMIC = 102 /* OpenMP threads: atomic increments */
};

GLC_API int glc_counter(int variant, int block, size_t n, const int *x, long long *count,
                        glc_stream stream);

/* ---- sin: out = sin(x), float32 ---- */
enum glc_sin_variant {
  GLC_SIN_ACCURATE = 0,  /* sinf: full range reduction, 2 ulp */
  GLC_SIN_INTRINSIC = 1, /* __sinf: the SFU's approximation */
  GLC_SIN_CPU = 100
};

GLC_API int glc_sin(int variant, int block, size_t n, const float *x, float *out,
                    glc_stream stream);

/* ---- lookup: out[i] = table[clip(idx[i], 0, table_size - 1)] ----
 * np.take(table, idx, mode="clip"): an index out of range reads the nearest end, never past it.
 * 1 <= table_size <= GLC_LOOKUP_MAX_TABLE (the __constant__ table's room: 32 KiB of the 64 KiB
 * constant bank). */
#define GLC_LOOKUP_MAX_TABLE 8192

enum glc_lookup_variant {
  GLC_LOOKUP_CONSTANT = 0,   /* the table in __constant__ memory */
  GLC_LOOKUP_GLOBAL_LDG = 1, /* the table in global memory, read through __ldg */
  GLC_LOOKUP_SHARED = 2,     /* each block copies the table into shared memory first */
  GLC_LOOKUP_CPU = 100
};

GLC_API int glc_lookup(int variant, int block, size_t table_size, const float *table, size_t n,
                       const int *idx, float *out, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
