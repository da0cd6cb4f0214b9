// AdamW (decoupled weight decay, as torch.optim.AdamW) over a list of float32 tensors in ONE
// launch. The host passes device arrays of pointers (params, grads, first and second moments),
// the element counts, and the first block of each tensor (block_start, ntensors + 1 entries, the
// last being the grid size). Each block updates ADAMW_CHUNK consecutive elements of one tensor
// with float4 loads and stores (pointers must be 16-byte aligned); a tensor's last partial float4
// is done element by element.
//
//   p <- p * (1 - lr * wd)
//   m <- b1 m + (1 - b1) g ;  v <- b2 v + (1 - b2) g^2
//   p <- p - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),   bc_i = 1 - b_i^step
#define ADAMW_THREADS 256
#define ADAMW_VECS 4                                      // float4s per thread
#define ADAMW_CHUNK (ADAMW_THREADS * ADAMW_VECS * 4)      // elements per block

struct AdamWScalars {
  float b1, b2, eps, decay, step_size, inv_sqrt_bc2;
};

__device__ __forceinline__ void adamw_one(float& p, float g, float& m, float& v,
                                          const AdamWScalars& s) {
  p *= s.decay;
  m = fmaf(s.b1, m, (1.0f - s.b1) * g);
  v = fmaf(s.b2, v, (1.0f - s.b2) * g * g);
  p -= s.step_size * m / fmaf(sqrtf(v), s.inv_sqrt_bc2, s.eps);
}

extern "C" __global__ void __launch_bounds__(ADAMW_THREADS)
    adamw_multi(const unsigned long long* __restrict__ params,
                const unsigned long long* __restrict__ grads,
                const unsigned long long* __restrict__ exp_avg,
                const unsigned long long* __restrict__ exp_avg_sq,
                const long long* __restrict__ sizes, const int* __restrict__ block_start,
                int ntensors, float b1, float b2, float eps, float decay, float step_size,
                float inv_sqrt_bc2) {
  // Few tensors per launch: a linear scan finds this block's tensor.
  int t = 0;
  while (t + 1 < ntensors && block_start[t + 1] <= (int)blockIdx.x) ++t;
  const long long n = sizes[t];
  float* __restrict__ p = reinterpret_cast<float*>(params[t]);
  const float* __restrict__ g = reinterpret_cast<const float*>(grads[t]);
  float* __restrict__ m = reinterpret_cast<float*>(exp_avg[t]);
  float* __restrict__ v = reinterpret_cast<float*>(exp_avg_sq[t]);
  const AdamWScalars s{b1, b2, eps, decay, step_size, inv_sqrt_bc2};
  const long long base = (long long)(blockIdx.x - block_start[t]) * ADAMW_CHUNK;

#pragma unroll
  for (int j = 0; j < ADAMW_VECS; ++j) {
    const long long e = base + ((long long)j * ADAMW_THREADS + threadIdx.x) * 4;
    if (e + 3 < n) {
      float4 pp = *reinterpret_cast<const float4*>(p + e);
      const float4 gg = __ldg(reinterpret_cast<const float4*>(g + e));
      float4 mm = *reinterpret_cast<const float4*>(m + e);
      float4 vv = *reinterpret_cast<const float4*>(v + e);
      adamw_one(pp.x, gg.x, mm.x, vv.x, s);
      adamw_one(pp.y, gg.y, mm.y, vv.y, s);
      adamw_one(pp.z, gg.z, mm.z, vv.z, s);
      adamw_one(pp.w, gg.w, mm.w, vv.w, s);
      *reinterpret_cast<float4*>(p + e) = pp;
      *reinterpret_cast<float4*>(m + e) = mm;
      *reinterpret_cast<float4*>(v + e) = vv;
    } else {
      for (long long i = e; i < n; ++i) adamw_one(p[i], g[i], m[i], v[i], s);
    }
  }
}
