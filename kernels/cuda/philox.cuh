// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// stateless counter-based generator used for dropout. A mirror in NumPy lives in
// kernels/philox.py; both must agree bit for bit.
//
// Dropout convention (shared by every kernel of the suite): element e of a tensor with seed s is
// kept iff (r >> 8) >= thr, where r is word (e % 4) of philox4x32_10(counter = (e / 4 low,
// e / 4 high, 0, 0), key = (s low, s high)) and thr = ceil(p * 2^24) for drop probability p.
// Kept elements are scaled by 1 / (1 - p).
#pragma once

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k.x += PHILOX_W0;
      k.y += PHILOX_W1;
    }
    const unsigned lo0 = PHILOX_M0 * c.x, hi0 = __umulhi(PHILOX_M0, c.x);
    const unsigned lo1 = PHILOX_M1 * c.z, hi1 = __umulhi(PHILOX_M1, c.z);
    c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
  }
  return c;
}

// The four random words of elements 4*group .. 4*group+3.
__device__ __forceinline__ uint4 dropout_bits(unsigned long long group, unsigned long long seed) {
  return philox4x32_10(make_uint4((unsigned)group, (unsigned)(group >> 32), 0u, 0u),
                       make_uint2((unsigned)seed, (unsigned)(seed >> 32)));
}

// Applies the dropout mask and scale to four consecutive elements starting at flat index
// `first` (a multiple of 4).
__device__ __forceinline__ float4 dropout4(float4 v, unsigned long long first, unsigned thr,
                                           float scale, unsigned long long seed) {
  const uint4 r = dropout_bits(first >> 2, seed);
  v.x = (r.x >> 8) >= thr ? v.x * scale : 0.0f;
  v.y = (r.y >> 8) >= thr ? v.y * scale : 0.0f;
  v.z = (r.z >> 8) >= thr ? v.z * scale : 0.0f;
  v.w = (r.w >> 8) >= thr ? v.w * scale : 0.0f;
  return v;
}
