/* Device memory from CUDA's stream-ordered pool, with a cache of small blocks for the library's
 * stream (both bypassed in exact allocation mode, runtime.h). */
#ifndef GL_DEVICE_MEMORY_H
#define GL_DEVICE_MEMORY_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"

/* bytes of device memory ordered on stream; a CUDA error code. */
int gl_device_alloc(void **ptr, size_t bytes, glc_stream stream);
/* Frees what gl_device_alloc gave for the same bytes, ordered on stream. */
void gl_device_free(void *ptr, size_t bytes, glc_stream stream);
/* Bytes of freed small blocks kept for reuse on the library's stream, and their release. */
size_t gl_block_cache_bytes(void);
void gl_block_cache_trim(void);

#endif
