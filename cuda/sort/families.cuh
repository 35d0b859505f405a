// Internal to cuda/sort/: one call's arguments, the key types the kernels are instantiated for,
// and the lab's families of variants, which glc_sort dispatches to. Each returns a CUDA error
// code.
#ifndef GPULAB_SORT_FAMILIES_CUH
#define GPULAB_SORT_FAMILIES_CUH

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/core/errors.cuh"
#include "sort.h"

// What glc_sort was asked (sort.h says what each field may be). values is null with
// value_bytes 8 for argsort: the values are then the indices.
struct glc_sort_call {
  int dtype;
  bool descending;
  size_t n;
  const void *keys;
  void *keys_out;
  int value_bytes;
  const void *values;
  void *values_out;
  cudaStream_t stream;
  bool argsort() const { return value_bytes == 8 && values == nullptr; }
};

// A key dtype as a type: its bits (moved, never converted) and their order (sort.h), reversed
// for a descending sort. Every kernel sorts by order() and moves bits, so that the output holds
// the input's own bits (-0.0 stays -0.0, each NaN keeps its payload).
template <int Dtype>
struct glc_sort_key {
  static constexpr bool wide = Dtype == GLC_I64 || Dtype == GLC_F64;
  using bits = std::conditional_t<wide, unsigned long long, unsigned>;
  __host__ __device__ static bits order(bits key, bool descending) {
    bits ordered;
    if constexpr (wide)
      ordered = glc_sort_order_bits64(key, Dtype);
    else
      ordered = glc_sort_order_bits32(key, Dtype);
    return descending ? ~ordered : ordered;
  }
};

// What moves with the keys, as types: Value (4 or 8 bytes), whether there are values at all, and
// Iota: argsort's values, the indices, which the first pass writes instead of reading.
template <typename ValueType, bool HasValuesFlag, bool IotaFlag>
struct glc_sort_values {
  using Value = ValueType;
  static constexpr bool has_values = HasValuesFlag, iota = IotaFlag;
};

// Calls body(glc_sort_values<...>{}) for the call's values: none, 4 bytes, argsort's indices, or
// 8 bytes.
template <typename Body>
int glc_dispatch_sort_values(const glc_sort_call &call, Body &&body) {
  switch (call.value_bytes) {
    case 0:
      return body(glc_sort_values<unsigned, false, false>{});
    case 4:
      return body(glc_sort_values<unsigned, true, false>{});
    default:
      return call.argsort() ? body(glc_sort_values<unsigned long long, true, true>{})
                            : body(glc_sort_values<unsigned long long, true, false>{});
  }
}

// Calls body(std::integral_constant<int, dtype>{}) for the five key dtypes; others are refused.
template <typename Body>
int glc_dispatch_sort_key(int dtype, const char *caller, Body &&body) {
  switch (dtype) {
    case GLC_I32:
      return body(std::integral_constant<int, GLC_I32>{});
    case GLC_U32:
      return body(std::integral_constant<int, GLC_U32>{});
    case GLC_I64:
      return body(std::integral_constant<int, GLC_I64>{});
    case GLC_F32:
      return body(std::integral_constant<int, GLC_F32>{});
    case GLC_F64:
      return body(std::integral_constant<int, GLC_F64>{});
    default:
      return glc_fail(cudaErrorInvalidValue, caller);
  }
}

// Variant 0: a bitonic network over (key, index) pairs, padded to a power of two (bitonic.cu).
int glc_sort_bitonic(const glc_sort_call &call);

// Variant 1: LSD radix sort, `bits` (4 or 8) a pass (radix.cu).
int glc_sort_lsd_radix(const glc_sort_call &call, int bits);

// Variant 2: CUB's DeviceRadixSort (cub.cu).
int glc_sort_cub(const glc_sort_call &call);

// Variant 3: a merge sort of 2048-key tiles, then merge passes split by merge path (merge.cu).
int glc_sort_merge_path(const glc_sort_call &call);

// Variant 4: onesweep radix sort, 8 bits a pass, one histogram pass (onesweep.cu).
int glc_sort_onesweep(const glc_sort_call &call);

// Variant 5: quicksort, three-way stable partitions of every segment of a level at once, by
// scans of class flags; leaves of 2048 keys sorted in shared memory (quicksort.cu).
int glc_sort_quicksort(const glc_sort_call &call);

// Variant 6: quicksort by device-launched grids on (key, index) records (quicksort_cdp.cu).
int glc_sort_quicksort_cdp(const glc_sort_call &call);

#endif
