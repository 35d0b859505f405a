/* Host <-> device copies. Pageable NumPy memory goes through a ring of pinned staging buffers:
 * OpenMP threads fill one slot while the copy engine drains another, which beats the driver's
 * own pageable path (measured: benchmarks/transfer_paths.py). Pinned memory is copied directly. */
#include <pthread.h>
#include <string.h>

#include "transfer.h"

#include "args.h"
#include "errors.h"
#include "host.h"
#include "mirror.h"
#include "runtime.h"

#define RING_MAX_SLOTS 16
/* Below this, asking CUDA whether memory is pinned costs more than staging it. */
#define PINNED_QUERY_MIN (256u << 10)

static struct {
  pthread_mutex_t lock;
  size_t chunk;
  int slots;
  int allocated;
  int next; /* the slot to use next, always below slots */
  void *buf[RING_MAX_SLOTS];
  void *buf_on_device[RING_MAX_SLOTS]; /* the same pinned bytes, as kernels address them */
  glc_event done[RING_MAX_SLOTS];
} ring = {PTHREAD_MUTEX_INITIALIZER, 8u << 20, 4, 0, 0, {0}, {0}, {0}};

/* Bytes of the arrays pinned_empty gave out and that are still alive. */
static size_t pinned_user_bytes = 0;

static size_t pinned_staging_bytes(void) { return ring.allocated ? ring.chunk * ring.slots : 0; }

static void ring_free_locked(void) {
  for (int i = 0; i < RING_MAX_SLOTS; i++) {
    if (ring.done[i]) {
      glc_event_synchronize(ring.done[i]);
      glc_event_destroy(ring.done[i]);
    }
    if (ring.buf[i]) glc_host_free(ring.buf[i]);
    ring.buf[i] = NULL;
    ring.buf_on_device[i] = NULL;
    ring.done[i] = NULL;
  }
  ring.allocated = 0;
}

static int ring_alloc_locked(void) {
  if (ring.allocated) return 0;
  for (int i = 0; i < ring.slots; i++) {
    int code = glc_host_alloc(&ring.buf[i], ring.chunk);
    if (!code) code = glc_host_device_pointer(&ring.buf_on_device[i], ring.buf[i]);
    if (!code) code = glc_event_create(&ring.done[i], 0);
    if (code) {
      ring_free_locked();
      return code;
    }
  }
  ring.allocated = 1;
  return 0;
}

/* Takes count consecutive slots; returns the first. Kept modulo slots, so that it never wraps. */
static int take_slots(size_t count) {
  int first = ring.next;
  ring.next = (int)((ring.next + count) % (size_t)ring.slots);
  return first;
}

static int staged_h2d(char *dst, const char *src, size_t bytes, glc_stream stream) {
  int code = ring_alloc_locked();
  for (size_t off = 0; !code && off < bytes; off += ring.chunk) {
    size_t len = bytes - off < ring.chunk ? bytes - off : ring.chunk;
    int slot = take_slots(1);
    code = glc_event_synchronize(ring.done[slot]);
    if (code) break;
    glcpu_parallel_copy(ring.buf[slot], src + off, len);
    code = glc_memcpy_async(dst + off, ring.buf[slot], len, stream);
    if (!code) code = glc_event_record(ring.done[slot], stream);
  }
  return code;
}

/* Keeps every slot busy: chunk i + slots is issued as soon as chunk i has been copied out. */
static int staged_d2h(char *dst, const char *src, size_t bytes, glc_stream stream) {
  int code = ring_alloc_locked();
  if (code) return code;
  size_t chunks = (bytes + ring.chunk - 1) / ring.chunk;
  size_t base = (size_t)take_slots(chunks);
  for (size_t i = 0; !code && i < chunks + ring.slots; i++) {
    if (i >= (size_t)ring.slots) { /* drain chunk i - slots */
      size_t k = i - ring.slots;
      if (k >= chunks) continue;
      int slot = (base + k) % ring.slots;
      size_t off = k * ring.chunk, len = bytes - off < ring.chunk ? bytes - off : ring.chunk;
      code = glc_event_synchronize(ring.done[slot]);
      if (code) break;
      glcpu_parallel_copy(dst + off, ring.buf[slot], len);
    }
    if (i < chunks) { /* issue chunk i */
      int slot = (base + i) % ring.slots;
      size_t off = i * ring.chunk, len = bytes - off < ring.chunk ? bytes - off : ring.chunk;
      code = glc_event_synchronize(ring.done[slot]);
      if (!code) code = glc_memcpy_async(ring.buf[slot], src + off, len, stream);
      if (!code) code = glc_event_record(ring.done[slot], stream);
    }
  }
  return code;
}

