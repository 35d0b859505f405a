// Filter variant 0: the direct 2-D correlation from global memory. One thread per output
// element; each of the kh x kw taps is a load through the boundary maps, so a 17 x 17 Gaussian
// issues 289 loads per element, served by L1/L2 but bounded by the load units
// (docs/labs/image.md).
#include "filter.cuh"

namespace {

// One thread per element (x over row elements, y over rows): neighbouring threads read
// neighbouring addresses for every tap, so each tap's warp load is coalesced.
template <typename T>
__global__ void filter_global_direct(const T *img, T *out, int h, int w, int channels, int mode,
                                     glc_taps_2d taps) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (e >= w * channels || row >= h) return;
  const int col = e / channels, channel = e % channels;
  const int top = row - taps.kh / 2, left = col - taps.kw / 2;
  float sum = 0.0f;
  for (int a = 0; a < taps.kh; a++)
    for (int b = 0; b < taps.kw; b++)
      sum += taps.w[a * taps.kw + b] *
             glc_load_mapped(img, h, w, channels, top + a, left + b, channel, mode);
  glc_store_pixel(out + static_cast<size_t>(row) * w * channels + e, sum);
}

template <typename T>
int launch_global(int h, int w, int channels, const glc_taps_2d &taps, int mode, const void *img,
                  void *out, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>(glc_blocks_to_cover(static_cast<size_t>(w) * channels, 32)),
                  static_cast<unsigned>(glc_blocks_to_cover(h, 8)));
  return glc_launch(filter_global_direct<T>, "filter_global_direct", grid, block, stream,
                    static_cast<const T *>(img), static_cast<T *>(out), h, w, channels, mode, taps);
}

}  // namespace

int glc_filter_global(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                      int mode, const void *img, void *out, cudaStream_t stream) {
  const glc_taps_2d taps = glc_direct_taps(kernel);
  if (dtype == GLC_U8) return launch_global<uint8_t>(h, w, channels, taps, mode, img, out, stream);
  return launch_global<float>(h, w, channels, taps, mode, img, out, stream);
}
