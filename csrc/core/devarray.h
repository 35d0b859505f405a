/* gpulab.DeviceArray: an n-d array in device memory, from the stream-ordered pool or borrowed
 * from another library. */
#ifndef GL_DEVARRAY_H
#define GL_DEVARRAY_H

#include "cuda/core/gpulab_core.h"
#include "cuda/core/scalar_mirror.h"
#include "py.h"

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
  /* A 0-d result's value in host memory, written by the kernel that computed it, and the tag
   * that kernel writes (csrc/core/mirror.h); NULL once the memory has been handed elsewhere. */
  glc_scalar_mirror *mirror;
  unsigned mirror_tag;
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
/* Makes stream wait for the work of the stream that last used the array (an event, no host
 * wait), so that an op may take an array made or used on another stream. 0, or -1 with a
 * CudaError set. */
int gl_devarray_order_after(gl_DeviceArrayObject *a, glc_stream stream);
/* Gives a a mirror slot that the kernel which computes its value writes with tag. */
void gl_devarray_set_mirror(gl_DeviceArrayObject *a, glc_scalar_mirror *mirror, unsigned tag);
/* Drops a's mirror: called wherever a's memory goes to anything that could write it (an op's
 * operand, an export, its address), after which only the device holds its value. */
void gl_devarray_forget_mirror(gl_DeviceArrayObject *a);
/* Records that the array is used on stream, so that its free is ordered after that use. */
void gl_devarray_use(gl_DeviceArrayObject *a, glc_stream stream, PyObject *stream_keep);
int gl_devarray_is_c_contiguous(const gl_DeviceArrayObject *a);
/* A 2-D array that is F-contiguous and not C-contiguous (strides (itemsize, shape[0] itemsize)):
 * the storage of its transpose, row-major, as x.T of a C-contiguous x lies. */
int gl_devarray_is_transposed(const gl_DeviceArrayObject *a);
/* Checks a device array argument like gl_check_host_array: ndim (-1: any), C-contiguous,
 * writeable when asked. */
int gl_check_device_array(gl_DeviceArrayObject *a, const char *argname, int ndim, int writeable);
/* gl_check_device_array for an operand that may also be given transposed, as
 * gl_check_host_operand: with transposable set, a gl_devarray_is_transposed array is taken too and
 * *transposed says so. */
int gl_check_device_operand(gl_DeviceArrayObject *a, const char *argname, int ndim, int writeable,
                            int transposable, int *transposed);

#endif
