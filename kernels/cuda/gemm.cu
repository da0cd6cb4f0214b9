// FP32 GEMMs of the suite: forward Y = act(A.B + bias) and the two backward products.
//
// One main loop serves all three kernels: 128x128 block tile, BK = 8, 256 threads, each thread
// an 8x8 register block (two 4x4 quadrants 64 rows / 64 columns apart so that shared-memory
// reads are float4 and conflict-free), shared memory double-buffered with the next tile
// prefetched into registers, one __syncthreads per k-tile. Operands may be read transposed
// inside the tile loads (no transpose kernel): a tile whose memory rows run along K is stored
// transposed into shared memory (rows padded to 132 floats, so the scattered stores do not
// conflict), a tile whose memory rows run along M or N is copied as is. Every global access is a
// float4: all of M, N and K must be multiples of 4 (checked on the host). Edges are zero-filled on
// load and masked on store, so any such shape is handled.
//
//   gemm_bias_act_fwd:   Y = dropout(act(A.B + bias)), Z = A.B + bias saved when Z != NULL.
//   gemm_fwd_splitk_partial + gemm_splitk_epilogue: the same, K split over blockIdx.z, for
//                        grids of fewer blocks than the GPU has multiprocessors.
//   gemm_bwd_tn_dweight: gW = A^T.gZ with gZ = gY * act'(Z) computed in the prologue (tile load);
//                        the blocks of the first row of tiles, which together read all of gZ once,
//                        also write gZ (when gZ != NULL) and its column sums gbias.
//   gemm_bwd_nt_dinput:  gA = gZ.B^T, optionally times dropout mask and act'(Zprev) in the
//                        epilogue (the previous layer's backward fused in, as in the MLP step).
#include "act.cuh"
#include "philox.cuh"

