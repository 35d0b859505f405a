/* Operand placement for the ops of arrays, written once: every op of gpulab that takes arrays in
 * and gives arrays (or a value) out is built on it, the elementwise ops and the reductions too.
 * The four ways every op runs (README.md): a CPU variant on NumPy arrays (run on the host, the GIL
 * released for large calls); a CUDA variant on NumPy arrays (copied to the device, run, the
 * outputs copied back and waited for; small calls of some ops through mapped pinned memory); a
 * CUDA variant on device arrays (asynchronous on the stream, DeviceArrays out); and the refused
 * one, a CPU variant on device arrays. Inputs are all NumPy or all device arrays (a mix is
 * refused); a device array last used on another stream is ordered after that use
 * (gl_as_device_array). Every operand is checked -- type, placement, ndim, contiguity, dtype,
 * alignment -- and the outputs' shapes worked out before anything is allocated or launched;
 * messages name the argument (TypeError for a wrong type or dtype, ValueError for a wrong shape).
 * An op may also write into a given `out` (gl_operands_run_out) and return one value (scalar). */
#ifndef GL_OPERANDS_H
#define GL_OPERANDS_H

#include "cuda/core/gpulab_core.h"
#include "cuda/core/scalar_mirror.h"
#include "py.h"
#include "registry.h"

#define GL_OPERANDS_MAX 5

typedef struct {
  const char *name; /* the argument's name in messages */
  int ndim;         /* required ndim, or -1 for any (up to GL_MAX_NDIM, unless flat) */
  /* 0: the input shares the first input's dtype (the op's data). Otherwise the input has a dtype
   * of its own, one of these (the sparse lab's index arrays: int32 or int64 beside float data),
   * recorded in the call's in_dtype; the first input never has one. */
  unsigned dtypes;
  Py_ssize_t last_dim; /* nonzero: the required length of the last dimension (3 channels) */
  /* Set: the op reads the input as a run of elements (scan, histogram), so it takes any ndim
   * NumPy allows; the call records it 1-D, of its length. */
  int flat;
  /* Set: a NumPy bool array (compact's mask), which no glc dtype names; its in_dtype is -1.
   * Never the first input. */
  int boolean;
  /* Set (ndim 2): the input may also be F-contiguous, a transposed view (x.T of a C-contiguous
   * x), and is then taken as it lies -- the storage of its transpose, row-major -- with the
   * call's in_transposed set and its shape the view's. A device array, or a NumPy array for a
   * CUDA variant (its bytes staged as they are), reaches the run so; for a CPU variant a NumPy
   * one is copied to C order first (in_transposed stays 0). Matmul's operands. */
  int transposable;
} gl_operand;

/* One call, as the op's callbacks see it. */
typedef struct {
  const gl_variant *variant;
  int dtype;                     /* the inputs' enum glc_dtype (they share one) */
  int itemsize;                  /* bytes of one input element */
  int in_dtype[GL_OPERANDS_MAX]; /* each input's enum glc_dtype (its own, or dtype) */
  int in_ndim[GL_OPERANDS_MAX];  /* each input's ndim */
  /* a transposable input given F-contiguous: in[i] holds its transpose's storage, row-major */
  int in_transposed[GL_OPERANDS_MAX];
  Py_ssize_t in_size[GL_OPERANDS_MAX]; /* each input's elements */
  int mode;                            /* the ladder's mode, for ladders with modes */
  /* variant=None on a ladder with GL_BEST_FOR_DTYPES variants: the first input's dtype picks the
   * variant, which is configured then */
  int by_default;
  const void *in[GL_OPERANDS_MAX]; /* host or device memory: where the variant runs */
  /* Set by the op's outputs callback (out by the driver): */
  int out_ndim[GL_OPERANDS_MAX];
  int out_type[GL_OPERANDS_MAX]; /* NumPy type numbers */
  void *out[GL_OPERANDS_MAX];
  long long *count;  /* an op with a counted output: where the run writes its length */
  glc_stream stream; /* CUDA variants only */
  void *params;      /* the op's own, as gl_operands_run got them (configure may fill them) */
  glc_scalar_mirror *mirror; /* with mirrors, on device arrays: where the run also writes the
                              * scalar (a mapped slot, device address), or NULL */
  unsigned mirror_tag;       /* the tag it writes there */
  /* The shapes come last: every field above starts zeroed (an input past n_in is NULL), and the
   * shapes are written up to their ndim, all that is read (zeroing their 2.5 KiB too would cost
   * every call). */
  Py_ssize_t shape[GL_OPERANDS_MAX][GL_MAX_NDIM];     /* each input's */
  Py_ssize_t out_shape[GL_OPERANDS_MAX][GL_MAX_NDIM]; /* set by the outputs callback */
} gl_operands_call;

