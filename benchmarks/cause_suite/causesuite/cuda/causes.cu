// Ten kernels, each with one known cause of a slowdown between its base and its head build
// (variant.h). Every head computes what its base computes: only how it gets there changes.
#include "variant.h"

#define THREADS 256

// 1. More DRAM traffic: y = 2 x + 1, the head also reading a zero pad over half of x.
extern "C" __global__ void cause_dram(const float4* __restrict__ x, const float4* __restrict__ pad,
                                      float4* __restrict__ y, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
#if HEAD_DRAM
        if (i < n4 / 2) {
            const float4 p = pad[i];
            v.x += p.x; v.y += p.y; v.z += p.z; v.w += p.w;
        }
#endif
        y[i] = make_float4(2.f * v.x + 1.f, 2.f * v.y + 1.f, 2.f * v.z + 1.f, 2.f * v.w + 1.f);
    }
}

// 2. Uncoalesced access: y = x read through a permutation. The base reads in order; the head
// walks 32 rows at once (each lane of a warp its own row), every element still read once.
extern "C" __global__ void cause_coalescing(const float* __restrict__ x, float* __restrict__ y,
                                            long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long rows = n / 32;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
#if HEAD_COALESCING
        const long long j = (i % 32) * rows + i / 32;
#else
        const long long j = i;
#endif
        y[j] = x[j] + 1.f;
    }
}

// 3. Register spills: 40 loop-carried accumulators; the head caps the registers below them.
#if HEAD_SPILLS
#define SPILL_CAP __maxnreg__(32)
#else
#define SPILL_CAP
#endif
#define ACC 40
extern "C" __global__ void SPILL_CAP cause_spills(const float* __restrict__ x, float* __restrict__ y,
                                                 long long n, int rounds) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[ACC];
#pragma unroll
    for (int k = 0; k < ACC; ++k) acc[k] = x[(i + k) % n];
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int k = 0; k < ACC; ++k) acc[k] = acc[k] * 0.999f + acc[(k + 7) % ACC] * 0.001f;
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < ACC; ++k) s += acc[k];
    y[i] = s;
}

// 4 and 5. Occupancy: each warp follows its own chain of dependent loads through a table that
// stays in L2 (all lanes the same address: one sector a load). Latency-bound: its speed is the
// number of warps in flight. The head of case 4 holds more registers (a branch never taken
// needs them), the head of case 5 a shared array it never uses.
__device__ __forceinline__ int chase(const int* __restrict__ next, int p, int hops) {
    for (int h = 0; h < hops; ++h) p = __ldcg(next + p);
    return p;
}

extern "C" __global__ void cause_occ_regs(const int* __restrict__ next, int* __restrict__ out,
                                          int table, int hops, int never) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = chase(next, (i / 32) % table, hops);
#if HEAD_OCC_REGS
    if (never == 12345) {  // the workload passes 0: dead at run time, alive for ptxas
        float acc[56];
#pragma unroll
        for (int k = 0; k < 56; ++k) acc[k] = __int_as_float(next[(p + k) % table]);
        for (int r = 0; r < hops; ++r) {
#pragma unroll
            for (int k = 0; k < 56; ++k) acc[k] = acc[k] * acc[(k + 3) % 56] + 1.f;
        }
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < 56; ++k) s += acc[k];
        p += (int)s;
    }
#endif
    out[i] = p;
}

extern "C" __global__ void cause_occ_smem(const int* __restrict__ next, int* __restrict__ out,
                                          int table, int hops, int never) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = chase(next, (i / 32) % table, hops);
#if HEAD_OCC_SMEM
    __shared__ int scratch[11 * 1024];  // 44 KB a block: 5 blocks an SM where 8 fitted
    if (never == 12345) {
        scratch[threadIdx.x] = p;
        __syncthreads();
        p = scratch[(threadIdx.x * 7) % 256];
    }
#endif
    out[i] = p;
}