namespace {

constexpr int BM = 128;
constexpr int BN = 128;
constexpr int BK = 8;
constexpr int LDS = BM + 4;  // padded shared row (floats); 528 bytes keeps float4 alignment
constexpr int THREADS = 256;
#ifndef GEMM_MIN_BLOCKS
#define GEMM_MIN_BLOCKS 2  // blocks per SM asked of ptxas: 2 caps registers at 128
#endif

typedef float Tile[BK][LDS];

__device__ __forceinline__ float4 ldg4(const float* p) {
  return __ldg(reinterpret_cast<const float4*>(p));
}
__device__ __forceinline__ void st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ float4 lds4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ float4 zero4() { return make_float4(0.f, 0.f, 0.f, 0.f); }
__device__ __forceinline__ float4 mul4(float4 a, float4 b) {
  return make_float4(a.x * b.x, a.y * b.y, a.z * b.z, a.w * b.w);
}

// Tile of `rows` x K (rows along the 128-wide output dimension) whose memory rows run along K:
// element (r, k) = src[r * ld + k]. One float4 of 4 consecutive k per thread.
__device__ __forceinline__ float4 load_kcontig(const float* src, int ld, int rows, int K, int r0,
                                               int k0) {
  const int r = r0 + (threadIdx.x >> 1), k = k0 + (threadIdx.x & 1) * 4;
  return (r < rows && k < K) ? ldg4(src + (size_t)r * ld + k) : zero4();
}
__device__ __forceinline__ void store_kcontig(Tile& s, float4 v) {
  const int r = threadIdx.x >> 1, k = (threadIdx.x & 1) * 4;
  s[k][r] = v.x;
  s[k + 1][r] = v.y;
  s[k + 2][r] = v.z;
  s[k + 3][r] = v.w;
}

// Tile whose memory rows run along the output dimension: element (r, k) = src[k * ld + r].
__device__ __forceinline__ float4 load_rcontig(const float* src, int ld, int rows, int K, int r0,
                                               int k0) {
  const int k = k0 + (threadIdx.x >> 5), r = r0 + (threadIdx.x & 31) * 4;
  return (k < K && r < rows) ? ldg4(src + (size_t)k * ld + r) : zero4();
}
__device__ __forceinline__ void store_rcontig(Tile& s, float4 v) {
  st4(&s[threadIdx.x >> 5][(threadIdx.x & 31) * 4], v);
}

template <bool TA>
__device__ __forceinline__ float4 load_a(const float* A, int lda, int M, int K, int bm, int k0) {
  return TA ? load_rcontig(A, lda, M, K, bm, k0) : load_kcontig(A, lda, M, K, bm, k0);
}
template <bool TA>
__device__ __forceinline__ void store_a(Tile& s, float4 v) {
  if (TA) store_rcontig(s, v); else store_kcontig(s, v);
}

// acc (8x8 per thread) += opA[bm:bm+128, :] . opB[:, bn:bn+128].
// opA(m, k) = TA ? A[k * lda + m] : A[m * lda + k].
// The B tile comes from `load_b(k0)` (a float4 at this thread's slot, zero outside) and is
// stored with store_b<TB>; this lets a caller transform B as it is loaded (the prologue).
template <bool TA, bool TB, class LoadB>
__device__ __forceinline__ void gemm_mainloop(const float* __restrict__ A, int lda, int M, int K,
                                              int bm, LoadB& load_b, float (&acc)[8][8]) {
  __shared__ __align__(16) float As[2][BK][LDS];
  __shared__ __align__(16) float Bs[2][BK][LDS];
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;

#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  float4 ra = load_a<TA>(A, lda, M, K, bm, 0);
  float4 rb = load_b(0);
  store_a<TA>(As[0], ra);
  if (TB) store_kcontig(Bs[0], rb); else store_rcontig(Bs[0], rb);
  __syncthreads();

  float4 fa[2][2], fb[2][2];
  fa[0][0] = lds4(&As[0][0][ty * 4]);
  fa[0][1] = lds4(&As[0][0][64 + ty * 4]);
  fb[0][0] = lds4(&Bs[0][0][tx * 4]);
  fb[0][1] = lds4(&Bs[0][0][64 + tx * 4]);

  const int nk = (K + BK - 1) / BK;
  for (int kt = 0; kt < nk; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < nk;
    if (more) {
      ra = load_a<TA>(A, lda, M, K, bm, (kt + 1) * BK);
      rb = load_b((kt + 1) * BK);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const int nxt = (k + 1) & 1;
      if (k < BK - 1) {
        fa[nxt][0] = lds4(&As[cur][k + 1][ty * 4]);
        fa[nxt][1] = lds4(&As[cur][k + 1][64 + ty * 4]);
        fb[nxt][0] = lds4(&Bs[cur][k + 1][tx * 4]);
        fb[nxt][1] = lds4(&Bs[cur][k + 1][64 + tx * 4]);
      } else if (more) {
        store_a<TA>(As[cur ^ 1], ra);
        if (TB) store_kcontig(Bs[cur ^ 1], rb); else store_rcontig(Bs[cur ^ 1], rb);
        __syncthreads();
        fa[0][0] = lds4(&As[cur ^ 1][0][ty * 4]);
        fa[0][1] = lds4(&As[cur ^ 1][0][64 + ty * 4]);
        fb[0][0] = lds4(&Bs[cur ^ 1][0][tx * 4]);
        fb[0][1] = lds4(&Bs[cur ^ 1][0][64 + tx * 4]);
      }
      const float4* pa = fa[k & 1];
      const float4* pb = fb[k & 1];
      const float a[8] = {pa[0].x, pa[0].y, pa[0].z, pa[0].w, pa[1].x, pa[1].y, pa[1].z, pa[1].w};
      const float b[8] = {pb[0].x, pb[0].y, pb[0].z, pb[0].w, pb[1].x, pb[1].y, pb[1].z, pb[1].w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  }
}

// Calls epi(row, col, float4) for each in-bounds float4 of this thread's 8x8 block.
template <class Epi>
__device__ __forceinline__ void gemm_epilogue(const float (&acc)[8][8], int M, int N, int bm,
                                              int bn, Epi& epi) {
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = bm + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (row >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = bn + h * 64 + tx * 4;
      if (col < N) {
        epi(row, col,
            make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]));
      }
    }
  }
}

}  // namespace

