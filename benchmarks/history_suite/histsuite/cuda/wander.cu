// Kernels whose runs wander (histsuite/wander.py says which and why); wander.h holds what the
// history's commits change.
#include "wander.h"

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define GEMM_THREADS 256

__device__ __forceinline__ void sgemm_tile(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int n, int k, int lda) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < k; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += GEMM_THREADS) {
            const int r = i / BK, c = i % BK;
            As[c][r] = A[(long long)(row0 + r) * lda + k0 + c];
        }
        for (int i = threadIdx.x; i < BK * BN; i += GEMM_THREADS) {
            const int r = i / BN, c = i % BN;
            Bs[r][c] = B[(long long)(k0 + r) * n + col0 + c];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int m = 0; m < TM; ++m) a[m] = As[kk][ty * TM + m];
#pragma unroll
            for (int q = 0; q < TN; ++q) b[q] = Bs[kk][tx * TN + q];
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int q = 0; q < TN; ++q) acc[m][q] += a[m] * b[q];
        }
        __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int q = 0; q < TN; ++q)
            C[(long long)(row0 + ty * TM + m) * n + col0 + tx * TN + q] = acc[m][q];
}

#if TILED_SPILL
#define TILED_MIN_BLOCKS 8
#else
#define TILED_MIN_BLOCKS 1
#endif

extern "C" __global__ void __launch_bounds__(GEMM_THREADS, TILED_MIN_BLOCKS)
hist_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n,
           int lda) {
    sgemm_tile(A, B, C, n, n, lda);
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS, 4)
hist_spill(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n,
           int lda) {
    sgemm_tile(A, B, C, n, n + SPILL_EXTRA_K, lda);
}

#define L2_PASSES 8
extern "C" __global__ void hist_fill(float4* __restrict__ scratch, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride)
        scratch[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

extern "C" __global__ void hist_l2(const float4* __restrict__ x, float* __restrict__ y, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float acc = 0.f;
    for (int p = 0; p < L2_PASSES + L2_EXTRA_PASSES; ++p)
        for (long long i = t; i < n4; i += stride) {
            const float4 v = x[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    y[t] = acc * (1.0f / (float)(L2_PASSES + L2_EXTRA_PASSES));  // the same for any passes
}
