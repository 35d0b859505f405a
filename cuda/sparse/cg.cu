// Conjugate gradients (S3 11.5), the lab's entry point glc_cg: five rungs of the same solve, from a
// kernel per operation on the CSR matrix with the scalars read back every iteration to fused
// passes, one reduction point per iteration, and A stored by its diagonals with two passes an
// iteration (cg_dia_kernels.cuh).
//
// Byte model per iteration (docs/labs/sparse.md): the SpMV reads the CSR arrays and gathers p; each
// vector pass reads or writes n elements per vector it touches. The dots accumulate in double
// whatever the dtype, in a fixed order (block partials, then one block), so every variant but the
// merge path's atomics on rows cut between threads is deterministic; rows of at most 7 nonzeros
// (the Poisson matrices) are cut in at most two parts, and a sum of two parts onto zero does not
// depend on their order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "cg_dia_kernels.cuh"
#include "cuda/core/interrupt.h"
#include "cuda/core/resources.cuh"

namespace {

// Events at the phase boundaries of one iteration (options.phases): mark(phase) ends the segment
// since the previous mark and charges it to phase; flush waits for the last mark and adds the
// segments' times. The wait makes each timed iteration end with a host synchronization; the
// events themselves add none between the phases.
struct PhaseClock {
  static constexpr int kMarks = 24;
  bool on = false;
  cudaStream_t stream = nullptr;
  GlcEvents events;
  int used = 0;
  int phase_of[kMarks] = {};
  double *ms = nullptr;
  int start(bool enabled, cudaStream_t s, double *phase_ms) {
    on = enabled;
    stream = s;
    ms = phase_ms;
    return on ? events.create(kMarks + 1) : cudaSuccess;
  }
  int begin() {
    used = 0;
    return on ? GLC_CUDA(cudaEventRecord, events[0], stream) : cudaSuccess;
  }
  int mark(int phase) {
    if (!on || used == kMarks) return cudaSuccess;
    phase_of[used++] = phase;
    return GLC_CUDA(cudaEventRecord, events[used], stream);
  }
  int flush() {
    if (!on || used == 0) return cudaSuccess;
    int code = GLC_CUDA(cudaEventSynchronize, events[used]);
    for (int k = 0; !code && k < used; k++) {
      float segment = 0;
      code = GLC_CUDA(cudaEventElapsedTime, &segment, events[k], events[k + 1]);
      ms[phase_of[k]] += segment;
    }
    used = 0;
    return code;
  }
};

template <typename I, typename T>
class CgSolve {
 public:
  CgSolve(const glc_csr *a, int block, const glc_cg_options *o, glc_cg_result *res,
          cudaStream_t stream)
      : n_(static_cast<long long>(a->rows)),
        nnz_(static_cast<long long>(a->nnz)),
        indptr_(static_cast<const I *>(a->indptr)),
        indices_(static_cast<const I *>(a->indices)),
        data_(static_cast<const T *>(a->data)),
        a_(a),
        block_(block),
        o_(*o),
        res_(res),
        stream_(stream) {}

  int run(int variant, const T *b, const T *x0, T *x) {
    x_ = x;
    int code = cudaSuccess;
    if (variant == GLC_CG_DIA_FUSED) {
      code = dia_.build(a_, block_, stream_);
      res_->diagonals = dia_.diagonals;
      res_->dia_refused = dia_.refused;
      if (code || dia_.refused) return code;
    }
    GLC_TRY(code, setup_buffers(variant));
    GLC_TRY(code, clock_.start(o_.phases != 0, stream_, res_->phase_ms));
    GLC_TRY(code, initial_residual(b, x0));
    GLC_TRY(code, variant == GLC_CG_PIPELINED ? pipelined_init(b) : init(b));
    if (variant == GLC_CG_DIA_FUSED) GLC_TRY(code, memset(p_));  // p' of the first iteration
    if (code) return code;
    if (res_->zero_diagonal_row >= 0) return GLC_CUDA(cudaStreamSynchronize, stream_);
    if (variant == GLC_CG_TEXTBOOK) return textbook_loop();
    return device_loop(variant);
  }

