/* The streams lab's bindings: the measurements of cuda/streams/. The Python module gpulab.streams
 * validates the arguments, repeats the runs and builds the tables. */
#include "csrc/core/args.h"
#include "csrc/core/errors.h"
#include "csrc/core/registry.h"
#include "csrc/core/runtime.h"
#include "cuda/streams/streams.h"

/* A 1-D or 2-D C-contiguous float32 array in page-locked memory: copies from pageable memory
 * are synchronous and could not overlap anything. */
static float *pinned_floats(PyObject *obj, const char *name, int ndim, int writeable) {
  if (gl_check_host_array(obj, name, ndim, writeable) < 0) return NULL;
  PyArrayObject *a = (PyArrayObject *)obj;
  if (PyArray_TYPE(a) != NPY_FLOAT32)
    return PyErr_Format(PyExc_TypeError, "%s must be float32, not %S", name,
                        (PyObject *)PyArray_DESCR(a)),
           NULL;
  int pinned = 0, code = glc_host_is_pinned(PyArray_DATA(a), &pinned);
  if (code) return gl_raise_cuda(code), NULL;
  if (!pinned)
    return PyErr_Format(PyExc_ValueError, "%s must be in pinned memory (gpulab.pinned_empty)",
                        name),
           NULL;
  return PyArray_DATA(a);
}

/* _streamlab_overlap(x, y, chunks, streams, breadth_first, intensity, timeline) -> dict */
static PyObject *py_overlap(PyObject *m, PyObject *args) {
  PyObject *x_obj, *y_obj;
  int chunks, streams, breadth_first, intensity, want_timeline;
  if (!PyArg_ParseTuple(args, "OOiipip:_streamlab_overlap", &x_obj, &y_obj, &chunks, &streams,
                        &breadth_first, &intensity, &want_timeline))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float *x = pinned_floats(x_obj, "x", 1, 0), *y = x ? pinned_floats(y_obj, "y", 1, 1) : NULL;
  if (!y) return NULL;
  size_t n = (size_t)PyArray_SIZE((PyArrayObject *)x_obj);
  if (n != (size_t)PyArray_SIZE((PyArrayObject *)y_obj) || n == 0)
    return PyErr_Format(PyExc_ValueError, "x and y must be non-empty and of the same size");
  if (chunks < 1 || (size_t)chunks > n || streams < 1 || streams > 64 || intensity < 0)
    return PyErr_Format(PyExc_ValueError, "bad chunks, streams or intensity");
  npy_intp dims[3] = {chunks, 3, 2};
  PyObject *timeline = want_timeline ? PyArray_ZEROS(3, dims, NPY_FLOAT32, 0) : NULL;
  if (want_timeline && !timeline) return NULL;
  float *marks = timeline ? PyArray_DATA((PyArrayObject *)timeline) : NULL;
  glc_overlap_times t = {0};
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_streamlab_overlap(x, y, n, chunks, streams, breadth_first, intensity, &t, marks);
  Py_END_ALLOW_THREADS
  if (code) {
    Py_XDECREF(timeline);
    return gl_raise_cuda(code);
  }
  return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:N}", "serial_ms", t.serial_ms, "h2d_ms", t.h2d_ms,
                       "kernel_ms", t.kernel_ms, "d2h_ms", t.d2h_ms, "overlapped_ms",
                       t.overlapped_ms, "timeline", timeline ? timeline : Py_NewRef(Py_None));
}