// 6. Fewer waves: the same compute-bound work over a smaller grid (the workload reads the grid
// from `waves_blocks`): half the SMs sit idle.
#if HEAD_WAVES
extern "C" __device__ int waves_blocks = 66;
#else
extern "C" __device__ int waves_blocks = 132;
#endif
extern "C" __global__ void cause_waves(const float* __restrict__ x, float* __restrict__ y,
                                       long long n, int iters) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i], w = 0.f;
        for (int k = 0; k < iters; ++k) w = fmaf(v, w, 0.5f);
        y[i] = w;
    }
}

// 7. Extra instructions: y = x after `iters` rounds of v = v * one + zero (one = 1, zero = 0 at
// run time: exact, and opaque to the compiler); the head runs a quarter more rounds.
#if HEAD_INSTRUCTIONS
#define ROUNDS(n) ((n) * 5 / 4)
#else
#define ROUNDS(n) (n)
#endif
extern "C" __global__ void cause_instructions(const float* __restrict__ x, float* __restrict__ y,
                                              long long n, int iters, float one, float zero) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const int rounds = ROUNDS(iters);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
        float a = x[i], b = a, c = a, d = a;
        for (int k = 0; k < rounds; ++k) {
            a = fmaf(a, one, zero); b = fmaf(b, one, zero);
            c = fmaf(c, one, zero); d = fmaf(d, one, zero);
        }
        y[i] = 0.25f * (a + b + c + d);
    }
}

// 8. Shared-memory bank conflicts: a 32x32 tile read down its columns, 16 times over. The base
// pads each row by one float; the head by four, so four lanes of a column share a bank (a
// two-way conflict cost this kernel nothing measurable on the H100: it is issue-bound).
#if HEAD_BANK_CONFLICTS
#define TILE_PAD 4  // lanes l, l + 8, l + 16, l + 24 share a bank: four-way conflicts
#else
#define TILE_PAD 1
#endif
extern "C" __global__ void cause_bank_conflicts(const float* __restrict__ x, float* __restrict__ y,
                                                long long tiles) {
    __shared__ float tile[32][32 + TILE_PAD];
    const int lane = threadIdx.x % 32, row0 = threadIdx.x / 32;  // 8 warps, 4 rows each
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const float* src = x + t * 1024;
        for (int r = row0; r < 32; r += 8) tile[r][lane] = src[r * 32 + lane];
        __syncthreads();
        float s = 0.f;
        for (int rep = 0; rep < 16; ++rep)
            for (int r = row0; r < 32; r += 8) s += tile[lane][(r + rep) % 32];
        y[t * 256 + threadIdx.x] = s;
        __syncthreads();
    }
}

// 9. A multi-kernel workload: two streaming kernels; only the second reads more in the head.
extern "C" __global__ void cause_multi_first(const float4* __restrict__ x, float4* __restrict__ y,
                                             long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 v = x[i];
        y[i] = make_float4(v.x + 1.f, v.y + 1.f, v.z + 1.f, v.w + 1.f);
    }
}

extern "C" __global__ void cause_multi_second(const float4* __restrict__ y,
                                              const float4* __restrict__ pad,
                                              float4* __restrict__ z, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = y[i];
#if HEAD_SECOND_KERNEL
        const float4 p = pad[i];
        v.x += p.x; v.y += p.y; v.z += p.z; v.w += p.w;
#endif
        z[i] = make_float4(2.f * v.x, 2.f * v.y, 2.f * v.z, 2.f * v.w);
    }
}

// 10. A serialising atomic: a sum. The base reduces each block in shared memory and adds once
// per block; the head adds once per warp, all to the same address.
extern "C" __global__ void cause_atomic(const float* __restrict__ x, float* __restrict__ total,
                                        long long n) {
    __shared__ float part[THREADS / 32];
    const long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        s += x[i];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
#if HEAD_ATOMIC
    if (threadIdx.x % 32 == 0) atomicAdd(total, s);
    (void)part;
#else
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float b = 0.f;
        for (int w = 0; w < THREADS / 32; ++w) b += part[w];
        atomicAdd(total, b);
    }
#endif
}
