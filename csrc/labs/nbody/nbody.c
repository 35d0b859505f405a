/* The n-body lab's bindings: nbody_accel, nbody_step and nbody_energy. Positions and velocities are
 * (N, 3) float32, masses (N,) float32; float64 is refused with a TypeError (the kernels are
 * float32; a silent conversion would hide a copy and a loss of precision). N = 0 gives empty
 * results. */
#include <float.h>
#include <math.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/errors.h"
#include "csrc/core/interop.h"
#include "csrc/core/runtime.h"
#include "csrc/core/stream.h"
#include "csrc/core/transfer.h"
#include "cuda/nbody/nbody.h"
#include "variants.h"

#define NB_MAX_BODIES ((Py_ssize_t)1 << 24)
#define NB_MAX_OPERANDS 3

/* The array operands of a call, checked: all NumPy or all device arrays, float32, C-contiguous,
 * (N, 3) for positions and velocities and (N,) for masses. */
typedef struct {
  int count;
  const char *names[NB_MAX_OPERANDS];
  int vector[NB_MAX_OPERANDS]; /* 1: (N, 3); 0: (N,) */
  int on_device;
  Py_ssize_t n;
  void *data[NB_MAX_OPERANDS];                /* host or device pointers */
  gl_DeviceArrayObject *dev[NB_MAX_OPERANDS]; /* device operands (new references) */
  glc_stream stream;
  PyObject *stream_keep;
} nb_operands;

static void nb_release(nb_operands *o) {
  for (int i = 0; i < o->count; i++) Py_CLEAR(o->dev[i]);
  Py_CLEAR(o->stream_keep);
}

static int nb_check_dtype(PyArray_Descr *d, const char *name) {
  if (gl_dtype_code(d) == GLC_F32) return 0;
  PyErr_Format(PyExc_TypeError,
               "%s has dtype %S; the n-body lab takes float32 only (convert with "
               "%s.astype(numpy.float32))",
               name, (PyObject *)d, name);
  return -1;
}

static int nb_check_shape(int ndim, const Py_ssize_t *shape, const char *name, int vector,
                          Py_ssize_t *n) {
  int ok = vector ? ndim == 2 && shape[1] == 3 : ndim == 1;
  if (ok && *n >= 0 && shape[0] != *n) ok = 0;
  if (ok) {
    *n = shape[0];
    return 0;
  }
  PyObject *got = gl_shape_tuple(ndim, shape);
  if (!got) return -1;
  if (*n < 0)
    PyErr_Format(PyExc_ValueError, "%s must have shape (N, 3), got %R", name, got);
  else if (vector)
    PyErr_Format(PyExc_ValueError, "%s must have shape (%zd, 3) like pos, got %R", name, *n, got);
  else
    PyErr_Format(PyExc_ValueError, "%s must have shape (%zd,) (one mass per body), got %R", name,
                 *n, got);
  Py_DECREF(got);
  return -1;
}

