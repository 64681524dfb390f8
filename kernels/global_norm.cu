// global_norm.cu — the squared global norm of a model's gradients, sum(g^2) over g [N] in
// bf16 with fp32 accumulation, as trainers compute it for gradient clipping (llm.c's
// global_norm_squared): a persistent grid sized by the device (the spec's grid is
// device_sm_count blocks per SM's worth of threads, at most one block per BLOCK elements), each
// block walks the tensor with a grid-stride loop, reduces its share, and ONE thread per block
// atomically adds it into the output — which therefore must be zero before the kernel runs:
// the spec's forward zeroes it with a {"zero": "output:0"} step on the same stream, never a
// kernel of ours.  The atomic order differs between runs: the result is exact to fp32
// rounding, not bit-reproducible.
// Needs "toolkit_headers": true.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace cg = cooperative_groups;

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
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  acc = cg::reduce(warp, acc, cg::plus<float>());
  if (warp.thread_rank() == 0) red[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < BLOCK / 32 ? red[threadIdx.x] : 0.f;
    t = cg::reduce(warp, t, cg::plus<float>());
    if (threadIdx.x == 0) atomicAdd(out, t);
  }
}
