/* The primitives behind gl.ceilings() and gl.bench(): FMA loops, device copies (plain and
 * through L2) and fills. */
#include "measure.h"

#include "args.h"
#include "devarray.h"
#include "device_memory.h"
#include "errors.h"
#include "host.h"
#include "runtime.h"
#include "stream.h"

static gl_DeviceArrayObject *device_arg(PyObject *obj, const char *name) {
  if (!gl_DeviceArray_Check(obj))
    return PyErr_Format(PyExc_TypeError, "%s must be a gpulab.DeviceArray", name), NULL;
  gl_DeviceArrayObject *a = (gl_DeviceArrayObject *)obj;
  gl_devarray_forget_mirror(a);
  if (!gl_devarray_is_c_contiguous(a))
    return PyErr_Format(PyExc_ValueError, "%s must be C-contiguous", name), NULL;
  return a;
}

/* _fma_loop and _fma64_loop(blocks, threads, iterations, sink, stream=None) -> flops: the FMA
 * loop of sink's precision, float32 (FFMA) or float64 (DFMA). */
static PyObject *fma_loop(PyObject *args, const char *format, int type_num) {
  int blocks, threads, iterations;
  PyObject *sink_obj, *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTuple(args, format, &blocks, &threads, &iterations, &sink_obj, &stream_obj))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  gl_DeviceArrayObject *sink = device_arg(sink_obj, "sink");
  if (!sink) return NULL;
  const char *dtype = type_num == NPY_FLOAT32 ? "float32" : "float64";
  if (sink->dtype->type_num != type_num || sink->size < (Py_ssize_t)blocks * threads)
    return PyErr_Format(PyExc_ValueError, "sink must be %s with blocks*threads elements", dtype);
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  double flops = 0;
  int code = type_num == NPY_FLOAT32
                 ? glc_fma_loop(blocks, threads, iterations, (float *)sink->ptr, &flops, stream)
                 : glc_fma64_loop(blocks, threads, iterations, (double *)sink->ptr, &flops, stream);
  if (code) return gl_raise_cuda(code);
  return PyFloat_FromDouble(flops);
}

static PyObject *py_fma_loop(PyObject *m, PyObject *args) {
  return fma_loop(args, "iiiO|O:_fma_loop", NPY_FLOAT32);
}

static PyObject *py_fma64_loop(PyObject *m, PyObject *args) {
  return fma_loop(args, "iiiO|O:_fma64_loop", NPY_FLOAT64);
}

/* _l2_copy(dst, src, passes, blocks, threads, stream=None): `passes` copies of src into dst in
 * one kernel, through L2 only (glc_l2_copy). */
