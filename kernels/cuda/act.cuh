// Activation functions and their derivatives, shared by the GEMM epilogues and prologues.
//
// GELU is the tanh approximation (as in GPT-2 / PyTorch's approximate="tanh"):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// The float64 references in kernels/reference.py use the same formula.
#pragma once

#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_LEAKY_RELU 2
#define ACT_SIGMOID 3
#define ACT_TANH 4
#define ACT_GELU 5

#define LEAKY_RELU_SLOPE 0.01f
#define GELU_SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_CUBIC 0.044715f

__device__ __forceinline__ float sigmoidf_(float z) { return 1.0f / (1.0f + expf(-z)); }

__device__ __forceinline__ float act_fwd(float z, int act) {
  switch (act) {
    case ACT_RELU:
      return z > 0.0f ? z : 0.0f;
    case ACT_LEAKY_RELU:
      return z > 0.0f ? z : LEAKY_RELU_SLOPE * z;
    case ACT_SIGMOID:
      return sigmoidf_(z);
    case ACT_TANH:
      return tanhf(z);
    case ACT_GELU: {
      const float u = GELU_SQRT_2_OVER_PI * fmaf(GELU_CUBIC * z, z * z, z);
      return 0.5f * z * (1.0f + tanhf(u));
    }
    default:
      return z;
  }
}

// d act / d z evaluated at the pre-activation z.
__device__ __forceinline__ float act_grad(float z, int act) {
  switch (act) {
    case ACT_RELU:
      return z > 0.0f ? 1.0f : 0.0f;
    case ACT_LEAKY_RELU:
      return z > 0.0f ? 1.0f : LEAKY_RELU_SLOPE;
    case ACT_SIGMOID: {
      const float s = sigmoidf_(z);
      return s * (1.0f - s);
    }
    case ACT_TANH: {
      const float t = tanhf(z);
      return 1.0f - t * t;
    }
    case ACT_GELU: {
      const float z2 = z * z;
      const float u = GELU_SQRT_2_OVER_PI * fmaf(GELU_CUBIC * z, z2, z);
      const float t = tanhf(u);
      const float du = GELU_SQRT_2_OVER_PI * fmaf(3.0f * GELU_CUBIC, z2, 1.0f);
      return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * du;
    }
    default:
      return 1.0f;
  }
}

__device__ __forceinline__ float4 act_fwd4(float4 z, int act) {
  return make_float4(act_fwd(z.x, act), act_fwd(z.y, act), act_fwd(z.z, act), act_fwd(z.w, act));
}

__device__ __forceinline__ float4 act_grad4(float4 z, int act) {
  return make_float4(act_grad(z.x, act), act_grad(z.y, act), act_grad(z.z, act),
                     act_grad(z.w, act));
}
