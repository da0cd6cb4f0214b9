// A small nvbench benchmark whose JSON output is the nvbench import's fixture
// (tests/service/runs/fixtures/nvbench_h100/, made by build_and_run.sh on the H100).
// KW_SLOWER=1 makes the copy read every element twice: a real regression for the second import.
#include <nvbench/nvbench.cuh>

#include <cstdlib>

template <typename T>
__global__ void copy_kernel(const T* __restrict__ in, T* __restrict__ out, long n, int reads) {
  long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  const long stride = long(gridDim.x) * blockDim.x;
  for (; i < n; i += stride) {
    T v = in[i];
    for (int r = 1; r < reads; ++r) v += in[(i * 7 + r) % n];  // the slower variant's extra reads
    out[i] = v;
  }
}

template <typename T>
void copy_bench(nvbench::state& state, nvbench::type_list<T>) {
  const auto n = static_cast<long>(state.get_int64("Elements"));
  const int reads = std::getenv("KW_SLOWER") ? 2 : 1;
  T* in = nullptr;
  T* out = nullptr;
  cudaMalloc(&in, n * sizeof(T));
  cudaMalloc(&out, n * sizeof(T));
  cudaMemset(in, 0, n * sizeof(T));
  state.add_element_count(n);
  state.add_global_memory_reads<T>(n * reads);
  state.add_global_memory_writes<T>(n);
  state.exec([&](nvbench::launch& launch) {
    copy_kernel<T><<<1024, 256, 0, launch.get_stream()>>>(in, out, n, reads);
  });
  cudaFree(in);
  cudaFree(out);
}

using copy_types = nvbench::type_list<float, double>;
NVBENCH_BENCH_TYPES(copy_bench, NVBENCH_TYPE_AXES(copy_types))
    .set_type_axes_names({"T"})
    .add_int64_power_of_two_axis("Elements", {16, 24});
