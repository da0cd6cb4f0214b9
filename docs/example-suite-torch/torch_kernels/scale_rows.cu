// out[i, j] = x[i, j] * scale[i] + shift: one row per block, a float4 per thread and step.
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

__global__ void scale_rows_kernel(const float4* __restrict__ x, const float* __restrict__ scale,
                                  float shift, float4* __restrict__ out, int cols4) {
    const int row = blockIdx.x;
    const float s = scale[row];
    for (int j = threadIdx.x; j < cols4; j += blockDim.x) {
        float4 v = x[(long long)row * cols4 + j];
        v.x = v.x * s + shift;
        v.y = v.y * s + shift;
        v.z = v.z * s + shift;
        v.w = v.w * s + shift;
        out[(long long)row * cols4 + j] = v;
    }
}

torch::Tensor scale_rows(torch::Tensor x, torch::Tensor scale, double shift, torch::Tensor out) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.size(1) % 4 == 0, "x: contiguous, cols % 4");
    const int rows = x.size(0), cols4 = x.size(1) / 4;
    scale_rows_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()), scale.data_ptr<float>(),
        static_cast<float>(shift), reinterpret_cast<float4*>(out.data_ptr<float>()), cols4);
    return out;
}