/* Up to this many bytes (a scalar's item()), device to host is one copy into a pinned slot of
 * its own and a wait on the stream: no ring slot to wait for and record, no parallel copy out.
 * On the H200 that took item() of a ready scalar from 11.3 to 8.3 us (one run). */
#define SMALL_D2H_BYTES 64
static void *small_d2h_slot = NULL; /* pinned, portable; guarded by ring.lock; kept for good */

static int small_d2h(char *dst, const char *src, size_t bytes, glc_stream stream) {
  int code = small_d2h_slot ? 0 : glc_host_alloc(&small_d2h_slot, SMALL_D2H_BYTES);
  if (!code) code = glc_memcpy_async(small_d2h_slot, src, bytes, stream);
  if (!code) code = glc_stream_synchronize(stream);
  if (!code) memcpy(dst, small_d2h_slot, bytes);
  return code;
}

static int registered_copy(void *dst, const void *src, size_t bytes, glc_stream stream,
                           void *host) {
  int code = glc_host_register(host, bytes);
  if (code) return code;
  code = glc_memcpy_async(dst, src, bytes, stream);
  int sync = glc_stream_synchronize(stream);
  int unreg = glc_host_unregister(host);
  return code ? code : sync ? sync : unreg;
}

static int resolve_auto(const void *host, size_t bytes) {
  int pinned = 0;
  if (bytes >= PINNED_QUERY_MIN && glc_host_is_pinned(host, &pinned) == 0 && pinned)
    return GL_PATH_DIRECT;
  return GL_PATH_STAGED;
}

int gl_h2d(void *dst, const void *src, size_t bytes, glc_stream stream, int path) {
  if (!bytes) return 0;
  if (path == GL_PATH_AUTO) path = resolve_auto(src, bytes);
  switch (path) {
    case GL_PATH_DIRECT: {
      /* From pinned memory the copy engine reads src after we return: wait, so that the caller
       * may reuse it as the contract says. */
      int code = glc_memcpy_async(dst, src, bytes, stream);
      return code ? code : glc_stream_synchronize(stream);
    }
    case GL_PATH_DRIVER: /* returns once the driver has staged src */
      return glc_memcpy_async(dst, src, bytes, stream);
    case GL_PATH_REGISTER:
      return registered_copy(dst, src, bytes, stream, (void *)src);
    default: {
      pthread_mutex_lock(&ring.lock);
      int code = staged_h2d(dst, src, bytes, stream);
      pthread_mutex_unlock(&ring.lock);
      return code;
    }
  }
}

int gl_d2h(void *dst, const void *src, size_t bytes, glc_stream stream, int path) {
  if (!bytes) return glc_stream_synchronize(stream);
  if (path == GL_PATH_AUTO) path = resolve_auto(dst, bytes);
  switch (path) {
    case GL_PATH_DIRECT:
    case GL_PATH_DRIVER: {
      int code = glc_memcpy_async(dst, src, bytes, stream);
      return code ? code : glc_stream_synchronize(stream);
    }
    case GL_PATH_REGISTER:
      return registered_copy(dst, src, bytes, stream, dst);
    default: {
      pthread_mutex_lock(&ring.lock);
      int code = bytes <= SMALL_D2H_BYTES ? small_d2h(dst, src, bytes, stream)
                                          : staged_d2h(dst, src, bytes, stream);
      pthread_mutex_unlock(&ring.lock);
      return code;
    }
  }
}

/* From this size a fresh result is faulted in on every core before the copy: inside the staged
 * copy its pages fault a ring slot at a time. H200 host: get() of 1 GiB in 50 ms instead of 81;
 * at 64 MiB the two were within noise (4.8 and 4.6 ms). */
#define GL_FAULT_IN_MIN_BYTES ((size_t)64 << 20)

int gl_d2h_result(void *dst, const void *src, size_t bytes, glc_stream stream, int fresh) {
  if (fresh && bytes >= GL_FAULT_IN_MIN_BYTES) glcpu_parallel_fill(dst, 0, bytes);
  return gl_d2h(dst, src, bytes, stream, GL_PATH_AUTO);
}

/* ---- small staged calls ---- */

#define SMALL_ALIGN 256
static void *small_scratch = NULL; /* device bytes for the packed inputs and the output */

