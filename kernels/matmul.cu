// matmul.cu — tiled C[M,N] = A[M,K] @ B[K,N] (+ bias[N]); backward kernels for A, B and bias.
// Templated on the tile so that name expressions (matmul_bias_fwd<16>) are exercised.
#include "common.cuh"

template <int T>
__global__ void matmul_bias_fwd(const float *A, const float *B, const float *bias, float *C, int M, int N, int K) {
  __shared__ float As[T][T], Bs[T][T];
  int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += T) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[(long long)row * K + k0 + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(long long)(k0 + threadIdx.y) * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[(long long)row * N + col] = acc + (bias ? bias[col] : 0.f);
}
template __global__ void matmul_bias_fwd<16>(const float *, const float *, const float *, float *, int, int, int);

// dA[M,K] = dC[M,N] @ B^T
extern "C" __global__ void matmul_bwd_a(const float *dC, const float *B, float *dA, int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= K) return;
  float acc = 0.f;
  for (int j = 0; j < N; j++) acc += dC[(long long)row * N + j] * B[(long long)col * N + j];
  dA[(long long)row * K + col] = acc;
}
// dB[K,N] = A^T @ dC
extern "C" __global__ void matmul_bwd_b(const float *A, const float *dC, float *dB, int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= K || col >= N) return;
  float acc = 0.f;
  for (int i = 0; i < M; i++) acc += A[(long long)i * K + row] * dC[(long long)i * N + col];
  dB[(long long)row * N + col] = acc;
}
// dbias[N] = sum over rows of dC
extern "C" __global__ void bias_bwd(const float *dC, float *dbias, int M, int N) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= N) return;
  float acc = 0.f;
  for (int i = 0; i < M; i++) acc += dC[(long long)i * N + col];
  dbias[col] = acc;
}