/* Classifies and checks the operands. For device operands, resolves the stream first. */
static int nb_operands_check(nb_operands *o, PyObject *const *objs, PyObject *stream_obj) {
  o->n = -1;
  for (int i = 0; i < o->count; i++) {
    int dev = gl_is_device_operand(objs[i]);
    if (!dev && !PyArray_Check(objs[i])) {
      PyErr_Format(PyExc_TypeError, "%s must be a NumPy array or a device array, not %s",
                   o->names[i], Py_TYPE(objs[i])->tp_name);
      return -1;
    }
    if (i > 0 && dev != o->on_device) {
      PyErr_Format(PyExc_ValueError,
                   "mixed devices: %s is %s but %s is %s; move all with gpulab.to_device or .get()",
                   o->names[0], o->on_device ? "a device array" : "a NumPy array", o->names[i],
                   dev ? "a device array" : "a NumPy array");
      return -1;
    }
    o->on_device = dev;
  }
  if (o->on_device) {
    if (gl_require_gpu("nbody_accel") < 0) return -1;
    if (gl_stream_arg(stream_obj, &o->stream, &o->stream_keep) < 0) return -1;
  }
  for (int i = 0; i < o->count; i++) {
    int ndim;
    const Py_ssize_t *shape;
    PyArray_Descr *dtype;
    if (o->on_device) {
      o->dev[i] = gl_as_device_array(objs[i], o->names[i], o->stream);
      if (!o->dev[i]) return -1;
      ndim = o->dev[i]->ndim;
      shape = o->dev[i]->shape;
      dtype = o->dev[i]->dtype;
    } else {
      PyArrayObject *a = (PyArrayObject *)objs[i];
      ndim = PyArray_NDIM(a);
      shape = PyArray_SHAPE(a);
      dtype = PyArray_DESCR(a);
    }
    if (nb_check_dtype(dtype, o->names[i]) < 0 ||
        nb_check_shape(ndim, shape, o->names[i], o->vector[i], &o->n) < 0)
      return -1;
    if (o->on_device) {
      if (gl_check_device_array(o->dev[i], o->names[i], -1, 0) < 0) return -1;
      o->data[i] = o->dev[i]->ptr;
    } else {
      if (gl_check_host_array(objs[i], o->names[i], -1, 0) < 0) return -1;
      o->data[i] = PyArray_DATA((PyArrayObject *)objs[i]);
    }
  }
  if (o->n > NB_MAX_BODIES) {
    PyErr_Format(PyExc_ValueError,
                 "%s has %zd bodies; the all-pairs lab takes at most 2**24 (2.8e14 interactions "
                 "per evaluation)",
                 o->names[0], o->n);
    return -1;
  }
  return 0;
}

/* A real scalar argument that stays finite as a float32: the kernels compute in float32, and a
 * value past FLT_MAX would reach them as inf. */
static int nb_real(PyObject *obj, const char *name, double *value) {
  if (gl_real_arg(obj, name, value) < 0) return -1;
  if (!isfinite((float)*value))
    return PyErr_Format(PyExc_ValueError, "%s must be finite as a float32 (|%s| <= 3.4e38), got %R",
                        name, name, obj),
           -1;
  return 0;
}

/* eps, squared in float32, must be a positive normal number: the softening is what makes the
 * i = j term zero (0 / eps^3) instead of 0 / 0. */
static int nb_eps2(PyObject *obj, float *eps2) {
  double eps;
  if (nb_real(obj, "eps", &eps) < 0) return -1;
  float e2 = (float)(eps * eps);
  if (!(eps > 0) || !(e2 >= FLT_MIN) || !isfinite(e2))
    return PyErr_Format(PyExc_ValueError,
                        "eps must be > 0 with eps**2 a normal float32 (1.1e-19 <= eps <= "
                        "1.8e19); it softens the force and removes the i = j term, got %R",
                        obj),
           -1;
  *eps2 = e2;
  return 0;
}

/* The variant and its tunables. */
typedef struct {
  const gl_variant *v;
  int block, unroll, bodies;
} nb_choice;

static int nb_choose(PyObject *variant, PyObject *block, PyObject *unroll, PyObject *bodies,
                     int on_device, PyObject *stream, nb_choice *c) {
  c->v = gl_resolve_variant(&gl_ladder_nbody, variant, on_device || gl_gpu_ready());
  if (!c->v || gl_resolve_tunable(c->v, "block", block, &c->block) < 0 ||
      gl_resolve_tunable(c->v, "unroll", unroll, &c->unroll) < 0 ||
      gl_resolve_tunable(c->v, "bodies", bodies, &c->bodies) < 0)
    return -1;
  if (c->v->backend == GL_BACKEND_CPU && stream != Py_None)
    return PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU", c->v->id,
                        c->v->name),
           -1;
  if (c->v->backend == GL_BACKEND_CPU && on_device)
    return PyErr_Format(PyExc_TypeError,
                        "variant %d (%s) runs on the CPU and takes NumPy arrays, but pos is a "
                        "device array; pick a CUDA variant or pass NumPy arrays",
                        c->v->id, c->v->name),
           -1;
  if (c->v->backend == GL_BACKEND_CUDA && gl_require_gpu("nbody_accel") < 0) return -1;
  return 0;
}

static PyArray_Descr *nb_float32(void) { return PyArray_DescrFromType(NPY_FLOAT32); }

