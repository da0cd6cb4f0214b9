// Mean squared error and its gradient in one pass: loss = mean((y - t)^2), gy = 2 (y - t) / n.
// Deterministic two-level reduction in one launch: each block writes its partial sum (double),
// and the last block to finish (ticket counter) adds the partials in a fixed order, writes the
// loss and resets the counter to 0 for the next launch. n must be a multiple of 4.
#define LOSS_THREADS 256

__device__ __forceinline__ double block_sum(double s, double* shared) {
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) shared[warp] = s;
  __syncthreads();
  s = threadIdx.x < LOSS_THREADS / 32 ? shared[threadIdx.x] : 0.0;
  if (warp == 0)
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  __syncthreads();
  return s;  // valid in thread 0
}

extern "C" __global__ void __launch_bounds__(LOSS_THREADS)
    mse_loss_grad(const float* __restrict__ y, const float* __restrict__ t,
                  float* __restrict__ gy, float* __restrict__ loss,
                  double* __restrict__ partials, unsigned* __restrict__ ticket, long long n) {
  __shared__ double shared[LOSS_THREADS / 32];
  __shared__ bool last;
  const float gscale = 2.0f / (float)n;
  const long long n4 = n / 4, stride = (long long)gridDim.x * blockDim.x;
  double s = 0.0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(y) + i);
    const float4 b = __ldg(reinterpret_cast<const float4*>(t) + i);
    const float4 d = make_float4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w);
    s += (double)(d.x * d.x + d.y * d.y) + (double)(d.z * d.z + d.w * d.w);
    reinterpret_cast<float4*>(gy)[i] =
        make_float4(d.x * gscale, d.y * gscale, d.z * gscale, d.w * gscale);
  }
  s = block_sum(s, shared);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  double total = 0.0;
  for (int b = threadIdx.x; b < (int)gridDim.x; b += LOSS_THREADS) total += __ldcg(partials + b);
  total = block_sum(total, shared);
  if (threadIdx.x == 0) {
    loss[0] = (float)(total / (double)n);
    *ticket = 0u;
  }
}
