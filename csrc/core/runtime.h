/* Lazy CUDA start-up, the library's stream, and the allocation mode of the process. */
#ifndef GL_RUNTIME_H
#define GL_RUNTIME_H

#include "cuda/core/gpulab_core.h"

/* 1 when a GPU is usable, 0 when not (never raises). Starts CUDA on first call. */
int gl_gpu_ready(void);
/* 0 when a GPU is usable; otherwise raises NoDeviceError naming op's CPU variants, -1. */
int gl_require_gpu(const char *op);
/* The code with which CUDA failed to start (0 when it started). */
int gl_gpu_start_code(void);
glc_stream gl_library_stream(void);
const glc_device_props *gl_device_props(void);

/* Exact allocation mode, for the sanitizers: GPULAB_EXACT_ALLOC=1 in the environment when the
 * module is imported. Every device buffer is then its exact size, straight from the
 * stream-ordered pool, and every kernel runs on such buffers: no rounding, no block cache, no
 * mapped pinned memory for small NumPy calls. An overrun of any size leaves the allocation, where
 * compute-sanitizer can see it. Normal runs keep the fast paths. */
#define GL_EXACT_ALLOC_ENV "GPULAB_EXACT_ALLOC"
int gl_exact_alloc(void);
void gl_exact_alloc_init(void);

#endif
