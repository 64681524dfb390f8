// cross_entropy.cu — mean cross-entropy of softmax(logits[N, C]) against labels[N]: per-row
// probabilities are saved, the loss is summed with atomicAdd into loss[0] (zeroed by the
// first kernel); backward: glogits = (p - onehot(label)) * gloss / N.
#include "common.cuh"

extern "C" __global__ void xent_zero(float *loss) { loss[0] = 0.f; }

extern "C" __global__ void xent_fwd(const float *logits, const int *labels, float *probs, float *loss, int N, int C) {
  __shared__ float smem[256];
  const float *xr = logits + (long long)blockIdx.x * C;
  float m, s;
  kc_row_softmax(xr, probs + (long long)blockIdx.x * C, C, smem, &m, &s);
  if (threadIdx.x == 0) {
    int t = labels[blockIdx.x];
    float l = (t >= 0 && t < C) ? -(xr[t] - m - __logf(s)) : 0.f;
    atomicAdd(loss, l / N);
  }
}
extern "C" __global__ void xent_bwd(const float *gloss, const float *probs, const int *labels, float *glogits, int N, int C) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)N * C) return;
  int row = (int)(i / C), col = (int)(i % C);
  float onehot = labels[row] == col ? 1.f : 0.f;
  glogits[i] = (probs[i] - onehot) * gloss[0] / N;
}
