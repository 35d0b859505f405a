// SpMV variant 7 and SpMM variant 2: cusparseSpMV and cusparseSpMM through the generic API on
// the CSR arrays as they are, the references the ladders are measured against.
//
// libcusparse is not linked: it is opened with dlopen on the first call of one of these
// variants ("libcusparse.so.12", then "libcusparse.so") and the functions used are looked up by
// name, as cuda/linalg/cublas.cu does for cuBLAS. `import gpulab` and every other variant keep
// working where it is missing; these variants then fail with cudaErrorFileNotFound and
// "libcusparse.so.12 not found" as the failed call. GPULAB_CUSPARSE=<path> opens that library
// instead (the tests name a missing one to see the error). One handle per device, created on
// first use and kept for the life of the process (cuda/core/library.cuh).
#include <cusparse.h>

#include <mutex>

#include "cuda/core/library.cuh"
#include "cuda/core/resources.cuh"
#include "kernels.cuh"

namespace {

struct CusparseApi {
  decltype(&cusparseCreate) create = nullptr;
  decltype(&cusparseSetStream) set_stream = nullptr;
  decltype(&cusparseCreateCsr) create_csr = nullptr;
  decltype(&cusparseDestroySpMat) destroy_sp_mat = nullptr;
  decltype(&cusparseCreateDnVec) create_dn_vec = nullptr;
  decltype(&cusparseDestroyDnVec) destroy_dn_vec = nullptr;
  decltype(&cusparseSpMV_bufferSize) spmv_buffer_size = nullptr;
  decltype(&cusparseSpMV) spmv = nullptr;
  decltype(&cusparseCreateDnMat) create_dn_mat = nullptr;
  decltype(&cusparseDestroyDnMat) destroy_dn_mat = nullptr;
  decltype(&cusparseSpMM_bufferSize) spmm_buffer_size = nullptr;
  decltype(&cusparseSpMM) spmm = nullptr;
  bool loaded = false;
  bool chosen = false;  // GPULAB_CUSPARSE named the library
};

const CusparseApi &cusparse_api() {
  static CusparseApi api = [] {
    CusparseApi found;
    void *library =
        glc_open_library("GPULAB_CUSPARSE", {"libcusparse.so.12", "libcusparse.so"}, &found.chosen);
    if (library == nullptr) return found;
    found.loaded = glc_find_symbol(library, "cusparseCreate", &found.create) &&
                   glc_find_symbol(library, "cusparseSetStream", &found.set_stream) &&
                   glc_find_symbol(library, "cusparseCreateCsr", &found.create_csr) &&
                   glc_find_symbol(library, "cusparseDestroySpMat", &found.destroy_sp_mat) &&
                   glc_find_symbol(library, "cusparseCreateDnVec", &found.create_dn_vec) &&
                   glc_find_symbol(library, "cusparseDestroyDnVec", &found.destroy_dn_vec) &&
                   glc_find_symbol(library, "cusparseSpMV_bufferSize", &found.spmv_buffer_size) &&
                   glc_find_symbol(library, "cusparseSpMV", &found.spmv) &&
                   glc_find_symbol(library, "cusparseCreateDnMat", &found.create_dn_mat) &&
                   glc_find_symbol(library, "cusparseDestroyDnMat", &found.destroy_dn_mat) &&
                   glc_find_symbol(library, "cusparseSpMM_bufferSize", &found.spmm_buffer_size) &&
                   glc_find_symbol(library, "cusparseSpMM", &found.spmm);
    return found;
  }();
  return api;
}

// cuSPARSE statuses as CUDA error codes; call names the function.
int cusparse_fail(cusparseStatus_t status, const char *call) {
  switch (status) {
    case CUSPARSE_STATUS_SUCCESS:
      return cudaSuccess;
    case CUSPARSE_STATUS_ALLOC_FAILED:
    case CUSPARSE_STATUS_INSUFFICIENT_RESOURCES:
      return glc_fail(cudaErrorMemoryAllocation, call);
    case CUSPARSE_STATUS_INVALID_VALUE:
      return glc_fail(cudaErrorInvalidValue, call);
    case CUSPARSE_STATUS_ARCH_MISMATCH:
      return glc_fail(cudaErrorNoKernelImageForDevice, call);
    case CUSPARSE_STATUS_NOT_SUPPORTED:
      return glc_fail(cudaErrorNotSupported, call);
    case CUSPARSE_STATUS_NOT_INITIALIZED:
      return glc_fail(cudaErrorInitializationError, call);
    case CUSPARSE_STATUS_EXECUTION_FAILED:
      return glc_fail(cudaErrorLaunchFailure, call);
    default:
      return glc_fail(cudaErrorUnknown, call);
  }
}

std::mutex handles_lock;  // guards the handles, and each handle's stream during a call
cusparseHandle_t handles[glc_cached_devices];

cudaDataType value_type(const glc_csr *a) { return a->dtype == GLC_F64 ? CUDA_R_64F : CUDA_R_32F; }

int device_handle(const CusparseApi &api, cusparseHandle_t *handle) {
  return glc_device_handle(
      handles, "cuSPARSE handle (device ordinal past 63)",
      [&](cusparseHandle_t *made) { return cusparse_fail(api.create(made), "cusparseCreate"); },
      handle);
}

// The descriptors of one call, destroyed when it ends: A, and x and y (SpMV) or B and C (SpMM).
struct Descriptors {
  const CusparseApi &api;
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnVecDescr_t x = nullptr, y = nullptr;
  cusparseDnMatDescr_t b = nullptr, c = nullptr;
  ~Descriptors() {
    if (a) api.destroy_sp_mat(a);
    if (x) api.destroy_dn_vec(x);
    if (y) api.destroy_dn_vec(y);
    if (b) api.destroy_dn_mat(b);
    if (c) api.destroy_dn_mat(c);
  }
};

// The library and the current device's handle on stream (the caller holds handles_lock), and
// A's descriptor in d.
int begin_call(const glc_csr *a, cudaStream_t stream, cusparseHandle_t *handle, Descriptors &d) {
  const CusparseApi &api = d.api;
  int code = device_handle(api, handle);
  GLC_TRY(code, cusparse_fail(api.set_stream(*handle, stream), "cusparseSetStream"));
  const cusparseIndexType_t index_type =
      a->index_dtype == GLC_I64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  GLC_TRY(code,
          cusparse_fail(
              api.create_csr(&d.a, static_cast<int64_t>(a->rows), static_cast<int64_t>(a->cols),
                             static_cast<int64_t>(a->nnz), const_cast<void *>(a->indptr),
                             const_cast<void *>(a->indices), const_cast<void *>(a->data),
                             index_type, index_type, CUSPARSE_INDEX_BASE_ZERO, value_type(a)),
              "cusparseCreateCsr"));
  return code;
}

int missing(const CusparseApi &api) {
  return glc_fail(cudaErrorFileNotFound,
                  api.chosen ? "GPULAB_CUSPARSE's library not found (or not cuSPARSE)"
                             : "libcusparse.so.12 not found");
}

// alpha = 1 and beta = 0 in the matrix's dtype.
struct Scalars {
  float one_f = 1.0f, zero_f = 0.0f;
  double one_d = 1.0, zero_d = 0.0;
  const void *one, *zero;
  explicit Scalars(const glc_csr *a)
      : one(a->dtype == GLC_F64 ? static_cast<const void *>(&one_d) : &one_f),
        zero(a->dtype == GLC_F64 ? static_cast<const void *>(&zero_d) : &zero_f) {}
};

}  // namespace

