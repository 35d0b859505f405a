// The entry of the half-precision GEMM ladder (hgemm.h): the tunables each rung takes, the
// checks every call passes, and the dispatch to the rungs' launchers. The rungs:
//  13 wmma (hgemm_wmma.cu): bm, bn in {64, 128}, bk in {16, 32}; defaults 128, 128, 32;
//  14 wmma_multistage (hgemm_wmma_multistage.cu): the same and stages in {2, 3, 4}, default 3;
//  15 mma_sync (hgemm_mma.cu): bm in {64, 128}, warps in {4, 8}, stages in {2, 3, 4} (its own
//     resolve, hgemm_mma.h);
//  16 cublaslt (cublaslt.cu): none;
//  17 wgmma, 18 wgmma_ws (hgemm_wgmma.cu): bn in {128, 256}, stages in {3, 4, 5} (its own
//     resolve, hgemm_wgmma.h). Where the TMA cannot describe A or B (k or n not a multiple of 8,
//     bases not 16-byte aligned) they run the mma.sync rung at its defaults instead, so that
//     every rung takes any shape.
//  20 wgmma_cluster (hgemm_wgmma.cu): 18's tunables, resolve and fallback.
// The defaults are GLC_WMMA_DEFAULT_* (hgemm.h), not yet measured on the H200. Operands given
// transposed (glc_hgemm's layout): cuBLASLt reads them in place, and the wgmma rungs where the
// TMA can describe them as they lie (glc_hgemm_tma_describes(layout, ...): the rows it reads a
// multiple of 8 elements); the WMMA and mma.sync rungs, and the wgmma rungs' mma.sync fallback,
// read row-major copies (matmul_layout.cuh).
#include <cuda_runtime.h>

#include <climits>

#include "cuda/core/errors.cuh"
#include "cuda/core/launch.cuh"
#include "hgemm.h"
#include "hgemm_mma.h"
#include "hgemm_wgmma.h"
#include "matmul_layout.cuh"

namespace {

bool one_of(int *value, int fallback, int allowed0, int allowed1, int allowed2 = -1) {
  if (*value == 0) *value = fallback;
  return *value == allowed0 || *value == allowed1 || *value == allowed2;
}

}  // namespace

int glc_hgemm_resolve(int variant, glc_matmul_tunables *t) {
  if (t == nullptr || t->tile != 0 || t->tm != 0 || t->tn != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(tunables)");
  if (variant == GLC_MATMUL_MMA_SYNC) return glc_hgemm_mma_resolve(t, t);
  if (variant == GLC_MATMUL_WGMMA || variant == GLC_MATMUL_WGMMA_WS ||
      variant == GLC_MATMUL_WGMMA_CLUSTER)
    return glc_hgemm_wgmma_resolve(t, t);
  if (t->warps != 0) return glc_fail(cudaErrorInvalidValue, "glc_hgemm(tunables)");
  bool ok = false;
  switch (variant) {
    case GLC_MATMUL_WMMA:
    case GLC_MATMUL_WMMA_MULTISTAGE: {
      const bool bm = one_of(&t->bm, GLC_WMMA_DEFAULT_BM, 64, 128);
      const bool bn = one_of(&t->bn, GLC_WMMA_DEFAULT_BN, 64, 128);
      const bool bk = one_of(&t->bk, GLC_WMMA_DEFAULT_BK, 16, 32);
      const bool stages = variant == GLC_MATMUL_WMMA
                              ? t->stages == 0
                              : one_of(&t->stages, GLC_WMMA_DEFAULT_STAGES, 2, 3, 4);
      ok = bm && bn && bk && stages;
      break;
    }
    case GLC_MATMUL_CUBLASLT:
      ok = t->bm == 0 && t->bn == 0 && t->bk == 0 && t->stages == 0;
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_hgemm(variant)");
  }
  return ok ? cudaSuccess : glc_fail(cudaErrorInvalidValue, "glc_hgemm(tunables)");
}

extern "C" int glc_hgemm(int variant, const glc_matmul_tunables *tunables, int dtype, int out_dtype,
                         int layout, size_t m, size_t n, size_t k, const void *a, const void *b,
                         void *c, glc_stream stream) {
  glc_matmul_tunables t = tunables ? *tunables : glc_matmul_tunables{};
  int code = glc_hgemm_resolve(variant, &t);
  if (code) return code;
  if (layout & ~(GLC_MATMUL_A_T | GLC_MATMUL_B_T))
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(layout)");
  if ((dtype != GLC_F16 && dtype != GLC_BF16) || (out_dtype != dtype && out_dtype != GLC_F32))
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(dtype)");
  // every operand's element count must fit an index of size_t with room (the kernels' offsets;
  // an operand given transposed has the same count)
  const size_t most = static_cast<size_t>(LLONG_MAX) / 4;
  if ((m && k > most / m) || (k && n > most / k) || (m && n > most / m))
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(sizes)");
  if (m == 0 || n == 0) return cudaSuccess;
  const size_t out_bytes = out_dtype == GLC_F32 ? 4 : 2;
  if (!glc_all_aligned(out_bytes, c) || (k && !glc_all_aligned(2, a, b)))
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(alignment)");
  // k == 0: an empty sum, C = 0, with no kernel and no library call
  if (k == 0) return glc_memset_async(c, 0, m * n * out_bytes, stream);
  // the rungs that read the operands as they lie, transposed or not
  int rung = variant;
  switch (variant) {
    case GLC_MATMUL_CUBLASLT:
      return glc_hgemm_cublaslt(&t, dtype, out_dtype, layout, m, n, k, a, b, c, stream);
    case GLC_MATMUL_WGMMA:
    case GLC_MATMUL_WGMMA_WS:
    case GLC_MATMUL_WGMMA_CLUSTER: {
      if (glc_hgemm_tma_describes(layout, m, n, k, a, b)) {
        auto *launch = variant == GLC_MATMUL_WGMMA ? glc_hgemm_wgmma : glc_hgemm_wgmma_ws;
        if (variant == GLC_MATMUL_WGMMA_CLUSTER) launch = glc_hgemm_wgmma_cluster;
        return launch(&t, dtype, out_dtype, layout, m, n, k, a, b, c, stream);
      }
      // where the TMA cannot describe A or B as they lie: the mma.sync rung at its defaults, on
      // row-major operands below
      rung = GLC_MATMUL_MMA_SYNC;
      t = glc_matmul_tunables{};
      code = glc_hgemm_mma_resolve(nullptr, &t);
      if (code) return code;
      break;
    }
    default:
      break;
  }
  // every other rung reads row-major operands: those given transposed are copied so first
  GlcRowMajorOperands rows;
  code = glc_matmul_row_major(layout, 2, m, n, k, a, b, stream, &rows);
  if (code) return code;
  switch (rung) {
    case GLC_MATMUL_WMMA:
      return glc_hgemm_wmma(&t, dtype, out_dtype, m, n, k, rows.a, rows.b, c, stream);
    case GLC_MATMUL_WMMA_MULTISTAGE:
      return glc_hgemm_wmma_multistage(&t, dtype, out_dtype, m, n, k, rows.a, rows.b, c, stream);
    case GLC_MATMUL_MMA_SYNC:
      return glc_hgemm_mma(&t, dtype, out_dtype, m, n, k, rows.a, rows.b, c, stream);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_hgemm(variant)");
  }
}
