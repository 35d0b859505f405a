// Variant 16, cublaslt: the half-precision GEMM ladder's reference (issue 34's rung 7), cuBLASLt
// with the algorithm its heuristic ranks first, for float16 and bfloat16 operands with FP32
// compute (CUBLAS_COMPUTE_32F, FP32 alpha and beta) and C in the operands' dtype or float32. The
// TF32 reference is cuBLAS's, variant 11 (cublas_tf32): this rung takes half types only.
//
// libcublasLt is not linked: as cublas.cu opens libcublas, it is opened with dlopen on the
// first call ("libcublasLt.so.13", then "libcublasLt.so"; GPULAB_CUBLASLT=<path> names another)
// and its functions looked up by name; where it is missing this variant fails with
// cudaErrorFileNotFound and everything else keeps working. One handle per device, made on
// first use and kept (cuda/core/library.cuh).
//
// Row-major through column-major cuBLASLt, as cublas.cu: C = A B row-major is C^T = B^T A^T
// column-major, so cuBLASLt's A is our B (n x k, ld n), its B our A (k x m, ld k), and D our C
// (n x m, ld n). An operand given transposed (glc_matmul_layout) is read in place through the
// operation's transpose: B^T's storage is the column-major k x n matrix B (ld k) under
// CUBLASLT_MATMUL_DESC_TRANSA = CUBLAS_OP_T, A^T's the column-major m x k matrix A (ld m) under
// TRANSB. The heuristic is asked once per (device, shape, layout, dtypes, operand alignment)
// and its first algorithm kept in a small table; the pointers' alignments (up to 256 bytes, the
// heuristic's default assumption) go into the preference, so that a view one element in gets an
// algorithm that takes it. The workspace (up to 32 MiB, what the algorithm asks for) comes from
// gpulab's stream-ordered pool and goes back to it after the call, on the same stream.
#include <cublasLt.h>

#include <climits>
#include <cstdint>
#include <mutex>

#include "cublas_status.cuh"
#include "cuda/core/errors.cuh"
#include "cuda/core/gpulab_core.h"
#include "cuda/core/launch.cuh"
#include "cuda/core/library.cuh"
#include "hgemm.h"

namespace {

struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  bool loaded = false;
  bool chosen = false;  // GPULAB_CUBLASLT named the library
};

const LtApi &lt_api() {
  static LtApi api = [] {
    LtApi found;
    void *library =
        glc_open_library("GPULAB_CUBLASLT", {"libcublasLt.so.13", "libcublasLt.so"}, &found.chosen);
    if (library == nullptr) return found;
    found.loaded =
        glc_find_symbol(library, "cublasLtCreate", &found.create) &&
        glc_find_symbol(library, "cublasLtMatmulDescCreate", &found.desc_create) &&
        glc_find_symbol(library, "cublasLtMatmulDescDestroy", &found.desc_destroy) &&
        glc_find_symbol(library, "cublasLtMatmulDescSetAttribute", &found.desc_set) &&
        glc_find_symbol(library, "cublasLtMatrixLayoutCreate", &found.layout_create) &&
        glc_find_symbol(library, "cublasLtMatrixLayoutDestroy", &found.layout_destroy) &&
        glc_find_symbol(library, "cublasLtMatmulPreferenceCreate", &found.pref_create) &&
        glc_find_symbol(library, "cublasLtMatmulPreferenceSetAttribute", &found.pref_set) &&
        glc_find_symbol(library, "cublasLtMatmulPreferenceDestroy", &found.pref_destroy) &&
        glc_find_symbol(library, "cublasLtMatmulAlgoGetHeuristic", &found.heuristic) &&
        glc_find_symbol(library, "cublasLtMatmul", &found.matmul);
    return found;
  }();
  return api;
}

constexpr size_t max_workspace = size_t{32} << 20;

// What the heuristic was asked, and what it answered.
struct Choice {
  bool used;
  int device, dtype, out_dtype, layout;
  size_t m, n, k;
  unsigned align_a, align_b, align_c;
  cublasLtMatmulAlgo_t algo;
  size_t workspace;
};

std::mutex lt_lock;  // guards the handles and the choices
cublasLtHandle_t handles[glc_cached_devices];
constexpr int cached_choices = 64;
Choice choices[cached_choices];
int next_choice = 0;  // the slot the next new choice takes (round robin)

// The largest power of two, up to 256, that divides the address.
unsigned alignment(const void *p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  unsigned a = 1;
  while (a < 256 && v % (2 * a) == 0) a *= 2;
  return a;
}

cudaDataType_t lt_type(int dtype) {
  return dtype == GLC_BF16 ? CUDA_R_16BF : dtype == GLC_F16 ? CUDA_R_16F : CUDA_R_32F;
}

