/* Device memory from CUDA's stream-ordered pool, with a cache of small blocks for the library's
 * stream (both bypassed in exact allocation mode, runtime.h). */
#ifndef GL_DEVICE_MEMORY_H
#define GL_DEVICE_MEMORY_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"

/* bytes of device memory ordered on stream; a CUDA error code. When the device has too little,
 * releases what gpulab keeps for reuse (gl_device_memory_release) and tries once more. */
int gl_device_alloc(void **ptr, size_t bytes, glc_stream stream);
/* Frees what gl_device_alloc gave for the same bytes, ordered on stream. */
void gl_device_free(void *ptr, size_t bytes, glc_stream stream);
/* Bytes of freed small blocks kept for reuse on the library's stream, and their release. */
size_t gl_block_cache_bytes(void);
void gl_block_cache_trim(void);
/* The block cache, then, once every stream of the device is done with what was freed on it, the
 * pool's unused memory, back to the driver. A CUDA error code. */
int gl_device_memory_release(void);
/* Bytes an allocation could have now: the device's free memory, the pool's reserved but unused
 * memory and the block cache. A CUDA error code. */
int gl_device_available(size_t *bytes);
/* Refuses, before any allocation, a workspace of needed bytes (a double: a padded size may pass
 * size_t) that the device cannot hold: ValueError "<what> needs N (<detail>); M free on the
 * device". 0 when it fits (or no GPU is up to ask), -1 raised. */
int gl_check_workspace(const char *what, double needed, const char *detail);

#endif
