// glc_reduce: the reduce lab's entry point, from a variant id to its family.
#include "cuda/core/launch.cuh"
#include "families.cuh"
#include "reduce.h"

extern "C" int glc_reduce(int variant, int block, int op, int dtype, size_t n, const void *x,
                          void *result, glc_stream stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const size_t element = dtype == GLC_F64 ? 8 : 4;
  if (n == 0 || result == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_reduce");
  if (!glc_all_aligned(element, x)) return glc_fail(cudaErrorMisalignedAddress, "glc_reduce");
  if (variant >= 0 && variant <= 6)
    return glc_reduce_harris(variant, block, op, dtype, n, x, result, s);
  if (variant >= 7 && variant <= 10)
    return glc_reduce_atomic(variant, block, op, dtype, n, x, result, s);
  switch (variant) {
    case 11:
      return glc_reduce_cooperative(block, op, dtype, n, x, result, s);
    case 12:
      return glc_reduce_single_pass(block, op, dtype, n, x, result, s);
    case 13:
      return glc_reduce_cub(op, dtype, n, x, result, s);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_reduce");
  }
}
