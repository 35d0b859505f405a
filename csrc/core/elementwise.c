/* The four ways an elementwise op can run: CPU on NumPy, CUDA on NumPy (staged through the GPU),
 * CUDA on device arrays (asynchronous), and the refused one, CPU on device arrays. */
#include "elementwise.h"

#include "args.h"
#include "devarray.h"
#include "errors.h"
#include "interop.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

/* Below this many elements a CPU variant keeps the GIL: releasing it costs more. */
#define GL_CPU_RELEASE_GIL_MIN (1 << 16)

static int check_like_first(const gl_ew_op *op, int i, PyArray_Descr *first, PyArray_Descr *d,
                            int ndim0, const Py_ssize_t *shape0, int ndim,
                            const Py_ssize_t *shape) {
  if (i == 0) return gl_check_dtype_in(d, op->dtypes, op->input_names[0]);
  if (!PyArray_EquivTypes(first, d)) {
    PyErr_Format(PyExc_TypeError, "%s has dtype %S; expected %S like %s", op->input_names[i],
                 (PyObject *)d, (PyObject *)first, op->input_names[0]);
    return -1;
  }
  return gl_check_same_shape(ndim0, shape0, ndim, shape, op->input_names[0], op->input_names[i]);
}

static int check_out_like(PyArray_Descr *d, int ndim, const Py_ssize_t *shape, PyArray_Descr *want,
                          int want_ndim, const Py_ssize_t *want_shape) {
  if (!PyArray_EquivTypes(d, want)) {
    PyErr_Format(PyExc_TypeError, "out has dtype %S; expected %S", (PyObject *)d, (PyObject *)want);
    return -1;
  }
  return gl_check_same_shape(ndim, shape, want_ndim, want_shape, "out", "the inputs");
}

static PyObject *run_on_device(const gl_ew_op *op, PyObject *const *inputs, PyObject *out_obj,
                               PyObject *stream_obj, gl_ew_call *call) {
  if (gl_require_gpu(op->ladder->op) < 0) return NULL;
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *in[GL_EW_MAX_INPUTS] = {NULL}, *out = NULL;
  PyObject *result = NULL;
  int ok = 1;
  for (int i = 0; ok && i < op->n_inputs; i++) {
    in[i] = gl_as_device_array(inputs[i], op->input_names[i], call->stream);
    ok = in[i] && gl_check_device_array(in[i], op->input_names[i], op->ndim, 0) == 0 &&
         check_like_first(op, i, in[0]->dtype, in[i]->dtype, in[0]->ndim, in[0]->shape, in[i]->ndim,
                          in[i]->shape) == 0;
  }
  if (ok) {
    if (out_obj == Py_None) {
      out = gl_devarray_empty(in[0]->ndim, in[0]->shape, in[0]->dtype, call->stream, keep);
    } else {
      out = gl_as_device_array(out_obj, "out", call->stream);
      if (out && (gl_check_device_array(out, "out", op->ndim, 1) < 0 ||
                  check_out_like(out->dtype, out->ndim, out->shape, in[0]->dtype, in[0]->ndim,
                                 in[0]->shape) < 0))
        Py_CLEAR(out);
    }
    ok = out != NULL;
  }
  if (ok) {
    call->dtype = gl_dtype_code(in[0]->dtype);
    call->ndim = in[0]->ndim;
    call->shape = in[0]->shape;
    call->size = (size_t)in[0]->size;
    for (int i = 0; i < op->n_inputs; i++) call->in[i] = in[i]->ptr;
    call->out = out->ptr;
    int code = call->size ? op->run_cuda(call) : 0;
    if (code) {
      gl_raise_cuda(code);
    } else {
      for (int i = 0; i < op->n_inputs; i++) gl_devarray_use(in[i], call->stream, keep);
      gl_devarray_use(out, call->stream, keep);
      result = Py_NewRef((PyObject *)out);
    }
  }
  for (int i = 0; i < op->n_inputs; i++) Py_XDECREF(in[i]);
  Py_XDECREF(out);
  Py_XDECREF(keep);
  return result;
}

typedef struct {
  const gl_ew_op *op;
  gl_ew_call *call;
} small_ctx;

static int run_small(void *ctx, void *const *dev_in, void *dev_out) {
  small_ctx *c = ctx;
  for (int i = 0; i < c->op->n_inputs; i++) c->call->in[i] = dev_in[i];
  c->call->out = dev_out;
  return c->op->run_cuda(c->call);
}

