// Internal to cuda/scan/: the scan lab's families of variants, which glc_scan and glc_compact
// dispatch to, and the one-block Blelloch scan that the multi-block variants reuse for their
// small middle pass. Each returns a CUDA error code.
#ifndef GPULAB_SCAN_FAMILIES_CUH
#define GPULAB_SCAN_FAMILIES_CUH

#include <cuda_runtime.h>

#include <cstddef>

// Variants 0 and 1: one block over the whole array (one_block.cu).
int glc_scan_one_block(int variant, int block, int op, int inclusive, int dtype, size_t n,
                       const void *x, void *y, cudaStream_t stream);

// Variants 2 and 3: S3's scan-then-propagate, and reduce-then-scan, on Blelloch's block scan
// (multi_block.cu).
int glc_scan_multi_block(int variant, int block, int op, int inclusive, int dtype, size_t n,
                         const void *x, void *y, cudaStream_t stream);

// Variants 4 and 5: tiles of 16-byte loads and warp-shuffle scans; reduce-then-scan, and single
// pass with decoupled look-back (shuffle.cu).
int glc_scan_shuffle(int variant, int op, int inclusive, int dtype, size_t n, const void *x,
                     void *y, cudaStream_t stream);

// Variant 6: CUB's DeviceScan (cub.cu).
int glc_scan_cub(int op, int inclusive, int dtype, size_t n, const void *x, void *y,
                 cudaStream_t stream);

// Compaction and nonzero, variants 0, 1 and 3 (compact.cu) and 2 (cub.cu). index_out: write the
// indices (int64) of the kept elements instead of the elements.
int glc_compact_ours(int variant, int dtype, size_t n, const void *x, const unsigned char *mask,
                     void *out, bool index_out, long long *count, cudaStream_t stream);
int glc_compact_cub(int dtype, size_t n, const void *x, const unsigned char *mask, void *out,
                    bool index_out, long long *count, cudaStream_t stream);

// An exclusive or inclusive scan of n values of T (long long or the scan's accumulators) by one
// block of `block` threads, in place allowed: the middle pass of the multi-block variants, over
// their per-tile partials (one_block.cu).
template <typename Op, typename T>
int glc_blelloch_one_block(int block, size_t n, const T *x, T *y, bool inclusive,
                           cudaStream_t stream);

#endif
