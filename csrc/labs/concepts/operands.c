/* The four ways a concepts op can run (operands.h). */
#include "operands.h"

#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/errors.h"
#include "csrc/core/interop.h"
#include "csrc/core/runtime.h"
#include "csrc/core/stream.h"
#include "csrc/core/transfer.h"

/* Below this many result elements a CPU variant keeps the GIL: releasing it costs more. */
#define CN_CPU_RELEASE_GIL_MIN (1 << 16)

static int check_input(const cn_op *op, cn_call *call, int i, int ndim, const Py_ssize_t *shape,
                       PyArray_Descr *dtype) {
  if (gl_check_dtype_in(dtype, op->inputs[i].dtypes, op->inputs[i].name) < 0) return -1;
  size_t size = 1;
  for (int k = 0; k < ndim; k++) size *= (size_t)shape[k];
  call->ndim[i] = ndim;
  call->shape[i] = shape;
  call->size[i] = size;
  return 0;
}

static PyArray_Descr *result_descr(const cn_call *call) {
  return PyArray_DescrFromType(call->out_type);
}

static size_t result_size(const cn_call *call) {
  size_t size = 1;
  for (int k = 0; k < call->out_ndim; k++) size *= (size_t)call->out_shape[k];
  return size;
}

static PyObject *run_on_device(const cn_op *op, PyObject *const *inputs, PyObject *stream_obj,
                               cn_call *call) {
  if (gl_require_gpu(op->ladder->op) < 0) return NULL;
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *in[CN_MAX_INPUTS] = {NULL}, *out = NULL;
  PyArray_Descr *descr = NULL;
  int ok = 1;
  for (int i = 0; ok && i < op->n_inputs; i++) {
    const cn_input *spec = &op->inputs[i];
    in[i] = gl_as_device_array(inputs[i], spec->name, call->stream);
    ok = in[i] && gl_check_device_array(in[i], spec->name, spec->ndim, 0) == 0 &&
         check_input(op, call, i, in[i]->ndim, in[i]->shape, in[i]->dtype) == 0;
    if (ok) call->in[i] = in[i]->ptr;
  }
  ok = ok && op->shape_result(call) == 0 && (descr = result_descr(call)) != NULL;
  if (ok) {
    call->out_size = result_size(call);
    out = gl_devarray_empty(call->out_ndim, call->out_shape, descr, call->stream, keep);
    ok = out != NULL;
  }
  if (ok && call->out_size) {
    call->out = out->ptr;
    int code = op->run_cuda(call);
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  if (ok) {
    for (int i = 0; i < op->n_inputs; i++) gl_devarray_use(in[i], call->stream, keep);
    gl_devarray_use(out, call->stream, keep);
  }
  for (int i = 0; i < op->n_inputs; i++) Py_XDECREF(in[i]);
  Py_XDECREF(descr);
  Py_XDECREF(keep);
  if (!ok) Py_CLEAR(out);
  return (PyObject *)out;
}

/* CUDA variant on NumPy operands: device copies of the inputs, run, the result copied back into
 * host_out, waited for. */
static int run_staged(const cn_op *op, PyArrayObject *const *host_in, PyArrayObject *host_out,
                      PyObject *stream_obj, cn_call *call) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return -1;
  gl_DeviceArrayObject *dev[CN_MAX_INPUTS + 1] = {NULL};
  int ok = 1;
  for (int i = 0; ok && i < op->n_inputs; i++) {
    dev[i] = gl_devarray_empty(PyArray_NDIM(host_in[i]), PyArray_SHAPE(host_in[i]),
                               PyArray_DESCR(host_in[i]), call->stream, NULL);
    ok = dev[i] != NULL;
    if (ok) call->in[i] = dev[i]->ptr;
  }
  const int n = op->n_inputs;
  if (ok) {
    dev[n] = gl_devarray_empty(PyArray_NDIM(host_out), PyArray_SHAPE(host_out),
                               PyArray_DESCR(host_out), call->stream, NULL);
    ok = dev[n] != NULL;
  }
  if (ok) {
    int code = 0;
    call->out = dev[n]->ptr;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; !code && i < n; i++)
      if (PyArray_NBYTES(host_in[i]))
        code = gl_h2d(dev[i]->ptr, PyArray_DATA(host_in[i]), (size_t)PyArray_NBYTES(host_in[i]),
                      call->stream, GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    if (!code)
      code = gl_d2h(PyArray_DATA(host_out), dev[n]->ptr, (size_t)PyArray_NBYTES(host_out),
                    call->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  for (int i = 0; i <= n; i++) Py_XDECREF(dev[i]);
  Py_XDECREF(keep);
  return ok ? 0 : -1;
}

static int run_cpu(const cn_op *op, cn_call *call) {
  int rc;
  if (call->out_size >= CN_CPU_RELEASE_GIL_MIN) {
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

static PyObject *run_on_host(const cn_op *op, PyObject *const *inputs, PyObject *stream_obj,
                             cn_call *call) {
  PyArrayObject *in[CN_MAX_INPUTS];
  for (int i = 0; i < op->n_inputs; i++) {
    const cn_input *spec = &op->inputs[i];
    if (gl_check_host_array(inputs[i], spec->name, spec->ndim, 0) < 0) return NULL;
    in[i] = (PyArrayObject *)inputs[i];
    if (check_input(op, call, i, PyArray_NDIM(in[i]), PyArray_SHAPE(in[i]), PyArray_DESCR(in[i])) <
        0)
      return NULL;
    call->in[i] = PyArray_DATA(in[i]);
  }
  if (op->shape_result(call) < 0) return NULL;
  if (call->variant->backend == GL_BACKEND_CUDA && gl_require_gpu(op->ladder->op) < 0) return NULL;
  PyArray_Descr *descr = result_descr(call);
  if (!descr) return NULL;
  /* PyArray_Empty steals the reference to descr. */
  PyArrayObject *out = (PyArrayObject *)PyArray_Empty(call->out_ndim, call->out_shape, descr, 0);
  if (!out) return NULL;
  call->out_size = result_size(call);
  if (call->out_size == 0) return (PyObject *)out;
  int failed;
  if (call->variant->backend == GL_BACKEND_CUDA) {
    failed = run_staged(op, in, out, stream_obj, call) < 0;
  } else {
    call->out = PyArray_DATA(out);
    failed = run_cpu(op, call) < 0;
  }
  if (failed) Py_CLEAR(out);
  return (PyObject *)out;
}

PyObject *cn_run(const cn_op *op, PyObject *const *inputs, PyObject *variant, PyObject *stream,
                 PyObject *block, const void *params) {
  const char *names[CN_MAX_INPUTS];
  for (int i = 0; i < op->n_inputs; i++) names[i] = op->inputs[i].name;
  int on_device = 0;
  if (gl_classify_operands(op->n_inputs, inputs, names, &on_device) < 0) return NULL;
  cn_call call = {0};
  call.params = params;
  call.variant = gl_resolve_variant(op->ladder, variant, on_device || gl_gpu_ready());
  if (!call.variant || gl_resolve_tunable(call.variant, "block", block, &call.block) < 0)
    return NULL;
  if (call.variant->backend == GL_BACKEND_CPU && stream != Py_None)
    return PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU",
                        call.variant->id, call.variant->name);
  if (!on_device) return run_on_host(op, inputs, stream, &call);
  if (call.variant->backend == GL_BACKEND_CPU)
    return PyErr_Format(PyExc_TypeError,
                        "variant %d (%s) runs on the CPU and takes NumPy arrays, but %s is a "
                        "device array; pick a CUDA variant or pass NumPy arrays",
                        call.variant->id, call.variant->name, names[0]);
  return run_on_device(op, inputs, stream, &call);
}
