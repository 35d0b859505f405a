// Filter variant 3, the fastest for Hopper: both separable passes in one kernel. A block reads
// its 64 x 64 output tile with a halo of RB pixels on every side into shared memory once, runs
// the row pass into a second shared tile (the intermediate never leaves the SM) and the column
// pass from it to the output. Against variant 2 this saves the intermediate's write and read
// in global memory: one read (the halos are re-read from L2) and one write of the image. The
// radius is rounded up to a bucket RB of 4, 8, 16 or 32 so that the tap loops unroll with the
// weights as constant-bank operands (missing taps are zeros: a non-finite pixel then spreads
// NaN up to RB pixels, where scipy's would spread it only as far as the kernel reaches);
// single-channel rows are read and filtered 4 elements at a time with 16-byte shared loads, and
// each thread of the column pass keeps 8 outputs of a column in registers as it streams the
// column (docs/labs/image.md).
#include "filter.cuh"

namespace {

constexpr int kTileW = 64;         // output elements per row of a tile
constexpr int kTileH = 64;         // output rows of a tile
constexpr int kThreads = 256;      // threads per block
constexpr int kColumnOutputs = 8;  // column pass: outputs per thread, down one column

// A bucket's padded weights: w[RB + d] is the tap at offset d, zero outside the real kernel.
template <int RB>
struct padded_taps {
  float wx[2 * RB + 1];
  float wy[2 * RB + 1];
};

__device__ inline void load4(const float *p, float *v) {
  const float4 q = *reinterpret_cast<const float4 *>(p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ inline void load4(const uint8_t *p, float *v) {
  const uchar4 q = *reinterpret_cast<const uchar4 *>(p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}

template <typename T, int RB>
__global__ void __launch_bounds__(kThreads)
    filter_fused_separable(const T *img, T *out, int h, int w, int channels, int mode,
                           int vector_rows, padded_taps<RB> taps) {
  extern __shared__ __align__(16) float shared[];
  const int row_elems = w * channels;
  const int halo = RB * channels;          // elements left and right of the tile
  const int in_pitch = kTileW + 2 * halo;  // a multiple of 4: RB is
  const int in_rows = kTileH + 2 * RB;
  float *in = shared;                        // [in_rows][in_pitch]
  float *mid = shared + in_rows * in_pitch;  // [in_rows][kTileW]
  const int x0 = blockIdx.x * kTileW, y0 = blockIdx.y * kTileH;
  const int tid = threadIdx.x;

  // The input tile. Inside the image (the common case), 4 elements per load where rows allow it
  // (x0 - halo is a multiple of 4); near an edge, element by element through the index maps.
  const bool inside =
      x0 - halo >= 0 && x0 + kTileW + halo <= row_elems && y0 - RB >= 0 && y0 + kTileH + RB <= h;
  if (inside && vector_rows) {
    const int groups = in_pitch / 4;
    for (int i = tid; i < in_rows * groups; i += kThreads) {
      const int t = i / groups, q = (i % groups) * 4;
      load4(img + static_cast<size_t>(y0 - RB + t) * row_elems + (x0 - halo + q),
            in + t * in_pitch + q);
    }
  } else {
    for (int i = tid; i < in_rows * in_pitch; i += kThreads) {
      const int t = i / in_pitch, q = i % in_pitch;
      const int g = x0 - halo + q;
      const int col = glc_floor_div(g, channels);
      in[i] = glc_load_mapped(img, h, w, channels, y0 - RB + t, col, g - col * channels, mode);
    }
  }
  __syncthreads();

  // The row pass into mid, every row of the tile and its halo rows.
  if (channels == 1) {
    constexpr int groups = kTileW / 4;
    for (int i = tid; i < in_rows * groups; i += kThreads) {
      const int t = i / groups, x = (i % groups) * 4;
      const float *src = in + t * in_pitch + x;
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j < (2 * RB + 4) / 4; j++) {
        const float4 q = *reinterpret_cast<const float4 *>(src + 4 * j);
        const float v[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int m = 0; m < 4; m++)
#pragma unroll
          for (int o = 0; o < 4; o++) {
            const int d = 4 * j + m - o;  // tap index 0..2RB
            if (d >= 0 && d <= 2 * RB) acc[o] += taps.wx[d] * v[m];
          }
      }
      *reinterpret_cast<float4 *>(mid + t * kTileW + x) =
          make_float4(acc[0], acc[1], acc[2], acc[3]);
    }
  } else {
    for (int i = tid; i < in_rows * kTileW; i += kThreads) {
      const int t = i / kTileW, x = i % kTileW;
      const float *src = in + t * in_pitch + x;
      float acc = 0.0f;
#pragma unroll
      for (int d = 0; d <= 2 * RB; d++) acc += taps.wx[d] * src[d * channels];
      mid[i] = acc;
    }
  }
  __syncthreads();

  // The column pass: thread (x, strip) streams rows strip * 8 .. strip * 8 + 8 + 2RB of mid
  // through 8 accumulators.
  constexpr int strips = kTileH / kColumnOutputs;
  for (int i = tid; i < kTileW * strips; i += kThreads) {
    const int x = i % kTileW, t0 = (i / kTileW) * kColumnOutputs;
    float acc[kColumnOutputs];
#pragma unroll
    for (int o = 0; o < kColumnOutputs; o++) acc[o] = 0.0f;
#pragma unroll
    for (int k = 0; k < kColumnOutputs + 2 * RB; k++) {
      const float v = mid[(t0 + k) * kTileW + x];
#pragma unroll
      for (int o = 0; o < kColumnOutputs; o++) {
        const int d = k - o;
        if (d >= 0 && d <= 2 * RB) acc[o] += taps.wy[d] * v;
      }
    }
    if (x0 + x >= row_elems) continue;
#pragma unroll
    for (int o = 0; o < kColumnOutputs; o++) {
      const int row = y0 + t0 + o;
      if (row < h) glc_store_pixel(out + static_cast<size_t>(row) * row_elems + x0 + x, acc[o]);
    }
  }
}

template <int RB>
padded_taps<RB> pad_taps(const glc_filter_kernel *k) {
  padded_taps<RB> p;
  for (int d = 0; d <= 2 * RB; d++) p.wx[d] = p.wy[d] = 0.0f;
  for (int b = 0; b < k->kw; b++) p.wx[RB + b - k->kw / 2] = k->wx[b];
  for (int a = 0; a < k->kh; a++) p.wy[RB + a - k->kh / 2] = k->wy[a];
  return p;
}

template <typename T, int RB>
int launch_fused(int h, int w, int channels, const glc_filter_kernel *kernel, int mode,
                 const void *img, void *out, cudaStream_t stream) {
  const int in_pitch = kTileW + 2 * RB * channels;
  const int in_rows = kTileH + 2 * RB;
  const unsigned shared_bytes = (in_rows * in_pitch + in_rows * kTileW) * sizeof(float);
  auto *kernel_fn = filter_fused_separable<T, RB>;
  int code = GLC_CUDA(cudaFuncSetAttribute, kernel_fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                      static_cast<int>(shared_bytes));
  if (code) return code;
  const int row_elems = w * channels;
  // 4-element loads need each row, and so the image, 4-element aligned
  const int vector_rows = row_elems % 4 == 0 && glc_all_aligned(4 * sizeof(T), img);
  const dim3 grid(static_cast<unsigned>(glc_blocks_to_cover(row_elems, kTileW)),
                  static_cast<unsigned>(glc_blocks_to_cover(h, kTileH)));
  return glc_launch_shared(kernel_fn, "filter_fused_separable", grid, dim3(kThreads), shared_bytes,
                           stream, static_cast<const T *>(img), static_cast<T *>(out), h, w,
                           channels, mode, vector_rows, pad_taps<RB>(kernel));
}

template <typename T>
int run_fused(int h, int w, int channels, const glc_filter_kernel *kernel, int mode,
              const void *img, void *out, cudaStream_t stream) {
  // the reach of the kernel on either side of its centre, along either axis
  int reach = 0;
  for (int n : {kernel->kw, kernel->kh}) {
    reach = n / 2 > reach ? n / 2 : reach;
    reach = n - 1 - n / 2 > reach ? n - 1 - n / 2 : reach;
  }
  if (reach <= 4) return launch_fused<T, 4>(h, w, channels, kernel, mode, img, out, stream);
  if (reach <= 8) return launch_fused<T, 8>(h, w, channels, kernel, mode, img, out, stream);
  if (reach <= 16) return launch_fused<T, 16>(h, w, channels, kernel, mode, img, out, stream);
  return launch_fused<T, 32>(h, w, channels, kernel, mode, img, out, stream);
}

}  // namespace

int glc_filter_fused(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                     int mode, const void *img, void *out, cudaStream_t stream) {
  if (!kernel->separable) return glc_fail(cudaErrorInvalidValue, "glc_filter_fused");
  if (dtype == GLC_U8) return run_fused<uint8_t>(h, w, channels, kernel, mode, img, out, stream);
  return run_fused<float>(h, w, channels, kernel, mode, img, out, stream);
}
