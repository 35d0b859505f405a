// glc_scan, glc_compact and glc_nonzero: the scan lab's entry points, from a variant id to its
// family (families.cuh). Each checks what every variant needs (n, pointers, alignment) first:
// a bad pointer would fault inside a kernel, and that error would end CUDA for the process.
#include "cuda/core/launch.cuh"
#include "families.cuh"
#include "scan.h"

namespace {

size_t element_bytes(int dtype) { return dtype == GLC_F64 || dtype == GLC_I64 ? 8 : 4; }

// The accumulator's bytes: int32 sums are int64.
size_t result_bytes(int op, int dtype) {
  return dtype == GLC_I32 && op == GLC_SCAN_SUM ? 8 : element_bytes(dtype);
}

}  // namespace

extern "C" int glc_scan(int variant, int block, int op, int inclusive, int dtype, size_t n,
                        const void *x, void *y, glc_stream stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (n == 0) return glc_fail(cudaErrorInvalidValue, "glc_scan");
  if (!glc_all_aligned(element_bytes(dtype), x) || !glc_all_aligned(result_bytes(op, dtype), y))
    return glc_fail(cudaErrorMisalignedAddress, "glc_scan");
  switch (variant) {
    case GLC_SCAN_HILLIS_STEELE:
    case GLC_SCAN_BLELLOCH:
      return glc_scan_one_block(variant, block, op, inclusive, dtype, n, x, y, s);
    case GLC_SCAN_THEN_PROPAGATE:
    case GLC_SCAN_REDUCE_THEN_SCAN:
      return glc_scan_multi_block(variant, block, op, inclusive, dtype, n, x, y, s);
    case GLC_SCAN_WARP_SHUFFLE:
    case GLC_SCAN_DECOUPLED_LOOKBACK:
      return glc_scan_shuffle(variant, op, inclusive, dtype, n, x, y, s);
    case GLC_SCAN_CUB:
      return glc_scan_cub(op, inclusive, dtype, n, x, y, s);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_scan");
  }
}

namespace {

int compact_any(int variant, int dtype, size_t n, const void *x, const unsigned char *mask,
                void *out, bool index_out, long long *count, cudaStream_t s) {
  if (n == 0 || count == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_compact");
  if (!glc_all_aligned(element_bytes(dtype), x) ||
      !glc_all_aligned(index_out ? 8 : element_bytes(dtype), out))
    return glc_fail(cudaErrorMisalignedAddress, "glc_compact");
  switch (variant) {
    case GLC_COMPACT_THREE_PASS:
    case GLC_COMPACT_SINGLE_PASS:
    case GLC_COMPACT_STAGED:
    case GLC_COMPACT_COUNTED_STAGED:
      return glc_compact_ours(variant, dtype, n, x, mask, out, index_out, count, s);
    case GLC_COMPACT_CUB:
      return glc_compact_cub(dtype, n, x, mask, out, index_out, count, s);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_compact");
  }
}

}  // namespace

extern "C" int glc_compact(int variant, int dtype, size_t n, const void *x,
                           const unsigned char *mask, void *out, long long *count,
                           glc_stream stream) {
  return compact_any(variant, dtype, n, x, mask, out, false, count,
                     static_cast<cudaStream_t>(stream));
}

extern "C" int glc_nonzero(int variant, int dtype, size_t n, const void *x, long long *out,
                           long long *count, glc_stream stream) {
  return compact_any(variant, dtype, n, x, nullptr, out, true, count,
                     static_cast<cudaStream_t>(stream));
}
