/* A copy of a few bytes by a kernel instead of the copy engine: item() and other scalar results
 * read back through mapped pinned memory (csrc/core/transfer.c). */
#ifndef GPULAB_CUDA_CORE_SMALL_COPY_H
#define GPULAB_CUDA_CORE_SMALL_COPY_H

#include "gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Up to GLC_COPY_SMALL_MAX bytes copied by a one-warp kernel, for a device source and a
 * destination the device addresses (mapped pinned memory included): no copy engine to set up. */
#define GLC_COPY_SMALL_MAX 4096
GLC_API int glc_copy_small(void *dst, const void *src, size_t bytes, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
