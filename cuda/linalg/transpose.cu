// Transpose variants 1-4: out[cols x rows] = A[rows x cols].T for 4- and 8-byte elements (S4's
// transpose with padding). A transpose reads and writes every element once: its ceiling is a
// copy of the same bytes (the device-to-device copy of gl.ceilings()), and the ladder is about
// making the writes as coalesced as the reads (docs/labs/linalg.md). The kernels also move
// 2-byte elements, which the ladder's op does not take: matmul's float16 and bfloat16 operands
// given transposed are made row-major by the wide rung (glc_matmul_row_major, at the end).
#include <algorithm>
#include <cstdint>

#include "cuda/core/launch.cuh"
#include "linalg.h"
#include "matmul_layout.cuh"

namespace {

// Elements are moved as unsigned integers of their size: a transpose never looks at values.
template <int BYTES>
struct word;
template <>
struct word<2> {
  using type = uint16_t;
};
template <>
struct word<4> {
  using type = uint32_t;
};
template <>
struct word<8> {
  using type = unsigned long long;
};

// Variant 1, naive: a 32 x 8 block walks a 32 x 32 tile; each thread reads A[r][c] (a warp reads
// 32 consecutive elements of a row: coalesced) and writes out[c][r] (a warp writes 32 elements
// `rows` apart: 32 sectors for one element each).
template <typename W>
__global__ void transpose_naive(const W *a, W *out, int rows, int cols) {
  const int c = blockIdx.x * 32 + threadIdx.x;
  for (int dy = threadIdx.y; dy < 32; dy += blockDim.y) {
    const int r = blockIdx.y * 32 + dy;
    if (r < rows && c < cols)
      out[static_cast<size_t>(c) * rows + r] = a[static_cast<size_t>(r) * cols + c];
  }
}

// Variants 2 and 3: the tile goes through shared memory, read row by row from A and written row
// by row to out, so that both global accesses are coalesced; the turn happens in shared memory.
// Reading a column of the tile back is where the banks bite: with PAD = 0 (variant 2) the 32
// words of a column of a 32-wide tile of 4-byte elements lie in one bank, a 32-way conflict; PAD
// = 1 (variant 3) shifts each row by a bank and the column is conflict-free. (8-byte elements:
// 2 banks a word, a 16-way conflict without the padding.) A TILE x 8 block, TILE / 8 elements a
// thread.
template <typename W, int TILE, int PAD>
__device__ void tiled_transpose(const W *a, W *out, int rows, int cols) {
  __shared__ W tile[TILE][TILE + PAD];
  const int tx = threadIdx.x;
  int c = blockIdx.x * TILE + tx;
  for (int dy = threadIdx.y; dy < TILE; dy += blockDim.y) {
    const int r = blockIdx.y * TILE + dy;
    if (r < rows && c < cols) tile[dy][tx] = a[static_cast<size_t>(r) * cols + c];
  }
  __syncthreads();
  // out's row c0 + dy holds A's column c0 + dy: its elements are the tile's column dy
  const int r = blockIdx.y * TILE + tx;
  for (int dy = threadIdx.y; dy < TILE; dy += blockDim.y) {
    c = blockIdx.x * TILE + dy;
    if (r < rows && c < cols) out[static_cast<size_t>(c) * rows + r] = tile[tx][dy];
  }
}

// Variant 2, shared tile (bank conflicts on the way out).
template <typename W, int TILE>
__global__ void transpose_shared(const W *a, W *out, int rows, int cols) {
  tiled_transpose<W, TILE, 0>(a, out, rows, cols);
}

// Variant 3, padded tile: one word of padding per row, conflict-free.
template <typename W, int TILE>
__global__ void transpose_padded(const W *a, W *out, int rows, int cols) {
  tiled_transpose<W, TILE, 1>(a, out, rows, cols);
}

// Variant 4, wide: a 64 x 64 tile of 4-byte elements (32 x 32 of 8-byte ones, 128 x 128 of
// 2-byte ones: 33 KiB of shared tile) for a 16 x 16 block, 16 elements a thread (64 for 2-byte
// ones), with 16-byte loads and stores: a thread reads four consecutive elements of a row of A
// (one LDG.128), and writes four consecutive elements of a row of out (one STG.128), gathered
// from a column of the padded tile. Four times fewer memory instructions than variant 3 and
// four times the bytes in flight per instruction, which is what an H100 needs to keep ~3 TB/s in
// flight. The 16-byte path needs A and out 16-byte aligned and rows and cols multiples of the
// vector width; a tile that is not whole, or an unaligned problem, goes element by element
// through the same shared tile. tile_y0: the row tile of blockIdx.y 0, so that more row tiles
// than grid y's 65535 go in several launches.
template <typename W>
__global__ void transpose_wide(const W *a, W *out, int rows, int cols, int vectors, int tile_y0) {
  constexpr int V = 16 / sizeof(W);  // elements per 16 bytes
  constexpr int TILE = 16 * V;
  __shared__ W tile[TILE][TILE + 1];
  const int r0 = (blockIdx.y + tile_y0) * TILE, c0 = blockIdx.x * TILE;
  const int tx = threadIdx.x, ty = threadIdx.y;  // 16 x 16
  const bool whole = vectors && r0 + TILE <= rows && c0 + TILE <= cols;
  if (whole) {
    for (int dy = ty; dy < TILE; dy += 16) {
      const uint4 v =
          *reinterpret_cast<const uint4 *>(a + static_cast<size_t>(r0 + dy) * cols + c0 + tx * V);
      const W *e = reinterpret_cast<const W *>(&v);
#pragma unroll
      for (int i = 0; i < V; ++i) tile[dy][tx * V + i] = e[i];
    }
  } else {
    for (int dy = ty; dy < TILE; dy += 16)
      for (int dx = tx; dx < TILE; dx += 16) {
        const int r = r0 + dy, c = c0 + dx;
        if (r < rows && c < cols) tile[dy][dx] = a[static_cast<size_t>(r) * cols + c];
      }
  }
  __syncthreads();
  // out's row c0 + dy, elements r0 + tx * V ... + V - 1: the tile's column dy, rows tx * V ...
  if (whole) {
    for (int dy = ty; dy < TILE; dy += 16) {
      uint4 v;
      W *e = reinterpret_cast<W *>(&v);
#pragma unroll
      for (int i = 0; i < V; ++i) e[i] = tile[tx * V + i][dy];
      *reinterpret_cast<uint4 *>(out + static_cast<size_t>(c0 + dy) * rows + r0 + tx * V) = v;
    }
  } else {
    for (int dy = ty; dy < TILE; dy += 16)
      for (int dx = tx; dx < TILE; dx += 16) {
        const int c = c0 + dy, r = r0 + dx;
        if (r < rows && c < cols) out[static_cast<size_t>(c) * rows + r] = tile[dx][dy];
      }
  }
}

template <typename W>
int launch(int variant, int tile, int rows, int cols, const W *a, W *out, cudaStream_t s) {
  const int t = variant == GLC_TRANSPOSE_WIDE    ? 16 * (16 / static_cast<int>(sizeof(W)))
                : variant == GLC_TRANSPOSE_NAIVE ? 32
                                                 : tile;
  const dim3 grid(static_cast<unsigned>((cols + t - 1) / t),
                  static_cast<unsigned>((rows + t - 1) / t));
  if (variant == GLC_TRANSPOSE_WIDE) {
    constexpr int V = 16 / sizeof(W);
    const int vectors = glc_all_aligned(16, a, out) && rows % V == 0 && cols % V == 0;
    // row tiles past grid y's limit: launches of 65535 row tiles each
    for (unsigned y0 = 0; y0 < grid.y; y0 += 65535u) {
      const dim3 part(grid.x, std::min(65535u, grid.y - y0));
      const int code = glc_launch(transpose_wide<W>, "transpose_wide", part, dim3(16, 16), s, a,
                                  out, rows, cols, vectors, static_cast<int>(y0));
      if (code) return code;
    }
    return cudaSuccess;
  }
  if (grid.y > 65535u) return glc_fail(cudaErrorInvalidValue, "glc_transpose(grid y past 65535)");
  switch (variant) {
    case GLC_TRANSPOSE_NAIVE:
      return glc_launch(transpose_naive<W>, "transpose_naive", grid, dim3(32, 8), s, a, out, rows,
                        cols);
    case GLC_TRANSPOSE_SHARED:
      return tile == 16 ? glc_launch(transpose_shared<W, 16>, "transpose_shared", grid, dim3(16, 8),
                                     s, a, out, rows, cols)
                        : glc_launch(transpose_shared<W, 32>, "transpose_shared", grid, dim3(32, 8),
                                     s, a, out, rows, cols);
    default:
      return tile == 16 ? glc_launch(transpose_padded<W, 16>, "transpose_padded", grid, dim3(16, 8),
                                     s, a, out, rows, cols)
                        : glc_launch(transpose_padded<W, 32>, "transpose_padded", grid, dim3(32, 8),
                                     s, a, out, rows, cols);
  }
}

}  // namespace

