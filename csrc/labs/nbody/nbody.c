/* The n-body lab's bindings: nbody_accel, nbody_step and nbody_energy, on the operands driver
 * (csrc/core/operands.h). Positions and velocities are (N, 3) float32, masses (N,) float32;
 * float64 is refused with a TypeError (the kernels are float32; a silent conversion would hide a
 * copy and a loss of precision). N = 0 gives empty results. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/interop.h"
#include "csrc/core/operands.h"
#include "cuda/nbody/nbody.h"
#include "variants.h"

#define NB_MAX_BODIES ((Py_ssize_t)1 << 24)

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

/* The driver's check of each array, in the lab's words: float32; pos (N, 3), mass (N,) and the
 * others (vel, out) (N, 3) like pos. */
static int nb_check(const gl_operands_call *c, int i, const char *name, int ndim,
                    const Py_ssize_t *shape, PyArray_Descr *dtype) {
  Py_ssize_t n = i == 0 ? -1 : c->shape[0][0];
  return nb_check_dtype(dtype, name) < 0
             ? -1
             : nb_check_shape(ndim, shape, name, strcmp(name, "mass") != 0, &n);
}

/* Once every input is checked: at most 2^24 bodies. */
static int nb_check_bodies(const gl_operands_call *c) {
  if (c->shape[0][0] <= NB_MAX_BODIES) return 0;
  PyErr_Format(PyExc_ValueError,
               "pos has %zd bodies; the all-pairs lab takes at most 2**24 (2.8e14 interactions "
               "per evaluation)",
               c->shape[0][0]);
  return -1;
}

/* Output o: (N, 3) float32. */
static void nb_vectors(gl_operands_call *c, int o) {
  c->out_ndim[o] = 2;
  c->out_shape[o][0] = c->shape[0][0];
  c->out_shape[o][1] = 3;
  c->out_type[o] = NPY_FLOAT32;
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

/* A call's scalars, and the tunables of nbody_accel's ladder (nbody_step runs its variants). */
typedef struct {
  PyObject *block_arg, *unroll_arg, *bodies_arg;
  int block, unroll, bodies;
  float eps2;
  double G, dt;
  long long steps;
  PyObject *stream; /* nbody_energy's, refused without a GPU */
} nb_params;

static int nb_configure(gl_operands_call *c) {
  nb_params *p = c->params;
  return gl_resolve_tunable(c->variant, "block", p->block_arg, &p->block) < 0 ||
                 gl_resolve_tunable(c->variant, "unroll", p->unroll_arg, &p->unroll) < 0 ||
                 gl_resolve_tunable(c->variant, "bodies", p->bodies_arg, &p->bodies) < 0
             ? -1
             : 0;
}

/* ---- nbody_accel ---- */

static int accel_outputs(gl_operands_call *c) {
  if (nb_check_bodies(c) < 0) return -1;
  nb_vectors(c, 0);
  return 0;
}

static int accel_cuda(const gl_operands_call *c) {
  const nb_params *p = c->params;
  return glc_nbody_accel(c->variant->id, p->block, p->unroll, p->bodies, (size_t)c->shape[0][0],
                         c->in[0], c->in[1], p->eps2, (float)p->G, c->out[0], c->stream);
}

static int accel_cpu(const gl_operands_call *c) {
  const nb_params *p = c->params;
  return glcpu_nbody_accel(c->variant->id, (size_t)c->shape[0][0], c->in[0], c->in[1], p->eps2,
                           (float)p->G, c->out[0])
             ? GL_CPU_NO_MEMORY
             : 0;
}

static const gl_operands_op accel_op = {.ladder = &gl_ladder_nbody,
                                        .n_in = 2,
                                        .in = {{"pos", -1}, {"mass", -1}},
                                        .dtypes = GL_DT(GLC_F32),
                                        .n_out = 1,
                                        .configure = nb_configure,
                                        .outputs = accel_outputs,
                                        .run_cuda = accel_cuda,
                                        .run_cpu = accel_cpu,
                                        .check = nb_check,
                                        .skip_empty = 1,
                                        .check_before_gpu = 1,
                                        .copy_misaligned = 1,
                                        .release_gil = 1};

/* An out on the other side of pos, refused in the lab's words (a ValueError, where the driver
 * refuses a NumPy out for device arrays with gl_as_device_array's TypeError). */
static int nb_check_out_side(PyObject *pos, PyObject *out) {
  if (out == Py_None) return 0;
  const int device = gl_is_device_operand(pos);
  if (gl_is_device_operand(out) == device) return 0;
  PyErr_Format(PyExc_ValueError, "mixed devices: out must be %s like pos",
               device ? "a device array" : "a NumPy array");
  return -1;
}

/* nbody_accel(pos, mass, eps, G, variant, out, stream, block, unroll, bodies), positional. */
static PyObject *py_nbody_accel(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 10)
    return PyErr_Format(PyExc_TypeError, "_core.nbody_accel takes 10 positional arguments");
  nb_params p = {.block_arg = args[7], .unroll_arg = args[8], .bodies_arg = args[9]};
  if (nb_eps2(args[2], &p.eps2) < 0 || nb_real(args[3], "G", &p.G) < 0 ||
      nb_check_out_side(args[0], args[5]) < 0)
    return NULL;
  return gl_operands_run_out(&accel_op, args, args[5], args[4], args[6], &p);
}

/* ---- nbody_step ---- */

static int step_outputs(gl_operands_call *c) {
  if (nb_check_bodies(c) < 0) return -1;
  nb_vectors(c, 0);
  nb_vectors(c, 1);
  return 0;
}