int glc_cusparse_spmv(const glc_csr *a, const void *x, void *y, cudaStream_t stream) {
  const CusparseApi &api = cusparse_api();
  if (!api.loaded) return missing(api);
  std::lock_guard<std::mutex> guard(handles_lock);
  cusparseHandle_t handle = nullptr;
  Descriptors d{api};
  int code = begin_call(a, stream, &handle, d);
  GLC_TRY(code, cusparse_fail(api.create_dn_vec(&d.x, static_cast<int64_t>(a->cols),
                                                const_cast<void *>(x), value_type(a)),
                              "cusparseCreateDnVec"));
  GLC_TRY(code,
          cusparse_fail(api.create_dn_vec(&d.y, static_cast<int64_t>(a->rows), y, value_type(a)),
                        "cusparseCreateDnVec"));
  if (code) return code;
  const Scalars s(a);
  size_t bytes = 0;
  code = cusparse_fail(
      api.spmv_buffer_size(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, s.one, d.a, d.x, s.zero, d.y,
                           value_type(a), CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
      "cusparseSpMV_bufferSize");
  GlcDeviceBuffer buffer;
  if (!code && bytes) code = buffer.allocate(bytes, stream);
  GLC_TRY(code,
          cusparse_fail(api.spmv(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, s.one, d.a, d.x, s.zero,
                                 d.y, value_type(a), CUSPARSE_SPMV_ALG_DEFAULT, buffer.ptr),
                        "cusparseSpMV"));
  return code;
}

int glc_cusparse_spmm(const glc_csr *a, size_t k, const void *b, void *c, cudaStream_t stream) {
  const CusparseApi &api = cusparse_api();
  if (!api.loaded) return missing(api);
  std::lock_guard<std::mutex> guard(handles_lock);
  cusparseHandle_t handle = nullptr;
  Descriptors d{api};
  const int64_t kk = static_cast<int64_t>(k);
  int code = begin_call(a, stream, &handle, d);
  GLC_TRY(code,
          cusparse_fail(api.create_dn_mat(&d.b, static_cast<int64_t>(a->cols), kk, kk,
                                          const_cast<void *>(b), value_type(a), CUSPARSE_ORDER_ROW),
                        "cusparseCreateDnMat"));
  GLC_TRY(code, cusparse_fail(api.create_dn_mat(&d.c, static_cast<int64_t>(a->rows), kk, kk, c,
                                                value_type(a), CUSPARSE_ORDER_ROW),
                              "cusparseCreateDnMat"));
  if (code) return code;
  const Scalars s(a);
  size_t bytes = 0;
  code =
      cusparse_fail(api.spmm_buffer_size(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                         CUSPARSE_OPERATION_NON_TRANSPOSE, s.one, d.a, d.b, s.zero,
                                         d.c, value_type(a), CUSPARSE_SPMM_ALG_DEFAULT, &bytes),
                    "cusparseSpMM_bufferSize");
  GlcDeviceBuffer buffer;
  if (!code && bytes) code = buffer.allocate(bytes, stream);
  GLC_TRY(code, cusparse_fail(api.spmm(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, s.one, d.a, d.b, s.zero,
                                       d.c, value_type(a), CUSPARSE_SPMM_ALG_DEFAULT, buffer.ptr),
                              "cusparseSpMM"));
  return code;
}
