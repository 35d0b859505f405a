/* Shared declarations of the binding (gpulab._core). */
#ifndef GL_H
#define GL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL gpulab_ARRAY_API
#ifndef GL_MODULE_MAIN
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "gpulab_cuda.h"

#define GL_MAX_NDIM 32

/* ---- errors.c ---- */
extern PyObject *gl_CudaError;
extern PyObject *gl_NoDeviceError;
int gl_errors_init(PyObject *module);
/* Raises CudaError for a failed glc_* call; always returns NULL. */
PyObject *gl_raise_cuda(int code);
/* Raises NoDeviceError for the reason the GPU could not start; always returns NULL. */
PyObject *gl_raise_no_device(int code, const char *op);

/* ---- runtime.c: lazy CUDA start, the library stream ---- */
/* 1 when a GPU is usable, 0 when not (never raises). Starts CUDA on first call. */
int gl_gpu_ready(void);
/* 0 when a GPU is usable; otherwise raises NoDeviceError naming op's CPU variants, -1. */
int gl_require_gpu(const char *op);
/* The code with which CUDA failed to start (0 when it started). */
int gl_gpu_start_code(void);
glc_stream gl_library_stream(void);
const glc_device_props *gl_device_props(void);

/* ---- stream.c ---- */
typedef struct {
  PyObject_HEAD glc_stream handle;
  int owned;
  int non_blocking;
  int priority;
} gl_StreamObject;

typedef struct {
  PyObject_HEAD glc_event handle;
  int timing;
} gl_EventObject;

extern PyTypeObject gl_StreamType;
extern PyTypeObject gl_EventType;
int gl_stream_init(PyObject *module);
/* Resolves a stream= argument: None (the library stream), a gpulab.Stream, an int handle, or
 * an object with .cuda_stream (PyTorch) or .ptr (CuPy). *keep receives a new reference to the
 * object that keeps the stream alive, or NULL. Returns 0, or -1 with TypeError set. */
int gl_stream_arg(PyObject *arg, glc_stream *stream, PyObject **keep);

/* ---- devarray.c ---- */
typedef struct {
  PyObject_HEAD void *ptr;
  int ndim;
  Py_ssize_t shape[GL_MAX_NDIM];
  Py_ssize_t strides[GL_MAX_NDIM]; /* bytes */
  PyArray_Descr *dtype;
  Py_ssize_t size;
  Py_ssize_t nbytes;
  int device;
  int readonly;
  int owns_memory;       /* allocated from the pool by gpulab */
  glc_stream stream;     /* the stream that last used it; frees are ordered on it */
  PyObject *stream_keep; /* keeps a gpulab.Stream alive while the array may use it */
  PyObject *base;        /* keeps foreign memory alive (CAI owner or DLPack holder) */
  PyObject *weakrefs;
} gl_DeviceArrayObject;

extern PyTypeObject gl_DeviceArrayType;
int gl_devarray_init(PyObject *module);
#define gl_DeviceArray_Check(o) (Py_TYPE(o) == &gl_DeviceArrayType)
/* A new C-contiguous array from the pool, ordered on stream. */
gl_DeviceArrayObject *gl_devarray_empty(int ndim, const Py_ssize_t *shape, PyArray_Descr *dtype,
                                        glc_stream stream, PyObject *stream_keep);
/* A view of foreign device memory; base keeps it alive (a new reference is taken). */
gl_DeviceArrayObject *gl_devarray_wrap(void *ptr, int ndim, const Py_ssize_t *shape,
                                       const Py_ssize_t *strides, PyArray_Descr *dtype, int device,
                                       int readonly, PyObject *base);
/* Bytes of freed small blocks kept for reuse on the library's stream, and their release. */
size_t gl_block_cache_bytes(void);
void gl_block_cache_trim(void);
/* Records that the array is used on stream, so that its free is ordered after that use. */
void gl_devarray_use(gl_DeviceArrayObject *a, glc_stream stream, PyObject *stream_keep);
int gl_devarray_is_c_contiguous(const gl_DeviceArrayObject *a);