/* _streamlab_concurrent(kernels, duration_ms) -> (one_stream_ms, many_streams_ms) */
static PyObject *py_concurrent(PyObject *m, PyObject *args) {
  int kernels;
  double duration_ms;
  if (!PyArg_ParseTuple(args, "id:_streamlab_concurrent", &kernels, &duration_ms)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float one = 0, many = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_streamlab_concurrent(kernels, duration_ms, &one, &many);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return Py_BuildValue("(dd)", (double)one, (double)many);
}

/* _streamlab_object_cost(count) -> dict of us per call */
static PyObject *py_object_cost(PyObject *m, PyObject *args) {
  int count;
  if (!PyArg_ParseTuple(args, "i:_streamlab_object_cost", &count)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  double sc = 0, sd = 0, ec = 0, ed = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_streamlab_object_cost(count, &sc, &sd, &ec, &ed);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return Py_BuildValue("{s:d,s:d,s:d,s:d}", "stream_create_us", sc, "stream_destroy_us", sd,
                       "event_create_us", ec, "event_destroy_us", ed);
}

/* _streamlab_graph(kernels, repeat) -> dict */
static PyObject *py_graph(PyObject *m, PyObject *args) {
  int kernels, repeat;
  if (!PyArg_ParseTuple(args, "ii:_streamlab_graph", &kernels, &repeat)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  double launch_us = 0, graph_us = 0, instantiate_us = 0;
  uint64_t counted = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_streamlab_graph(kernels, repeat, &launch_us, &graph_us, &instantiate_us, &counted);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return Py_BuildValue("{s:d,s:d,s:d,s:K}", "launch_us", launch_us, "graph_us", graph_us,
                       "instantiate_us", instantiate_us, "counted", (unsigned long long)counted);
}

/* _streamlab_producer_consumer(chunks, chunk_elems, delay_ms, wait) -> bad chunks */
static PyObject *py_producer_consumer(PyObject *m, PyObject *args) {
  int chunks, wait;
  Py_ssize_t elems;
  double delay_ms;
  if (!PyArg_ParseTuple(args, "indp:_streamlab_producer_consumer", &chunks, &elems, &delay_ms,
                        &wait))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  if (elems < 1) return PyErr_Format(PyExc_ValueError, "chunk_elems must be >= 1");
  int bad = 0, code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_streamlab_producer_consumer(chunks, (size_t)elems, delay_ms, wait, &bad);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return PyLong_FromLong(bad);
}

/* _streamlab_matvec(A, x, y, streams) -> ms */
static PyObject *py_matvec(PyObject *m, PyObject *args) {
  PyObject *a_obj, *x_obj, *y_obj;
  int streams;
  if (!PyArg_ParseTuple(args, "OOOi:_streamlab_matvec", &a_obj, &x_obj, &y_obj, &streams))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float *a = pinned_floats(a_obj, "A", 2, 0);
  float *x = a ? pinned_floats(x_obj, "x", 1, 0) : NULL;
  float *y = x ? pinned_floats(y_obj, "y", 1, 1) : NULL;
  if (!y) return NULL;
  npy_intp *shape = PyArray_DIMS((PyArrayObject *)a_obj);
  size_t rows = (size_t)shape[0], cols = (size_t)shape[1];
  if ((size_t)PyArray_SIZE((PyArrayObject *)x_obj) != cols ||
      (size_t)PyArray_SIZE((PyArrayObject *)y_obj) != rows || rows == 0 || cols == 0)
    return PyErr_Format(PyExc_ValueError, "A, x and y do not match: A is %zu x %zu", rows, cols);
  if (streams < 1 || (size_t)streams > rows)
    return PyErr_Format(PyExc_ValueError, "streams must lie in [1, rows]");
  float ms = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_streamlab_matvec(a, x, y, rows, cols, streams, &ms);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return PyFloat_FromDouble(ms);
}

static PyMethodDef streams_methods[] = {
    {"_streamlab_overlap", py_overlap, METH_VARARGS, "Chunked H2D/kernel/D2H pipeline times."},
    {"_streamlab_concurrent", py_concurrent, METH_VARARGS, "Sleeping kernels: one vs k streams."},
    {"_streamlab_object_cost", py_object_cost, METH_VARARGS, "Stream and event create/destroy."},
    {"_streamlab_graph", py_graph, METH_VARARGS, "Plain launches vs a captured CUDA graph."},
    {"_streamlab_producer_consumer", py_producer_consumer, METH_VARARGS,
     "Producer/consumer across streams: chunks the consumer found incomplete."},
    {"_streamlab_matvec", py_matvec, METH_VARARGS, "Row-split matvec over streams: ms."},
    {NULL}};

/* Measurements, not a ladder: no variant table. */
const gl_lab gl_lab_module_streams = {.name = "streams", .methods = streams_methods};
