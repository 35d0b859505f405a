/* Host primitives the binding shares: OpenMP introspection, the parallel memcpy that fills the
 * pinned staging ring, and the CPU's FP32 and FP64 FMA ceilings. Plain C, no Python. */
#ifndef GL_HOST_H
#define GL_HOST_H

#include <stddef.h>

/* Whether the CPU part was compiled with OpenMP, and how many threads it uses. */
int glcpu_openmp(void);
int glcpu_max_threads(void);

/* memcpy split over the OpenMP threads (used by the pinned staging ring and the CPU ceiling). */
void glcpu_parallel_copy(void *dst, const void *src, size_t bytes);
/* memset over OpenMP threads, page-aligned slices (a fresh mapping faults in on every core). */
void glcpu_parallel_fill(void *dst, int value, size_t bytes);

/* Independent FP32 FMA chains on every thread (enough to hide FMA latency); returns the flops
 * performed. */
double glcpu_fma_loop(long iterations);
/* The same with FP64 FMA chains. */
double glcpu_fma64_loop(long iterations);

#endif
