// Internal to cuda/linalg/: matmul's operands made row-major for the rungs that read them only so.
// glc_matmul and glc_hgemm take A (m x k) and B (k x n) lying as their layout says
// (glc_matmul_layout, linalg.h): each row-major, or given as the storage of its transpose (a
// transposed view, x.T of a C-contiguous x). The rungs that can read a transposed operand in
// place get the layout (cuBLAS's and cuBLASLt's op flags, the wgmma and tf32 rungs' TMA); every
// other one, and their fallbacks, get row-major operands from glc_matmul_row_major: each operand
// given transposed is transposed back by the transpose ladder's wide rung (one read and one
// write of it, any shape: launches of 65535 row tiles each) into a workspace from the
// stream-ordered pool, which goes back to the pool on the stream when the struct goes out of
// scope, after whatever was queued on the stream by then (the GEMM that reads it).
#ifndef GPULAB_CUDA_LINALG_MATMUL_LAYOUT_CUH
#define GPULAB_CUDA_LINALG_MATMUL_LAYOUT_CUH

#include <cstddef>

#include "cuda/core/resources.cuh"
#include "linalg.h"

struct GlcRowMajorOperands {
  const void *a = nullptr, *b = nullptr;  // row-major A (m x k) and B (k x n)
  GlcDeviceBuffer a_copy, b_copy;         // the workspaces of the operands given transposed
};

// Fills *out with row-major A and B from a and b lying as layout says, of elements of
// element_bytes (2, 4 or 8); m, n, k >= 1, m k and k n elements within glc_transpose's sizes.
// An operand given row-major is used where it lies (no copy). Returns 0 or a CUDA error code
// (its workspace's allocation, or the transpose's launch).
int glc_matmul_row_major(int layout, int element_bytes, size_t m, size_t n, size_t k, const void *a,
                         const void *b, glc_stream stream, GlcRowMajorOperands *out);

#endif