extern "C" int glc_transpose(int variant, int tile, int element_bytes, size_t rows, size_t cols,
                             const void *a, void *out, glc_stream stream) {
  if (variant < GLC_TRANSPOSE_NAIVE || variant > GLC_TRANSPOSE_WIDE)
    return glc_fail(cudaErrorInvalidValue, "glc_transpose(variant)");
  const bool tiled = variant == GLC_TRANSPOSE_SHARED || variant == GLC_TRANSPOSE_PADDED;
  if (tiled && tile == 0) tile = 32;
  if (tiled ? (tile != 16 && tile != 32) : tile != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_transpose(tile)");
  if (element_bytes != 2 && element_bytes != 4 && element_bytes != 8)
    return glc_fail(cudaErrorInvalidValue, "glc_transpose(element_bytes)");
  // the kernels index rows and columns with int, a tile past the last one included
  const size_t most = INT32_MAX - 256;
  if (rows > most || cols > most || (rows && cols > SIZE_MAX / rows / 8))
    return glc_fail(cudaErrorInvalidValue, "glc_transpose(sizes)");
  const size_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  if (!glc_all_aligned(static_cast<size_t>(element_bytes), a, out))
    return glc_fail(cudaErrorInvalidValue, "glc_transpose(alignment)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int r = static_cast<int>(rows), c = static_cast<int>(cols);
  if (element_bytes == 2)
    return launch(variant, tile, r, c, static_cast<const word<2>::type *>(a),
                  static_cast<word<2>::type *>(out), s);
  if (element_bytes == 4)
    return launch(variant, tile, r, c, static_cast<const word<4>::type *>(a),
                  static_cast<word<4>::type *>(out), s);
  return launch(variant, tile, r, c, static_cast<const word<8>::type *>(a),
                static_cast<word<8>::type *>(out), s);
}

int glc_matmul_row_major(int layout, int element_bytes, size_t m, size_t n, size_t k, const void *a,
                         const void *b, glc_stream stream, GlcRowMajorOperands *out) {
  out->a = a;
  out->b = b;
  const auto s = static_cast<cudaStream_t>(stream);
  const auto bytes = static_cast<size_t>(element_bytes);
  int code = cudaSuccess;
  if (layout & GLC_MATMUL_A_T) {  // A^T's storage, k x m, into A, m x k
    GLC_TRY(code, out->a_copy.allocate(m * k * bytes, s));
    GLC_TRY(code,
            glc_transpose(GLC_TRANSPOSE_WIDE, 0, element_bytes, k, m, a, out->a_copy.ptr, stream));
    out->a = out->a_copy.ptr;
  }
  if (layout & GLC_MATMUL_B_T) {  // B^T's storage, n x k, into B, k x n
    GLC_TRY(code, out->b_copy.allocate(k * n * bytes, s));
    GLC_TRY(code,
            glc_transpose(GLC_TRANSPOSE_WIDE, 0, element_bytes, n, k, b, out->b_copy.ptr, stream));
    out->b = out->b_copy.ptr;
  }
  return code;
}
