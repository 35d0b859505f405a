// Filter variant 1: the direct 2-D correlation read through a texture object (S1, "Texture
// memory"): the image is copied into a cudaArray, whose layout keeps 2-D neighbourhoods together
// in the texture cache, and the texture unit's address mode does the boundary, so the kernel
// has no index maps. Point sampling, normalized coordinates (the wrap and mirror address modes
// exist only with them), one channel. scipy's "mirror" (the edge not repeated) has no address
// mode: the binding refuses it. The cudaArray is allocated, filled and freed in each call, and
// the call waits for its stream before it frees them (S1 compares texture reads, not
// allocation; docs/labs/image.md).
#include "filter.cuh"

namespace {

// One thread per pixel; the texel of pixel (y, x) is at ((x + 0.5) / w, (y + 0.5) / h), and the
// address mode maps coordinates outside [0, 1).
template <typename T>
__global__ void filter_texture_direct(cudaTextureObject_t tex, T *out, int h, int w,
                                      glc_taps_2d taps) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col >= w || row >= h) return;
  const float inv_w = 1.0f / w, inv_h = 1.0f / h;
  const int top = row - taps.kh / 2, left = col - taps.kw / 2;
  float sum = 0.0f;
  for (int a = 0; a < taps.kh; a++) {
    const float v = (top + a + 0.5f) * inv_h;
    for (int b = 0; b < taps.kw; b++) {
      const float u = (left + b + 0.5f) * inv_w;
      sum += taps.w[a * taps.kw + b] * glc_pixel_value(tex2D<T>(tex, u, v));
    }
  }
  glc_store_pixel(out + static_cast<size_t>(row) * w + col, sum);
}

cudaTextureAddressMode address_mode(int mode) {
  switch (mode) {
    case GLC_MODE_NEAREST:
      return cudaAddressModeClamp;
    case GLC_MODE_CONSTANT:
      return cudaAddressModeBorder;  // the border colour is zero
    case GLC_MODE_WRAP:
      return cudaAddressModeWrap;
    default:  // GLC_MODE_REFLECT: mirrored at every edge, the edge texel repeated
      return cudaAddressModeMirror;
  }
}

// Frees what one call made, after the kernel that reads them has finished.
struct texture_resources {
  cudaArray_t array = nullptr;
  cudaTextureObject_t tex = 0;
  ~texture_resources() {
    if (tex) cudaDestroyTextureObject(tex);
    if (array) cudaFreeArray(array);
  }
};

template <typename T>
int run_texture(int h, int w, const glc_filter_kernel *kernel, int mode, const void *img, void *out,
                cudaStream_t stream) {
  texture_resources r;
  const cudaChannelFormatDesc format = cudaCreateChannelDesc<T>();
  int code = GLC_CUDA(cudaMallocArray, &r.array, &format, static_cast<size_t>(w),
                      static_cast<size_t>(h), 0);
  if (code) return code;
  const size_t row_bytes = static_cast<size_t>(w) * sizeof(T);
  code = GLC_CUDA(cudaMemcpy2DToArrayAsync, r.array, 0, 0, img, row_bytes, row_bytes,
                  static_cast<size_t>(h), cudaMemcpyDeviceToDevice, stream);
  if (code) return code;
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = r.array;
  cudaTextureDesc desc = {};
  desc.addressMode[0] = desc.addressMode[1] = address_mode(mode);
  desc.filterMode = cudaFilterModePoint;
  desc.readMode = cudaReadModeElementType;
  desc.normalizedCoords = 1;
  code = GLC_CUDA(cudaCreateTextureObject, &r.tex, &resource, &desc, nullptr);
  if (code) return code;
  const glc_taps_2d taps = glc_direct_taps(kernel);
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>(glc_blocks_to_cover(w, 32)),
                  static_cast<unsigned>(glc_blocks_to_cover(h, 8)));
  code = glc_launch(filter_texture_direct<T>, "filter_texture_direct", grid, block, stream, r.tex,
                    static_cast<T *>(out), h, w, taps);
  if (code) return code;
  return GLC_CUDA(cudaStreamSynchronize, stream);
}

}  // namespace

int glc_filter_texture(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                       int mode, const void *img, void *out, cudaStream_t stream) {
  if (channels != 1 || mode == GLC_MODE_MIRROR)
    return glc_fail(cudaErrorInvalidValue, "glc_filter_texture");
  if (dtype == GLC_U8) return run_texture<uint8_t>(h, w, kernel, mode, img, out, stream);
  return run_texture<float>(h, w, kernel, mode, img, out, stream);
}
