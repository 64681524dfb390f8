// dropout.cu — dropout with a counter-based Philox4x32-10 generator: element i draws from
// counter (offset + i) under key seed, so a (seed, offset) pair always gives the same mask.
// The seed and offset arrive as arguments appended by kcache's philox wrapper.
#include "common.cuh"

__device__ __forceinline__ uint4 kc_philox4x32(uint2 key, uint4 ctr) {
#pragma unroll
  for (int r = 0; r < 10; r++) {
    unsigned hi0 = __umulhi(0xD2511F53u, ctr.x), lo0 = 0xD2511F53u * ctr.x;
    unsigned hi1 = __umulhi(0xCD9E8D57u, ctr.z), lo1 = 0xCD9E8D57u * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key.x += 0x9E3779B9u;
    key.y += 0xBB67AE85u;
  }
  return ctr;
}

extern "C" __global__ void dropout_fwd(const float *x, float *y, unsigned char *mask, float p, long long n,
                                       unsigned long long seed, unsigned long long offset) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long c = offset + (unsigned long long)i;
  uint4 r = kc_philox4x32(make_uint2((unsigned)seed, (unsigned)(seed >> 32)),
                          make_uint4((unsigned)c, (unsigned)(c >> 32), 0u, 0u));
  float u = (float)r.x * 2.3283064365386963e-10f;  // [0, 1)
  bool keep = u >= p;
  mask[i] = keep;
  y[i] = keep ? x[i] / (1.f - p) : 0.f;
}

extern "C" __global__ void dropout_bwd(const float *gy, const unsigned char *mask, float *gx, float p, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) gx[i] = mask[i] ? gy[i] / (1.f - p) : 0.f;
}
