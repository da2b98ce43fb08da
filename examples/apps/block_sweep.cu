// A CUDA program of the kind kernel authors write to pick a block size: one kernel, timed
// at four block sizes, LAUNCHES launches each (as llm.c's dev/cuda benchmarks do).
// rooflint profile times its launches with CUPTI's activity records (no PyTorch here):
//
//   nvcc -O3 -o block_sweep examples/apps/block_sweep.cu
//   rooflint profile -- ./block_sweep
#include <cstdio>
#include <cuda_runtime.h>

constexpr int N = 1 << 24;
constexpr int LAUNCHES = 200;

// y = a * x + y, one element a thread: a read-twice, write-once stream.
__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  float *x, *y;
  if (cudaMalloc(&x, N * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&y, N * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "block_sweep: no GPU memory\n");
    return 1;
  }
  cudaMemset(x, 0, N * sizeof(float));
  cudaMemset(y, 0, N * sizeof(float));
  for (int block : {128, 256, 512, 1024}) {
    for (int i = 0; i < LAUNCHES; ++i) saxpy<<<(N + block - 1) / block, block>>>(2.0f, x, y, N);
  }
  cudaError_t status = cudaDeviceSynchronize();
  std::printf("block_sweep: %s\n", cudaGetErrorString(status));
  cudaFree(x);
  cudaFree(y);
  return status == cudaSuccess ? 0 : 1;
}
