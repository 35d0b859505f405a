/* The four ways a scan-lab op runs (placement.h). */
#include "placement.h"

#include <string.h>

#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/errors.h"
#include "csrc/core/interop.h"
#include "csrc/core/runtime.h"
#include "csrc/core/stream.h"
#include "csrc/core/transfer.h"
#include "cuda/scan/scan.h"
#include "variants.h"

/* Below this many elements a CPU variant keeps the GIL: releasing it costs more. */
#define SC_CPU_RELEASE_GIL_MIN (1 << 16)

/* Resolves the variant, block and mode, and where the op runs; refuses CPU variants with a
 * stream or on device arrays. */
static int resolve(const sc_op *op, int n_inputs, PyObject *const *inputs, const char *const *names,
                   PyObject *mode, PyObject *variant, PyObject *stream, PyObject *block,
                   sc_call *call, int *on_device) {
  if (gl_classify_operands(n_inputs, inputs, names, on_device) < 0) return -1;
  if (op->ladder->modes && gl_resolve_mode(op->ladder, mode, &call->mode) < 0) return -1;
  call->variant = gl_resolve_variant(op->ladder, variant, *on_device || gl_gpu_ready());
  if (!call->variant || gl_resolve_tunable(call->variant, "block", block, &call->block) < 0)
    return -1;
  const gl_variant *v = call->variant;
  if (v->backend == GL_BACKEND_CPU && stream != Py_None) {
    PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU", v->id, v->name);
    return -1;
  }
  if (*on_device && v->backend == GL_BACKEND_CPU) {
    PyErr_Format(PyExc_TypeError,
                 "variant %d (%s) runs on the CPU and takes NumPy arrays, but x is a device "
                 "array; pick a CUDA variant or pass NumPy arrays",
                 v->id, v->name);
    return -1;
  }
  return 0;
}

/* x's dtype and length, the mode's support, the mask's dtype and shape, the op's own check. */
static int check_operands(const sc_op *op, sc_call *call, PyArray_Descr *x_dtype, int x_ndim,
                          const Py_ssize_t *x_shape, Py_ssize_t x_size, PyArray_Descr *mask_dtype,
                          int mask_ndim, const Py_ssize_t *mask_shape) {
  if (gl_check_dtype_in(x_dtype, SCAN_DTYPES, "x") < 0) return -1;
  call->dtype = gl_dtype_code(x_dtype);
  call->n = (size_t)x_size;
  if (op->ladder->modes &&
      gl_check_mode_support(op->ladder, call->variant, call->mode, call->dtype) < 0)
    return -1;
  if (mask_dtype) {
    if (mask_dtype->type_num != NPY_BOOL) {
      PyErr_Format(PyExc_TypeError, "mask must be a bool array, got dtype %S",
                   (PyObject *)mask_dtype);
      return -1;
    }
    if (gl_check_same_shape(x_ndim, x_shape, mask_ndim, mask_shape, "x", "mask") < 0) return -1;
  }
  return op->check ? op->check(call) : 0;
}

static int run_cpu(const sc_op *op, sc_call *call) {
  int rc;
  if (call->n >= SC_CPU_RELEASE_GIL_MIN) {
    Py_BEGIN_ALLOW_THREADS
    rc = op->run_cpu(call);
    Py_END_ALLOW_THREADS
  } else {
    rc = op->run_cpu(call);
  }
  if (rc)
    PyErr_Format(PyExc_RuntimeError, "%s: CPU variant %d failed", op->ladder->op,
                 call->variant->id);
  return rc ? -1 : 0;
}

/* ---- scan ---- */

