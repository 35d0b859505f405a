// The tunables of the register-blocked SGEMM rungs (variants 4-8, 10 and 12) and their defaults,
// as the kernels in matmul_register.cu, matmul_warp.cu, matmul_tf32.cu and
// matmul_multistage.cu compile them:
//  4 register_1d: tm in {4, 8}, default 8 (bm = bn = 64, bk = 8 are fixed, not tunables);
//  5-8: bm in {64, 128}, bn in {64, 128}, bk in {8, 16}, defaults 128, 128, 8 (the thread tile
//    is fixed at 8 x 8);
//  10 tf32_wmma: none (a 128 x 128 x 16 block tile);
//  12 multistage: warps in {4, 8}, bk in {8, 16}, stages in {2, 3, 4}, bm in {128, 256},
//    defaults GLC_MULTISTAGE_DEFAULT_* in linalg.h, 4, 8, 2, 128, which the ladder's table
//    shows too (the block tile is bm x 128; the defaults are the fastest of the 18
//    configurations at both 4096^3 and 8192^3 on the H100, after the whole-slice
//    copies: benchmarks/results/linalg_sgemm_grid.json; bm = 256 was slower everywhere).
//    bm = 256 takes warps = 8 only: 4 warps would hold 32 x 8 results a thread, past 255
//    registers.
// A tunable a variant does not have must be 0; variants 2-3's `tile` is not resolved here.
#include <cuda_runtime.h>

#include "cuda/core/errors.cuh"
#include "matmul_blocked.h"

namespace {

// Fills a zero *value with fallback; true when the result is one of the allowed values.
bool resolve_one(int *value, int fallback, int allowed0, int allowed1, int allowed2 = -1) {
  if (*value == 0) *value = fallback;
  return *value == allowed0 || *value == allowed1 || *value == allowed2;
}

}  // namespace

int glc_matmul_blocked_resolve(int variant, glc_matmul_tunables *t) {
  if (t == nullptr || t->tile != 0) return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  if (variant != GLC_MATMUL_MULTISTAGE && (t->warps != 0 || t->stages != 0))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  bool ok = false;
  switch (variant) {
    case GLC_MATMUL_REGISTER_1D:
      ok = t->bm == 0 && t->bn == 0 && t->bk == 0 && t->tn == 0 && resolve_one(&t->tm, 8, 4, 8);
      break;
    case GLC_MATMUL_REGISTER_2D:
    case GLC_MATMUL_VECTORIZED:
    case GLC_MATMUL_WARP_TILING:
    case GLC_MATMUL_DOUBLE_BUFFERED: {
      const bool bm = resolve_one(&t->bm, 128, 64, 128);
      const bool bn = resolve_one(&t->bn, 128, 64, 128);
      const bool bk = resolve_one(&t->bk, 8, 8, 16);
      ok = bm && bn && bk && t->tm == 0 && t->tn == 0;
      break;
    }
    case GLC_MATMUL_MULTISTAGE: {
      const bool warps = resolve_one(&t->warps, GLC_MULTISTAGE_DEFAULT_WARPS, 4, 8);
      const bool bk = resolve_one(&t->bk, GLC_MULTISTAGE_DEFAULT_BK, 8, 16);
      const bool stages = resolve_one(&t->stages, GLC_MULTISTAGE_DEFAULT_STAGES, 2, 3, 4);
      const bool bm = resolve_one(&t->bm, GLC_MULTISTAGE_DEFAULT_BM, 128, 256) &&
                      (t->bm == 128 || t->warps == 8);
      ok = warps && bk && stages && bm && t->bn == 0 && t->tm == 0 && t->tn == 0;
      break;
    }
    case GLC_MATMUL_TF32_WMMA:
      ok = t->bm == 0 && t->bn == 0 && t->bk == 0 && t->tm == 0 && t->tn == 0;
      break;
    default:
      ok = false;
  }
  return ok ? cudaSuccess : glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
}
