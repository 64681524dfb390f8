// attn_softmax.cu — attention's scaled row softmax, P = softmax(scale * S) over each row of
// S [R, C], written the way attention code writes it when a row fits on chip: the block loads
// its row ONCE into dynamic shared memory (C floats, the spec's "shared": "C * 4" — above the
// default 48 KiB from C = 12289 on, so kcache raises the kernel's limit at load and refuses a
// row beyond the device's opt-in maximum before launch), and max, sum and the normalised
// values are read from there, never from global memory again.  `scale` (1/sqrt(head_dim)) is
// a runtime argument: one compile serves every head size.
//   forward:  y = exp(scale * x - m) / sum,   m = max(scale * x)        (one block per row)
//   backward: gx = scale * y * (gy - sum(gy * y))
// Block size is a template parameter (entries are rmsnorm-style name expressions); warp
// reductions by shuffles (cooperative groups' reduce would do the same, but its headers cost
// NVRTC about 2 s per architecture, which `kcache prewarm` pays for every target).  Needs
// "toolkit_headers": true (stdint.h).
#include <stdint.h>

struct attn_max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct attn_sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Reduce v over the warp with op (butterfly: every lane gets the result).
template <typename Op>
__device__ __forceinline__ float attn_warp_reduce(float v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduce v over the block (BLOCK threads, whole warps) with op; every thread gets the result.
// `identity` fills the lanes of the second round that have no warp behind them (-inf for max,
// 0 for a sum: padding with a real partial would count it again).
template <int BLOCK, typename Op>
__device__ __forceinline__ float attn_block_reduce(float v, float *red, Op op, float identity) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps");
  v = attn_warp_reduce(v, op);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < BLOCK / 32 ? red[threadIdx.x] : identity;
    t = attn_warp_reduce(t, op);
    if (threadIdx.x == 0) red[0] = t;
  }
  __syncthreads();
  float r = red[0];
  __syncthreads();
  return r;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    attn_softmax_fwd(const float *__restrict__ x, float *__restrict__ y, int64_t C, float scale) {
  extern __shared__ float row[];  // [C]: the row, scaled, then its exponentials
  __shared__ float red[32];
  const float *xr = x + (int64_t)blockIdx.x * C;
  float *yr = y + (int64_t)blockIdx.x * C;
  float m = -__int_as_float(0x7f800000);
  for (int64_t j = threadIdx.x; j < C; j += BLOCK) {
    const float v = scale * xr[j];
    row[j] = v;
    m = fmaxf(m, v);
  }
  m = attn_block_reduce<BLOCK>(m, red, attn_max(), -__int_as_float(0x7f800000));
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < C; j += BLOCK) {
    const float e = __expf(row[j] - m);
    row[j] = e;
    s += e;
  }
  s = attn_block_reduce<BLOCK>(s, red, attn_sum(), 0.f);
  const float inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < C; j += BLOCK) yr[j] = row[j] * inv;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    attn_softmax_bwd(const float *__restrict__ gy, const float *__restrict__ y, float *__restrict__ gx, int64_t C,
                     float scale) {
  extern __shared__ float row[];  // [C]: the row of y, read twice
  __shared__ float red[32];
  const int64_t off = (int64_t)blockIdx.x * C;
  float d = 0.f;
  for (int64_t j = threadIdx.x; j < C; j += BLOCK) {
    const float v = y[off + j];
    row[j] = v;
    d += v * gy[off + j];
  }
  d = attn_block_reduce<BLOCK>(d, red, attn_sum(), 0.f);
  for (int64_t j = threadIdx.x; j < C; j += BLOCK) gx[off + j] = scale * row[j] * (gy[off + j] - d);
}
