// SpMV variant 7: cusparseSpMV through the generic API on the CSR arrays as they are, the
// reference the ladder is measured against.
//
// libcusparse is not linked: it is opened with dlopen on the first call of this variant
// ("libcusparse.so.12", then "libcusparse.so") and the functions used are looked up by name, as
// cuda/linalg/cublas.cu does for cuBLAS. `import gpulab` and every other variant keep working
// where it is missing; this variant then fails with cudaErrorFileNotFound and
// "libcusparse.so.12 not found" as the failed call. GPULAB_CUSPARSE=<path> opens that library
// instead (the tests name a missing one to see the error). One handle per device, created on
// first use and kept for the life of the process.
#include <cusparse.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

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
  bool loaded = false;
  bool chosen = false;  // GPULAB_CUSPARSE named the library
};

template <typename F>
bool find(void *library, const char *name, F *slot) {
  *slot = reinterpret_cast<F>(dlsym(library, name));
  return *slot != nullptr;
}

const CusparseApi &cusparse_api() {
  static CusparseApi api = [] {
    CusparseApi found;
    const char *chosen = std::getenv("GPULAB_CUSPARSE");
    found.chosen = chosen != nullptr && *chosen != '\0';
    void *library = nullptr;
    if (found.chosen) {
      library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    } else {
      library = dlopen("libcusparse.so.12", RTLD_NOW | RTLD_LOCAL);
      if (library == nullptr) library = dlopen("libcusparse.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (library == nullptr) return found;
    found.loaded = find(library, "cusparseCreate", &found.create) &&
                   find(library, "cusparseSetStream", &found.set_stream) &&
                   find(library, "cusparseCreateCsr", &found.create_csr) &&
                   find(library, "cusparseDestroySpMat", &found.destroy_sp_mat) &&
                   find(library, "cusparseCreateDnVec", &found.create_dn_vec) &&
                   find(library, "cusparseDestroyDnVec", &found.destroy_dn_vec) &&
                   find(library, "cusparseSpMV_bufferSize", &found.spmv_buffer_size) &&
                   find(library, "cusparseSpMV", &found.spmv);
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

int device_handle(const CusparseApi &api, cusparseHandle_t *handle) {
  int device = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  if (device < 0 || device >= glc_cached_devices)
    return glc_fail(cudaErrorInvalidDevice, "cuSPARSE handle (device ordinal past 63)");
  if (handles[device] == nullptr) {
    code = cusparse_fail(api.create(&handles[device]), "cusparseCreate");
    if (code) return code;
  }
  *handle = handles[device];
  return cudaSuccess;
}

// The descriptors of one call, destroyed when it ends.
struct Descriptors {
  const CusparseApi &api;
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnVecDescr_t x = nullptr, y = nullptr;
  ~Descriptors() {
    if (a) api.destroy_sp_mat(a);
    if (x) api.destroy_dn_vec(x);
    if (y) api.destroy_dn_vec(y);
  }
};

}  // namespace

int glc_cusparse_spmv(const glc_csr *a, const void *x, void *y, cudaStream_t stream) {
  const CusparseApi &api = cusparse_api();
  if (!api.loaded)
    return glc_fail(cudaErrorFileNotFound,
                    api.chosen ? "GPULAB_CUSPARSE's library not found (or not cuSPARSE)"
                               : "libcusparse.so.12 not found");
  std::lock_guard<std::mutex> guard(handles_lock);
  cusparseHandle_t handle = nullptr;
  int code = device_handle(api, &handle);
  if (code) return code;
  code = cusparse_fail(api.set_stream(handle, stream), "cusparseSetStream");
  if (code) return code;
  const cudaDataType value_type = a->dtype == GLC_F64 ? CUDA_R_64F : CUDA_R_32F;
  const cusparseIndexType_t index_type =
      a->index_dtype == GLC_I64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  Descriptors d{api};
  code = cusparse_fail(
      api.create_csr(&d.a, static_cast<int64_t>(a->rows), static_cast<int64_t>(a->cols),
                     static_cast<int64_t>(a->nnz), const_cast<void *>(a->indptr),
                     const_cast<void *>(a->indices), const_cast<void *>(a->data), index_type,
                     index_type, CUSPARSE_INDEX_BASE_ZERO, value_type),
      "cusparseCreateCsr");
  GLC_TRY(code, cusparse_fail(api.create_dn_vec(&d.x, static_cast<int64_t>(a->cols),
                                                const_cast<void *>(x), value_type),
                              "cusparseCreateDnVec"));
  GLC_TRY(code, cusparse_fail(api.create_dn_vec(&d.y, static_cast<int64_t>(a->rows), y, value_type),
                              "cusparseCreateDnVec"));
  if (code) return code;
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void *one = a->dtype == GLC_F64 ? static_cast<const void *>(&one_d) : &one_f;
  const void *zero = a->dtype == GLC_F64 ? static_cast<const void *>(&zero_d) : &zero_f;
  size_t bytes = 0;
  code =
      cusparse_fail(api.spmv_buffer_size(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, one, d.a, d.x,
                                         zero, d.y, value_type, CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
                    "cusparseSpMV_bufferSize");
  if (code) return code;
  GlcDeviceBuffer buffer;
  if (bytes) code = buffer.allocate(bytes, stream);
  GLC_TRY(code,
          cusparse_fail(api.spmv(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, one, d.a, d.x, zero, d.y,
                                 value_type, CUSPARSE_SPMV_ALG_DEFAULT, buffer.ptr),
                        "cusparseSpMV"));
  return code;
}
