// TF32 tensor-core variant of the forward GEMM: Y = dropout(act(A.B + bias)), Z saved when given.
// Same arguments and epilogue as gemm_bias_act_fwd (gemm.cu); operands are rounded to TF32
// (cvt.rna, 10-bit mantissa) and multiplied by mma.sync m16n8k8 with fp32 accumulation (inline
// PTX, no <mma.h>, so that NVRTC builds it too).
//
// 128x128 block tile, BK = 16, 8 warps as 2 (M) x 4 (N), each warp a 64x32 tile (4x4 MMAs).
// Tiles go global -> shared with 16-byte cp.async (zero-filled outside the matrix), two stages.
// Shared rows are padded (A: 20 floats, B: 136 floats) so the fragment loads do not conflict.
// The epilogue stages 16x32 slices of each warp's tile through shared memory (reusing the A
// tiles) and writes float4s. M, N, K must be multiples of 4.
#include "act.cuh"
#include "philox.cuh"

namespace {

constexpr int BM = 128, BN = 128, BK = 16;
constexpr int LDA = BK + 4;   // A fragment rows g*20 + t: 32 distinct banks
constexpr int LDB = BN + 8;   // B fragment rows t*136 + g: 32 distinct banks
constexpr int LDC = 36;       // per-warp 16x32 staging slice
constexpr int THREADS = 256;
constexpr int A_STAGE = BM * LDA;  // floats
constexpr int B_STAGE = BK * LDB;

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// d += a . b for one 16x8x8 tile (PTX ISA fragment layouts of mma.m16n8k8 .tf32).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void load_tiles(float* As, float* Bs, const float* A, const float* B,
                                           int M, int N, int K, int bm, int bn, int k0) {
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int idx = threadIdx.x + q * THREADS;
    const int ar = idx >> 2, ak = (idx & 3) * 4;  // A: 128 rows x 4 float4
    const bool av = bm + ar < M && k0 + ak < K;
    cp_async16(As + ar * LDA + ak, av ? A + (size_t)(bm + ar) * K + k0 + ak : A, av);
    const int bk = idx >> 5, bc = (idx & 31) * 4;  // B: 16 rows x 32 float4
    const bool bv = k0 + bk < K && bn + bc < N;
    cp_async16(Bs + bk * LDB + bc, bv ? B + (size_t)(k0 + bk) * N + bn + bc : B, bv);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    gemm_tf32_bias_act_fwd(const float* __restrict__ A, const float* __restrict__ B,
                           const float* __restrict__ bias, float* __restrict__ Y,
                           float* __restrict__ Z, int M, int N, int K, int act, unsigned drop_thr,
                           float drop_scale, unsigned long long seed) {
  __shared__ __align__(128) float As[2 * A_STAGE];
  __shared__ __align__(128) float Bs[2 * B_STAGE];
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;

  const int g = lane >> 2, t = lane & 3;  // MMA fragment coordinates

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;

  const int nk = (K + BK - 1) / BK;
  load_tiles(As, Bs, A, B, M, N, K, bm, bn, 0);
  cp_async_commit();
  for (int kt = 0; kt < nk; ++kt) {
    const int cur = kt & 1;
    if (kt + 1 < nk) {
      load_tiles(As + (cur ^ 1) * A_STAGE, Bs + (cur ^ 1) * B_STAGE, A, B, M, N, K, bm, bn,
                 (kt + 1) * BK);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const float* as = As + cur * A_STAGE;
    const float* bs = Bs + cur * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned af[4][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float* p = as + (wm + i * 16 + g) * LDA + kk + t;
        af[i][0] = to_tf32(p[0]);
        af[i][1] = to_tf32(p[8 * LDA]);
        af[i][2] = to_tf32(p[4]);
        af[i][3] = to_tf32(p[8 * LDA + 4]);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float* q = bs + (kk + t) * LDB + wn + j * 8 + g;
        bf[j][0] = to_tf32(q[0]);
        bf[j][1] = to_tf32(q[4 * LDB]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_tf32(acc[i][j], af[i], bf[j]);
    }
    __syncthreads();  // the next iteration's cp.async overwrites this stage
  }

  // Epilogue: the A tiles are free now; each warp stages one 16x32 slice at a time.
  float* cs = As + warp * 16 * LDC;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      *reinterpret_cast<float2*>(cs + g * LDC + j * 8 + 2 * t) =
          make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(cs + (g + 8) * LDC + j * 8 + 2 * t) =
          make_float2(acc[i][j][2], acc[i][j][3]);
    }
    __syncwarp();
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int e = lane + 32 * q, r = e >> 3, c = (e & 7) * 4;
      const int row = bm + wm + i * 16 + r, col = bn + wn + c;
      if (row < M && col < N) {
        float4 v = *reinterpret_cast<const float4*>(cs + r * LDC + c);
        const size_t idx = (size_t)row * N + col;
        if (bias != nullptr) {
          const float4 b = __ldg(reinterpret_cast<const float4*>(bias + col));
          v = make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w);
        }
        if (Z != nullptr) *reinterpret_cast<float4*>(Z + idx) = v;
        v = act_fwd4(v, act);
        if (drop_thr != 0u) v = dropout4(v, idx, drop_thr, drop_scale, seed);
        *reinterpret_cast<float4*>(Y + idx) = v;
      }
    }
    __syncwarp();
  }
}