/* A new (n, 3) float32 result where the operands live. */
static PyObject *nb_new_vectors(const nb_operands *o) {
  Py_ssize_t shape[2] = {o->n, 3};
  PyArray_Descr *f32 = nb_float32();
  PyObject *r;
  if (o->on_device)
    r = (PyObject *)gl_devarray_empty(2, shape, f32, o->stream, o->stream_keep);
  else
    r = PyArray_Empty(2, shape, (Py_INCREF(f32), f32), 0);
  Py_DECREF(f32);
  return r;
}

static void *nb_data(PyObject *array, int on_device) {
  return on_device ? ((gl_DeviceArrayObject *)array)->ptr : PyArray_DATA((PyArrayObject *)array);
}

/* Host operands through the GPU: copies them to new device arrays of o's stream (o->dev,
 * o->data then point there). */
static int nb_stage_in(nb_operands *o, PyObject *const *objs, PyObject *stream_obj) {
  if (gl_stream_arg(stream_obj, &o->stream, &o->stream_keep) < 0) return -1;
  for (int i = 0; i < o->count; i++) {
    PyArrayObject *a = (PyArrayObject *)objs[i];
    o->dev[i] =
        gl_devarray_empty(PyArray_NDIM(a), PyArray_SHAPE(a), PyArray_DESCR(a), o->stream, NULL);
    if (!o->dev[i]) return -1;
    int code;
    Py_BEGIN_ALLOW_THREADS
    code =
        gl_h2d(o->dev[i]->ptr, PyArray_DATA(a), (size_t)PyArray_NBYTES(a), o->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) return gl_raise_cuda(code), -1;
    o->data[i] = o->dev[i]->ptr;
  }
  return 0;
}

/* Copies device (n, 3) results back into host arrays, waiting for them. */
static int nb_stage_out(nb_operands *o, void *const *dev, PyObject *const *host, int count) {
  int code = 0;
  size_t bytes = (size_t)o->n * 3 * sizeof(float);
  Py_BEGIN_ALLOW_THREADS
  for (int i = 0; !code && i < count; i++)
    code = gl_d2h(PyArray_DATA((PyArrayObject *)host[i]), dev[i], bytes, o->stream, GL_PATH_AUTO);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code), -1;
  return 0;
}

static void nb_mark_used(nb_operands *o, PyObject *const *results, int count) {
  for (int i = 0; i < o->count; i++)
    if (o->dev[i]) gl_devarray_use(o->dev[i], o->stream, o->stream_keep);
  for (int i = 0; i < count; i++)
    gl_devarray_use((gl_DeviceArrayObject *)results[i], o->stream, o->stream_keep);
}

/* Scratch device arrays for staged results: (n, 3) float32 on o's stream. */
static PyObject *nb_device_vectors(const nb_operands *o) {
  nb_operands d = *o;
  d.on_device = 1;
  return nb_new_vectors(&d);
}

/* ---- nbody_accel ---- */