// A: M x K, B: K x N, bias: N (or NULL), Y and Z: M x N (Z may be NULL), all row-major.
// drop_thr = 0 disables dropout; otherwise see philox.cuh.
extern "C" __global__ void __launch_bounds__(THREADS, GEMM_MIN_BLOCKS)
    gemm_bias_act_fwd(const float* __restrict__ A, const float* __restrict__ B,
                      const float* __restrict__ bias, float* __restrict__ Y,
                      float* __restrict__ Z, int M, int N, int K, int act, unsigned drop_thr,
                      float drop_scale, unsigned long long seed) {
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  auto load_b = [&](int k0) { return load_rcontig(B, N, N, K, bn, k0); };
  float acc[8][8];
  gemm_mainloop<false, false>(A, K, M, K, bm, load_b, acc);
  auto epi = [&](int row, int col, float4 v) {
    const size_t idx = (size_t)row * N + col;
    if (bias != nullptr) {
      const float4 b = ldg4(bias + col);
      v = make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w);
    }
    if (Z != nullptr) st4(Z + idx, v);
    v = act_fwd4(v, act);
    if (drop_thr != 0u) v = dropout4(v, idx, drop_thr, drop_scale, seed);
    st4(Y + idx, v);
  };
  gemm_epilogue(acc, M, N, bm, bn, epi);
}

// Split-K forward for grids too small to fill the GPU: block z multiplies the K range
// [z * kchunk, min(K, (z + 1) * kchunk)) and stores its raw partial product in work[z] (M x N);
// gemm_splitk_epilogue then adds the partials in order (deterministic) and applies the same
// epilogue as gemm_bias_act_fwd. kchunk must be a multiple of 8.
extern "C" __global__ void __launch_bounds__(THREADS, GEMM_MIN_BLOCKS)
    gemm_fwd_splitk_partial(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ work, int M, int N, int K, int kchunk) {
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int kb = blockIdx.z * kchunk, klen = min(kchunk, K - kb);
  const float* Bk = B + (size_t)kb * N;
  auto load_b = [&](int k0) { return load_rcontig(Bk, N, N, klen, bn, k0); };
  float acc[8][8];
  gemm_mainloop<false, false>(A + kb, K, M, klen, bm, load_b, acc);
  float* W = work + (size_t)blockIdx.z * M * N;
  auto epi = [&](int row, int col, float4 v) { st4(W + (size_t)row * N + col, v); };
  gemm_epilogue(acc, M, N, bm, bn, epi);
}

extern "C" __global__ void __launch_bounds__(256)
    gemm_splitk_epilogue(const float* __restrict__ work, int splits,
                         const float* __restrict__ bias, float* __restrict__ Y,
                         float* __restrict__ Z, int M, int N, int act, unsigned drop_thr,
                         float drop_scale, unsigned long long seed) {
  const size_t mn = (size_t)M * N, groups = mn / 4;
  for (size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups;
       g += (size_t)gridDim.x * blockDim.x) {
    const size_t idx = g * 4;
    float4 v = ldg4(work + idx);
    for (int z = 1; z < splits; ++z) {
      const float4 w = ldg4(work + z * mn + idx);
      v = make_float4(v.x + w.x, v.y + w.y, v.z + w.z, v.w + w.w);
    }
    if (bias != nullptr) {
      const float4 b = ldg4(bias + idx % N);
      v = make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w);
    }
    if (Z != nullptr) st4(Z + idx, v);
    v = act_fwd4(v, act);
    if (drop_thr != 0u) v = dropout4(v, idx, drop_thr, drop_scale, seed);
    st4(Y + idx, v);
  }
}