 private:
  long long n_, nnz_;
  const I *indptr_, *indices_;
  const T *data_;
  const glc_csr *a_;
  int block_;
  glc_cg_options o_;
  glc_cg_result *res_;
  cudaStream_t stream_;
  T *x_ = nullptr, *r_ = nullptr, *z_ = nullptr, *p_ = nullptr, *q_ = nullptr, *s_ = nullptr,
    *dinv_ = nullptr, *p_next_ = nullptr;
  double *partials_ = nullptr;
  CgState *state_ = nullptr;
  CgState *host_ = nullptr;  // two pinned slots the device's state is copied into
  int stride_ = 0;
  unsigned vector_grid_ = 0, reduce_grid_ = 0, merge_grid_ = 0, dia_step_grid_ = 0,
           dia_update_grid_ = 0;
  DiaMatrix<I, T> dia_;
  GlcDeviceBuffer vectors_, scalars_;
  GlcMappedBuffer pinned_;
  GlcEvents checks_;
  PhaseClock clock_;

  bool jacobi() const { return o_.jacobi != 0; }

  int setup_buffers(int variant) {
    vector_grid_ = spmv_grid(static_cast<size_t>(n_), block_);
    const size_t items = static_cast<size_t>(n_ + nnz_);
    merge_grid_ = spmv_grid(items / kMergeItems + 1, block_);
    if (!vector_grid_ || !merge_grid_)
      return glc_fail(cudaErrorInvalidConfiguration, "glc_cg(size)");
    reduce_grid_ = vector_grid_ < kReduceBlocksMax ? vector_grid_ : kReduceBlocksMax;
    stride_ = static_cast<int>(merge_grid_ > reduce_grid_ ? merge_grid_ : reduce_grid_);
    int code = cudaSuccess;
    if (variant == GLC_CG_DIA_FUSED) {
      GLC_TRY(code, dia_grids());
      if (code) return code;
      stride_ =
          std::max({stride_, static_cast<int>(dia_step_grid_), static_cast<int>(dia_update_grid_)});
    }
    const size_t n = static_cast<size_t>(n_);
    // r p q [s] [p'] [z dinv]
    const int count =
        3 + (variant == GLC_CG_PIPELINED) + (variant == GLC_CG_DIA_FUSED) + 2 * jacobi();
    GLC_TRY(code, vectors_.allocate(n * count * sizeof(T), stream_));
    GLC_TRY(code, scalars_.allocate(sizeof(CgState) + kSlots * stride_ * sizeof(double), stream_));
    GLC_TRY(code, pinned_.allocate(2 * sizeof(CgState)));
    GLC_TRY(code, checks_.create(2));
    if (code) return code;
    T *v = vectors_.as<T>();
    r_ = v;
    p_ = v + n;
    q_ = v + 2 * n;
    v += 3 * n;
    if (variant == GLC_CG_PIPELINED) s_ = v, v += n;
    if (variant == GLC_CG_DIA_FUSED) p_next_ = v, v += n;
    if (jacobi())
      z_ = v, dinv_ = v + n;
    else
      z_ = r_;  // M = I: z is r
    state_ = scalars_.as<CgState>();
    partials_ = reinterpret_cast<double *>(state_ + 1);
    host_ = static_cast<CgState *>(pinned_.host);
    CgState fresh = {};
    fresh.zero_row = ~0ull;
    return GLC_CUDA(cudaMemcpyAsync, state_, &fresh, sizeof fresh, cudaMemcpyHostToDevice, stream_);
  }

  template <typename... Params, typename... Args>
  int vector_launch(void (*kernel)(Params...), const char *name, Args... args) {
    return glc_launch(kernel, name, vector_grid_, block_, stream_, args...);
  }

  template <typename... Params, typename... Args>
  int reduce_launch(void (*kernel)(Params...), const char *name, Args... args) {
    return glc_launch(kernel, name, reduce_grid_, block_, stream_, args...);
  }

  int memset(T *v) { return glc_memset_async(v, 0, static_cast<size_t>(n_) * sizeof(T), stream_); }

  // The library's SpMV (variant 0's operator, and A x0): the spmv op's merge-path launcher.
  int library_spmv(const T *in, T *out) {
    const SpmvCall<I, T> c = {n_,      n_,       nnz_,   static_cast<long long>(a_->max_row),
                              indptr_, indices_, data_,  in,
                              out,     block_,   stream_};
    return spmv_csr_family<I, T>(GLC_SPMV_CSR_MERGE_PATH, c);
  }