static size_t align_up(size_t n) { return (n + SMALL_ALIGN - 1) / SMALL_ALIGN * SMALL_ALIGN; }

int gl_small_call_fits(int n_in, size_t in_bytes, size_t out_bytes) {
  /* Its kernels run on the pinned slot or on one persistent scratch buffer, where an overrun
   * stays inside memory the process owns. */
  if (gl_exact_alloc()) return 0;
  return n_in <= GL_SMALL_CALL_MAX_INPUTS &&
         (size_t)n_in * align_up(in_bytes) + align_up(out_bytes) <= GL_SMALL_CALL_BYTES;
}

/* Up to this many bytes in and out, kernels read and write the pinned slot itself over PCIe
 * (zero-copy): no DMA to set up either way. Measured by benchmarks/call_overhead.py. */
static size_t zero_copy_limit = GL_SMALL_CALL_BYTES;

/* One pinned slot holds the packed inputs and then the output. Small calls run on it directly
 * (zero-copy); larger ones mirror it in one persistent device buffer, with a single copy each
 * way and no allocation. Either way the call is a handful of CUDA API calls. */
int gl_small_call(int n_in, const void *const *host_in, size_t in_bytes, void *host_out,
                  size_t out_bytes, glc_stream stream, gl_device_run run, void *ctx) {
  size_t stride = align_up(in_bytes), out_off = (size_t)n_in * stride;
  int zero_copy = out_off + out_bytes <= zero_copy_limit;
  pthread_mutex_lock(&ring.lock);
  int code = ring_alloc_locked();
  if (!code && !zero_copy && !small_scratch)
    code = glc_malloc_async(&small_scratch, GL_SMALL_CALL_BYTES, stream);
  int slot = take_slots(1);
  if (!code) code = glc_event_synchronize(ring.done[slot]);
  if (!code) {
    char *pinned = ring.buf[slot];
    char *dev = zero_copy ? ring.buf_on_device[slot] : small_scratch;
    void *dev_in[GL_SMALL_CALL_MAX_INPUTS];
    for (int i = 0; i < n_in; i++) {
      memcpy(pinned + i * stride, host_in[i], in_bytes);
      dev_in[i] = dev + i * stride;
    }
    if (!zero_copy) code = glc_memcpy_async(dev, pinned, out_off, stream);
    if (!code) code = run(ctx, dev_in, dev + out_off);
    if (!code && !zero_copy)
      code = glc_memcpy_async(pinned + out_off, dev + out_off, out_bytes, stream);
    if (!code) code = glc_stream_synchronize(stream);
    if (!code) memcpy(host_out, pinned + out_off, out_bytes);
  }
  pthread_mutex_unlock(&ring.lock);
  return code;
}

int gl_copy_path_arg(PyObject *arg, int *path) {
  static const char *names[] = {"auto", "driver", "staged", "register", "direct"};
  const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
  for (int i = 0; s && i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      *path = i;
      return 0;
    }
  PyErr_Format(PyExc_ValueError,
               "path must be 'auto', 'driver', 'staged', 'register' or 'direct', got %R", arg);
  return -1;
}

/* ---- Python: pinned arrays, and the paths for benchmarks ---- */

static void pinned_capsule_destructor(PyObject *capsule) {
  void *ptr = PyCapsule_GetPointer(capsule, "gpulab.pinned");
  size_t *bytes = PyCapsule_GetContext(capsule);
  if (ptr) glc_host_free(ptr);
  if (bytes) {
    pinned_user_bytes -= *bytes;
    PyMem_Free(bytes);
  }
}

