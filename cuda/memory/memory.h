/* The memory lab's C ABI: transfers, access patterns, latency, banks and
 * constant memory, each measured on the device.
 * Every function returns a CUDA error code, as cuda/core/gpulab_core.h says. */
#ifndef GPULAB_CUDA_MEMORY_H
#define GPULAB_CUDA_MEMORY_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each measurement allocates what it needs, runs once untimed, then `repeat` timed times, writing
 * one time per repetition to samples[repeat] (ms), and frees everything before it returns. */
enum glc_memlab_direction { GLC_MEMLAB_H2D = 0, GLC_MEMLAB_D2H = 1 };

/* Zero-copy: a kernel copies bytes (a multiple of 16) between mapped pinned host memory and
 * device memory. *intact: the destination holds the source's words afterwards. */
GLC_API int glc_memlab_mapped(int direction, size_t bytes, int repeat, float *samples, int *intact);
/* cudaMallocManaged memory. H2D: the host writes it, then the timed part is an optional
 * cudaMemPrefetchAsync to the device and a kernel that reads every word. D2H: a kernel writes
 * it, then the timed part is an optional prefetch to the host and the host reading every word
 * (host clock). *intact: every word read was the one written. */
GLC_API int glc_memlab_managed(int direction, int prefetch, size_t bytes, int repeat,
                               float *samples, int *intact);

/* S1's granularity kernels over n ints: out[id] = in[id], id from the pattern. */
enum glc_memlab_pattern {
  GLC_PATTERN_COALESCED = 0,
  GLC_PATTERN_MIXED = 1,     /* lane * 7 % 32 within each warp's 32 elements */
  GLC_PATTERN_OFFSET = 2,    /* id * offset % n */
  GLC_PATTERN_SCATTERED = 3, /* id * 121 % n */
};
GLC_API int glc_memlab_access(int pattern, int offset, size_t n, int repeat, float *samples);

/* Pointer chase over a device array of `words` 32-bit words. Node i sits at word
 * i * stride_words and holds the word index of node successor[i]. One thread follows warm_steps
 * dependent loads from node 0 untimed, then `repeat` timed passes of `steps` loads, each going
 * on from where the last stopped. *final_node: where the walk ended, for checking against a host
 * walk of warm_steps + repeat * steps links. */
GLC_API int glc_memlab_chase(const uint32_t *successor, size_t nodes, size_t stride_words,
                             size_t words, size_t warm_steps, size_t steps, int repeat,
                             float *samples, uint32_t *final_node);

/* Shared memory: each warp reads a 32x32 float tile at word (lane * stride + k) % 1024 for
 * `iterations` values of k. */
GLC_API int glc_memlab_bank(int stride, int iterations, int repeat, float *samples);

/* Table reads: mode 0 __constant__ uniform (one address per warp), 1 __constant__ divergent
 * (32 addresses per warp), 2 global uniform, 3 global divergent. *loads: loads timed. */
GLC_API int glc_memlab_constant(int mode, int iterations, int repeat, float *samples,
                                double *loads);

#ifdef __cplusplus
}
#endif
#endif
