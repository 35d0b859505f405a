/* The ways a histogram op can run (operands.h). */
#include "operands.h"

#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/errors.h"
#include "csrc/core/interop.h"
#include "csrc/core/runtime.h"
#include "csrc/core/stream.h"
#include "csrc/core/transfer.h"

/* Below this many input elements a CPU variant keeps the GIL: releasing it costs more. */
#define HG_CPU_RELEASE_GIL_MIN (1 << 16)

static int check_layout(const hg_op *op, int ndim, const Py_ssize_t *shape, PyArray_Descr *dtype,
                        const void *ptr, hg_call *call) {
  /* the variant's own dtypes: a variant may take fewer than the op (CUB: integer data) */
  const unsigned both = op->dtypes & call->variant->dtypes;
  if (gl_check_dtype_in(dtype, both ? both : call->variant->dtypes, op->arg) < 0) return -1;
  if (op->last_dim && shape[ndim - 1] != op->last_dim) {
    PyErr_Format(PyExc_ValueError, "%s must have %zd values in its last dimension, got %zd",
                 op->arg, op->last_dim, shape[ndim - 1]);
    return -1;
  }
  size_t n = 1;
  for (int k = 0; k < ndim; k++) n *= (size_t)shape[k];
  call->dtype = gl_dtype_code(dtype);
  call->n = n;
  call->x = ptr;
  if (n && (uintptr_t)ptr % (uintptr_t)PyDataType_ELSIZE(dtype)) {
    PyErr_Format(PyExc_ValueError, "%s is not aligned to its %zd-byte elements", op->arg,
                 (Py_ssize_t)PyDataType_ELSIZE(dtype));
    return -1;
  }
  return 0;
}

static int resolve(const hg_op *op, PyObject *x, PyObject *variant, PyObject *stream,
                   PyObject *block, hg_call *call, int *on_device) {
  const char *names[1] = {op->arg};
  if (gl_classify_operands(1, &x, names, on_device) < 0) return -1;
  call->variant = gl_resolve_variant(op->ladder, variant, *on_device || gl_gpu_ready());
  if (!call->variant || gl_resolve_tunable(call->variant, "block", block, &call->block) < 0)
    return -1;
  if (call->variant->backend == GL_BACKEND_CPU && stream != Py_None) {
    PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU", call->variant->id,
                 call->variant->name);
    return -1;
  }
  if (*on_device && call->variant->backend == GL_BACKEND_CPU) {
    PyErr_Format(PyExc_TypeError,
                 "variant %d (%s) runs on the CPU and takes NumPy arrays, but %s is a device "
                 "array; pick a CUDA variant or pass a NumPy array",
                 call->variant->id, call->variant->name, op->arg);
    return -1;
  }
  if (call->variant->backend == GL_BACKEND_CUDA && gl_require_gpu(op->ladder->op) < 0) return -1;
  return 0;
}

int hg_prepare(const hg_op *op, PyObject *x, PyObject *variant, PyObject *stream, hg_call *call,
               PyObject **keep, PyObject **device) {
  int on_device = 0;
  *keep = *device = NULL;
  if (resolve(op, x, variant, stream, Py_None, call, &on_device) < 0) return -1;
  if (call->variant->backend == GL_BACKEND_CUDA && gl_stream_arg(stream, &call->stream, keep) < 0)
    return -1;
  if (!on_device) {
    if (gl_check_host_array(x, op->arg, op->ndim, 0) < 0) return -1;
    PyArrayObject *a = (PyArrayObject *)x;
    return check_layout(op, PyArray_NDIM(a), PyArray_SHAPE(a), PyArray_DESCR(a), PyArray_DATA(a),
                        call);
  }
  gl_DeviceArrayObject *a = gl_as_device_array(x, op->arg, call->stream);
  *device = (PyObject *)a;
  if (!a || gl_check_device_array(a, op->arg, op->ndim, 0) < 0) return -1;
  return check_layout(op, a->ndim, a->shape, a->dtype, a->ptr, call);
}

