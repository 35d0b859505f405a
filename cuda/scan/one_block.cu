// Variants 0-1: S3 5.3's single-block scans, Hillis-Steele and Blelloch. S3's kernels scan one
// block's worth; here the one block walks the whole array a chunk at a time and carries the
// running total from chunk to chunk, so that the registry's every-variant tests (which run 10^6
// elements) can run them. Past GLC_SCAN_ONE_BLOCK_MAX elements they are refused: one SM of 132
// does all the work.
#include "cuda/core/launch.cuh"
#include "families.cuh"
#include "ops.cuh"

namespace {

// Hillis-Steele (S3 5.3, S4 1.6): log2(block) steps, each adding the value `offset` places to
// the left; n log n additions in all. Two shared buffers, read from one and written to the
// other, so that no thread reads a slot another is overwriting in the same step.
template <typename Op, typename In, typename Acc>
__global__ void hillis_steele_one_block(const In *x, Acc *y, size_t n, bool inclusive) {
  extern __shared__ unsigned char shared_raw[];
  Acc *buffer = reinterpret_cast<Acc *>(shared_raw);
  const unsigned tid = threadIdx.x, width = blockDim.x;
  Acc carry = Op::template identity<Acc>();
  for (size_t begin = 0; begin < n; begin += width) {
    const size_t i = begin + tid;
    Acc *from = buffer, *to = buffer + width;
    from[tid] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
    __syncthreads();
    for (unsigned offset = 1; offset < width; offset <<= 1) {
      const Acc mine = from[tid];
      to[tid] = tid >= offset ? Op::apply(from[tid - offset], mine) : mine;
      __syncthreads();
      Acc *swap = from;
      from = to;
      to = swap;
    }
    // from holds the chunk's inclusive scan.
    if (i < n) {
      const Acc before = tid == 0 ? Op::template identity<Acc>() : from[tid - 1];
      y[i] = Op::apply(carry, inclusive ? from[tid] : before);
    }
    carry = Op::apply(carry, from[width - 1]);
    __syncthreads();  // every thread has read from[] before the next chunk overwrites it
  }
}

// Blelloch (S3 5.3): the work-efficient tree of glc_blelloch_chunk, 2 x block elements a chunk.
template <typename Op, typename In, typename Acc>
__global__ void blelloch_one_block(const In *x, Acc *y, size_t n, bool inclusive) {
  extern __shared__ unsigned char shared_raw[];
  Acc *t = reinterpret_cast<Acc *>(shared_raw);
  const size_t width = 2 * static_cast<size_t>(blockDim.x);
  Acc carry = Op::template identity<Acc>();
  for (size_t begin = 0; begin < n; begin += width) {
    const size_t end = begin + width < n ? begin + width : n;
    carry = Op::apply(carry, glc_blelloch_chunk<Op>(x, y, begin, end, carry, inclusive, t));
  }
}

template <typename Op, typename In>
int one_block(int variant, int block, bool inclusive, size_t n, const In *x, void *out,
              cudaStream_t stream) {
  using Acc = typename glc_scan_acc<In, Op>::type;
  Acc *y = static_cast<Acc *>(out);
  const unsigned shared = 2u * static_cast<unsigned>(block) * sizeof(Acc);
  if (variant == GLC_SCAN_HILLIS_STEELE)
    return glc_launch_shared(hillis_steele_one_block<Op, In, Acc>, "hillis_steele_one_block", 1,
                             block, shared, stream, x, y, n, inclusive);
  return glc_launch_shared(blelloch_one_block<Op, In, Acc>, "blelloch_one_block", 1, block, shared,
                           stream, x, y, n, inclusive);
}

}  // namespace

template <typename Op, typename T>
int glc_blelloch_one_block(int block, size_t n, const T *x, T *y, bool inclusive,
                           cudaStream_t stream) {
  const unsigned shared = 2u * static_cast<unsigned>(block) * sizeof(T);
  return glc_launch_shared(blelloch_one_block<Op, T, T>, "blelloch_one_block", 1, block, shared,
                           stream, x, y, n, inclusive);
}

// The partials the multi-block variants and the compaction scan.
template int glc_blelloch_one_block<glc_scan_sum, float>(int, size_t, const float *, float *, bool,
                                                         cudaStream_t);
template int glc_blelloch_one_block<glc_scan_sum, double>(int, size_t, const double *, double *,
                                                          bool, cudaStream_t);
template int glc_blelloch_one_block<glc_scan_sum, long long>(int, size_t, const long long *,
                                                             long long *, bool, cudaStream_t);
template int glc_blelloch_one_block<glc_scan_max, float>(int, size_t, const float *, float *, bool,
                                                         cudaStream_t);
template int glc_blelloch_one_block<glc_scan_max, double>(int, size_t, const double *, double *,
                                                          bool, cudaStream_t);
template int glc_blelloch_one_block<glc_scan_max, int>(int, size_t, const int *, int *, bool,
                                                       cudaStream_t);
template int glc_blelloch_one_block<glc_scan_max, long long>(int, size_t, const long long *,
                                                             long long *, bool, cudaStream_t);
template int glc_blelloch_one_block<glc_scan_min, float>(int, size_t, const float *, float *, bool,
                                                         cudaStream_t);
template int glc_blelloch_one_block<glc_scan_min, double>(int, size_t, const double *, double *,
                                                          bool, cudaStream_t);
template int glc_blelloch_one_block<glc_scan_min, int>(int, size_t, const int *, int *, bool,
                                                       cudaStream_t);
template int glc_blelloch_one_block<glc_scan_min, long long>(int, size_t, const long long *,
                                                             long long *, bool, cudaStream_t);

int glc_scan_one_block(int variant, int block, int op, int inclusive, int dtype, size_t n,
                       const void *x, void *y, cudaStream_t stream) {
  if (n > GLC_SCAN_ONE_BLOCK_MAX) return glc_fail(cudaErrorInvalidValue, "glc_scan");
  return glc_dispatch_scan(op, dtype, "glc_scan", [&](auto in, auto scan_op) {
    using In = decltype(in);
    return one_block<decltype(scan_op)>(variant, block, inclusive != 0, n,
                                        static_cast<const In *>(x), y, stream);
  });
}