static PyObject *py_pinned_empty(PyObject *module, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"shape", "dtype", NULL};
  PyObject *shape_obj;
  PyArray_Descr *dtype = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O&:pinned_empty", kwlist, &shape_obj,
                                   PyArray_DescrConverter2, &dtype))
    return NULL;
  if (!dtype) dtype = PyArray_DescrFromType(NPY_FLOAT32);
  int ndim;
  Py_ssize_t shape[GL_MAX_NDIM], size;
  if (gl_shape_arg(shape_obj, &ndim, shape, &size) < 0 || gl_require_gpu(NULL) < 0) {
    Py_DECREF(dtype);
    return NULL;
  }
  if (PyDataType_ELSIZE(dtype) == 0 || PyDataType_HASFIELDS(dtype) || PyDataType_REFCHK(dtype)) {
    PyErr_Format(PyExc_TypeError, "pinned_empty: dtype %S is not a plain numeric type",
                 (PyObject *)dtype);
    Py_DECREF(dtype);
    return NULL;
  }
  size_t bytes = (size_t)size * PyDataType_ELSIZE(dtype);
  void *ptr = NULL;
  /* One byte at least, so that an empty array still owns a real pinned block. */
  int code = glc_host_alloc(&ptr, bytes ? bytes : 1);
  if (code) {
    Py_DECREF(dtype);
    return gl_raise_cuda(code);
  }
  size_t *counted = PyMem_Malloc(sizeof *counted);
  PyObject *capsule =
      counted ? PyCapsule_New(ptr, "gpulab.pinned", pinned_capsule_destructor) : NULL;
  if (!capsule) {
    PyMem_Free(counted);
    glc_host_free(ptr);
    Py_DECREF(dtype);
    return counted ? NULL : PyErr_NoMemory();
  }
  *counted = bytes ? bytes : 1;
  pinned_user_bytes += *counted;
  PyCapsule_SetContext(capsule, counted);
  /* PyArray_NewFromDescr steals dtype. */
  PyObject *arr =
      PyArray_NewFromDescr(&PyArray_Type, dtype, ndim, shape, NULL, ptr, NPY_ARRAY_CARRAY, NULL);
  if (!arr || PyArray_SetBaseObject((PyArrayObject *)arr, capsule) < 0) {
    Py_XDECREF(arr);
    Py_DECREF(capsule);
    return NULL;
  }
  return arr;
}

static PyObject *py_set_staging(PyObject *m, PyObject *args) {
  Py_ssize_t chunk;
  int slots;
  if (!PyArg_ParseTuple(args, "ni:_set_staging", &chunk, &slots)) return NULL;
  /* A slot also carries a whole small call. */
  if (chunk < (Py_ssize_t)GL_SMALL_CALL_BYTES || slots < 2 || slots > RING_MAX_SLOTS)
    return PyErr_Format(PyExc_ValueError, "chunk must be >= %u bytes and slots in [2, %d]",
                        GL_SMALL_CALL_BYTES, RING_MAX_SLOTS);
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&ring.lock);
  ring_free_locked();
  ring.chunk = (size_t)chunk;
  ring.slots = slots;
  ring.next = 0;
  pthread_mutex_unlock(&ring.lock);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject *py_set_zero_copy_limit(PyObject *m, PyObject *arg) {
  Py_ssize_t limit = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
  if (limit == -1 && PyErr_Occurred()) return NULL;
  if (limit < 0 || limit > (Py_ssize_t)GL_SMALL_CALL_BYTES)
    return PyErr_Format(PyExc_ValueError, "the limit must lie in [0, %u] bytes",
                        GL_SMALL_CALL_BYTES);
  size_t previous;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&ring.lock);
  previous = zero_copy_limit;
  zero_copy_limit = (size_t)limit;
  pthread_mutex_unlock(&ring.lock);
  Py_END_ALLOW_THREADS
  return PyLong_FromSize_t(previous);
}

static PyObject *py_pinned_usage(PyObject *m, PyObject *unused) {
  return Py_BuildValue("{s:n,s:n}", "user", (Py_ssize_t)pinned_user_bytes, "staging",
                       (Py_ssize_t)pinned_staging_bytes());
}

static PyObject *py_mirror_stats(PyObject *m, PyObject *unused) {
  size_t taken, read;
  gl_mirror_stats(&taken, &read);
  return Py_BuildValue("{s:n,s:n}", "taken", (Py_ssize_t)taken, "read", (Py_ssize_t)read);
}

PyMethodDef gl_transfer_methods[] = {
    {"pinned_empty", (PyCFunction)(void (*)(void))py_pinned_empty, METH_VARARGS | METH_KEYWORDS,
     "pinned_empty(shape, dtype=float32): a NumPy array in page-locked host memory."},
    {"_set_staging", py_set_staging, METH_VARARGS,
     "_set_staging(chunk_bytes, slots): resize the pinned staging ring."},
    {"_set_zero_copy_limit", py_set_zero_copy_limit, METH_O,
     "_set_zero_copy_limit(bytes): small NumPy calls up to this size run on mapped pinned "
     "memory; returns the previous limit."},
    {"_mirror_stats", py_mirror_stats, METH_NOARGS,
     "_mirror_stats(): scalar mirror slots taken and item() calls answered from one, so far."},
    {"pinned_usage", py_pinned_usage, METH_NOARGS,
     "Bytes of pinned host memory gpulab holds: {'user': ..., 'staging': ...}."},
    {NULL}};
