/* The scan lab's C ABI: scan (prefix sum, max, min), and stream compaction (compact, nonzero).
 * Every function returns a CUDA error code, as cuda/core/gpulab_core.h says. */
#ifndef GPULAB_CUDA_SCAN_H
#define GPULAB_CUDA_SCAN_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The lab's modes, in the order of the registry's "sum", "max", "min". */
enum glc_scan_op { GLC_SCAN_SUM = 0, GLC_SCAN_MAX = 1, GLC_SCAN_MIN = 2 };

/* Scan variant ids (csrc/labs/scan/variants.c's rows; 100 up are the CPU's). */
enum glc_scan_variant {
  GLC_SCAN_HILLIS_STEELE = 0,
  GLC_SCAN_BLELLOCH = 1,
  GLC_SCAN_THEN_PROPAGATE = 2,
  GLC_SCAN_REDUCE_THEN_SCAN = 3,
  GLC_SCAN_WARP_SHUFFLE = 4,
  GLC_SCAN_DECOUPLED_LOOKBACK = 5,
  GLC_SCAN_CUB = 6
};

/* Compaction variant ids (compact and nonzero share them). */
enum glc_compact_variant {
  GLC_COMPACT_THREE_PASS = 0,
  GLC_COMPACT_SINGLE_PASS = 1,
  GLC_COMPACT_CUB = 2,
  GLC_COMPACT_STAGED = 3,
  GLC_COMPACT_COUNTED_STAGED = 4
};

/* The one-block variants (0, 1) run the whole array through one block, a block-sized chunk at a
 * time with a carry; past this many elements they are refused (one SM would take too long). */
#define GLC_SCAN_ONE_BLOCK_MAX (1ull << 24)

/* y = the inclusive (or exclusive) scan of n >= 1 elements of x (dtype GLC_F32, GLC_F64,
 * GLC_I32 or GLC_I64) with op. y has x's type, except int32 sums, which are int64. The
 * exclusive scan starts at op's identity (0, the lowest value, the highest value). block:
 * threads per block (ignored by variants 5 and 6). x and y must not overlap. */
GLC_API int glc_scan(int variant, int block, int op, int inclusive, int dtype, size_t n,
                     const void *x, void *y, glc_stream stream);

/* out = the elements of x (n >= 1, any of the four dtypes) where mask[i] != 0 (mask: n bytes,
 * NumPy bools) or, without a mask (NULL), where x[i] != 0, in order; *count (device memory, one
 * int64) = how many. out has room for the kept elements. */
GLC_API int glc_compact(int variant, int dtype, size_t n, const void *x, const unsigned char *mask,
                        void *out, long long *count, glc_stream stream);

/* *count (device memory, one int64) = how many of the n >= 1 mask bytes are not zero: the
 * binding's sizing pass, which lets a masked compaction on device arrays write straight into a
 * result of exactly that length (compact.cu's count_true, one grid-stride pass of 16-byte loads;
 * not a variant's launch). */
GLC_API int glc_count_true(size_t n, const unsigned char *mask, long long *count,
                           glc_stream stream);

/* out = the indices i (int64) where x[i] != 0, in order; *count as for glc_compact. */
GLC_API int glc_nonzero(int variant, int dtype, size_t n, const void *x, long long *out,
                        long long *count, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
