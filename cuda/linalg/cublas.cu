// Matvec variant 4 and matmul variants 9 and 11: cuBLAS SGEMV/DGEMV and SGEMM/DGEMM, the
// references the ladders are measured against.
//
// libcublas is not linked: it is opened with dlopen on the first call of one of these variants
// ("libcublas.so.13", then "libcublas.so"), and the eight functions used are looked up by name.
// `import gpulab` and every other variant keep working where it is missing; these variants then
// fail with cudaErrorFileNotFound and "libcublas.so.13 not found" as the failed call.
// GPULAB_CUBLAS=<path> in the environment opens that library instead (another cuBLAS, such as a
// wheel's; the tests name a missing one to see the error).
// One handle per device, created on first use and kept for the life of the process (a handle
// costs milliseconds to create: never per call; cuda/core/library.cuh).
//
// Row-major through column-major cuBLAS: a row-major M x N matrix with leading dimension N is
// the column-major N x M matrix of its transpose. So C = A B (row-major) is
// C^T = B^T A^T (column-major): SGEMM with the operands swapped, m and n swapped, and no
// transposes: gemm(N, N, n, m, k, B, ldb = n, A, lda = k, C, ldc = n). An operand given
// transposed (glc_matmul_layout) is read in place with the op flag instead: B^T's storage, n x k
// row-major, is the column-major k x n matrix B (ld k), which CUBLAS_OP_T turns into the n x k
// that the call wants; A^T's, k x m row-major, is the column-major m x k matrix A (ld m), OP_T
// again. Likewise y = A x is y = (A^T)^T x: GEMV with CUBLAS_OP_T on the column-major n x m
// matrix A^T (lda = n).
#include <cublas_v2.h>

#include <climits>
#include <mutex>

#include "cublas.cuh"
#include "cublas_status.cuh"
#include "cuda/core/errors.cuh"
#include "cuda/core/gpulab_core.h"
#include "cuda/core/launch.cuh"
#include "cuda/core/library.cuh"
#include "linalg.h"

namespace {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
  decltype(&cublasSgemv_v2) sgemv = nullptr;
  decltype(&cublasDgemv_v2) dgemv = nullptr;
  bool loaded = false;
  bool chosen = false;  // GPULAB_CUBLAS named the library
};

// The library, opened once (never closed: the handles live as long as the process).
const CublasApi &cublas_api() {
  static CublasApi api = [] {
    CublasApi found;
    void *library =
        glc_open_library("GPULAB_CUBLAS", {"libcublas.so.13", "libcublas.so"}, &found.chosen);
    if (library == nullptr) return found;
    found.loaded = glc_find_symbol(library, "cublasCreate_v2", &found.create) &&
                   glc_find_symbol(library, "cublasDestroy_v2", &found.destroy) &&
                   glc_find_symbol(library, "cublasSetStream_v2", &found.set_stream) &&
                   glc_find_symbol(library, "cublasSetMathMode", &found.set_math_mode) &&
                   glc_find_symbol(library, "cublasSgemm_v2", &found.sgemm) &&
                   glc_find_symbol(library, "cublasDgemm_v2", &found.dgemm) &&
                   glc_find_symbol(library, "cublasSgemv_v2", &found.sgemv) &&
                   glc_find_symbol(library, "cublasDgemv_v2", &found.dgemv);
    return found;
  }();
  return api;
}

std::mutex handles_lock;  // guards the handles, and each handle's stream and math mode per call
cublasHandle_t handles[glc_cached_devices];

// The current device's handle, created on first use, with the lock held by the caller.
int device_handle(const CublasApi &api, cublasHandle_t *handle) {
  return glc_device_handle(
      handles, "cuBLAS handle (device ordinal past 63)",
      [&](cublasHandle_t *made) { return glc_cublas_status(api.create(made), "cublasCreate_v2"); },
      handle);
}

// Runs call(api, handle) with the handle on stream and in math mode, under the lock.
template <typename Call>
int with_handle(cudaStream_t stream, cublasMath_t mode, Call &&call) {
  const CublasApi &api = cublas_api();
  if (!api.loaded)
    return glc_fail(cudaErrorFileNotFound, api.chosen
                                               ? "GPULAB_CUBLAS's library not found (or not cuBLAS)"
                                               : "libcublas.so.13 not found");
  std::lock_guard<std::mutex> guard(handles_lock);
  cublasHandle_t handle = nullptr;
  int code = device_handle(api, &handle);
  if (code) return code;
  code = glc_cublas_status(api.set_stream(handle, stream), "cublasSetStream_v2");
  if (code) return code;
  code = glc_cublas_status(api.set_math_mode(handle, mode), "cublasSetMathMode");
  if (code) return code;
  return call(api, handle);
}

bool fits_int(size_t v) { return v <= static_cast<size_t>(INT_MAX); }

}  // namespace

int glc_cublas_gemv(int dtype, size_t m, size_t n, const void *a, const void *x, void *y,
                    cudaStream_t stream) {
  if (!fits_int(m) || !fits_int(n))
    return glc_fail(cudaErrorInvalidValue, "glc_matvec(cuBLAS takes int sizes)");
  const int rows = static_cast<int>(n), cols = static_cast<int>(m);  // of column-major A^T
  return with_handle(stream, CUBLAS_DEFAULT_MATH, [&](const CublasApi &api, cublasHandle_t h) {
    if (dtype == GLC_F64) {
      const double one = 1.0, zero = 0.0;
      return glc_cublas_status(
          api.dgemv(h, CUBLAS_OP_T, rows, cols, &one, static_cast<const double *>(a), rows,
                    static_cast<const double *>(x), 1, &zero, static_cast<double *>(y), 1),
          "cublasDgemv_v2");
    }
    const float one = 1.0f, zero = 0.0f;
    return glc_cublas_status(
        api.sgemv(h, CUBLAS_OP_T, rows, cols, &one, static_cast<const float *>(a), rows,
                  static_cast<const float *>(x), 1, &zero, static_cast<float *>(y), 1),
        "cublasSgemv_v2");
  });
}

int glc_cublas_gemm(int dtype, bool tf32, int layout, size_t m, size_t n, size_t k, const void *a,
                    const void *b, void *c, cudaStream_t stream) {
  if (!fits_int(m) || !fits_int(n) || !fits_int(k))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(cuBLAS takes int sizes)");
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  // cuBLAS's first operand is our B, its second our A (see above)
  const bool a_t = layout & GLC_MATMUL_A_T, b_t = layout & GLC_MATMUL_B_T;
  const cublasOperation_t op_b = b_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = a_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = b_t ? K : N, lda = a_t ? M : K;
  // CUBLAS_DEFAULT_MATH: no tensor-op down-conversion of FP32 (TF32 only when asked for).
  const cublasMath_t mode = tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  return with_handle(stream, mode, [&](const CublasApi &api, cublasHandle_t h) {
    if (dtype == GLC_F64) {
      const double one = 1.0, zero = 0.0;
      return glc_cublas_status(
          api.dgemm(h, op_b, op_a, N, M, K, &one, static_cast<const double *>(b), ldb,
                    static_cast<const double *>(a), lda, &zero, static_cast<double *>(c), N),
          "cublasDgemm_v2");
    }
    const float one = 1.0f, zero = 0.0f;
    return glc_cublas_status(
        api.sgemm(h, op_b, op_a, N, M, K, &one, static_cast<const float *>(b), ldb,
                  static_cast<const float *>(a), lda, &zero, static_cast<float *>(c), N),
        "cublasSgemm_v2");
  });
}
