// layernorm.cu — y = (x - mean) * rstd * gamma + beta over rows of [R, D] (one block per row,
// 256 threads); saves mean and rstd; backward gives dx, and dgamma/dbeta by column.
#include "common.cuh"

extern "C" __global__ void layernorm_fwd(const float *x, const float *gamma, const float *beta, float *y,
                                         float *mean, float *rstd, int D, float eps) {
  __shared__ float smem[256];
  const float *xr = x + (long long)blockIdx.x * D;
  float s = 0.f;
  for (int j = threadIdx.x; j < D; j += blockDim.x) s += xr[j];
  float mu = kc_block_sum(s, smem) / D;
  float v = 0.f;
  for (int j = threadIdx.x; j < D; j += blockDim.x) v += (xr[j] - mu) * (xr[j] - mu);
  float r = rsqrtf(kc_block_sum(v, smem) / D + eps);
  for (int j = threadIdx.x; j < D; j += blockDim.x)
    y[(long long)blockIdx.x * D + j] = (xr[j] - mu) * r * gamma[j] + beta[j];
  if (threadIdx.x == 0) { mean[blockIdx.x] = mu; rstd[blockIdx.x] = r; }
}
extern "C" __global__ void layernorm_bwd_x(const float *gy, const float *x, const float *gamma, const float *mean,
                                           const float *rstd, float *gx, int D) {
  __shared__ float smem[256];
  long long o = (long long)blockIdx.x * D;
  float mu = mean[blockIdx.x], r = rstd[blockIdx.x];
  float a = 0.f, b = 0.f;
  for (int j = threadIdx.x; j < D; j += blockDim.x) {
    float g = gy[o + j] * gamma[j], xh = (x[o + j] - mu) * r;
    a += g;
    b += g * xh;
  }
  a = kc_block_sum(a, smem) / D;
  b = kc_block_sum(b, smem) / D;
  for (int j = threadIdx.x; j < D; j += blockDim.x) {
    float g = gy[o + j] * gamma[j], xh = (x[o + j] - mu) * r;
    gx[o + j] = r * (g - a - xh * b);
  }
}
extern "C" __global__ void layernorm_bwd_params(const float *gy, const float *x, const float *mean, const float *rstd,
                                                float *ggamma, float *gbeta, int R, int D) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= D) return;
  float gg = 0.f, gb = 0.f;
  for (int i = 0; i < R; i++) {
    float g = gy[(long long)i * D + j];
    gg += g * (x[(long long)i * D + j] - mean[i]) * rstd[i];
    gb += g;
  }
  ggamma[j] = gg;
  gbeta[j] = gb;
}