typedef struct {
  const gl_ladder *ladder;
  int n_in;
  gl_operand in[GL_OPERANDS_MAX];
  /* The first input's dtype: one of these that the variant also takes (when it takes none of
   * them, one of the variant's, which the refusal lists). With modes, one of these, and then one
   * the variant supports in the mode (gl_check_mode_support's refusal says which). */
  unsigned dtypes;
  int n_out;
  /* Once the variant is known, before any array is looked at: the tunables, resolved into the
   * op's params. 0, or -1 with an exception set. NULL: the op has none. */
  int (*configure)(gl_operands_call *call);
  /* From the inputs' shapes and dtype: each output's ndim, shape and type; ValueError (naming
   * the arguments) for shapes that do not fit together. 0, or -1 raised. */
  int (*outputs)(gl_operands_call *call);
  /* Run for every call, empty ones too (but skip_empty's, and scalar's with empty). run_cuda
   * returns 0 or a CUDA error code; run_cpu 0, -1 (RuntimeError) or GL_CPU_NO_MEMORY. */
  int (*run_cuda)(const gl_operands_call *call);
  int (*run_cpu)(const gl_operands_call *call);
  /* Set: on NumPy arrays a CUDA variant asks for the GPU after the inputs' checks and the
   * outputs callback, so that the op's own refusals (scan's one-block limit) come on machines
   * without a GPU too; unset, it asks first (an empty call without a GPU is NoDeviceError
   * whatever its shapes). */
  int check_before_gpu;
  /* Set: a NumPy input that starts inside an element (a view of a byte buffer) is copied, so
   * that a CPU variant reads whole elements; unset, it is refused (ValueError). A device array
   * that does is always refused (its kernels would fault). */
  int copy_misaligned;
  /* Set: an op with nothing to do when its outputs are empty; they are returned unrun, and NumPy
   * inputs are not staged. */
  int skip_empty;
  /* Set: output 0 is counted (compact, nonzero; n_out 1): outputs gives it 1-D at its capacity,
   * the run writes the number of elements it kept to call->count (device memory for a CUDA
   * variant, host for a CPU one), and the result is those first elements, an array of exactly
   * that length. On device arrays that length is read back (the call waits for it, as
   * torch.masked_select does). */
  int counted;
  /* With counted, on device arrays, or NULL: writes the output's length to call->count before
   * the run (a mask's true elements), so that the run writes into an output of that length;
   * without it the run writes into one of the capacity and the kept elements are copied into
   * one of their length. 0 or a CUDA error code. */
  int (*count_first)(const gl_operands_call *call);
  /* Set: the inputs are alike, as the elementwise ops and the reductions take them: each after the
   * first has its dtype ("y has dtype float64; expected float32 like x") and its shape, or with
   * flat its length. */
  int alike;
  /* Set: output 0 is one value (n_out 1, of at most 16 bytes; outputs gives it ndim 0): on NumPy
   * arrays the result is a NumPy scalar, the value computed into host memory with no array made;
   * on device arrays a 0-d DeviceArray. */
  int scalar;
  /* With scalar, or NULL: instead of a run when the first input is empty, writes the value of
   * nothing into call->out[0], host memory that starts zeroed (copied into the 0-d DeviceArray on
   * device arrays); -1 with an exception set when there is none (the min of nothing). */
  int (*empty)(const gl_operands_call *call);
  /* With scalar, or NULL: whether this call's run_cuda on device arrays can also write the value
   * into call->mirror (csrc/core/mirror.h), which lets item() of the 0-d result read it from host
   * memory. The driver then gives it a slot when one is free, and NULL otherwise. */
  int (*mirrors)(const gl_operands_call *call);
  /* Set: a CUDA variant on NumPy arrays, for an op of one output and inputs of one size, runs
   * through gl_small_call when they fit it: pinned memory the kernels read and write, no
   * allocation, a handful of CUDA calls (the per-call latency of small elementwise ops and
   * reductions). */
  int small_calls;
  /* Set: run_cuda and run_cpu run without the GIL whatever the size of the call, on device arrays
   * too: their time grows faster than their elements (n-body's all pairs and its steps). */
  int release_gil;
  /* NULL, or the op's own checks of an array, before the driver's, in the op's own words: input i
   * (as given: ndim, shape, dtype), or with i -1 a given out. 0, or -1 raised. */
  int (*check)(const gl_operands_call *call, int i, const char *name, int ndim,
               const Py_ssize_t *shape, PyArray_Descr *dtype);
} gl_operands_op;