/* nbody_accel(pos, mass, eps, G, variant, out, stream, block, unroll, bodies), positional. */
static PyObject *py_nbody_accel(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 10)
    return PyErr_Format(PyExc_TypeError, "_core.nbody_accel takes 10 positional arguments");
  nb_operands o = {2, {"pos", "mass"}, {1, 0}};
  PyObject *result = NULL, *scratch = NULL;
  nb_choice c;
  float eps2;
  double G;
  if (nb_operands_check(&o, args, args[6]) < 0 || nb_eps2(args[2], &eps2) < 0 ||
      nb_real(args[3], "G", &G) < 0 ||
      nb_choose(args[4], args[7], args[8], args[9], o.on_device, args[6], &c) < 0)
    goto done;
  PyObject *out = args[5];
  if (out == Py_None) {
    result = nb_new_vectors(&o);
  } else {
    if (gl_is_device_operand(out) != o.on_device) {
      PyErr_Format(PyExc_ValueError, "mixed devices: out must be %s like pos",
                   o.on_device ? "a device array" : "a NumPy array");
      goto done;
    }
    Py_ssize_t n = o.n;
    if (o.on_device) {
      result = (PyObject *)gl_as_device_array(out, "out", o.stream);
      if (!result || nb_check_dtype(((gl_DeviceArrayObject *)result)->dtype, "out") < 0 ||
          nb_check_shape(((gl_DeviceArrayObject *)result)->ndim,
                         ((gl_DeviceArrayObject *)result)->shape, "out", 1, &n) < 0 ||
          gl_check_device_array((gl_DeviceArrayObject *)result, "out", 2, 1) < 0)
        Py_CLEAR(result);
    } else if (gl_check_host_array(out, "out", 2, 1) == 0 &&
               nb_check_dtype(PyArray_DESCR((PyArrayObject *)out), "out") == 0 &&
               nb_check_shape(2, PyArray_SHAPE((PyArrayObject *)out), "out", 1, &n) == 0) {
      result = Py_NewRef(out);
    }
  }
  if (!result || o.n == 0) goto done;
  size_t n = (size_t)o.n;
  if (c.v->backend == GL_BACKEND_CPU) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = glcpu_nbody_accel(c.v->id, n, o.data[0], o.data[1], eps2, (float)G, nb_data(result, 0));
    Py_END_ALLOW_THREADS
    if (rc) {
      PyErr_Format(PyExc_MemoryError, "nbody_accel: CPU variant %d could not allocate scratch",
                   c.v->id);
      Py_CLEAR(result);
    }
    goto done;
  }
  if (!o.on_device) {
    if (nb_stage_in(&o, args, args[6]) < 0 || !(scratch = nb_device_vectors(&o))) {
      Py_CLEAR(result);
      goto done;
    }
  }
  void *acc = o.on_device ? nb_data(result, 1) : nb_data(scratch, 1);
  int code = glc_nbody_accel(c.v->id, c.block, c.unroll, c.bodies, n, o.data[0], o.data[1], eps2,
                             (float)G, acc, o.stream);
  if (code) {
    gl_raise_cuda(code);
    Py_CLEAR(result);
  } else if (o.on_device) {
    nb_mark_used(&o, &result, 1);
  } else if (nb_stage_out(&o, &acc, &result, 1) < 0) {
    Py_CLEAR(result);
  }
done:
  Py_XDECREF(scratch);
  nb_release(&o);
  return result;
}

/* ---- nbody_step ---- */

/* nbody_step(pos, vel, mass, dt, eps, steps, G, variant, stream, block, unroll, bodies). */
static PyObject *py_nbody_step(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 12)
    return PyErr_Format(PyExc_TypeError, "_core.nbody_step takes 12 positional arguments");
  nb_operands o = {3, {"pos", "vel", "mass"}, {1, 1, 0}};
  PyObject *res[2] = {NULL, NULL}, *scratch[2] = {NULL, NULL}, *result = NULL;
  nb_choice c;
  float eps2;
  double dt, G;
  long long steps = 0;
  if (nb_operands_check(&o, args, args[8]) < 0 || nb_real(args[3], "dt", &dt) < 0 ||
      nb_eps2(args[4], &eps2) < 0 || nb_real(args[6], "G", &G) < 0)
    goto done;
  if (gl_int64_arg(args[5], "steps", &steps) < 0) goto done;
  if (steps < 0) {
    PyErr_Format(PyExc_ValueError, "steps must be >= 0, got %lld", steps);
    goto done;
  }
  if (nb_choose(args[7], args[9], args[10], args[11], o.on_device, args[8], &c) < 0) goto done;
  if (!(res[0] = nb_new_vectors(&o)) || !(res[1] = nb_new_vectors(&o))) goto done;
  size_t n = (size_t)o.n;
  if (n > 0 && c.v->backend == GL_BACKEND_CPU) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = glcpu_nbody_step(c.v->id, n, o.data[0], o.data[1], o.data[2], (float)dt, eps2, (float)G,
                          steps, nb_data(res[0], 0), nb_data(res[1], 0));
    Py_END_ALLOW_THREADS
    if (rc) {
      PyErr_Format(PyExc_MemoryError, "nbody_step: CPU variant %d could not allocate scratch",
                   c.v->id);
      goto done;
    }
  } else if (n > 0) {
    if (!o.on_device &&
        (nb_stage_in(&o, args, args[8]) < 0 || !(scratch[0] = nb_device_vectors(&o)) ||
         !(scratch[1] = nb_device_vectors(&o))))
      goto done;
    void *out[2] = {nb_data(o.on_device ? res[0] : scratch[0], 1),
                    nb_data(o.on_device ? res[1] : scratch[1], 1)};
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = glc_nbody_step(c.v->id, c.block, c.unroll, c.bodies, n, o.data[0], o.data[1], o.data[2],
                          (float)dt, eps2, (float)G, steps, out[0], out[1], o.stream);
    Py_END_ALLOW_THREADS
    if (code) {
      gl_raise_cuda(code);
      goto done;
    }
    if (o.on_device)
      nb_mark_used(&o, res, 2);
    else if (nb_stage_out(&o, out, res, 2) < 0)
      goto done;
  }
  result = PyTuple_Pack(2, res[0], res[1]);