static int step_cuda(const gl_operands_call *c) {
  const nb_params *p = c->params;
  return glc_nbody_step(c->variant->id, p->block, p->unroll, p->bodies, (size_t)c->shape[0][0],
                        c->in[0], c->in[1], c->in[2], (float)p->dt, p->eps2, (float)p->G, p->steps,
                        c->out[0], c->out[1], c->stream);
}

static int step_cpu(const gl_operands_call *c) {
  const nb_params *p = c->params;
  return glcpu_nbody_step(c->variant->id, (size_t)c->shape[0][0], c->in[0], c->in[1], c->in[2],
                          (float)p->dt, p->eps2, (float)p->G, p->steps, c->out[0], c->out[1])
             ? GL_CPU_NO_MEMORY
             : 0;
}

static const gl_operands_op step_op = {.ladder = &gl_ladder_nbody,
                                       .n_in = 3,
                                       .in = {{"pos", -1}, {"vel", -1}, {"mass", -1}},
                                       .dtypes = GL_DT(GLC_F32),
                                       .n_out = 2,
                                       .configure = nb_configure,
                                       .outputs = step_outputs,
                                       .run_cuda = step_cuda,
                                       .run_cpu = step_cpu,
                                       .check = nb_check,
                                       .skip_empty = 1,
                                       .check_before_gpu = 1,
                                       .copy_misaligned = 1,
                                       .release_gil = 1};

/* nbody_step(pos, vel, mass, dt, eps, steps, G, variant, stream, block, unroll, bodies). */
static PyObject *py_nbody_step(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 12)
    return PyErr_Format(PyExc_TypeError, "_core.nbody_step takes 12 positional arguments");
  nb_params p = {.block_arg = args[9], .unroll_arg = args[10], .bodies_arg = args[11]};
  if (nb_real(args[3], "dt", &p.dt) < 0 || nb_eps2(args[4], &p.eps2) < 0 ||
      nb_real(args[6], "G", &p.G) < 0 || gl_int64_arg(args[5], "steps", &p.steps) < 0)
    return NULL;
  if (p.steps < 0) return PyErr_Format(PyExc_ValueError, "steps must be >= 0, got %lld", p.steps);
  return gl_operands_run(&step_op, args, args[7], args[8], &p);
}

/* ---- nbody_energy ---- */

/* nbody_energy has no ladder of its own (it is no rung of the lab): these two ways let the driver
 * place it, on the GPU for device arrays or NumPy arrays where one is usable, else on the CPU. The
 * ladder is the lab's by name, so that a NoDeviceError lists the lab's CPU variants. */
static const gl_variant energy_ways[] = {{.id = 0,
                                          .name = "gpu",
                                          .backend = GL_BACKEND_CUDA,
                                          .dtypes = GL_DT(GLC_F32),
                                          .flags = GL_BEST},
                                         {.id = 100,
                                          .name = "cpu",
                                          .backend = GL_BACKEND_CPU,
                                          .dtypes = GL_DT(GLC_F32),
                                          .flags = GL_BEST}};
static const gl_ladder energy_ladder = {
    .op = "nbody_accel", .variants = energy_ways, .count = GL_COUNT_OF(energy_ways)};

static int energy_configure(gl_operands_call *c) {
  const nb_params *p = c->params;
  if (c->variant->backend == GL_BACKEND_CUDA || p->stream == Py_None) return 0;
  PyErr_SetString(PyExc_ValueError, "stream: no GPU is usable, so the energy runs on the CPU");
  return -1;
}

/* (kinetic, potential), float64. */
static int energy_outputs(gl_operands_call *c) {
  if (nb_check_bodies(c) < 0) return -1;
  c->out_ndim[0] = 1;
  c->out_shape[0][0] = 2;
  c->out_type[0] = NPY_FLOAT64;
  return 0;
}

static int energy_cuda(const gl_operands_call *c) {
  const nb_params *p = c->params;
  return glc_nbody_energy((size_t)c->shape[0][0], c->in[0], c->in[1], c->in[2], p->eps2, p->G,
                          c->out[0], c->stream);
}

static int energy_cpu(const gl_operands_call *c) {
  const nb_params *p = c->params;
  double *energy = c->out[0];
  glcpu_nbody_energy((size_t)c->shape[0][0], c->in[0], c->in[1], c->in[2], p->eps2, p->G,
                     &energy[0], &energy[1]);
  return 0;
}

static const gl_operands_op energy_op = {.ladder = &energy_ladder,
                                         .n_in = 3,
                                         .in = {{"pos", -1}, {"vel", -1}, {"mass", -1}},
                                         .dtypes = GL_DT(GLC_F32),
                                         .n_out = 1,
                                         .configure = energy_configure,
                                         .outputs = energy_outputs,
                                         .run_cuda = energy_cuda,
                                         .run_cpu = energy_cpu,
                                         .check = nb_check,
                                         .copy_misaligned = 1,
                                         .release_gil = 1};

/* nbody_energy(pos, vel, mass, eps, G, stream) -> (kinetic, potential), waited for on device
 * arrays too. */
static PyObject *py_nbody_energy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 6)
    return PyErr_Format(PyExc_TypeError, "_core.nbody_energy takes 6 positional arguments");
  nb_params p = {.stream = args[5]};
  if (nb_eps2(args[3], &p.eps2) < 0 || nb_real(args[4], "G", &p.G) < 0) return NULL;
  PyObject *energy = gl_operands_run(&energy_op, args, Py_None, args[5], &p);
  if (energy && !PyArray_Check(energy)) /* a DeviceArray: its numbers, after the run */
    Py_SETREF(energy, PyObject_CallMethod(energy, "get", NULL));
  if (!energy) return NULL;
  const double *e = PyArray_DATA((PyArrayObject *)energy);
  PyObject *result = Py_BuildValue("(dd)", e[0], e[1]);
  Py_DECREF(energy);
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