static PyObject *py_l2_copy(PyObject *m, PyObject *args) {
  PyObject *dst_obj, *src_obj, *stream_obj = Py_None, *keep = NULL;
  int passes, blocks, threads;
  if (!PyArg_ParseTuple(args, "OOiii|O:_l2_copy", &dst_obj, &src_obj, &passes, &blocks, &threads,
                        &stream_obj))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  gl_DeviceArrayObject *dst = device_arg(dst_obj, "dst"), *src = device_arg(src_obj, "src");
  if (!dst || !src) return NULL;
  if (dst->nbytes != src->nbytes)
    return PyErr_Format(PyExc_ValueError, "dst and src differ in size");
  if (dst->nbytes % 16 != 0 || (uintptr_t)dst->ptr % 16 != 0 || (uintptr_t)src->ptr % 16 != 0)
    return PyErr_Format(PyExc_ValueError,
                        "dst and src must be 16-byte aligned, with a multiple of 16 bytes");
  if (passes < 0) return PyErr_Format(PyExc_ValueError, "passes must be >= 0, got %d", passes);
  if (blocks < 1) return PyErr_Format(PyExc_ValueError, "blocks must be >= 1, got %d", blocks);
  if (threads < 1 || threads > 1024)
    return PyErr_Format(PyExc_ValueError, "threads must be in 1..1024, got %d", threads);
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  int code = glc_l2_copy(dst->ptr, src->ptr, (size_t)dst->nbytes, passes, blocks, threads, stream);
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

/* _copy(dst, src, stream=None): device-to-device copy of equal-sized arrays. */
static PyObject *py_copy(PyObject *m, PyObject *args) {
  PyObject *dst_obj, *src_obj, *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTuple(args, "OO|O:_copy", &dst_obj, &src_obj, &stream_obj)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  gl_DeviceArrayObject *dst = device_arg(dst_obj, "dst"), *src = device_arg(src_obj, "src");
  if (!dst || !src) return NULL;
  if (dst->nbytes != src->nbytes)
    return PyErr_Format(PyExc_ValueError, "dst and src differ in size");
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  int code = glc_memcpy_async(dst->ptr, src->ptr, (size_t)dst->nbytes, stream);
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

/* _memset(dst, byte, stream=None) */
static PyObject *py_memset(PyObject *m, PyObject *args) {
  PyObject *dst_obj, *stream_obj = Py_None, *keep = NULL;
  int value;
  if (!PyArg_ParseTuple(args, "Oi|O:_memset", &dst_obj, &value, &stream_obj)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  gl_DeviceArrayObject *dst = device_arg(dst_obj, "dst");
  if (!dst) return NULL;
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  int code = glc_memset_async(dst->ptr, value, (size_t)dst->nbytes, stream);
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

/* _cpu_fma_loop and _cpu_fma64_loop(iterations) -> flops */
static PyObject *cpu_fma_loop(PyObject *arg, double (*loop)(long)) {
  long iterations = PyLong_AsLong(arg);
  if (iterations == -1 && PyErr_Occurred()) return NULL;
  double flops;
  Py_BEGIN_ALLOW_THREADS
  flops = loop(iterations);
  Py_END_ALLOW_THREADS
  return PyFloat_FromDouble(flops);
}

static PyObject *py_cpu_fma_loop(PyObject *m, PyObject *arg) {
  return cpu_fma_loop(arg, glcpu_fma_loop);
}

static PyObject *py_cpu_fma64_loop(PyObject *m, PyObject *arg) {
  return cpu_fma_loop(arg, glcpu_fma64_loop);
}

/* _cpu_copy(dst, src): OpenMP memcpy between equal-sized contiguous NumPy arrays. */
static PyObject *py_cpu_copy(PyObject *m, PyObject *args) {
  PyObject *dst, *src;
  if (!PyArg_ParseTuple(args, "OO:_cpu_copy", &dst, &src)) return NULL;
  if (gl_check_host_array(dst, "dst", -1, 1) < 0 || gl_check_host_array(src, "src", -1, 0) < 0)
    return NULL;
  size_t bytes = (size_t)PyArray_NBYTES((PyArrayObject *)dst);
  if (bytes != (size_t)PyArray_NBYTES((PyArrayObject *)src))
    return PyErr_Format(PyExc_ValueError, "dst and src differ in size");
  void *d = PyArray_DATA((PyArrayObject *)dst);
  const void *s = PyArray_DATA((PyArrayObject *)src);
  Py_BEGIN_ALLOW_THREADS
  glcpu_parallel_copy(d, s, bytes);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

/* synchronize(stream=None) */
static PyObject *py_synchronize(PyObject *m, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"stream", NULL};
  PyObject *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:synchronize", kwlist, &stream_obj))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_stream_synchronize(stream);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

static PyObject *py_pool_usage(PyObject *m, PyObject *unused) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  uint64_t used = 0, reserved = 0;
  int code = glc_pool_usage(0, &used, &reserved);
  if (code) return gl_raise_cuda(code);
  uint64_t cached = gl_block_cache_bytes();
  return Py_BuildValue("{s:K,s:K,s:K}", "used", (unsigned long long)(used - cached), "cached",
                       (unsigned long long)cached, "reserved", (unsigned long long)reserved);
}

static PyObject *py_trim_block_cache(PyObject *m, PyObject *unused) {
  gl_block_cache_trim();
  Py_RETURN_NONE;
}

/* release_memory(): freed blocks, then the pool's unused memory, back to the driver (what a
 * failed allocation does before its one retry). */
static PyObject *py_release_memory(PyObject *m, PyObject *unused) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  int code = gl_device_memory_release();
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

static PyObject *py_library_stream(PyObject *m, PyObject *unused) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  return PyLong_FromVoidPtr(gl_library_stream());
}

PyMethodDef gl_measure_methods[] = {
    {"_fma_loop", py_fma_loop, METH_VARARGS, "FP32 FMA loop on the GPU; returns its flops."},
    {"_fma64_loop", py_fma64_loop, METH_VARARGS, "FP64 FMA loop on the GPU; returns its flops."},
    {"_l2_copy", py_l2_copy, METH_VARARGS,
     "_l2_copy(dst, src, passes, blocks, threads, stream=None): passes copies through L2."},
    {"_copy", py_copy, METH_VARARGS, "Device-to-device copy (cudaMemcpyAsync)."},
    {"_memset", py_memset, METH_VARARGS, "Fill a device array's bytes (cudaMemsetAsync)."},
    {"_cpu_fma_loop", py_cpu_fma_loop, METH_O, "FP32 FMA loop on every CPU thread; its flops."},
    {"_cpu_fma64_loop", py_cpu_fma64_loop, METH_O, "FP64 FMA loop on every CPU thread; its flops."},
    {"_cpu_copy", py_cpu_copy, METH_VARARGS, "OpenMP memcpy between NumPy arrays."},
    {"synchronize", (PyCFunction)(void (*)(void))py_synchronize, METH_VARARGS | METH_KEYWORDS,
     "synchronize(stream=None): wait (without the GIL) for the stream's work."},
    {"pool_usage", py_pool_usage, METH_NOARGS,
     "Bytes of the device memory pool: {'used': held by arrays and gpulab's scratch, 'cached': "
     "freed small blocks kept for reuse, 'reserved': taken from the driver}."},
    {"release_memory", py_release_memory, METH_NOARGS,
     "Give the device memory gpulab keeps for reuse back to the driver, so that other libraries "
     "in the process (PyTorch, CuPy) can have it. Waits for every stream of the device."},
    {"_trim_block_cache", py_trim_block_cache, METH_NOARGS,
     "Return the freed small blocks gpulab keeps for reuse to the pool."},
    {"_library_stream", py_library_stream, METH_NOARGS, "Handle of the library's stream."},
    {NULL}};
