// Internal to cuda/ (every lab may include it): the one dispatch from a call's dtype code, and its
// op code where the lab has several ops, to the C++ types that its kernel templates are
// instantiated with. A lab lists the dtypes and ops it accepts; everything else is refused here.
#ifndef GPULAB_DTYPE_DISPATCH_CUH
#define GPULAB_DTYPE_DISPATCH_CUH

#include <cuda_runtime.h>

#include "errors.cuh"
#include "gpulab_core.h"

// The C++ type of a dtype's elements.
template <int Dtype>
struct glc_element;
template <>
struct glc_element<GLC_F32> {
  using type = float;
};
template <>
struct glc_element<GLC_F64> {
  using type = double;
};
template <>
struct glc_element<GLC_I32> {
  using type = int;
};
template <>
struct glc_element<GLC_I64> {
  using type = long long;
};
template <int Dtype>
using glc_element_t = typename glc_element<Dtype>::type;

// The dtypes a dispatch accepts, in the order their kernels are instantiated.
template <int... Dtypes>
struct glc_dtypes {};

// One op code and the operator type it stands for; a lab's ops are a glc_ops of them.
template <int Code, typename Op>
struct glc_op_case {};
template <typename... Cases>
struct glc_ops {};

// Calls body(T{}) for the element type T of dtype, one of Dtypes, and returns its error code;
// any other dtype is refused with cudaErrorInvalidValue and `caller` as the failed call.
template <int... Dtypes, typename Body>
int glc_dispatch_dtype(glc_dtypes<Dtypes...>, int dtype, const char *caller, Body &&body) {
  int code = cudaSuccess;
  // A fold in place of a switch: || stops at the one entry equal to dtype.
  const bool accepted = ((dtype == Dtypes && (code = body(glc_element_t<Dtypes>{}), true)) || ...);
  return accepted ? code : glc_fail(cudaErrorInvalidValue, caller);
}

// Calls body(In{}, Op{}) for the element type In of dtype and the operator Op of op; codes
// outside the lists are refused as above.
template <int... Dtypes, int... Codes, typename... Ops, typename Body>
int glc_dispatch_dtype_op(glc_dtypes<Dtypes...> dtypes, glc_ops<glc_op_case<Codes, Ops>...>, int op,
                          int dtype, const char *caller, Body &&body) {
  return glc_dispatch_dtype(dtypes, dtype, caller, [&](auto in) {
    int code = cudaSuccess;
    const bool accepted = ((op == Codes && (code = body(in, Ops{}), true)) || ...);
    return accepted ? code : glc_fail(cudaErrorInvalidValue, caller);
  });
}

// float32 and float64, the dtypes of the ops that compute in floating point only.
template <typename Body>
int glc_dispatch_floating(int dtype, const char *caller, Body &&body) {
  return glc_dispatch_dtype(glc_dtypes<GLC_F32, GLC_F64>{}, dtype, caller, body);
}

#endif