done:
  for (int i = 0; i < 2; i++) {
    Py_XDECREF(res[i]);
    Py_XDECREF(scratch[i]);
  }
  nb_release(&o);
  return result;
}

/* ---- nbody_energy ---- */

/* nbody_energy(pos, vel, mass, eps, G, stream) -> (kinetic, potential). Device operands, or
 * NumPy operands when a GPU is usable, run on the GPU; NumPy operands without one on the CPU. */
static PyObject *py_nbody_energy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 6)
    return PyErr_Format(PyExc_TypeError, "_core.nbody_energy takes 6 positional arguments");
  nb_operands o = {3, {"pos", "vel", "mass"}, {1, 1, 0}};
  PyObject *result = NULL;
  float eps2;
  double G, energy[2] = {0.0, 0.0};
  if (nb_operands_check(&o, args, args[5]) < 0 || nb_eps2(args[3], &eps2) < 0 ||
      nb_real(args[4], "G", &G) < 0)
    goto done;
  int gpu = o.on_device || gl_gpu_ready();
  if (!gpu && args[5] != Py_None) {
    PyErr_SetString(PyExc_ValueError, "stream: no GPU is usable, so the energy runs on the CPU");
    goto done;
  }
  if (!gpu) {
    Py_BEGIN_ALLOW_THREADS
    glcpu_nbody_energy((size_t)o.n, o.data[0], o.data[1], o.data[2], eps2, G, &energy[0],
                       &energy[1]);
    Py_END_ALLOW_THREADS
  } else if (o.n > 0) {
    if (!o.on_device && nb_stage_in(&o, args, args[5]) < 0) goto done;
    Py_ssize_t two = 2;
    PyArray_Descr *f64 = PyArray_DescrFromType(NPY_FLOAT64);
    gl_DeviceArrayObject *dev = gl_devarray_empty(1, &two, f64, o.stream, o.stream_keep);
    Py_DECREF(f64);
    if (!dev) goto done;
    int code =
        glc_nbody_energy((size_t)o.n, o.data[0], o.data[1], o.data[2], eps2, G, dev->ptr, o.stream);
    if (!code) {
      Py_BEGIN_ALLOW_THREADS
      code = gl_d2h(energy, dev->ptr, sizeof energy, o.stream, GL_PATH_AUTO);
      Py_END_ALLOW_THREADS
    }
    if (o.on_device) nb_mark_used(&o, NULL, 0);
    Py_DECREF(dev);
    if (code) {
      gl_raise_cuda(code);
      goto done;
    }
  }
  result = Py_BuildValue("(dd)", energy[0], energy[1]);
done:
  nb_release(&o);
  return result;
}

static PyMethodDef nbody_methods[] = {
    {"nbody_accel", (PyCFunction)(void (*)(void))py_nbody_accel, METH_FASTCALL,
     "nbody_accel(pos, mass, eps, G, variant, out, stream, block, unroll, bodies)."},
    {"nbody_step", (PyCFunction)(void (*)(void))py_nbody_step, METH_FASTCALL,
     "nbody_step(pos, vel, mass, dt, eps, steps, G, variant, stream, block, unroll, bodies)."},
    {"nbody_energy", (PyCFunction)(void (*)(void))py_nbody_energy, METH_FASTCALL,
     "nbody_energy(pos, vel, mass, eps, G, stream) -> (kinetic, potential)."},
    {NULL}};

static const gl_ladder *const nbody_ladders[] = {&gl_ladder_nbody, NULL};

const gl_lab gl_lab_module_nbody = {
    .name = "nbody", .ladders = nbody_ladders, .methods = nbody_methods};
