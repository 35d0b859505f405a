/* The reduce lab's C ABI: reduce, and dot and norm2 on its best path.
 * Every function returns a CUDA error code, as cuda/core/gpulab_core.h says. */
#ifndef GPULAB_CUDA_REDUCE_H
#define GPULAB_CUDA_REDUCE_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum glc_reduce_op { GLC_REDUCE_SUM = 0, GLC_REDUCE_MIN = 1, GLC_REDUCE_MAX = 2 };

/* Reduces n >= 1 elements of x (dtype GLC_F32, GLC_F64 or GLC_I32) with op into *result, on
 * stream. result has the input's type, except int32 sums, which are int64. variant: the lab's
 * CUDA ids (0-6 Harris, 7-10 S1, 11 cooperative groups, 12 vectorized single pass, 13 CUB);
 * block: threads per block (ignored by 13). A variant that cannot do (op, dtype) returns
 * cudaErrorNotSupported. result may be device memory or mapped host memory. */
GLC_API int glc_reduce(int variant, int block, int op, int dtype, size_t n, const void *x,
                       void *result, glc_stream stream);

/* The best path of the lab applied to products and squares (n >= 1, GLC_F32 or GLC_F64):
 * *result = sum x*y, and *result = sqrt(sum x*x). float32 accumulates in float64. */
GLC_API int glc_dot(int dtype, size_t n, const void *x, const void *y, void *result,
                    glc_stream stream);
GLC_API int glc_norm2(int dtype, size_t n, const void *x, void *result, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
