/* Scalar mirrors: slots of mapped pinned host memory into which a reduction's kernel also
 * writes its result (cuda/core/scalar_mirror.h), so that item() of the 0-d DeviceArray it returns
 * reads the value with no copy and no stream wait. A slot belongs to one array until the array
 * dies or its memory is handed to anything else (gl_devarray_forget_mirror). */
#ifndef GL_MIRROR_H
#define GL_MIRROR_H

#include <stddef.h>

#include "cuda/core/scalar_mirror.h"

/* A free slot: its host address, the address kernels write, and a fresh tag. 1, or 0 when there
 * is none (the pool is used up or could not be made): the caller goes without. Needs the GIL. */
int gl_mirror_take(glc_scalar_mirror **host, glc_scalar_mirror **device, unsigned *tag);
/* Gives a slot back. Needs the GIL. */
void gl_mirror_release(glc_scalar_mirror *host);
/* 1 with the value's bytes in dst once the slot holds tag's value, 0 when it does not within a
 * few tens of microseconds (queued work ahead of the kernel, a failed launch, or a slot caught
 * mid-rewrite): the caller then copies the value from the device. */
int gl_mirror_read(const glc_scalar_mirror *host, unsigned tag, void *dst, size_t bytes);
/* Slots taken and reads answered from a mirror, for tests (_core._mirror_stats). */
void gl_mirror_stats(size_t *taken, size_t *read);

#endif
