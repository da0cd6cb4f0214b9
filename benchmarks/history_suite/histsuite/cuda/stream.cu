// y = 2 x + 1 over n floats (float4 at a time, grid-stride), each kernel also reading EXTRA
// floats of a zero-filled pad buffer: more bytes from memory, the same result. The pad's reads
// are what a commit of the benchmark adds or removes.
#include "extra.h"

template <long long EXTRA>
__device__ __forceinline__ void stream(const float4* __restrict__ x, const float4* __restrict__ pad,
                                       float4* __restrict__ y, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        if (i < EXTRA / 4) {
            const float4 p = pad[i];
            v.x += p.x;
            v.y += p.y;
            v.z += p.z;
            v.w += p.w;
        }
        y[i] = make_float4(2.0f * v.x + 1.0f, 2.0f * v.y + 1.0f, 2.0f * v.z + 1.0f,
                           2.0f * v.w + 1.0f);
    }
}

#define HIST_KERNEL(k)                                                                    \
    extern "C" __global__ void hist_w##k(const float4* __restrict__ x,                    \
                                         const float4* __restrict__ pad,                  \
                                         float4* __restrict__ y, long long n4) {          \
        stream<EXTRA_W##k>(x, pad, y, n4);                                                \
    }

HIST_KERNEL(0)
HIST_KERNEL(1)
HIST_KERNEL(2)
HIST_KERNEL(3)
HIST_KERNEL(4)
HIST_KERNEL(5)
HIST_KERNEL(6)
HIST_KERNEL(7)
HIST_KERNEL(8)
HIST_KERNEL(9)
HIST_KERNEL(10)
HIST_KERNEL(11)
