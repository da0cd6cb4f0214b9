// Dropout with a stateless counter-based RNG (Philox4x32-10, philox.cuh): y = x * keep / (1 - p).
// Nothing is stored but y: the backward pass (and the GEMM epilogues that fuse dropout) recompute
// the mask from (seed, element index). Each thread handles one group of 4 elements per Philox
// call, with float4 loads and stores; a partial last group is done element by element.
#include "philox.cuh"

extern "C" __global__ void __launch_bounds__(256)
    dropout_fwd(const float* __restrict__ x, float* __restrict__ y, long long n, unsigned thr,
                float scale, unsigned long long seed) {
  const long long groups = (n + 3) / 4;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long grp = (long long)blockIdx.x * blockDim.x + threadIdx.x; grp < groups;
       grp += stride) {
    const long long e = grp * 4;
    if (e + 3 < n) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(x + e));
      *reinterpret_cast<float4*>(y + e) = dropout4(v, (unsigned long long)e, thr, scale, seed);
    } else {
      const uint4 r = dropout_bits((unsigned long long)grp, seed);
      const unsigned w[4] = {r.x, r.y, r.z, r.w};
      for (long long i = e; i < n; ++i) y[i] = (w[i - e] >> 8) >= thr ? x[i] * scale : 0.0f;
    }
  }
}
