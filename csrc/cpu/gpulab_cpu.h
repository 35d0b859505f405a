/* CPU variants and host primitives. Plain C, no Python.
 * Functions return 0 on success and -1 for an unknown variant or dtype. */
#ifndef GPULAB_CPU_H
#define GPULAB_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "../../cuda/gpulab_cuda.h" /* enum glc_dtype */

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the CPU part was compiled with OpenMP, and how many threads it uses. */
int glcpu_openmp(void);
int glcpu_max_threads(void);

/* out = a*x + y. variant 100: serial loop; 101: OpenMP + SIMD. */
int glcpu_saxpy(int variant, int dtype, size_t n, double a, const void *x, const void *y,
                void *out);

/* C = A + B, row-major. variant 100: serial double loop. */
int glcpu_matadd(int variant, int dtype, size_t rows, size_t cols, const void *a, const void *b,
                 void *c);

/* *result = op(x) (enum glc_reduce_op) over n elements. variant 100: serial, 101: pairwise,
 * 102: Kahan (float sums only), 103: OpenMP + SIMD. result is int64 for int32 sums, else the
 * input's type. n == 0 is only defined for sums (0). */
int glcpu_reduce(int variant, int op, int dtype, size_t n, const void *x, void *result);

/* sum x*y and sqrt(sum x*x) with float64 accumulation, OpenMP + SIMD; result in the input's
 * type (GLC_F32 or GLC_F64). */
int glcpu_dot(int dtype, size_t n, const void *x, const void *y, void *result);
int glcpu_norm2(int dtype, size_t n, const void *x, void *result);

/* memcpy split over the OpenMP threads (used by the pinned staging ring and the CPU ceiling). */
void glcpu_parallel_copy(void *dst, const void *src, size_t bytes);

/* Independent FP32 FMA chains on every thread (enough to hide FMA latency); returns the flops
 * performed. */
double glcpu_fma_loop(long iterations);

/* ---- memory lab ---- */
/* successor[i] for a chain over `nodes` nodes that visits every node from node 0: i + 1 in
 * order (shuffle 0), or a random single cycle from seed (Sattolo). -1 for 0 or > 2^32 nodes. */
int glcpu_chase_chain(uint32_t *successor, size_t nodes, int shuffle, uint64_t seed);
/* Places the chain in words (node i at word i * stride_words, holding its successor's word
 * index), walks warm_steps links from node 0 untimed, then times `repeat` passes of `steps`
 * dependent loads, each going on from where the last stopped (seconds[repeat]). */
int glcpu_chase(const uint32_t *successor, size_t nodes, size_t stride_words, uint32_t *words,
                size_t warm_steps, size_t steps, int repeat, double *seconds, uint32_t *final_node);
/* The node reached from node 0 after `steps` links. */
uint32_t glcpu_chain_walk(const uint32_t *successor, size_t steps);
/* Host bandwidth over `bytes` on every OpenMP thread: read b (a sum), write a (memset), or
 * copy b to a. */
enum { GLCPU_BW_READ = 0, GLCPU_BW_WRITE = 1, GLCPU_BW_COPY = 2 };
int glcpu_bandwidth(int kind, void *a, const void *b, size_t bytes, double *seconds);

#ifdef __cplusplus
}
#endif
#endif