  // r0 = b - A x0 (r0 = b, x = 0 without x0) and, for Jacobi, dinv.
  int initial_residual(const T *b, const T *x0) {
    const size_t bytes = static_cast<size_t>(n_) * sizeof(T);
    int code = cudaSuccess;
    if (jacobi())
      GLC_TRY(code, vector_launch(cg_inverse_diagonal<I, T>, "cg_inverse_diagonal", n_, indptr_,
                                  indices_, data_, dinv_, state_));
    if (x0 == nullptr) {
      GLC_TRY(code, memset(x_));
      GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, r_, b, bytes, cudaMemcpyDeviceToDevice, stream_));
      return code;
    }
    GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, x_, x0, bytes, cudaMemcpyDeviceToDevice, stream_));
    GLC_TRY(code, library_spmv(x0, r_));
    GLC_TRY(code, vector_launch(cg_residual_init<T>, "cg_residual_init", n_, b, r_));
    return code;
  }

  int dot_into(const T *a, const T *b, int slot) {
    return reduce_launch(cg_dot_partials<T>, "cg_dot_partials", n_, a, b,
                         partials_ + slot * stride_, static_cast<const CgState *>(nullptr));
  }

  int scalars(int stage, int count_rz, int count_rr, int count_pq, int count_bb) {
    return glc_launch(cg_scalars, "cg_scalars", 1, block_, stream_, stage, partials_, stride_,
                      count_rz, count_rr, count_pq, count_bb, o_.rtol, o_.atol, state_);
  }

  // Copies the device state into pinned slot `slot` and waits for it.
  int read_state(int slot) {
    int code = GLC_CUDA(cudaMemcpyAsync, host_ + slot, state_, sizeof(CgState),
                        cudaMemcpyDeviceToHost, stream_);
    GLC_TRY(code, GLC_CUDA(cudaStreamSynchronize, stream_));
    return code;
  }

  void record(const CgState &s) {
    if (res_->count < res_->capacity) res_->residuals[res_->count++] = sqrt(s.rr);
  }

  // Reads the state after the initial scalars: the zero diagonal, ||r0||, and done at 0.
  int after_init() {
    int code = read_state(0);
    if (code) return code;
    const CgState &s = host_[0];
    if (s.zero_row != ~0ull) {
      res_->zero_diagonal_row = static_cast<long long>(s.zero_row);
      return cudaSuccess;
    }
    record(s);
    res_->converged = s.done == 1;
    res_->breakdown = s.done == 2;  // the pipelined start's u.Au
    return cudaSuccess;
  }

  // z0 = M^-1 r0, p0 = z0, and the scalars r.z, r.r, b.b.
  int init(const T *b) {
    int code = cudaSuccess;
    if (jacobi())
      GLC_TRY(code, vector_launch(cg_jacobi<T>, "cg_jacobi", n_, dinv_, r_, z_,
                                  static_cast<const CgState *>(nullptr)));
    GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, p_, z_, static_cast<size_t>(n_) * sizeof(T),
                           cudaMemcpyDeviceToDevice, stream_));
    GLC_TRY(code, memset(q_));
    GLC_TRY(code, dot_into(r_, z_, kSlotRz));
    if (jacobi()) GLC_TRY(code, dot_into(r_, r_, kSlotRr));
    GLC_TRY(code, dot_into(b, b, kSlotBb));
    const int c = static_cast<int>(reduce_grid_);
    GLC_TRY(code, scalars(kInit, c, jacobi() ? c : 0, 0, c));
    GLC_TRY(code, after_init());
    return code;
  }

  // u0 = M^-1 r0 (in z), w0 = A u0 (in q) with delta, gamma = r.u, r.r, b.b; p = s = 0 so that
  // the first iteration's p = u + 0 p.
  int pipelined_init(const T *b) {
    int code = cudaSuccess;
    if (jacobi())
      GLC_TRY(code, vector_launch(cg_jacobi<T>, "cg_jacobi", n_, dinv_, r_, z_,
                                  static_cast<const CgState *>(nullptr)));
    GLC_TRY(code, memset(p_));
    GLC_TRY(code, memset(s_));
    GLC_TRY(code, memset(q_));
    GLC_TRY(code, spmv_dot(z_, q_, kSlotPq, nullptr));
    GLC_TRY(code, dot_into(r_, z_, kSlotRz));
    if (jacobi()) GLC_TRY(code, dot_into(r_, r_, kSlotRr));
    GLC_TRY(code, dot_into(b, b, kSlotBb));
    const int c = static_cast<int>(reduce_grid_);
    GLC_TRY(code, scalars(kPipelinedInit, c, jacobi() ? c : 0, static_cast<int>(merge_grid_), c));
    GLC_TRY(code, after_init());
    return code;
  }

  int spmv_dot(const T *in, T *out, int slot, const CgState *state) {
    return glc_launch(cg_spmv_dot<I, T>, "cg_spmv_dot", merge_grid_, block_, stream_, n_, nnz_,
                      indptr_, indices_, data_, in, out, partials_ + slot * stride_, state);
  }

  // ---- variant 4: A by diagonals (cg_dia_kernels.cuh)

  // cg_dia_step instantiated for at most KMax diagonals, the least of 4, 8, 16, 32 that holds
  // the matrix's, and 32-bit row indices up to 2^30 rows (so that i + the grid's stride and i +
  // any offset stay inside int).
  template <int KMax, typename Run>
  int with_dia_rows(Run run) {
    if (n_ <= (1ll << 30)) return run(std::integral_constant<int, KMax>(), 0);
    return run(std::integral_constant<int, KMax>(), 0ll);
  }

  // run(kmax, row): kmax an integral_constant, row a value of the row index's type.
  template <typename Run>
  int with_dia_kernel(Run run) {
    const int k = dia_.offsets.count;
    if (k <= 4) return with_dia_rows<4>(run);
    if (k <= 8) return with_dia_rows<8>(run);
    if (k <= 16) return with_dia_rows<16>(run);
    return with_dia_rows<kDiaMaxDiagonals>(run);
  }

  // One wave of each pass's blocks (grid-stride loops): a grid past one wave would leave a tail
  // of blocks with a whole share each.
  int dia_grids() {
    size_t step = 0, update = 0;
    int code = with_dia_kernel([&](auto kmax, auto row) {
      return glc_full_wave_blocks<cg_dia_step<decltype(kmax)::value, decltype(row), T>>(block_,
                                                                                        &step);
    });
    if (!code && jacobi()) code = glc_full_wave_blocks<cg_update_r<T, true>>(block_, &update);
    if (!code && !jacobi()) code = glc_full_wave_blocks<cg_update_r<T, false>>(block_, &update);
    dia_step_grid_ = static_cast<unsigned>(std::min<size_t>(step, vector_grid_));
    dia_update_grid_ = static_cast<unsigned>(std::min<size_t>(update, vector_grid_));
    return code;
  }

  // Iteration k's pass 1: p into buffer k % 2 from p' in the other.
  int dia_step(long long k) {
    T *p = k % 2 ? p_next_ : p_;
    const T *p_old = k % 2 ? p_ : p_next_;
    return with_dia_kernel([&](auto kmax, auto row) {
      return glc_launch(cg_dia_step<decltype(kmax)::value, decltype(row), T>, "cg_dia_step",
                        dia_step_grid_, block_, stream_, n_, dia_.offsets,
                        static_cast<const T *>(dia_.values.template as<T>()),
                        static_cast<const T *>(z_), p_old, p, x_, q_, partials_ + kSlotPq * stride_,
                        static_cast<const CgState *>(state_));
    });
  }

  template <bool Jacobi>
  int dia_update() {
    return glc_launch(cg_update_r<T, Jacobi>, "cg_update_r", dia_update_grid_, block_, stream_, n_,
                      r_, static_cast<const T *>(q_), static_cast<const T *>(dinv_), z_, partials_,
                      stride_, static_cast<const CgState *>(state_));
  }

  // ---- variant 0: scalars on the host, read back twice per iteration

  int host_dot(const T *a, const T *b, int which) {
    int code = dot_into(a, b, 0);
    GLC_TRY(code, glc_launch(cg_dot_finish, "cg_dot_finish", 1, block_, stream_, partials_,
                             static_cast<int>(reduce_grid_), &state_->dots[which]));
    return code;
  }

  int textbook_loop() {
    const CgState start = host_[0];
    double rz = start.rz, rr = start.rr;
    const double tol2 = start.tol2;
    if (start.done) return cudaSuccess;
    const CgState *none = nullptr;
    int code = cudaSuccess;
    for (long long k = 1; !code && k <= o_.maxiter; k++) {
      GLC_TRY(code, glc_check_interrupt());
      GLC_TRY(code, clock_.begin());
      GLC_TRY(code, library_spmv(p_, q_));
      GLC_TRY(code, clock_.mark(kOperator));
      GLC_TRY(code, host_dot(p_, q_, 0));
      GLC_TRY(code, read_state(0));
      GLC_TRY(code, clock_.mark(kReductions));
      if (code) break;
      const double pq = host_[0].dots[0];
      if (!(pq != 0.0) || !std::isfinite(pq)) {
        res_->breakdown = 1;
        break;
      }
      const double alpha = rz / pq;
      GLC_TRY(code, vector_launch(cg_axpy<T>, "cg_axpy", n_, static_cast<T>(alpha),
                                  static_cast<const double *>(nullptr), T(1), p_, x_, none));
      GLC_TRY(code, vector_launch(cg_axpy<T>, "cg_axpy", n_, static_cast<T>(alpha),
                                  static_cast<const double *>(nullptr), T(-1), q_, r_, none));
      if (jacobi())
        GLC_TRY(code, vector_launch(cg_jacobi<T>, "cg_jacobi", n_, dinv_, r_, z_, none));
      GLC_TRY(code, clock_.mark(kUpdates));
      GLC_TRY(code, host_dot(r_, z_, 0));
      if (jacobi()) GLC_TRY(code, host_dot(r_, r_, 1));
      GLC_TRY(code, read_state(0));
      GLC_TRY(code, clock_.mark(kReductions));
      if (code) break;
      const double rz_new = host_[0].dots[0];
      rr = jacobi() ? host_[0].dots[1] : rz_new;
      const double beta = rz_new / rz;
      rz = rz_new;
      res_->iterations = k;
      const bool converged = rr <= tol2;
      if (converged || k % o_.check_every == 0 || k == o_.maxiter) {
        CgState s = {};
        s.rr = rr;
        record(s);
      }
      if (converged) {
        res_->converged = 1;
        GLC_TRY(code, clock_.flush());
        break;
      }
      GLC_TRY(code, vector_launch(cg_xpby<T>, "cg_xpby", n_, static_cast<T>(beta),
                                  static_cast<const double *>(nullptr), z_, p_, none));
      GLC_TRY(code, clock_.mark(kUpdates));
      GLC_TRY(code, clock_.flush());
    }
    if (code == GLC_INTERRUPTED) return drain(code);
    GLC_TRY(code, GLC_CUDA(cudaStreamSynchronize, stream_));
    return code;
  }

  // A solve stopped by Ctrl-C: waits for what it queued, so that no kernel still writes into x
  // or the buffers about to be freed, and returns status unchanged (the exception is set).
  int drain(int status) {
    cudaStreamSynchronize(stream_);
    return status;
  }

  // ---- variants 1-3: scalars on the device; the host reads the state every check_every
  // iterations, one check behind the launches (a pinned copy and an event), so the device always
  // has an interval's work queued. Kernels launched after the device decided to stop return at
  // once, so x is the stopping iteration's whatever the lag.

  int iteration(int variant, long long k) {
    const int c = static_cast<int>(reduce_grid_), m = static_cast<int>(merge_grid_);
    const double *alpha = &state_->alpha, *beta = &state_->beta;
    int code = clock_.begin();
    if (variant == GLC_CG_DEVICE_SCALARS) {
      GLC_TRY(code, memset(q_));
      GLC_TRY(code, glc_launch(cg_spmv<I, T>, "cg_spmv", merge_grid_, block_, stream_, n_, nnz_,
                               indptr_, indices_, data_, static_cast<const T *>(p_), q_,
                               static_cast<const CgState *>(state_)));
      GLC_TRY(code, clock_.mark(kOperator));
      GLC_TRY(code, reduce_launch(cg_dot_partials<T>, "cg_dot_partials", n_, p_, q_,
                                  partials_ + kSlotPq * stride_, state_));
      GLC_TRY(code, scalars(kAlpha, 0, 0, c, 0));
      GLC_TRY(code, clock_.mark(kReductions));
      GLC_TRY(code, vector_launch(cg_axpy<T>, "cg_axpy", n_, T(0), alpha, T(1), p_, x_, state_));
      GLC_TRY(code, vector_launch(cg_axpy<T>, "cg_axpy", n_, T(0), alpha, T(-1), q_, r_, state_));
      if (jacobi())
        GLC_TRY(code, vector_launch(cg_jacobi<T>, "cg_jacobi", n_, dinv_, r_, z_, state_));
      GLC_TRY(code, clock_.mark(kUpdates));
      GLC_TRY(code, reduce_launch(cg_dot_partials<T>, "cg_dot_partials", n_, r_, z_,
                                  partials_ + kSlotRz * stride_, state_));
      if (jacobi())
        GLC_TRY(code, reduce_launch(cg_dot_partials<T>, "cg_dot_partials", n_, r_, r_,
                                    partials_ + kSlotRr * stride_, state_));
      GLC_TRY(code, scalars(kBeta, c, jacobi() ? c : 0, 0, 0));
      GLC_TRY(code, clock_.mark(kReductions));
      GLC_TRY(code, vector_launch(cg_xpby<T>, "cg_xpby", n_, T(0), beta, z_, p_, state_));
      GLC_TRY(code, clock_.mark(kUpdates));
    } else if (variant == GLC_CG_FUSED) {
      GLC_TRY(code, spmv_dot(p_, q_, kSlotPq, state_));
      GLC_TRY(code, clock_.mark(kOperator));
      GLC_TRY(code, scalars(kAlpha, 0, 0, m, 0));
      GLC_TRY(code, clock_.mark(kReductions));
      GLC_TRY(code, jacobi() ? reduce_launch(cg_update_xr<T, true>, "cg_update_xr", n_, x_, r_,
                                             static_cast<const T *>(p_), static_cast<const T *>(q_),
                                             static_cast<const T *>(dinv_), z_, partials_, stride_,
                                             static_cast<const CgState *>(state_))
                             : reduce_launch(cg_update_xr<T, false>, "cg_update_xr", n_, x_, r_,
                                             static_cast<const T *>(p_), static_cast<const T *>(q_),
                                             static_cast<const T *>(dinv_), z_, partials_, stride_,
                                             static_cast<const CgState *>(state_)));
      GLC_TRY(code, clock_.mark(kUpdates));
      GLC_TRY(code, scalars(kBeta, c, jacobi() ? c : 0, 0, 0));
      GLC_TRY(code, clock_.mark(kReductions));
      GLC_TRY(code, vector_launch(cg_update_p<T>, "cg_update_p", n_, static_cast<const T *>(z_), p_,
                                  q_, static_cast<const CgState *>(state_)));
      GLC_TRY(code, clock_.mark(kUpdates));
    } else if (variant == GLC_CG_DIA_FUSED) {
      GLC_TRY(code, dia_step(k));
      GLC_TRY(code, clock_.mark(kOperator));
      GLC_TRY(code, scalars(kAlpha, 0, 0, static_cast<int>(dia_step_grid_), 0));
      GLC_TRY(code, clock_.mark(kReductions));
      GLC_TRY(code, jacobi() ? dia_update<true>() : dia_update<false>());
      GLC_TRY(code, clock_.mark(kUpdates));
      const int u = static_cast<int>(dia_update_grid_);
      GLC_TRY(code, scalars(kBeta, u, jacobi() ? u : 0, 0, 0));
      GLC_TRY(code, clock_.mark(kReductions));
    } else {
      GLC_TRY(code, jacobi()
                        ? reduce_launch(cg_pipelined_update<T, true>, "cg_pipelined_update", n_, x_,
                                        r_, z_, q_, p_, s_, static_cast<const T *>(dinv_),
                                        partials_, stride_, static_cast<const CgState *>(state_))
                        : reduce_launch(cg_pipelined_update<T, false>, "cg_pipelined_update", n_,
                                        x_, r_, z_, q_, p_, s_, static_cast<const T *>(dinv_),
                                        partials_, stride_, static_cast<const CgState *>(state_)));
      GLC_TRY(code, clock_.mark(kUpdates));
      GLC_TRY(code, spmv_dot(z_, q_, kSlotPq, state_));
      GLC_TRY(code, clock_.mark(kOperator));
      GLC_TRY(code, scalars(kPipelined, c, jacobi() ? c : 0, m, 0));
      GLC_TRY(code, clock_.mark(kReductions));
    }
    return code;
  }

  int device_loop(int variant) {
    if (host_[0].done) return cudaSuccess;
    int code = cudaSuccess, pending = -1, checks = 0;
    bool stopped = false;
    for (long long k = 1; !code && !stopped && k <= o_.maxiter; k++) {
      code = glc_check_interrupt();
      GLC_TRY(code, iteration(variant, k));
      GLC_TRY(code, clock_.flush());
      if (code || (k % o_.check_every != 0 && k != o_.maxiter)) continue;
      const int slot = checks++ & 1;
      GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, host_ + slot, state_, sizeof(CgState),
                             cudaMemcpyDeviceToHost, stream_));
      GLC_TRY(code, GLC_CUDA(cudaEventRecord, checks_[slot], stream_));
      if (!code && pending >= 0) {
        code = GLC_CUDA(cudaEventSynchronize, checks_[pending]);
        if (!code) {
          record(host_[pending]);
          stopped = host_[pending].done != 0;
        }
      }
      pending = slot;
    }
    if (code == GLC_INTERRUPTED) return drain(code);
    if (variant == GLC_CG_DIA_FUSED)
      GLC_TRY(code, vector_launch(cg_dia_finish_x<T>, "cg_dia_finish_x", n_, x_,
                                  static_cast<const T *>(p_), static_cast<const T *>(p_next_),
                                  static_cast<const CgState *>(state_)));
    GLC_TRY(code, GLC_CUDA(cudaStreamSynchronize, stream_));
    if (code) return code;
    if (!stopped && pending >= 0) record(host_[pending]);
    const CgState &last = host_[pending >= 0 ? pending : 0];
    res_->iterations = last.iterations;
    res_->converged = last.done == 1;
    res_->breakdown = last.done == 2;
    return cudaSuccess;
  }
};

