// adamw.cu — one AdamW step over a flat parameter buffer, IN PLACE, the way trainers write it
// (llm.c's adamw_kernel3, PyTorch's fused AdamW): fp32 master parameters and both moments
// updated where they are, gradients read in bf16, every hyper-parameter a runtime argument —
// learning rate, beta1, beta2, eps, weight decay and the step count (the bias corrections
// 1 - beta^t are computed from it here) — so a learning-rate schedule never recompiles.  The
// grid is sized by the device (the spec: device_sm_count × blocks per SM, at most one block
// per BLOCK elements) and each thread walks the buffer with a grid-stride loop.
//   m = lerp(g, m, beta1)          = beta1 * m + (1 - beta1) * g
//   v = lerp(g * g, v, beta2)      = beta2 * v + (1 - beta2) * g^2
//   p -= lr * (m / (1 - beta1^t) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * p)
// Needs "toolkit_headers": true.
#include <cuda_bf16.h>
#include <stdint.h>

// start + weight * (end - start) in two fused multiply-adds, as llm.c writes it.
__device__ __forceinline__ float adamw_lerp(float start, float end, float weight) {
  return fmaf(weight, end, fmaf(-weight, start, start));
}

template <int BLOCK, typename Tgrad>
__global__ void __launch_bounds__(BLOCK)
    adamw_step(float *__restrict__ params, const Tgrad *__restrict__ grads, float *__restrict__ m,
               float *__restrict__ v, int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
               uint32_t step) {
  const float bc1 = 1.f - powf(beta1, (float)step), bc2 = 1.f - powf(beta2, (float)step);
  for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) {
    const float g = (float)grads[i];
    const float mi = adamw_lerp(g, m[i], beta1), vi = adamw_lerp(g * g, v[i], beta2);
    m[i] = mi;
    v[i] = vi;
    const float p = params[i];
    params[i] = p - lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + weight_decay * p);
  }
}
