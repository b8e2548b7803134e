//===- gemm.cpp - The runtime's einsum GEMM against OpenBLAS --------------===//
//
// partita-bench-gemm: time `einsum "mk,kn->mn"` through the runtime's kernel
// (runKernel, as the interpreter calls it) against cblas_sgemm called
// directly on the same buffers, single-threaded, for square and transformer
// shapes. Prints the median time of each, GFLOP/s, and the ratio
// OpenBLAS time / runtime time (goal: >= 0.95). Without OpenBLAS the
// runtime's built-in GEMM is timed alone.
//
//   build/bin/partita-bench-gemm [--repeats N]
//
//===----------------------------------------------------------------------===//

#include "Timing.h"

#include "partita/Runtime/CPU/Kernels.h"

#ifdef PARTITA_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace partita;
using partita::bench::medianSeconds;

int main(int argc, char **argv) {
  int repeats = 7;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
      repeats = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: partita-bench-gemm [--repeats N]\n");
      return 1;
    }
  }
#ifdef PARTITA_HAVE_OPENBLAS
  openblas_set_num_threads(1);
#endif
  struct Shape {
    int64_t m, k, n;
  };
  std::vector<Shape> shapes = {{256, 256, 256},  {512, 512, 512},
                               {1024, 1024, 1024}, {512, 512, 2048},
                               {512, 2048, 512}};
  std::printf("einsum \"mk,kn->mn\", f32, one thread; median of %d\n", repeats);
  std::printf("%-18s %12s %12s %12s %12s %8s\n", "m x k x n", "runtime_ms",
              "runtime_GF/s", "openblas_ms", "openblas_GF/s", "ratio");
  std::mt19937 random(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (const Shape &shape : shapes) {
    std::vector<float> a(shape.m * shape.k), b(shape.k * shape.n),
        c(shape.m * shape.n);
    for (float &x : a)
      x = uniform(random);
    for (float &x : b)
      x = uniform(random);
    Instruction inst{OpCode::Einsum, {0, 1}, {2}, {}, "mk,kn->mn"};
    std::vector<TensorType> in = {{DType::F32, {shape.m, shape.k}},
                                  {DType::F32, {shape.k, shape.n}}};
    std::vector<TensorType> out = {{DType::F32, {shape.m, shape.n}}};
    double flops = 2.0 * shape.m * shape.k * shape.n;
    double runtime = medianSeconds(repeats, [&] {
      Status status = cpu::runKernel(inst, in, {a.data(), b.data()}, out, {c.data()});
      if (!status.ok())
        std::fprintf(stderr, "error: %s\n", status.message().c_str());
    });
    char label[32];
    std::snprintf(label, sizeof(label), "%lldx%lldx%lld", (long long)shape.m,
                  (long long)shape.k, (long long)shape.n);
#ifdef PARTITA_HAVE_OPENBLAS
    double blas = medianSeconds(repeats, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, shape.m, shape.n, shape.k,
                  1.0f, a.data(), shape.k, b.data(), shape.n, 0.0f, c.data(), shape.n);
    });
    std::printf("%-18s %12.3f %12.2f %12.3f %12.2f %8.3f\n", label, runtime * 1e3,
                flops / runtime * 1e-9, blas * 1e3, flops / blas * 1e-9, blas / runtime);
#else
    std::printf("%-18s %12.3f %12.2f %12s %12s %8s\n", label, runtime * 1e3,
                flops / runtime * 1e-9, "-", "-", "-");
#endif
  }
  return 0;
}
