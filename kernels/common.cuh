// common.cuh — small helpers shared by kcache's bundled kernels (passed to NVRTC in memory).
#pragma once
#define KC_TILE 16
#define KC_NEG_INF (-__int_as_float(0x7f800000))  // NVRTC has no <math.h> INFINITY
__device__ __forceinline__ float kc_gelu(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float kc_gelu_grad(float x) {
  const float k = 0.7978845608028654f;
  float u = k * (x + 0.044715f * x * x * x);
  float t = tanhf(u);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}
// Block-wide sum over blockDim.x threads (a power of two, at most 1024), through shared memory.
__device__ __forceinline__ float kc_block_sum(float v, float *smem) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
    __syncthreads();
  }
  float r = smem[0];
  __syncthreads();
  return r;
}
__device__ __forceinline__ float kc_block_max(float v, float *smem) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) smem[threadIdx.x] = fmaxf(smem[threadIdx.x], smem[threadIdx.x + s]);
    __syncthreads();
  }
  float r = smem[0];
  __syncthreads();
  return r;
}
// Row softmax of x[0..C) into y (one block per row): returns the row's max and sum of exp.
__device__ __forceinline__ void kc_row_softmax(const float *x, float *y, int C, float *smem, float *max_out,
                                               float *sum_out) {
  float m = KC_NEG_INF;
  for (int j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, x[j]);
  m = kc_block_max(m, smem);
  float s = 0.f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) s += __expf(x[j] - m);
  s = kc_block_sum(s, smem);
  for (int j = threadIdx.x; j < C; j += blockDim.x) y[j] = __expf(x[j] - m) / s;
  *max_out = m;
  *sum_out = s;
}
