// Filter variant 2: a separable kernel as two passes through shared tiles (S1's row and column
// passes). The row pass reads a tile of rows with its left and right halos once into shared
// memory and writes the horizontally filtered image, in float32, to a scratch image; the column
// pass does the same with a tile of columns and its top and bottom halos. Each tap is then a
// shared load instead of a global one, but the intermediate costs a write and a read of the
// whole image in global memory (4 passes over the data in all; docs/labs/image.md).
#include "filter.cuh"

namespace {

constexpr int kRowTile = 128;    // row pass: output elements per row of a block
constexpr int kRowRows = 2;      // row pass: rows per block
constexpr int kColTile = 32;     // column pass: columns per block
constexpr int kColRows = 32;     // column pass: output rows per block
constexpr int kColThreadsY = 8;  // column pass: each thread kColRows / kColThreadsY rows

// The row pass: tile[t][e] holds element x0 - left * channels + e of row y0 + t, mapped at the
// left and right edges (a mapped element keeps its channel).
template <typename T>
__global__ void filter_rows_shared(const T *img, float *tmp, int h, int w, int channels, int mode,
                                   glc_taps_1d wx) {
  extern __shared__ float tile[];
  const int row_elems = w * channels;
  const int left = wx.n / 2;
  const int span = kRowTile + (wx.n - 1) * channels;
  const int x0 = blockIdx.x * kRowTile;
  const int row = blockIdx.y * kRowRows + threadIdx.y;
  float *mine = tile + threadIdx.y * span;
  if (row < h) {
    for (int e = threadIdx.x; e < span; e += blockDim.x) {
      const int g = x0 - left * channels + e;
      const int col = glc_floor_div(g, channels);
      mine[e] = glc_load_mapped(img, h, w, channels, row, col, g - col * channels, mode);
    }
  }
  __syncthreads();
  const int x = x0 + threadIdx.x;
  if (row >= h || x >= row_elems) return;
  float sum = 0.0f;
  for (int b = 0; b < wx.n; b++) sum += wx.w[b] * mine[threadIdx.x + b * channels];
  tmp[static_cast<size_t>(row) * row_elems + x] = sum;
}

// The column pass: tile[t][c] holds row y0 - top + t of the row pass's columns x0 + c, the rows
// mapped at the top and bottom edges (the rows of zeros of GLC_MODE_CONSTANT filter to zeros,
// so mapping the intermediate's rows is mapping the image's).
template <typename T>
__global__ void filter_columns_shared(const float *tmp, T *out, int h, int w, int channels,
                                      int mode, glc_taps_1d wy) {
  extern __shared__ float tile[];
  const int row_elems = w * channels;
  const int top = wy.n / 2;
  const int rows = kColRows + wy.n - 1;
  const int x = blockIdx.x * kColTile + threadIdx.x;
  const int y0 = blockIdx.y * kColRows;
  for (int t = threadIdx.y; t < rows; t += blockDim.y) {
    const int r = glc_boundary_index(y0 - top + t, h, mode);
    tile[t * kColTile + threadIdx.x] =
        (x < row_elems && r >= 0) ? tmp[static_cast<size_t>(r) * row_elems + x] : 0.0f;
  }
  __syncthreads();
  if (x >= row_elems) return;
  for (int t = threadIdx.y; t < kColRows; t += blockDim.y) {
    const int row = y0 + t;
    if (row >= h) break;
    float sum = 0.0f;
    for (int a = 0; a < wy.n; a++) sum += wy.w[a] * tile[(t + a) * kColTile + threadIdx.x];
    glc_store_pixel(out + static_cast<size_t>(row) * row_elems + x, sum);
  }
}

template <typename T>
int run_shared(int h, int w, int channels, const glc_filter_kernel *kernel, int mode,
               const void *img, void *out, cudaStream_t stream) {
  const size_t elems = static_cast<size_t>(h) * w * channels;
  float *tmp = nullptr;
  int code =
      GLC_CUDA(cudaMallocAsync, reinterpret_cast<void **>(&tmp), elems * sizeof(float), stream);
  if (code) return code;
  const glc_taps_1d wx = glc_axis_taps(kernel->wx, kernel->kw);
  const glc_taps_1d wy = glc_axis_taps(kernel->wy, kernel->kh);
  const int row_elems = w * channels;
  const unsigned row_shared = kRowRows * (kRowTile + (wx.n - 1) * channels) * sizeof(float);
  code = glc_launch_shared(filter_rows_shared<T>, "filter_rows_shared",
                           dim3(static_cast<unsigned>(glc_blocks_to_cover(row_elems, kRowTile)),
                                static_cast<unsigned>(glc_blocks_to_cover(h, kRowRows))),
                           dim3(kRowTile, kRowRows), row_shared, stream,
                           static_cast<const T *>(img), tmp, h, w, channels, mode, wx);
  const unsigned col_shared = (kColRows + wy.n - 1) * kColTile * sizeof(float);
  if (!code)
    code = glc_launch_shared(filter_columns_shared<T>, "filter_columns_shared",
                             dim3(static_cast<unsigned>(glc_blocks_to_cover(row_elems, kColTile)),
                                  static_cast<unsigned>(glc_blocks_to_cover(h, kColRows))),
                             dim3(kColTile, kColThreadsY), col_shared, stream,
                             static_cast<const float *>(tmp), static_cast<T *>(out), h, w, channels,
                             mode, wy);
  const int freed = GLC_CUDA(cudaFreeAsync, tmp, stream);
  return code ? code : freed;
}

}  // namespace

int glc_filter_shared(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                      int mode, const void *img, void *out, cudaStream_t stream) {
  if (!kernel->separable) return glc_fail(cudaErrorInvalidValue, "glc_filter_shared");
  if (dtype == GLC_U8) return run_shared<uint8_t>(h, w, channels, kernel, mode, img, out, stream);
  return run_shared<float>(h, w, channels, kernel, mode, img, out, stream);
}
