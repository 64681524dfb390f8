// elementwise.cu — add, mul and GELU, forward and backward, over n contiguous floats.
#include "common.cuh"

extern "C" __global__ void add_fwd(const float *x, const float *y, float *z, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
}
extern "C" __global__ void add_bwd(const float *gz, float *gx, float *gy, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { gx[i] = gz[i]; gy[i] = gz[i]; }
}
extern "C" __global__ void mul_fwd(const float *x, const float *y, float *z, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] * y[i];
}
extern "C" __global__ void mul_bwd(const float *gz, const float *x, const float *y, float *gx, float *gy, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { gx[i] = gz[i] * y[i]; gy[i] = gz[i] * x[i]; }
}
extern "C" __global__ void gelu_fwd(const float *x, float *y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = kc_gelu(x[i]);
}
extern "C" __global__ void gelu_bwd(const float *gy, const float *x, float *gx, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) gx[i] = gy[i] * kc_gelu_grad(x[i]);
}
