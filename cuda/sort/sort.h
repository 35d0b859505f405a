/* The sort lab's C ABI: sort, argsort and sort_pairs, from a bitonic network to an LSD radix sort
 * and CUB. Every function returns a CUDA error code, as cuda/core/gpulab_core.h says. The key order
 * (glc_sort_order_bits) is shared with the CPU variants (csrc/labs/sort/cpu.c), so that every
 * variant orders keys as NumPy does. */
#ifndef GPULAB_CUDA_SORT_H
#define GPULAB_CUDA_SORT_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sort variant ids (csrc/labs/sort/variants.c's rows; 100 up are the CPU's). */
enum glc_sort_variant {
  GLC_SORT_BITONIC = 0,
  GLC_SORT_LSD_RADIX = 1,
  GLC_SORT_CUB = 2,
  GLC_SORT_MERGE_PATH = 3,
  GLC_SORT_ONESWEEP = 4,
  GLC_SORT_QUICKSORT = 5,
  GLC_SORT_QUICKSORT_CDP = 6
};

/* The bitonic network pads to a power of two and does log2(N)(log2(N)+1)/2 compare-exchange
 * steps: at 2^28 about 150 of them in global memory, a third of a second on an H100. Longer
 * inputs are refused. */
#define GLC_SORT_BITONIC_MAX (1ull << 28)

/* The quicksort with dynamic parallelism partitions the whole input with one block, so its time
 * grows with n at one SM's bandwidth (docs/labs/sort.md), and its tree of device launches must stay
 * within the nesting depth and the launch pool it reserves. Longer inputs are refused. */
#define GLC_SORT_QUICKSORT_CDP_MAX (1ull << 24)

/* Keys: GLC_I32, GLC_U32, GLC_I64, GLC_F32 or GLC_F64; n >= 1 of them at keys.
 *   keys_out: the keys in order (n elements of the keys' dtype), or NULL (argsort).
 *   value_bytes: 0 (no values), 4 or 8. values: n values of that size moved with their keys
 *     (any 4- or 8-byte dtype, moved as bits), or NULL with value_bytes 8 for argsort: the
 *     values are then the indices 0..n-1 as int64. values_out: n values (NULL when
 *     value_bytes is 0).
 * Order: NumPy's (glc_sort_order_bits below): floats with -0.0 equal to +0.0 and every NaN
 * after +inf; equal keys keep their input order (every CUDA variant is stable).
 * descending: the reverse key order, NaN first, equal keys still in input order.
 * bits: the LSD radix sort's digit width, 4 or 8 (ignored by the other variants).
 * No output may overlap an input. */
GLC_API int glc_sort(int variant, int bits, int dtype, int descending, size_t n, const void *keys,
                     void *keys_out, int value_bytes, const void *values, void *values_out,
                     glc_stream stream);

#ifdef __cplusplus
}
#endif

/* ---- the key order, for the CUDA and the CPU variants ---- */

#ifdef __CUDACC__
#define GLC_SORT_HD __host__ __device__ __forceinline__
#else
#define GLC_SORT_HD static inline
#endif

/* An unsigned integer whose order is NumPy's order of the key with these bits (its bit pattern
 * in the low 32 bits for 4-byte dtypes): integers with the sign bit flipped; floats with the
 * sign bit flipped when positive and every bit flipped when negative, -0.0 mapped onto +0.0 (they
 * compare equal, so a stable sort keeps them in input order) and every NaN, whatever its sign
 * and payload, onto the largest value (NumPy puts NaN last). A sort by these values that moves
 * the original bits returns NumPy's result bit for bit. */
GLC_SORT_HD uint32_t glc_sort_order_bits32(uint32_t bits, int dtype) {
  if (dtype == GLC_U32) return bits;
  if (dtype != GLC_F32) return bits ^ 0x80000000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0xffffffffu; /* NaN */
  if (magnitude == 0) return 0x80000000u;          /* -0.0 as +0.0 */
  return (bits & 0x80000000u) ? ~bits : bits ^ 0x80000000u;
}

GLC_SORT_HD uint64_t glc_sort_order_bits64(uint64_t bits, int dtype) {
  const uint64_t sign = 0x8000000000000000ull;
  if (dtype != GLC_F64) return bits ^ sign;
  const uint64_t magnitude = bits & ~sign;
  if (magnitude > 0x7ff0000000000000ull) return ~0ull; /* NaN */
  if (magnitude == 0) return sign;                     /* -0.0 as +0.0 */
  return (bits & sign) ? ~bits : bits ^ sign;
}

#endif
