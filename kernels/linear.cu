// linear.cu — a linear layer y = x W^T + b (x [M, K], W [N, K] as PyTorch stores it, b [N])
// and its backward the way a trainer runs it over micro-batches: dx is a fresh tensor, but dW
// and db are ADDED INTO the caller's gradient buffers (the spec's "grad": "accumulate"), so
// the gradients of several micro-batches sum where the optimizer will read them.  One tiled
// matmul template serves all three products, its operands' layouts and whether it adds into
// C or overwrites it as template parameters (the spec's entries are name expressions); every
// element of C belongs to one thread, so accumulating needs no atomics.
//   forward:   y  = x W^T + b              linear_gemm<false, true,  false>
//   backward:  dx = dy W                   linear_gemm<false, false, false>
//              dW += dy^T x                linear_gemm<true,  false, true>
//              db += sum over rows of dy   linear_bias_grad
#include "common.cuh"

// C[Mc, Nc] (+)= op(A)[Mc, Kc] op(B)[Kc, Nc] (+ bias[Nc] when bias is not null), all row-major:
// op(A)(i, k) = A_T ? A[k * Mc + i] : A[i * Kc + k];  op(B)(k, j) = B_T ? B[j * Kc + k] : B[k * Nc + j].
template <bool A_T, bool B_T, bool ACCUMULATE>
__global__ void linear_gemm(const float *__restrict__ A, const float *__restrict__ B, const float *__restrict__ bias,
                            float *__restrict__ C, int Mc, int Nc, int Kc) {
  __shared__ float ta[KC_TILE][KC_TILE + 1], tb[KC_TILE][KC_TILE + 1];
  const int i = blockIdx.y * KC_TILE + threadIdx.y, j = blockIdx.x * KC_TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < Kc; k0 += KC_TILE) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] =
        i < Mc && ka < Kc ? (A_T ? A[(long long)ka * Mc + i] : A[(long long)i * Kc + ka]) : 0.f;
    tb[threadIdx.y][threadIdx.x] =
        kb < Kc && j < Nc ? (B_T ? B[(long long)j * Kc + kb] : B[(long long)kb * Nc + j]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < KC_TILE; k++) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (i < Mc && j < Nc) {
    if (bias) acc += bias[j];
    float *c = &C[(long long)i * Nc + j];
    *c = ACCUMULATE ? *c + acc : acc;
  }
}

// db[n] += sum over m of dy[m, n]: one thread per column, rows walked in order.
extern "C" __global__ void linear_bias_grad(const float *__restrict__ dy, float *__restrict__ db, int M, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float acc = 0.f;
  for (int m = 0; m < M; m++) acc += dy[(long long)m * N + n];
  db[n] += acc;
}