/* What a run_cpu returns besides 0, -1 and GLC_INTERRUPTED: its scratch memory could not be
 * allocated (MemoryError). */
#define GL_CPU_NO_MEMORY (-3)

/* The tunable most ops have: the Python `block` argument and the value it resolves to. */
typedef struct {
  PyObject *arg;
  int value;
} gl_operands_block;

/* A configure callback for ops whose only tunable is `block`: their params begin with a
 * gl_operands_block. */
int gl_operands_configure_block(gl_operands_call *call);
/* An outputs callback for elementwise ops: one output of the first input's shape and dtype. */
int gl_operands_outputs_like_first(gl_operands_call *call);

/* Runs op on inputs (op->n_in objects) with the Python arguments variant and stream (None when
 * omitted); params reach the callbacks. Returns the output (a tuple when op->n_out > 1), or
 * NULL with an exception set. */
PyObject *gl_operands_run(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                          PyObject *stream, void *params);
/* gl_operands_run for an op of one output (not scalar) that writes it into out, unless out is
 * None: out must then be where the inputs are (a NumPy array, or a device array), writeable,
 * C-contiguous, of the first input's ndim, and of the output's shape and dtype; it is the result
 * (the very object, or for a foreign device array its DeviceArray view). */
PyObject *gl_operands_run_out(const gl_operands_op *op, PyObject *const *inputs, PyObject *out,
                              PyObject *variant, PyObject *stream, void *params);
/* gl_operands_run for an op whose ladder has modes (scan's sum, max, min): mode is the Python
 * argument, resolved before the variant and checked against the variant and dtype. */
PyObject *gl_operands_run_mode(const gl_operands_op *op, PyObject *const *inputs, PyObject *mode,
                               PyObject *variant, PyObject *stream, void *params);

/* What gl_operands_open holds for its caller. */
typedef struct {
  PyObject *keep;                    /* the stream's owner */
  PyObject *device[GL_OPERANDS_MAX]; /* the inputs as DeviceArrays, on device arrays */
  PyObject *copies[GL_OPERANDS_MAX]; /* copy_misaligned's copies */
} gl_operands_hold;

/* The resolution and checks of gl_operands_run without outputs or a run, for an op that
 * computes a few numbers from its inputs where they are (the histogram's data range: on the
 * host for NumPy arrays whatever the variant). op's outputs, run_cuda and run_cpu are unused.
 * On success call has the variant, dtypes, shapes, the inputs (host or device memory) and, for
 * a CUDA variant, the stream, and *on_device says where the inputs are. 0, or -1 with an
 * exception set; gl_operands_close(hold) either way. */
int gl_operands_open(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                     PyObject *stream, gl_operands_call *call, gl_operands_hold *hold,
                     int *on_device);
void gl_operands_close(gl_operands_hold *hold);

#endif