// The matmul's descriptors, destroyed with the object.
struct Descriptors {
  const LtApi &api;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's (see above)
  explicit Descriptors(const LtApi &api) : api(api) {}
  ~Descriptors() {
    if (c) api.layout_destroy(c);
    if (b) api.layout_destroy(b);
    if (a) api.layout_destroy(a);
    if (op) api.desc_destroy(op);
  }
  int make(int dtype, int out_dtype, int layout, size_t m, size_t n, size_t k) {
    const cudaDataType_t in = lt_type(dtype), out = lt_type(out_dtype);
    const bool a_t = layout & GLC_MATMUL_A_T, b_t = layout & GLC_MATMUL_B_T;
    int code = glc_cublas_status(api.desc_create(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                                 "cublasLtMatmulDescCreate");
    // cuBLASLt's A (our B) as it is stored: n x k (ld n), or B^T's storage, k x n (ld k),
    // transposed by the operation; its B (our A) likewise: k x m (ld k), or m x k (ld m)
    const int32_t transpose = CUBLAS_OP_T;
    if (!code && b_t)
      code = glc_cublas_status(
          api.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
          "cublasLtMatmulDescSetAttribute");
    if (!code && a_t)
      code = glc_cublas_status(
          api.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSB, &transpose, sizeof transpose),
          "cublasLtMatmulDescSetAttribute");
    if (!code)
      code = glc_cublas_status(b_t ? api.layout_create(&a, in, k, n, static_cast<int64_t>(k))
                                   : api.layout_create(&a, in, n, k, static_cast<int64_t>(n)),
                               "cublasLtMatrixLayoutCreate");
    if (!code)
      code = glc_cublas_status(a_t ? api.layout_create(&b, in, m, k, static_cast<int64_t>(m))
                                   : api.layout_create(&b, in, k, m, static_cast<int64_t>(k)),
                               "cublasLtMatrixLayoutCreate");
    if (!code)
      code = glc_cublas_status(api.layout_create(&c, out, n, m, static_cast<int64_t>(n)),
                               "cublasLtMatrixLayoutCreate");
    return code;
  }
};

// The heuristic's first algorithm for this call, from the table or asked now; lock held.
int choose(const LtApi &api, cublasLtHandle_t handle, Descriptors &d, Choice *want) {
  for (const Choice &c : choices)
    if (c.used && c.device == want->device && c.dtype == want->dtype &&
        c.out_dtype == want->out_dtype && c.layout == want->layout && c.m == want->m &&
        c.n == want->n && c.k == want->k && c.align_a == want->align_a &&
        c.align_b == want->align_b && c.align_c == want->align_c) {
      *want = c;
      return cudaSuccess;
    }
  cublasLtMatmulPreference_t pref = nullptr;
  int code = glc_cublas_status(api.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  struct {
    cublasLtMatmulPreferenceAttributes_t what;
    uint64_t value;
  } settings[] = {{CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace},
                  // cuBLASLt's A is our B, its B our A
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, want->align_b},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, want->align_a},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, want->align_c},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, want->align_c}};
  for (const auto &s : settings) {
    if (code) break;
    if (s.what == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
      code = glc_cublas_status(api.pref_set(pref, s.what, &s.value, sizeof s.value),
                               "cublasLtMatmulPreferenceSetAttribute");
    } else {
      const uint32_t v = static_cast<uint32_t>(s.value);
      code = glc_cublas_status(api.pref_set(pref, s.what, &v, sizeof v),
                               "cublasLtMatmulPreferenceSetAttribute");
    }
  }
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  if (!code)
    code =
        glc_cublas_status(api.heuristic(handle, d.op, d.a, d.b, d.c, d.c, pref, 1, &result, &found),
                          "cublasLtMatmulAlgoGetHeuristic");
  if (pref) api.pref_destroy(pref);
  if (code) return code;
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return glc_fail(cudaErrorNotSupported, "cublasLtMatmulAlgoGetHeuristic(no algorithm)");
  want->algo = result.algo;
  want->workspace = result.workspaceSize;
  want->used = true;
  choices[next_choice] = *want;
  next_choice = (next_choice + 1) % cached_choices;
  return cudaSuccess;
}

}  // namespace

int glc_hgemm_cublaslt(const glc_matmul_tunables *t, int dtype, int out_dtype, int layout, size_t m,
                       size_t n, size_t k, const void *a, const void *b, void *c,
                       glc_stream stream) {
  (void)t;  // no tunables (glc_hgemm_resolve refuses any)
  const LtApi &api = lt_api();
  if (!api.loaded)
    return glc_fail(cudaErrorFileNotFound, api.chosen
                                               ? "GPULAB_CUBLASLT's library not found (or not "
                                                 "cuBLASLt)"
                                               : "libcublasLt.so.13 not found");
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(cuBLASLt takes int sizes)");
  Choice want = {};
  want.dtype = dtype;
  want.out_dtype = out_dtype;
  want.layout = layout;
  want.m = m;
  want.n = n;
  want.k = k;
  want.align_a = alignment(a);
  want.align_b = alignment(b);
  want.align_c = alignment(c);
  int code = GLC_CUDA(cudaGetDevice, &want.device);
  if (code) return code;
  Descriptors d(api);
  code = d.make(dtype, out_dtype, layout, m, n, k);
  if (code) return code;
  cublasLtHandle_t handle = nullptr;
  {
    std::lock_guard<std::mutex> guard(lt_lock);
    code = glc_device_handle(
        handles, "cuBLASLt handle (device ordinal past 63)",
        [&](cublasLtHandle_t *made) {
          return glc_cublas_status(api.create(made), "cublasLtCreate");
        },
        &handle);
    if (!code) code = choose(api, handle, d, &want);
  }
  if (code) return code;
  void *workspace = nullptr;
  if (want.workspace) {
    code = glc_malloc_async(&workspace, want.workspace, stream);
    if (code) return code;
  }
  const float one = 1.0f, zero = 0.0f;
  const auto s = static_cast<cudaStream_t>(stream);
  code = glc_cublas_status(api.matmul(handle, d.op, &one, b, d.a, a, d.b, &zero, c, d.c, c, d.c,
                                      &want.algo, workspace, want.workspace, s),
                           "cublasLtMatmul");
  if (workspace) {
    const int freed = glc_free_async(workspace, stream);
    if (!code) code = freed;
  }
  return code;
}