template <typename I, typename T>
int solve(int variant, int block, const glc_csr *a, const void *b, const void *x0, void *x,
          const glc_cg_options *o, glc_cg_result *res, cudaStream_t stream) {
  CgSolve<I, T> cg(a, block, o, res, stream);
  return cg.run(variant, static_cast<const T *>(b), static_cast<const T *>(x0),
                static_cast<T *>(x));
}

template <typename I>
int solve_index(int variant, int block, const glc_csr *a, const void *b, const void *x0, void *x,
                const glc_cg_options *o, glc_cg_result *res, cudaStream_t stream) {
  return a->dtype == GLC_F64 ? solve<I, double>(variant, block, a, b, x0, x, o, res, stream)
                             : solve<I, float>(variant, block, a, b, x0, x, o, res, stream);
}

}  // namespace

extern "C" int glc_cg(int variant, int block, const glc_csr *a, const void *b, const void *x0,
                      void *x, const glc_cg_options *options, glc_cg_result *result,
                      glc_stream stream) {
  switch (variant) {
    case GLC_CG_TEXTBOOK:
    case GLC_CG_DEVICE_SCALARS:
    case GLC_CG_FUSED:
    case GLC_CG_PIPELINED:
    case GLC_CG_DIA_FUSED:
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_cg(variant)");
  }
  static const SparseNames names = {"glc_cg(a)",
                                    "glc_cg(dtype)",
                                    "glc_cg(index_dtype)",
                                    "glc_cg(block)",
                                    "glc_cg(int32 indices past 2^31 - 1)",
                                    "glc_cg(a: sizes)",
                                    "glc_cg(a: index arrays)",
                                    "glc_cg(a.data)"};
  int code = sparse_check(names, a, &block);
  if (code) return code;
  if (options == nullptr || result == nullptr || options->check_every < 1 || options->maxiter < 0 ||
      (result->capacity && result->residuals == nullptr))
    return glc_fail(cudaErrorInvalidValue, "glc_cg(options)");
  if (a->rows != a->cols) return glc_fail(cudaErrorInvalidValue, "glc_cg(a: not square)");
  result->count = 0;
  result->iterations = 0;
  result->zero_diagonal_row = -1;
  result->diagonals = 0;
  result->converged = result->breakdown = result->dia_refused = 0;
  for (double &ms : result->phase_ms) ms = 0;
  if (a->rows == 0) {
    result->converged = 1;
    if (result->capacity) result->residuals[result->count++] = 0;
    return cudaSuccess;
  }
  const size_t value_bytes = a->dtype == GLC_F64 ? 8 : 4;
  if (!glc_all_aligned(value_bytes, b, x) || (x0 && !glc_all_aligned(value_bytes, x0)))
    return glc_fail(cudaErrorInvalidValue, "glc_cg(b, x0, x)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  return a->index_dtype == GLC_I64
             ? solve_index<long long>(variant, block, a, b, x0, x, options, result, s)
             : solve_index<int>(variant, block, a, b, x0, x, options, result, s);
}