// Weight gradient of Y = act(A.B + bias): A: M x K (forward input), gY and Z: M x N.
// gW (K x N) = A^T . gZ with gZ = gY * act'(Z) (Z may be NULL when act = ACT_NONE).
// Blocks with blockIdx.y == 0 also write gZ (M x N, when not NULL) and gbias = column sums of gZ
// (N, when not NULL), with no atomics: each of them reads its 128 columns of gZ over all M.
extern "C" __global__ void __launch_bounds__(THREADS, GEMM_MIN_BLOCKS)
    gemm_bwd_tn_dweight(const float* __restrict__ A, const float* __restrict__ gY,
                        const float* __restrict__ Z, float* __restrict__ gW,
                        float* __restrict__ gZ, float* __restrict__ gbias, int M, int N, int K,
                        int act) {
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;  // rows of gW are K, columns N
  const bool leader = blockIdx.y == 0;
  float4 colsum = zero4();
  auto load_b = [&](int k0) {
    float4 g = load_rcontig(gY, N, N, M, bn, k0);
    if (act != ACT_NONE) g = mul4(g, act_grad4(load_rcontig(Z, N, N, M, bn, k0), act));
    if (leader) {
      const int r = k0 + (threadIdx.x >> 5), c = bn + (threadIdx.x & 31) * 4;
      if (gZ != nullptr && r < M && c < N) st4(gZ + (size_t)r * N + c, g);
      colsum = make_float4(colsum.x + g.x, colsum.y + g.y, colsum.z + g.z, colsum.w + g.w);
    }
    return g;
  };
  float acc[8][8];
  gemm_mainloop<true, false>(A, K, K, M, bm, load_b, acc);
  auto epi = [&](int row, int col, float4 v) { st4(gW + (size_t)row * N + col, v); };
  gemm_epilogue(acc, K, N, bm, bn, epi);

  if (leader && gbias != nullptr) {
    __shared__ __align__(16) float red[BK][BN];
    st4(&red[threadIdx.x >> 5][(threadIdx.x & 31) * 4], colsum);
    __syncthreads();
    if (threadIdx.x < BN && bn + threadIdx.x < N) {
      float s = 0.f;
#pragma unroll
      for (int r = 0; r < BK; ++r) s += red[r][threadIdx.x];
      gbias[bn + threadIdx.x] = s;
    }
  }
}

// Input gradient: gZ: M x N, B: K x N (the forward weight), gA (M x K) = gZ . B^T, B read
// transposed in its tile loads. Epilogue (fuses the previous layer's backward): when drop_thr != 0
// multiply by the dropout mask and scale of gA's element index; when act_prev != ACT_NONE
// multiply by act'(Zprev) (Zprev: M x K).
extern "C" __global__ void __launch_bounds__(THREADS, GEMM_MIN_BLOCKS)
    gemm_bwd_nt_dinput(const float* __restrict__ gZ, const float* __restrict__ B,
                       float* __restrict__ gA, const float* __restrict__ Zprev, int M, int N,
                       int K, int act_prev, unsigned drop_thr, float drop_scale,
                       unsigned long long seed) {
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;  // rows of gA are M, columns K
  auto load_b = [&](int k0) { return load_kcontig(B, N, K, N, bn, k0); };
  float acc[8][8];
  gemm_mainloop<false, true>(gZ, N, M, N, bm, load_b, acc);
  auto epi = [&](int row, int col, float4 v) {
    const size_t idx = (size_t)row * K + col;
    if (drop_thr != 0u) v = dropout4(v, idx, drop_thr, drop_scale, seed);
    if (act_prev != ACT_NONE) v = mul4(v, act_grad4(ldg4(Zprev + idx), act_prev));
    st4(gA + idx, v);
  };
  gemm_epilogue(acc, M, K, bm, bn, epi);
}
