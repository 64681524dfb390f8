// global_norm.cu — the squared global norm of a model's gradients, sum(g^2) over g [N] in
// bf16 with fp32 accumulation, as trainers compute it for gradient clipping (llm.c's
// global_norm_squared): a persistent grid sized by the device (the spec's grid is as many
// blocks as its SMs hold at once, device_sm_count × device_max_threads_per_sm / BLOCK, and at
// most one block per BLOCK elements), each block walks the tensor with a grid-stride loop, reduces its share, and ONE thread per block
// atomically adds it into the output — which therefore must be zero before the kernel runs:
// the spec's forward zeroes it with a {"zero": "output:0"} step on the same stream, never a
// kernel of ours.  The atomic order differs between runs: the result is exact to fp32
// rounding, not bit-reproducible.
// Warp sums by shuffles.  Needs "toolkit_headers": true (cuda_bf16.h, stdint.h).
#include <cuda_bf16.h>
#include <stdint.h>

__device__ __forceinline__ float global_norm_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    global_norm_squared(float *__restrict__ out, const __nv_bfloat16 *__restrict__ g, int64_t n) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps");
  __shared__ float red[BLOCK / 32];
  float acc = 0.f;
  for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) {
    const float v = __bfloat162float(g[i]);
    acc += v * v;
  }
  acc = global_norm_warp_sum(acc);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < BLOCK / 32 ? red[threadIdx.x] : 0.f;
    t = global_norm_warp_sum(t);
    if (threadIdx.x == 0) atomicAdd(out, t);
  }
}
