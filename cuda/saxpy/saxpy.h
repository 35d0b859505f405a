/* The saxpy lab's C ABI: saxpy and matadd.
 * Every function returns a CUDA error code, as cuda/core/gpulab_core.h says. */
#ifndef GPULAB_CUDA_SAXPY_H
#define GPULAB_CUDA_SAXPY_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = a*x + y over n elements of dtype (GLC_F32 or GLC_F64). variant: 0 one thread per
 * element, 1 grid-stride, 2 grid-stride with 16-byte vectors. block: threads per block. */
GLC_API int glc_saxpy(int variant, int block, int dtype, size_t n, double a, const void *x,
                      const void *y, void *out, glc_stream stream);

/* C = A + B for row-major rows x cols matrices. variant 0: 2-D grid of 16x16 blocks. */
GLC_API int glc_matadd(int variant, int dtype, size_t rows, size_t cols, const void *a,
                       const void *b, void *c, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
