// SpMV variant 9, csr_hybrid: csr_subwarp's groups for the rows up to kHybridChunk nonzeros, and
// the longer rows cut into chunks of kHybridChunk that whole blocks sum. On a power-law graph
// (R-MAT) a few hub rows hold 10^4-10^5 nonzeros: csr_subwarp's group walks such a row alone,
// kGatherUnroll * L nonzeros a pass, long after every other group has finished, and the kernel
// waits for it. Here the group of a long row only records its chunks in a work list (one atomicAdd
// for the row), and a second kernel of a fixed grid takes the chunks in turn, one block each, and
// adds each chunk's sum into y with one atomicAdd. Where the matrix has no long row (max_row, which
// the call knows, is at most kHybridChunk) it is csr_subwarp's single launch.
#include "cuda/core/resources.cuh"
#include "kernels.cuh"

namespace {

constexpr int kHybridChunk = 2048;  // nonzeros per chunk: 8 per thread of a 256-thread block
constexpr int kLongBlock = 256;

struct Chunk {
  long long row, begin;
};

// The chunk list's length for nnz nonzeros: at most nnz / kHybridChunk whole chunks, plus one
// partial chunk per long row (fewer than nnz / kHybridChunk long rows).
inline size_t hybrid_chunk_capacity(long long nnz) {
  return 2 * static_cast<size_t>(nnz / kHybridChunk) + 1;
}

// Groups of L lanes per row. A row of at most kHybridChunk nonzeros is summed by its group (each
// lane kGatherUnroll strided nonzeros a pass, loads before gathers before FMAs, a group shuffle). A
// longer row gets y[row] = 0 and its chunks appended to `chunks` (capacity is enough by
// construction: each long row adds ceil(len / kHybridChunk) <= len / kHybridChunk + 1 entries).
template <int L, typename I, typename T>
__global__ void spmv_hybrid_rows(long long rows, const I *indptr, const I *indices, const T *data,
                                 const T *x, T *y, Chunk *chunks, unsigned long long *count) {
  const long long row = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / L;
  const int lane = threadIdx.x % L;
  if (row >= rows) return;  // the group's lanes share row: it leaves whole
  const unsigned group_mask =
      L == 32 ? 0xffffffffu : ((1u << L) - 1u) << (threadIdx.x % 32 / L * L);
  const I begin = indptr[row], end = indptr[row + 1];
  if (end - begin > kHybridChunk) {
    const long long parts = (end - begin + kHybridChunk - 1) / kHybridChunk;
    unsigned long long first = 0;
    if (lane == 0) {
      y[row] = T(0);
      first = atomicAdd(count, static_cast<unsigned long long>(parts));
    }
    first = __shfl_sync(group_mask, first, 0, L);
    for (long long p = lane; p < parts; p += L)
      chunks[first + p] = Chunk{row, static_cast<long long>(begin) + p * kHybridChunk};
    return;
  }
  T sum = strided_sum<L, I>(begin + lane, end, indices, data, x);
#pragma unroll
  for (int offset = L / 2; offset > 0; offset /= 2)
    sum += __shfl_down_sync(group_mask, sum, offset, L);
  if (lane == 0) y[row] = sum;
}

// The long rows' chunks, one block a chunk, the blocks of a fixed grid taking chunks in turn (the
// count is on the device: the host does not wait for it). Each block adds its chunk's sum into
// y[row] with one atomicAdd, after spmv_hybrid_rows zeroed it on the same stream.
template <typename I, typename T>
__global__ void __launch_bounds__(kLongBlock)
    spmv_hybrid_chunks(const I *indptr, const I *indices, const T *data, const T *x, T *y,
                       const Chunk *chunks, const unsigned long long *count) {
  __shared__ T partial[kLongBlock / 32];
  const unsigned long long total = *count;
  for (unsigned long long c = blockIdx.x; c < total; c += gridDim.x) {
    const Chunk chunk = chunks[c];
    const long long stop =
        min(chunk.begin + kHybridChunk, static_cast<long long>(indptr[chunk.row + 1]));
    T sum = strided_sum<kLongBlock, long long>(chunk.begin + threadIdx.x, stop, indices, data, x);
    sum = warp_sum(sum);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
      T v = threadIdx.x < kLongBlock / 32 ? partial[threadIdx.x] : T(0);
      v = warp_sum(v);
      if (threadIdx.x == 0) atomicAdd(&y[chunk.row], v);
    }
    __syncthreads();  // partial is reused by the next chunk
  }
}

template <int L, typename I, typename T>
int launch_hybrid(const SpmvCall<I, T> &c) {
  const unsigned grid = spmv_grid(static_cast<size_t>(c.rows) * L, c.block);
  if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too many rows)");
  if (c.max_row <= kHybridChunk)  // no long row: nothing is appended, no second kernel
    return glc_launch(spmv_hybrid_rows<L, I, T>, "spmv_hybrid_rows", grid, c.block, c.stream,
                      c.rows, c.indptr, c.indices, c.data, c.x, c.y, static_cast<Chunk *>(nullptr),
                      static_cast<unsigned long long *>(nullptr));
  const size_t capacity = hybrid_chunk_capacity(c.nnz);
  GlcDeviceBuffer list, counter;
  int code = list.allocate(capacity * sizeof(Chunk), c.stream);
  GLC_TRY(code, counter.allocate(sizeof(unsigned long long), c.stream));
  GLC_TRY(code, glc_memset_async(counter.ptr, 0, sizeof(unsigned long long), c.stream));
  GLC_TRY(code, glc_launch(spmv_hybrid_rows<L, I, T>, "spmv_hybrid_rows", grid, c.block, c.stream,
                           c.rows, c.indptr, c.indices, c.data, c.x, c.y, list.as<Chunk>(),
                           counter.as<unsigned long long>()));
  int sms = 0;
  GLC_TRY(code, glc_current_sm_count(&sms));
  // enough blocks to fill the device twice over, never more than the chunks could be
  const size_t most = capacity < static_cast<size_t>(2 * sms) ? capacity : 2 * sms;
  GLC_TRY(code,
          glc_launch(spmv_hybrid_chunks<I, T>, "spmv_hybrid_chunks", static_cast<unsigned>(most),
                     kLongBlock, c.stream, c.indptr, c.indices, c.data, c.x, c.y,
                     list.as<const Chunk>(), counter.as<const unsigned long long>()));
  return code;
}

}  // namespace

template <typename I, typename T>
int spmv_csr_hybrid(const SpmvCall<I, T> &c) {
  switch (c.lanes ? c.lanes : spmv_subwarp_lanes(c.rows, c.nnz)) {
    case 2:
      return launch_hybrid<2, I, T>(c);
    case 4:
      return launch_hybrid<4, I, T>(c);
    case 8:
      return launch_hybrid<8, I, T>(c);
    case 16:
      return launch_hybrid<16, I, T>(c);
    case 32:
      return launch_hybrid<32, I, T>(c);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_spmv(lanes)");
  }
}

template int spmv_csr_hybrid<int, float>(const SpmvCall<int, float> &);
template int spmv_csr_hybrid<int, double>(const SpmvCall<int, double> &);
template int spmv_csr_hybrid<long long, float>(const SpmvCall<long long, float> &);
template int spmv_csr_hybrid<long long, double>(const SpmvCall<long long, double> &);
