//===- cuda.cpp - The CUDA backend's einsum and collectives, measured -----===//
//
// On a GPU (tools/gpu-check.sh runs it; without one it says so and exits
// 77):
//   * einsum through the backend against cuBLAS called directly on the same
//     buffers, same run: bf16 8192^3 and the GEMMs of a GPT layer with
//     d_model 4096 (QKV, attention output, MLP up and down, over 8 x 2048
//     tokens), TFLOP/s and the ratio (goal >= 0.9);
//   * all_reduce among 8 logical devices on one GPU, through the
//     device-memory communicator (cuda:8's default there) and through the
//     host (the staging communicator), against a device-to-device cudaMemcpy
//     of the same bytes; busbw is nccl-tests' 2(n-1)/n x bytes / time.
// Times are medians of 10 runs after a warm-up, from CUDA events.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/CUDA/CudaBackend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

using namespace partita;

namespace {

double medianMs(const std::function<void()> &work, cudaStream_t stream) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  work(); // Warm-up.
  cudaStreamSynchronize(stream);
  std::vector<float> times;
  for (int i = 0; i < 10; ++i) {
    cudaEventRecord(start, stream);
    work();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return (times[4] + times[5]) / 2;
}

void benchGemm(Backend &backend, cublasHandle_t blas, const char *name,
               int64_t m, int64_t n, int64_t k) {
  auto stream = static_cast<cudaStream_t>(cudaStreamOf(backend));
  void *a = *backend.allocate(m * k * 2), *b = *backend.allocate(k * n * 2),
       *c = *backend.allocate(m * n * 2);
  // Values do not matter for the time; small non-zero bf16 patterns.
  cudaMemsetAsync(a, 0x3c, m * k * 2, stream);
  cudaMemsetAsync(b, 0x3c, k * n * 2, stream);
  Instruction inst;
  inst.op = OpCode::Einsum;
  inst.text = "mk,kn->mn";
  std::vector<TensorType> operandTypes = {{DType::BF16, {m, k}},
                                          {DType::BF16, {k, n}}};
  std::vector<TensorType> resultTypes = {{DType::BF16, {m, n}}};
  std::vector<const void *> operands = {a, b};
  std::vector<void *> results = {c};
  std::vector<HostArray> constants;
  Status failed = Status::success();
  double ours = medianMs(
      [&] {
        Status s = backend.run(inst, operandTypes, operands, resultTypes,
                               results, constants);
        if (!s)
          failed = s;
      },
      stream);
  cublasSetStream(blas, stream);
  float one = 1, zero = 0;
  double direct = medianMs(
      [&] {
        cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                     static_cast<int>(m), static_cast<int>(k), &one, b,
                     CUDA_R_16BF, static_cast<int>(n), a, CUDA_R_16BF,
                     static_cast<int>(k), &zero, c, CUDA_R_16BF,
                     static_cast<int>(n), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
      },
      stream);
  double flop = 2.0 * m * n * k;
  std::printf("einsum bf16 %-22s %6lldx%6lldx%6lld  ours %8.1f TFLOP/s  "
              "cuBLAS %8.1f TFLOP/s  ratio %.3f%s\n",
              name, static_cast<long long>(m), static_cast<long long>(n),
              static_cast<long long>(k), flop / ours / 1e9,
              flop / direct / 1e9, direct / ours,
              failed ? "" : ("  ERROR " + failed.message()).c_str());
  backend.release(a);
  backend.release(b);
  backend.release(c);
}

/// all_reduce among 8 logical devices on GPU 0 through the device-memory
/// communicator (what cuda:8 uses on one GPU) or through the host.
void benchAllReduce(int64_t bytes, bool staging) {
  Mesh mesh = *Mesh::create({{"x", 8}});
  std::unique_ptr<Communicator> communicator =
      staging ? createStagingCommunicator(mesh) : createDeviceCommunicator(mesh);
  std::vector<cudaStream_t> streams(8);
  for (int64_t d = 0; d < 8; ++d) {
    cudaStreamCreate(&streams[d]);
    if (!staging)
      setDeviceCommunicatorStream(*communicator, d, streams[d]);
  }
  Status failed;
  std::mutex failure;
  std::vector<void *> buffers(8);
  int64_t count = bytes / 4;
  for (void *&buffer : buffers)
    cudaMalloc(&buffer, bytes);
  std::vector<double> times;
  for (int iteration = 0; iteration < 6; ++iteration) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int64_t d = 0; d < 8; ++d)
      threads.emplace_back([&, d] {
        ConstBufferRef in{buffers[d], DType::F32, {count}};
        BufferRef out{buffers[d], DType::F32, {count}};
        Status status =
            communicator->allReduce(d, {"x"}, ReductionCode::Sum, in, out);
        std::lock_guard<std::mutex> guard(failure);
        if (failed && !status)
          failed = status;
      });
    for (std::thread &thread : threads)
      thread.join();
    if (iteration > 0)
      times.push_back(std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count());
  }
  std::sort(times.begin(), times.end());
  double seconds = times[times.size() / 2];
  void *copy = nullptr;
  cudaMalloc(&copy, bytes);
  double memcpyMs = medianMs(
      [&] {
        cudaMemcpyAsync(copy, buffers[0], bytes, cudaMemcpyDeviceToDevice,
                        nullptr);
      },
      nullptr);
  double busbw = 2.0 * 7 / 8 * bytes / seconds / 1e9;
  double memcpyBw = bytes / (memcpyMs / 1e3) / 1e9;
  std::printf("all_reduce 8 logical devices %-13s %6lld MiB: %8.2f ms, busbw "
              "%7.2f GB/s; d2d memcpy %7.1f GB/s; ratio %.4f%s\n",
              staging ? "(host staged)" : "(device)",
              static_cast<long long>(bytes >> 20), seconds * 1e3, busbw,
              memcpyBw, busbw / memcpyBw,
              failed ? "" : ("  ERROR " + failed.message()).c_str());
  for (void *buffer : buffers)
    cudaFree(buffer);
  for (cudaStream_t stream : streams)
    cudaStreamDestroy(stream);
  cudaFree(copy);
}

} // namespace

int main() {
  std::string why;
  if (cudaDeviceCount(&why) == 0) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  Expected<std::unique_ptr<Backend>> backend = createCudaBackend(0);
  if (!backend) {
    std::printf("error: %s\n", backend.status().message().c_str());
    return 1;
  }
  cublasHandle_t blas;
  cublasCreate(&blas);
  benchGemm(**backend, blas, "8192^3", 8192, 8192, 8192);
  int64_t tokens = 8 * 2048, model = 4096;
  benchGemm(**backend, blas, "GPT qkv", tokens, 3 * model, model);
  benchGemm(**backend, blas, "GPT attention out", tokens, model, model);
  benchGemm(**backend, blas, "GPT mlp up", tokens, 4 * model, model);
  benchGemm(**backend, blas, "GPT mlp down", tokens, model, 4 * model);
  cublasDestroy(blas);
  for (int64_t mib : {1, 64})
    for (bool staging : {false, true})
      benchAllReduce(mib << 20, staging);
  return 0;
}
