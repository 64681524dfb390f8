// softmax.cu — row softmax over [R, C] (one block per row, 256 threads), and its backward:
// gx = y * (gy - sum(gy * y)).
#include "common.cuh"

extern "C" __global__ void softmax_fwd(const float *x, float *y, int C) {
  __shared__ float smem[256];
  const float *xr = x + (long long)blockIdx.x * C;
  float *yr = y + (long long)blockIdx.x * C;
  float m = KC_NEG_INF;
  for (int j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, xr[j]);
  m = kc_block_max(m, smem);
  float s = 0.f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) s += __expf(xr[j] - m);
  s = kc_block_sum(s, smem);
  for (int j = threadIdx.x; j < C; j += blockDim.x) yr[j] = __expf(xr[j] - m) / s;
}
extern "C" __global__ void softmax_bwd(const float *gy, const float *y, float *gx, int C) {
  __shared__ float smem[256];
  const float *gr = gy + (long long)blockIdx.x * C, *yr = y + (long long)blockIdx.x * C;
  float *xr = gx + (long long)blockIdx.x * C;
  float d = 0.f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) d += gr[j] * yr[j];
  d = kc_block_sum(d, smem);
  for (int j = threadIdx.x; j < C; j += blockDim.x) xr[j] = yr[j] * (gr[j] - d);
}