static PyObject *scan_on_host(const sc_op *op, PyObject *x_obj, PyObject *stream_obj,
                              sc_call *call) {
  if (gl_check_host_array(x_obj, "x", -1, 0) < 0) return NULL;
  PyArrayObject *x = (PyArrayObject *)x_obj;
  if (check_operands(op, call, PyArray_DESCR(x), PyArray_NDIM(x), PyArray_SHAPE(x), PyArray_SIZE(x),
                     NULL, 0, NULL) < 0)
    return NULL;
  if (call->variant->backend == GL_BACKEND_CUDA && gl_require_gpu(op->ladder->op) < 0) return NULL;
  const Py_ssize_t n = (Py_ssize_t)call->n;
  PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, &n, op->result_type(call));
  if (!out || n == 0) return (PyObject *)out;
  if (call->variant->backend == GL_BACKEND_CPU) {
    call->x = PyArray_DATA(x);
    call->out = PyArray_DATA(out);
    if (run_cpu(op, call) < 0) Py_CLEAR(out);
    return (PyObject *)out;
  }
  PyObject *keep = NULL;
  gl_DeviceArrayObject *dev_x = NULL, *dev_out = NULL;
  int ok = gl_stream_arg(stream_obj, &call->stream, &keep) == 0 &&
           (dev_x = gl_devarray_empty(1, &n, PyArray_DESCR(x), call->stream, NULL)) != NULL &&
           (dev_out = gl_devarray_empty(1, &n, PyArray_DESCR(out), call->stream, NULL)) != NULL;
  if (ok) {
    call->x = dev_x->ptr;
    call->out = dev_out->ptr;
    int code;
    Py_BEGIN_ALLOW_THREADS
    code =
        gl_h2d(dev_x->ptr, PyArray_DATA(x), (size_t)PyArray_NBYTES(x), call->stream, GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    if (!code)
      code = gl_d2h(PyArray_DATA(out), dev_out->ptr, (size_t)PyArray_NBYTES(out), call->stream,
                    GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  Py_XDECREF(dev_x);
  Py_XDECREF(dev_out);
  Py_XDECREF(keep);
  if (!ok) Py_CLEAR(out);
  return (PyObject *)out;
}

static PyObject *scan_on_device(const sc_op *op, PyObject *x_obj, PyObject *stream_obj,
                                sc_call *call) {
  if (gl_require_gpu(op->ladder->op) < 0) return NULL;
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *x = gl_as_device_array(x_obj, "x", call->stream), *out = NULL;
  PyArray_Descr *descr = NULL;
  int ok = x && gl_check_device_array(x, "x", -1, 0) == 0 &&
           check_operands(op, call, x->dtype, x->ndim, x->shape, x->size, NULL, 0, NULL) == 0 &&
           (descr = PyArray_DescrFromType(op->result_type(call))) != NULL;
  if (ok) {
    const Py_ssize_t n = (Py_ssize_t)call->n;
    ok = (out = gl_devarray_empty(1, &n, descr, call->stream, keep)) != NULL;
  }
  if (ok && call->n) {
    call->x = x->ptr;
    call->out = out->ptr;
    int code = op->run_cuda(call);
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  if (ok) {
    gl_devarray_use(x, call->stream, keep);
    gl_devarray_use(out, call->stream, keep);
  }
  Py_XDECREF(x);
  Py_XDECREF(descr);
  Py_XDECREF(keep);
  if (!ok) Py_CLEAR(out);
  return (PyObject *)out;
}

PyObject *sc_run_scan(const sc_op *op, PyObject *x, PyObject *mode, int inclusive,
                      PyObject *variant, PyObject *stream, PyObject *block) {
  static const char *const names[] = {"x"};
  sc_call call = {0};
  call.inclusive = inclusive;
  int on_device = 0;
  if (resolve(op, 1, &x, names, mode, variant, stream, block, &call, &on_device) < 0) return NULL;
  return on_device ? scan_on_device(op, x, stream, &call) : scan_on_host(op, x, stream, &call);
}

/* ---- compact and nonzero ---- */

static int select_result_type(const sc_op *op, const sc_call *call) {
  (void)call;
  return op->result_type(call);
}

/* The first count elements of a NumPy array of n, as a new array of count. */
static PyObject *host_prefix(PyArrayObject *full, long long count) {
  const Py_ssize_t length = (Py_ssize_t)count;
  if (length == PyArray_SIZE(full)) return Py_NewRef((PyObject *)full);
  PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, &length, PyArray_TYPE(full));
  if (out && length)
    memcpy(PyArray_DATA(out), PyArray_DATA(full), (size_t)length * (size_t)PyArray_ITEMSIZE(full));
  return (PyObject *)out;
}

static PyObject *select_on_host(const sc_op *op, PyObject *x_obj, PyObject *mask_obj,
                                PyObject *stream_obj, sc_call *call) {
  const int with_mask = mask_obj != Py_None;
  if (gl_check_host_array(x_obj, "x", -1, 0) < 0 ||
      (with_mask && gl_check_host_array(mask_obj, "mask", -1, 0) < 0))
    return NULL;
  PyArrayObject *x = (PyArrayObject *)x_obj, *mask = with_mask ? (PyArrayObject *)mask_obj : NULL;
  if (check_operands(op, call, PyArray_DESCR(x), PyArray_NDIM(x), PyArray_SHAPE(x), PyArray_SIZE(x),
                     mask ? PyArray_DESCR(mask) : NULL, mask ? PyArray_NDIM(mask) : 0,
                     mask ? PyArray_SHAPE(mask) : NULL) < 0)
    return NULL;
  if (call->variant->backend == GL_BACKEND_CUDA && gl_require_gpu(op->ladder->op) < 0) return NULL;
  const Py_ssize_t n = (Py_ssize_t)call->n;
  const int type = select_result_type(op, call);
  if (n == 0) return PyArray_SimpleNew(1, &n, type);
  long long count = 0;
  if (call->variant->backend == GL_BACKEND_CPU) {
    PyArrayObject *full = (PyArrayObject *)PyArray_SimpleNew(1, &n, type);
    if (!full) return NULL;
    call->x = PyArray_DATA(x);
    call->mask = mask ? PyArray_DATA(mask) : NULL;
    call->out = PyArray_DATA(full);
    call->count = &count;
    PyObject *result = run_cpu(op, call) < 0 ? NULL : host_prefix(full, count);
    Py_DECREF(full);
    return result;
  }
  PyObject *keep = NULL, *result = NULL;
  gl_DeviceArrayObject *dev_x = NULL, *dev_mask = NULL, *dev_out = NULL, *dev_count = NULL;
  PyArray_Descr *out_descr = PyArray_DescrFromType(type), *i64 = PyArray_DescrFromType(NPY_INT64);
  const Py_ssize_t one = 1;
  int ok =
      out_descr && i64 && gl_stream_arg(stream_obj, &call->stream, &keep) == 0 &&
      (dev_x = gl_devarray_empty(1, &n, PyArray_DESCR(x), call->stream, NULL)) != NULL &&
      (!mask || (dev_mask = gl_devarray_empty(1, &n, PyArray_DESCR(mask), call->stream, NULL))) &&
      (dev_out = gl_devarray_empty(1, &n, out_descr, call->stream, NULL)) != NULL &&
      (dev_count = gl_devarray_empty(1, &one, i64, call->stream, NULL)) != NULL;
  if (ok) {
    call->x = dev_x->ptr;
    call->mask = dev_mask ? dev_mask->ptr : NULL;
    call->out = dev_out->ptr;
    call->count = dev_count->ptr;
    int code;
    Py_BEGIN_ALLOW_THREADS
    code =
        gl_h2d(dev_x->ptr, PyArray_DATA(x), (size_t)PyArray_NBYTES(x), call->stream, GL_PATH_AUTO);
    if (!code && mask)
      code = gl_h2d(dev_mask->ptr, PyArray_DATA(mask), (size_t)n, call->stream, GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    if (!code) code = gl_d2h(&count, dev_count->ptr, sizeof count, call->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  if (ok) {
    const Py_ssize_t length = (Py_ssize_t)count;
    result = PyArray_SimpleNew(1, &length, type);
    ok = result != NULL;
    if (ok && length) {
      int code;
      Py_BEGIN_ALLOW_THREADS
      code = gl_d2h(PyArray_DATA((PyArrayObject *)result), dev_out->ptr,
                    (size_t)PyArray_NBYTES((PyArrayObject *)result), call->stream, GL_PATH_AUTO);
      Py_END_ALLOW_THREADS
      if (code) ok = gl_raise_cuda(code) != NULL;
    }
  }
  Py_XDECREF(dev_x);
  Py_XDECREF(dev_mask);
  Py_XDECREF(dev_out);
  Py_XDECREF(dev_count);
  Py_XDECREF(out_descr);
  Py_XDECREF(i64);
  Py_XDECREF(keep);
  if (!ok) Py_CLEAR(result);
  return result;
}

/* The count, waited for (without the GIL). */
static int read_count(const sc_call *call, long long *count) {
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = gl_d2h(count, call->count, sizeof *count, call->stream, GL_PATH_AUTO);
  Py_END_ALLOW_THREADS
  return code;
}

/* With a mask, its kept bytes are counted first (glc_count_true: n bytes read, a tenth of what
 * the compaction moves at 4-byte elements), so the variant writes straight into a result of
 * exactly that length: no second copy of the kept elements. */
static int select_sized_by_mask(const sc_op *op, sc_call *call, PyArray_Descr *descr,
                                PyObject *keep, gl_DeviceArrayObject **out) {
  long long count = 0;
  int code = glc_count_true(call->n, call->mask, call->count, call->stream);
  if (!code) code = read_count(call, &count);
  if (code) return gl_raise_cuda(code) ? 0 : -1;
  const Py_ssize_t length = (Py_ssize_t)count;
  if (!(*out = gl_devarray_empty(1, &length, descr, call->stream, keep))) return -1;
  if (length == 0) return 0;
  call->out = (*out)->ptr;
  code = op->run_cuda(call);
  return code ? (gl_raise_cuda(code) ? 0 : -1) : 0;
}

/* Without a mask the count is known only after the run: the variant writes into an array of n,
 * and the kept elements are copied into one of their exact length (or the full one is the result
 * when everything was kept). */
static int select_then_copy(const sc_op *op, sc_call *call, PyArray_Descr *descr, PyObject *keep,
                            gl_DeviceArrayObject **full, gl_DeviceArrayObject **out) {
  const Py_ssize_t n = (Py_ssize_t)call->n;
  if (!(*full = gl_devarray_empty(1, &n, descr, call->stream, keep))) return -1;
  call->out = (*full)->ptr;
  long long count = 0;
  int code = op->run_cuda(call);
  if (!code) code = read_count(call, &count);
  if (code) return gl_raise_cuda(code) ? 0 : -1;
  if (count == n) {
    *out = *full;
    *full = NULL;
    return 0;
  }
  const Py_ssize_t length = (Py_ssize_t)count;
  if (!(*out = gl_devarray_empty(1, &length, descr, call->stream, keep))) return -1;
  if (length == 0) return 0;
  code = glc_memcpy_async((*out)->ptr, (*full)->ptr, (size_t)(*out)->nbytes, call->stream);
  return code ? (gl_raise_cuda(code) ? 0 : -1) : 0;
}

static PyObject *select_on_device(const sc_op *op, PyObject *x_obj, PyObject *mask_obj,
                                  PyObject *stream_obj, sc_call *call) {
  if (gl_require_gpu(op->ladder->op) < 0) return NULL;
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  const int with_mask = mask_obj != Py_None;
  gl_DeviceArrayObject *x = NULL, *mask = NULL, *full = NULL, *dev_count = NULL, *out = NULL;
  PyArray_Descr *descr = NULL, *i64 = NULL;
  const Py_ssize_t one = 1;
  int ok = (x = gl_as_device_array(x_obj, "x", call->stream)) != NULL &&
           gl_check_device_array(x, "x", -1, 0) == 0 &&
           (!with_mask || ((mask = gl_as_device_array(mask_obj, "mask", call->stream)) != NULL &&
                           gl_check_device_array(mask, "mask", -1, 0) == 0)) &&
           check_operands(op, call, x->dtype, x->ndim, x->shape, x->size, mask ? mask->dtype : NULL,
                          mask ? mask->ndim : 0, mask ? mask->shape : NULL) == 0 &&
           (descr = PyArray_DescrFromType(select_result_type(op, call))) != NULL &&
           (i64 = PyArray_DescrFromType(NPY_INT64)) != NULL;
  const Py_ssize_t n = ok ? (Py_ssize_t)call->n : 0;
  if (ok && n == 0) ok = (out = gl_devarray_empty(1, &n, descr, call->stream, keep)) != NULL;
  if (ok && n > 0) ok = (dev_count = gl_devarray_empty(1, &one, i64, call->stream, NULL)) != NULL;
  if (ok && n > 0) {
    call->x = x->ptr;
    call->mask = mask ? mask->ptr : NULL;
    call->count = dev_count->ptr;
    ok = (mask ? select_sized_by_mask(op, call, descr, keep, &out)
               : select_then_copy(op, call, descr, keep, &full, &out)) == 0;
  }
  if (ok) {
    gl_devarray_use(x, call->stream, keep);
    if (mask) gl_devarray_use(mask, call->stream, keep);
    gl_devarray_use(out, call->stream, keep);
  }
  if (full) gl_devarray_use(full, call->stream, keep);
  Py_XDECREF(x);
  Py_XDECREF(mask);
  Py_XDECREF(full);
  Py_XDECREF(dev_count);
  Py_XDECREF(descr);
  Py_XDECREF(i64);
  Py_XDECREF(keep);
  if (!ok) Py_CLEAR(out);
  return (PyObject *)out;
}

PyObject *sc_run_select(const sc_op *op, PyObject *x, PyObject *mask, PyObject *variant,
                        PyObject *stream) {
  static const char *const names[] = {"x", "mask"};
  PyObject *inputs[2] = {x, mask};
  const int n_inputs = op->has_mask && mask != Py_None ? 2 : 1;
  if (!op->has_mask) mask = Py_None;
  sc_call call = {0};
  int on_device = 0;
  if (resolve(op, n_inputs, inputs, names, Py_None, variant, stream, Py_None, &call, &on_device) <
      0)
    return NULL;
  return on_device ? select_on_device(op, x, mask, stream, &call)
                   : select_on_host(op, x, mask, stream, &call);
}