/* ---- interop.c ---- */
/* 1 for a gpulab.DeviceArray or an object that exports CUDA memory (CAI v3, DLPack on a CUDA
 * device), 0 otherwise. Never raises. */
int gl_is_device_operand(PyObject *obj);
/* A new reference to a DeviceArray for obj (itself, or a zero-copy view). Foreign data is made
 * ready on stream before it is used. */
gl_DeviceArrayObject *gl_as_device_array(PyObject *obj, const char *argname, glc_stream stream);
PyObject *gl_devarray_cai(gl_DeviceArrayObject *self, void *closure);
PyObject *gl_devarray_dlpack(gl_DeviceArrayObject *self, PyObject *args, PyObject *kwargs);
PyObject *gl_devarray_dlpack_device(gl_DeviceArrayObject *self, PyObject *unused);
PyObject *gl_py_from_dlpack(PyObject *module, PyObject *obj);
PyObject *gl_py_as_device(PyObject *module, PyObject *args, PyObject *kwargs);

/* ---- transfer.c: host <-> device copies ---- */
enum gl_copy_path {
  GL_PATH_AUTO,
  GL_PATH_DRIVER,
  GL_PATH_STAGED,
  GL_PATH_REGISTER,
  GL_PATH_DIRECT
};
/* Copies bytes from host to device memory ordered on stream. On return src may be reused. */
int gl_h2d(void *dst, const void *src, size_t bytes, glc_stream stream, int path);
/* Copies bytes from device to host memory ordered on stream and waits for it. Call without the
 * GIL. */
int gl_d2h(void *dst, const void *src, size_t bytes, glc_stream stream, int path);
int gl_copy_path_arg(PyObject *arg, int *path);
/* A whole small CUDA call on host data: inputs in, run(ctx, dev_in, dev_out), output back,
 * waited for. Call without the GIL. */
#define GL_SMALL_CALL_BYTES (1u << 20)
#define GL_SMALL_CALL_MAX_INPUTS 4
typedef int (*gl_device_run)(void *ctx, void *const *dev_in, void *dev_out);
int gl_small_call_fits(int n_in, size_t in_bytes, size_t out_bytes);
int gl_small_call(int n_in, const void *const *host_in, size_t in_bytes, void *host_out,
                  size_t out_bytes, glc_stream stream, gl_device_run run, void *ctx);
/* pinned memory that gpulab holds: user arrays and the staging ring */
extern size_t gl_pinned_user_bytes;
size_t gl_pinned_staging_bytes(void);
extern PyMethodDef gl_transfer_methods[];

/* ---- check.c: argument checks shared by the ops ---- */
/* dtype code of a NumPy dtype, or -1. */
int gl_dtype_code(PyArray_Descr *dtype);
/* Checks a NumPy array argument; messages name the argument. Returns 0 or -1 with an error. */
int gl_check_host_array(PyObject *obj, const char *argname, int ndim, int writeable);
int gl_check_device_array(gl_DeviceArrayObject *a, const char *argname, int ndim, int writeable);
/* Whether the n operands are device arrays (*on_device = 1) or NumPy arrays (0). TypeError for
 * anything else, ValueError for a mix; messages use names. */
int gl_classify_operands(int n, PyObject *const *inputs, const char *const *names, int *on_device);
/* Raises ValueError when a and b differ in shape; names both arguments. */
int gl_check_same_shape(int ndim_a, const Py_ssize_t *shape_a, int ndim_b,
                        const Py_ssize_t *shape_b, const char *name_a, const char *name_b);
int gl_check_dtype_in(PyArray_Descr *dtype, unsigned dtype_mask, const char *argname);
PyObject *gl_shape_tuple(int ndim, const Py_ssize_t *shape);
/* A Python or NumPy real scalar (int, float, bool), not complex, not an array. */
int gl_is_real_scalar(PyObject *obj);
/* Parses a shape argument (int or sequence of ints). */
int gl_shape_arg(PyObject *arg, int *ndim, Py_ssize_t *shape, Py_ssize_t *size);

#endif