static PyObject *run_on_device(const hg_op *op, PyObject *x, int out_ndim,
                               const Py_ssize_t *out_shape, PyObject *stream_obj, hg_call *call) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *in = gl_as_device_array(x, op->arg, call->stream), *out = NULL;
  PyArray_Descr *descr = PyArray_DescrFromType(NPY_INT64);
  int ok = in && descr && gl_check_device_array(in, op->arg, op->ndim, 0) == 0 &&
           check_layout(op, in->ndim, in->shape, in->dtype, in->ptr, call) == 0;
  if (ok) {
    out = gl_devarray_empty(out_ndim, out_shape, descr, call->stream, keep);
    ok = out != NULL;
  }
  if (ok) {
    call->counts = out->ptr;
    int code = op->run_cuda(call);
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  if (ok) {
    gl_devarray_use(in, call->stream, keep);
    gl_devarray_use(out, call->stream, keep);
  }
  Py_XDECREF(in);
  Py_XDECREF(descr);
  Py_XDECREF(keep);
  if (!ok) Py_CLEAR(out);
  return (PyObject *)out;
}

/* CUDA variant on a NumPy array: a device copy of x, counted, the counts copied back into
 * host_out, waited for. */
static int run_staged(const hg_op *op, PyArrayObject *host_in, PyArrayObject *host_out,
                      PyObject *stream_obj, hg_call *call) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return -1;
  gl_DeviceArrayObject *in = gl_devarray_empty(PyArray_NDIM(host_in), PyArray_SHAPE(host_in),
                                               PyArray_DESCR(host_in), call->stream, NULL);
  gl_DeviceArrayObject *out =
      in ? gl_devarray_empty(PyArray_NDIM(host_out), PyArray_SHAPE(host_out),
                             PyArray_DESCR(host_out), call->stream, NULL)
         : NULL;
  int ok = out != NULL;
  if (ok) {
    int code = 0;
    call->x = in->ptr;
    call->counts = out->ptr;
    Py_BEGIN_ALLOW_THREADS
    if (PyArray_NBYTES(host_in))
      code = gl_h2d(in->ptr, PyArray_DATA(host_in), (size_t)PyArray_NBYTES(host_in), call->stream,
                    GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    if (!code)
      code = gl_d2h(PyArray_DATA(host_out), out->ptr, (size_t)PyArray_NBYTES(host_out),
                    call->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  Py_XDECREF(in);
  Py_XDECREF(out);
  Py_XDECREF(keep);
  return ok ? 0 : -1;
}

static PyObject *run_on_host(const hg_op *op, PyObject *x, int out_ndim,
                             const Py_ssize_t *out_shape, PyObject *stream_obj, hg_call *call) {
  if (gl_check_host_array(x, op->arg, op->ndim, 0) < 0) return NULL;
  PyArrayObject *in = (PyArrayObject *)x;
  if (check_layout(op, PyArray_NDIM(in), PyArray_SHAPE(in), PyArray_DESCR(in), PyArray_DATA(in),
                   call) < 0)
    return NULL;
  PyArrayObject *out = (PyArrayObject *)PyArray_Empty(out_ndim, (npy_intp *)out_shape,
                                                      PyArray_DescrFromType(NPY_INT64), 0);
  if (!out) return NULL;
  int failed;
  if (call->variant->backend == GL_BACKEND_CUDA) {
    failed = run_staged(op, in, out, stream_obj, call) < 0;
  } else {
    call->counts = PyArray_DATA(out);
    int rc;
    if (call->n >= HG_CPU_RELEASE_GIL_MIN) {
      Py_BEGIN_ALLOW_THREADS
      rc = op->run_cpu(call);
      Py_END_ALLOW_THREADS
    } else {
      rc = op->run_cpu(call);
    }
    if (rc)
      PyErr_Format(PyExc_RuntimeError, "%s: CPU variant %d failed", op->ladder->op,
                   call->variant->id);
    failed = rc != 0;
  }
  if (failed) Py_CLEAR(out);
  return (PyObject *)out;
}

PyObject *hg_run(const hg_op *op, PyObject *x, int out_ndim, const Py_ssize_t *out_shape,
                 PyObject *variant, PyObject *stream, PyObject *block, const void *params) {
  hg_call call = {0};
  call.params = params;
  int on_device = 0;
  if (resolve(op, x, variant, stream, block, &call, &on_device) < 0) return NULL;
  if (on_device) return run_on_device(op, x, out_ndim, out_shape, stream, &call);
  return run_on_host(op, x, out_ndim, out_shape, stream, &call);
}