/* CUDA variant on NumPy operands: copy in, run, copy out, wait. */
static int run_staged(const gl_ew_op *op, PyArrayObject *const *host_in, PyArrayObject *host_out,
                      PyObject *stream_obj, gl_ew_call *call) {
  if (gl_require_gpu(op->ladder->op) < 0) return -1;
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return -1;
  gl_DeviceArrayObject *dev[GL_EW_MAX_INPUTS + 1] = {NULL};
  PyArray_Descr *dtype = PyArray_DESCR(host_in[0]);
  size_t bytes = (size_t)PyArray_NBYTES(host_in[0]);
  int code = 0, n = op->n_inputs;
  if (gl_small_call_fits(n, bytes, bytes)) {
    const void *src[GL_EW_MAX_INPUTS];
    for (int i = 0; i < n; i++) src[i] = PyArray_DATA(host_in[i]);
    small_ctx ctx = {op, call};
    void *dst = PyArray_DATA(host_out);
    Py_BEGIN_ALLOW_THREADS
    code = gl_small_call(n, src, bytes, dst, bytes, call->stream, run_small, &ctx);
    Py_END_ALLOW_THREADS
    if (code) gl_raise_cuda(code);
    goto done;
  }
  for (int i = 0; i <= n; i++) {
    dev[i] = gl_devarray_empty(call->ndim, call->shape, dtype, call->stream, NULL);
    if (!dev[i]) goto done;
  }
  for (int i = 0; i < n; i++) call->in[i] = dev[i]->ptr;
  call->out = dev[n]->ptr;
  Py_BEGIN_ALLOW_THREADS
  for (int i = 0; !code && i < n; i++)
    code = gl_h2d(dev[i]->ptr, PyArray_DATA(host_in[i]), bytes, call->stream, GL_PATH_AUTO);
  if (!code) code = op->run_cuda(call);
  if (!code) code = gl_d2h(PyArray_DATA(host_out), dev[n]->ptr, bytes, call->stream, GL_PATH_AUTO);
  Py_END_ALLOW_THREADS
  if (code) gl_raise_cuda(code);
done:
  for (int i = 0; i <= n; i++) Py_XDECREF(dev[i]);
  Py_XDECREF(keep);
  return PyErr_Occurred() ? -1 : 0;
}

static PyObject *run_on_host(const gl_ew_op *op, PyObject *const *inputs, PyObject *out_obj,
                             PyObject *stream_obj, gl_ew_call *call) {
  PyArrayObject *in[GL_EW_MAX_INPUTS];
  for (int i = 0; i < op->n_inputs; i++) {
    if (gl_check_host_array(inputs[i], op->input_names[i], op->ndim, 0) < 0) return NULL;
    in[i] = (PyArrayObject *)inputs[i];
    if (check_like_first(op, i, PyArray_DESCR(in[0]), PyArray_DESCR(in[i]), PyArray_NDIM(in[0]),
                         PyArray_SHAPE(in[0]), PyArray_NDIM(in[i]), PyArray_SHAPE(in[i])) < 0)
      return NULL;
  }
  PyArrayObject *out;
  if (out_obj == Py_None) {
    PyArray_Descr *d = PyArray_DESCR(in[0]);
    Py_INCREF(d);
    out = (PyArrayObject *)PyArray_Empty(PyArray_NDIM(in[0]), PyArray_SHAPE(in[0]), d, 0);
    if (!out) return NULL;
  } else {
    if (gl_is_device_operand(out_obj))
      return PyErr_Format(PyExc_ValueError,
                          "mixed devices: the inputs are NumPy arrays but out is a device array");
    if (gl_check_host_array(out_obj, "out", op->ndim, 1) < 0) return NULL;
    out = (PyArrayObject *)out_obj;
    if (check_out_like(PyArray_DESCR(out), PyArray_NDIM(out), PyArray_SHAPE(out),
                       PyArray_DESCR(in[0]), PyArray_NDIM(in[0]), PyArray_SHAPE(in[0])) < 0)
      return NULL;
    Py_INCREF(out);
  }
  call->dtype = gl_dtype_code(PyArray_DESCR(in[0]));
  call->ndim = PyArray_NDIM(in[0]);
  call->shape = PyArray_SHAPE(in[0]);
  call->size = (size_t)PyArray_SIZE(in[0]);
  int failed = 0;
  if (call->variant->backend == GL_BACKEND_CUDA && gl_require_gpu(op->ladder->op) < 0) {
    failed = 1;
  } else if (call->size == 0) {
    /* nothing to compute */
  } else if (call->variant->backend == GL_BACKEND_CUDA) {
    failed = run_staged(op, in, out, stream_obj, call) < 0;
  } else {
    for (int i = 0; i < op->n_inputs; i++) call->in[i] = PyArray_DATA(in[i]);
    call->out = PyArray_DATA(out);
    int rc;
    if (call->size >= GL_CPU_RELEASE_GIL_MIN) {
      Py_BEGIN_ALLOW_THREADS
      rc = op->run_cpu(call);
      Py_END_ALLOW_THREADS
    } else {
      rc = op->run_cpu(call);
    }
    if (rc) {
      PyErr_Format(PyExc_RuntimeError, "%s: CPU variant %d failed", op->ladder->op,
                   call->variant->id);
      failed = 1;
    }
  }
  if (failed) Py_CLEAR(out);
  return (PyObject *)out;
}

PyObject *gl_ew_run(const gl_ew_op *op, PyObject *const *inputs, PyObject *variant, PyObject *out,
                    PyObject *stream, PyObject *block, const void *params) {
  int on_device = 0;
  if (gl_classify_operands(op->n_inputs, inputs, op->input_names, &on_device) < 0) return NULL;
  gl_ew_call call = {0};
  call.params = params;
  call.variant = gl_resolve_variant(op->ladder, variant, on_device || gl_gpu_ready());
  if (!call.variant || gl_resolve_tunable(call.variant, "block", block, &call.block) < 0)
    return NULL;
  if (call.variant->backend == GL_BACKEND_CPU && stream != Py_None)
    return PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU",
                        call.variant->id, call.variant->name);
  if (!on_device) return run_on_host(op, inputs, out, stream, &call);
  if (call.variant->backend == GL_BACKEND_CPU)
    return PyErr_Format(PyExc_TypeError,
                        "variant %d (%s) runs on the CPU and takes NumPy arrays, but %s is a "
                        "device array; pick a CUDA variant or pass NumPy arrays",
                        call.variant->id, call.variant->name, op->input_names[0]);
  return run_on_device(op, inputs, out, stream, &call);
}
