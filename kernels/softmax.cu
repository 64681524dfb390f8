// softmax.cu — row softmax over [R, C] (one block per row, 256 threads), and its backward:
// gx = y * (gy - sum(gy * y)).
#include "common.cuh"

extern "C" __global__ void softmax_fwd(const float *x, float *y, int C) {
  __shared__ float smem[256];
  float m, sum;
  kc_row_softmax(x + (long long)blockIdx.x * C, y + (long long)blockIdx.x * C, C, smem, &m, &sum);
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
