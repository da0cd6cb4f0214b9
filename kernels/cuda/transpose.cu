// out (cols x rows) = in (rows x cols)^T through a 32x32 shared-memory tile (padded to 33 columns
// so that the column reads do not conflict): both the global reads and the global writes are
// coalesced. Block 32x8 threads, grid (ceil(cols / 32), ceil(rows / 32)). Part of the suite as a
// kernel of its own; the GEMMs read transposed operands directly and never need it.
#define TILE 32
#define ROWS_PER_PASS 8

extern "C" __global__ void __launch_bounds__(TILE * ROWS_PER_PASS)
    transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
