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
//
// SpMM is called at its best: cuSPARSE documents several algorithms for CSR with row-major B
// and C, and which is fastest depends on the matrix and k. The first call for a matrix (its
// arrays' addresses, shape, nnz, dtype and index type) and k times each on the call's stream,
// CSR_ALG1 and CSR_ALG3 with and without cusparseSpMM_preprocess, and remembers the fastest
// in a small LRU table; later calls run it alone. Only the choice is remembered: nothing is
// cached on the matrix (the workspace and the preprocessing are redone in each call, as the
// other rungs build their formats in the call), so a stale entry, left by a matrix freed and
// another made at the same addresses, costs speed, never correctness.
#include <cusparse.h>

#include <cfloat>
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
  decltype(&cusparseSpMM_preprocess) spmm_preprocess = nullptr;
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
                   glc_find_symbol(library, "cusparseSpMM_preprocess", &found.spmm_preprocess) &&
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

namespace {

// One candidate of the SpMM choice: a documented algorithm for CSR with row-major B and C, and
// whether each call runs cusparseSpMM_preprocess first (documented to help CSR_ALG1 and
// CSR_ALG3 only; it is optional, so both ways are tried).
struct SpmmAlgorithm {
  cusparseSpMMAlg_t alg;
  bool preprocess;
  const char *name;
};

constexpr SpmmAlgorithm kSpmmAlgorithms[] = {
    {CUSPARSE_SPMM_ALG_DEFAULT, false, "CUSPARSE_SPMM_ALG_DEFAULT"},
    {CUSPARSE_SPMM_CSR_ALG1, false, "CUSPARSE_SPMM_CSR_ALG1"},
    {CUSPARSE_SPMM_CSR_ALG1, true, "CUSPARSE_SPMM_CSR_ALG1"},
    {CUSPARSE_SPMM_CSR_ALG2, false, "CUSPARSE_SPMM_CSR_ALG2"},
    {CUSPARSE_SPMM_CSR_ALG3, false, "CUSPARSE_SPMM_CSR_ALG3"},
    {CUSPARSE_SPMM_CSR_ALG3, true, "CUSPARSE_SPMM_CSR_ALG3"},
};
constexpr int kSpmmCandidates = sizeof(kSpmmAlgorithms) / sizeof(kSpmmAlgorithms[0]);
constexpr int kTimedRuns = 2;  // after one untimed run, which also warms the library's kernels

// What the choice is remembered by.
struct SpmmKey {
  int device;
  const void *indptr, *indices, *data;
  size_t rows, cols, nnz, k;
  int dtype, index_dtype;
  bool operator==(const SpmmKey &o) const {
    return device == o.device && indptr == o.indptr && indices == o.indices && data == o.data &&
           rows == o.rows && cols == o.cols && nnz == o.nnz && k == o.k && dtype == o.dtype &&
           index_dtype == o.index_dtype;
  }
};

SpmmKey key_of(const glc_csr *a, size_t k, int device) {
  SpmmKey key;
  key.device = device;
  key.indptr = a->indptr;
  key.indices = a->indices;
  key.data = a->data;
  key.rows = a->rows;
  key.cols = a->cols;
  key.nnz = a->nnz;
  key.k = k;
  key.dtype = a->dtype;
  key.index_dtype = a->index_dtype;
  return key;
}

// The remembered choices, least recently used replaced first; guarded by handles_lock.
struct SpmmChoice {
  SpmmKey key;
  int candidate = -1;  // index into kSpmmAlgorithms; -1: the slot is empty
  unsigned long long used = 0;
};
constexpr int kSpmmChoices = 8;
SpmmChoice spmm_choices[kSpmmChoices];
unsigned long long spmm_clock = 0;

// The candidate remembered for key (marked as used now), or -1.
int recall_choice(const SpmmKey &key) {
  for (SpmmChoice &c : spmm_choices)
    if (c.candidate >= 0 && c.key == key) {
      c.used = ++spmm_clock;
      return c.candidate;
    }
  return -1;
}

void remember_choice(const SpmmKey &key, int candidate) {
  SpmmChoice *slot = &spmm_choices[0];
  for (SpmmChoice &c : spmm_choices) {
    if (c.candidate < 0) {
      slot = &c;
      break;
    }
    if (c.used < slot->used) slot = &c;
  }
  *slot = SpmmChoice{key, candidate, ++spmm_clock};
}

// One SpMM call's fixed operands: C = 1 * A B + 0 * C on d's descriptors.
struct SpmmCall {
  const CusparseApi &api;
  cusparseHandle_t handle;
  const Descriptors &d;
  const Scalars &s;
  cudaDataType type;
};

// How running a candidate went: cuda, a CUDA error from outside cuSPARSE (the workspace's
// allocation); status, cuSPARSE's first failure, and call, the function that returned it.
struct SpmmOutcome {
  int cuda = cudaSuccess;
  cusparseStatus_t status = CUSPARSE_STATUS_SUCCESS;
  const char *call = nullptr;
  bool failed() const { return cuda != cudaSuccess || status != CUSPARSE_STATUS_SUCCESS; }
  // The statuses with which cuSPARSE refuses an algorithm for this layout, dtype or index type:
  // that candidate is skipped, where any other failure fails the call.
  bool refused() const {
    return cuda == cudaSuccess &&
           (status == CUSPARSE_STATUS_NOT_SUPPORTED || status == CUSPARSE_STATUS_INVALID_VALUE);
  }
  int code() const { return cuda ? cuda : cusparse_fail(status, call); }
};

SpmmOutcome cusparse_outcome(cusparseStatus_t status, const char *call) {
  SpmmOutcome o;
  o.status = status;
  o.call = call;
  return o;
}

// The candidate's workspace, of the size cusparseSpMM_bufferSize asks for, from the pool.
SpmmOutcome allocate_workspace(const SpmmCall &c, const SpmmAlgorithm &alg, cudaStream_t stream,
                               GlcDeviceBuffer &workspace) {
  size_t bytes = 0;
  SpmmOutcome o =
      cusparse_outcome(c.api.spmm_buffer_size(c.handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                              CUSPARSE_OPERATION_NON_TRANSPOSE, c.s.one, c.d.a,
                                              c.d.b, c.s.zero, c.d.c, c.type, alg.alg, &bytes),
                       "cusparseSpMM_bufferSize");
  if (!o.failed() && bytes) o.cuda = workspace.allocate(bytes, stream);
  return o;
}

// Makes `runs` products by the candidate, each as a call makes it: preprocess (where the
// candidate has it), then SpMM.
SpmmOutcome run_spmm(const SpmmCall &c, const SpmmAlgorithm &alg, void *workspace, int runs) {
  const cusparseOperation_t n = CUSPARSE_OPERATION_NON_TRANSPOSE;
  for (int run = 0; run < runs; ++run) {
    if (alg.preprocess) {
      const SpmmOutcome o =
          cusparse_outcome(c.api.spmm_preprocess(c.handle, n, n, c.s.one, c.d.a, c.d.b, c.s.zero,
                                                 c.d.c, c.type, alg.alg, workspace),
                           "cusparseSpMM_preprocess");
      if (o.failed()) return o;
    }
    const SpmmOutcome o = cusparse_outcome(c.api.spmm(c.handle, n, n, c.s.one, c.d.a, c.d.b,
                                                      c.s.zero, c.d.c, c.type, alg.alg, workspace),
                                           "cusparseSpMM");
    if (o.failed()) return o;
  }
  return SpmmOutcome{};
}

// Times every candidate on the call's stream (kTimedRuns products between two events, after
// an untimed one) and sets *chosen to the fastest. The host waits for each timing. Candidates
// that cuSPARSE refuses are skipped; when it refuses them all, the default algorithm's
// refusal is the error.
int choose_spmm(const SpmmCall &c, cudaStream_t stream, int *chosen) {
  GlcEvents events;
  int code = events.create(2);
  if (code) return code;
  float best_ms = FLT_MAX;
  *chosen = -1;
  SpmmOutcome first_refusal;
  for (int i = 0; i < kSpmmCandidates; ++i) {
    const SpmmAlgorithm &alg = kSpmmAlgorithms[i];
    GlcDeviceBuffer workspace;
    SpmmOutcome o = allocate_workspace(c, alg, stream, workspace);
    if (!o.failed()) o = run_spmm(c, alg, workspace.ptr, 1);
    float ms = 0.0f;
    if (!o.failed()) {
      o.cuda = GLC_CUDA(cudaEventRecord, events[0], stream);
      if (!o.failed()) o = run_spmm(c, alg, workspace.ptr, kTimedRuns);
      GLC_TRY(o.cuda, GLC_CUDA(cudaEventRecord, events[1], stream));
      GLC_TRY(o.cuda, glc_elapsed_after(events[0], events[1], &ms));
    }
    if (o.refused()) {
      if (!first_refusal.failed()) first_refusal = o;
      continue;
    }
    if (o.failed()) return o.code();
    if (ms < best_ms) {
      best_ms = ms;
      *chosen = i;
    }
  }
  return *chosen < 0 ? first_refusal.code() : cudaSuccess;
}

}  // namespace

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
  int device = 0;
  GLC_TRY(code, GLC_CUDA(cudaGetDevice, &device));
  // A stream being captured into a graph cannot be timed (the host cannot wait on its events):
  // it runs the remembered choice, or else the default algorithm, and remembers nothing.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  GLC_TRY(code, GLC_CUDA(cudaStreamIsCapturing, stream, &capture));
  if (code) return code;
  const Scalars s(a);
  const SpmmCall call{api, handle, d, s, value_type(a)};
  const SpmmKey key = key_of(a, k, device);
  int chosen = recall_choice(key);
  if (chosen < 0 && capture != cudaStreamCaptureStatusNone) {
    chosen = 0;
  } else if (chosen < 0) {
    code = choose_spmm(call, stream, &chosen);
    if (code) return code;
    remember_choice(key, chosen);
  }
  // The product itself, by the chosen algorithm alone (the trials wrote C too, but by every
  // candidate in turn).
  GlcDeviceBuffer workspace;
  SpmmOutcome o = allocate_workspace(call, kSpmmAlgorithms[chosen], stream, workspace);
  if (!o.failed()) o = run_spmm(call, kSpmmAlgorithms[chosen], workspace.ptr, 1);
  return o.code();
}

extern "C" int glc_cusparse_spmm_algorithm(const glc_csr *a, size_t k, const char **name) {
  if (a == nullptr || name == nullptr)
    return glc_fail(cudaErrorInvalidValue, "glc_cusparse_spmm_algorithm(a, name)");
  *name = nullptr;
  int device = 0;
  const int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  std::lock_guard<std::mutex> guard(handles_lock);
  const int chosen = recall_choice(key_of(a, k, device));
  if (chosen >= 0) *name = kSpmmAlgorithms[chosen].name;
  return cudaSuccess;
}
