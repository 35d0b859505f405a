/* Reduce variant 12 with its result also written into a scalar mirror (cuda/core/scalar_mirror.h)
 * in mapped host memory, which item() reads without a copy. Kept apart from reduce.h, which the
 * scan and sort labs' kernels include through ops.cuh. */
#ifndef GPULAB_CUDA_REDUCE_MIRRORED_H
#define GPULAB_CUDA_REDUCE_MIRRORED_H

#include "cuda/core/gpulab_core.h"
#include "cuda/core/scalar_mirror.h"

#ifdef __cplusplus
extern "C" {
#endif

/* glc_reduce's contract for variant 12 (any other variant: cudaErrorNotSupported), and the kernel
 * that writes *result writes mirror (the device's address of a mapped slot) with tag. */
GLC_API int glc_reduce_mirrored(int variant, int block, int op, int dtype, size_t n, const void *x,
                                void *result, glc_scalar_mirror *mirror, unsigned tag,
                                glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
