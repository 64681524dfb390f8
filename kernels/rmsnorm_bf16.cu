// rmsnorm_bf16.cu — RMSNorm over the last dimension in bf16 with fp32 accumulation, written
// the way transformer runtimes write it: the toolkit's cuda_bf16.h and cooperative groups,
// fixed-width integers, a block size as a template parameter (entries are name expressions:
// rmsnorm_fwd<256>), the per-row 1/rms saved for backward.
//   forward:  y = x * r * w,  r = rsqrt(mean(x^2) + eps)           (one block per row)
//   backward: gx = r * w * gy - x * r^3 * mean(x * w * gy)
// Needs "toolkit_headers": true (kcache then gives NVRTC the toolkit's include folder).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <type_traits>

namespace cg = cooperative_groups;

// The sum of v over the block (BLOCK threads, a multiple of 32), returned to every thread.
template <int BLOCK>
__device__ float block_sum(float v, float *smem) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps");
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  v = cg::reduce(warp, v, cg::plus<float>());
  if (warp.thread_rank() == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < BLOCK / 32 ? smem[threadIdx.x] : 0.f;
    t = cg::reduce(warp, t, cg::plus<float>());
    if (threadIdx.x == 0) smem[0] = t;
  }
  __syncthreads();
  float r = smem[0];
  __syncthreads();
  return r;
}

template <int BLOCK>
__global__ void rmsnorm_fwd(const __nv_bfloat16 *x, const __nv_bfloat16 *w, __nv_bfloat16 *y, float *rstd,
                            int64_t C, float eps) {
  static_assert(std::is_same<decltype(C), int64_t>::value, "64-bit row length");
  __shared__ float smem[32];
  const __nv_bfloat16 *xr = x + (int64_t)blockIdx.x * C;
  __nv_bfloat16 *yr = y + (int64_t)blockIdx.x * C;
  float ss = 0.f;
  for (int64_t j = threadIdx.x; j < C; j += BLOCK) {
    float v = __bfloat162float(xr[j]);
    ss += v * v;
  }
  ss = block_sum<BLOCK>(ss, smem);
  const float r = rsqrtf(ss / (float)C + eps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
  for (int64_t j = threadIdx.x; j < C; j += BLOCK)
    yr[j] = __float2bfloat16(__bfloat162float(xr[j]) * r * __bfloat162float(w[j]));
}

template <int BLOCK>
__global__ void rmsnorm_bwd(const __nv_bfloat16 *gy, const __nv_bfloat16 *x, const __nv_bfloat16 *w,
                            const float *rstd, __nv_bfloat16 *gx, int64_t C) {
  __shared__ float smem[32];
  const int64_t off = (int64_t)blockIdx.x * C;
  float dot = 0.f;
  for (int64_t j = threadIdx.x; j < C; j += BLOCK)
    dot += __bfloat162float(x[off + j]) * __bfloat162float(w[j]) * __bfloat162float(gy[off + j]);
  dot = block_sum<BLOCK>(dot, smem);
  const float r = rstd[blockIdx.x], k = r * r * r * dot / (float)C;
  for (int64_t j = threadIdx.x; j < C; j += BLOCK) {
    float g = r * __bfloat162float(w[j]) * __bfloat162float(gy[off + j]) - __bfloat162float(x[off + j]) * k;
    gx[off + j] = __float2bfloat16(g);
  }
}
