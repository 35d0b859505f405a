// glc_sort: the sort lab's entry point, from a variant id to its family (families.cuh). It checks
// what every variant needs (pointers, alignment, the value size) first: a bad pointer would fault
// inside a kernel, and that error would end CUDA for the process.
#include "cuda/core/launch.cuh"
#include "families.cuh"

extern "C" int glc_sort(int variant, int bits, int dtype, int descending, size_t n,
                        const void *keys, void *keys_out, int value_bytes, const void *values,
                        void *values_out, glc_stream stream) {
  const size_t key_bytes = dtype == GLC_I64 || dtype == GLC_F64 ? 8 : 4;
  if (n == 0) return glc_fail(cudaErrorInvalidValue, "glc_sort");
  if (value_bytes != 0 && value_bytes != 4 && value_bytes != 8)
    return glc_fail(cudaErrorInvalidValue, "glc_sort");
  if (value_bytes == 0 && (keys_out == nullptr || values != nullptr || values_out != nullptr))
    return glc_fail(cudaErrorInvalidValue, "glc_sort");
  if (!glc_all_aligned(key_bytes, keys) ||
      (keys_out != nullptr && !glc_all_aligned(key_bytes, keys_out)))
    return glc_fail(cudaErrorMisalignedAddress, "glc_sort");
  if (value_bytes != 0 && (!glc_all_aligned(value_bytes, values_out) ||
                           (values != nullptr && !glc_all_aligned(value_bytes, values))))
    return glc_fail(cudaErrorMisalignedAddress, "glc_sort");
  const glc_sort_call call = {dtype,  descending != 0, n,
                              keys,   keys_out,        value_bytes,
                              values, values_out,      static_cast<cudaStream_t>(stream)};
  switch (variant) {
    case GLC_SORT_BITONIC:
      if (n > GLC_SORT_BITONIC_MAX) return glc_fail(cudaErrorInvalidValue, "glc_sort");
      return glc_sort_bitonic(call);
    case GLC_SORT_LSD_RADIX:
      if (bits != 4 && bits != 8) return glc_fail(cudaErrorInvalidValue, "glc_sort");
      return glc_sort_lsd_radix(call, bits);
    case GLC_SORT_CUB:
      return glc_sort_cub(call);
    case GLC_SORT_MERGE_PATH:
      return glc_sort_merge_path(call);
    case GLC_SORT_ONESWEEP:
      return glc_sort_onesweep(call);
    case GLC_SORT_QUICKSORT:
      return glc_sort_quicksort(call);
    case GLC_SORT_QUICKSORT_CDP:
      if (n > GLC_SORT_QUICKSORT_CDP_MAX) return glc_fail(cudaErrorInvalidValue, "glc_sort");
      return glc_sort_quicksort_cdp(call);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_sort");
  }
}
