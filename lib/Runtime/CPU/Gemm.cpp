//===- Gemm.cpp - Matrix multiply for einsum ------------------------------===//
//
// Row-major C = op(A) op(B). OpenBLAS (single-threaded: each emulated device
// is already a thread) when the runtime is built with it, otherwise — or when
// a test asks — a built-in cache-blocked kernel: B is packed block by block
// into a contiguous panel (which also absorbs its transposition) and the
// inner loop runs over contiguous columns so it vectorizes.
//
//===----------------------------------------------------------------------===//
#include "KernelSupport.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#ifdef PARTITA_HAVE_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int numThreads);
#endif

namespace partita {
namespace cpu {
namespace {

std::atomic<GemmImplementation> selectedGemm{GemmImplementation::Default};

/// Block sizes: a KBlock x NBlock panel of B (128 KiB in f32) stays in L2
/// while every row of A streams over it.
constexpr int64_t KBlock = 128;
constexpr int64_t NBlock = 256;

template <typename T>
void builtinGemm(bool transposeA, bool transposeB, int64_t m, int64_t n,
                 int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
                 T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    std::fill(c + i * ldc, c + i * ldc + n, T(0));
  // Only as large as this product needs: small products (a batched
  // einsum's, a fuzzer's) would spend their time zeroing a full panel.
  std::vector<T> panel(std::min(KBlock, k) * std::min(NBlock, n));
  for (int64_t k0 = 0; k0 < k; k0 += KBlock) {
    int64_t kb = std::min(KBlock, k - k0);
    for (int64_t n0 = 0; n0 < n; n0 += NBlock) {
      int64_t nb = std::min(NBlock, n - n0);
      for (int64_t p = 0; p < kb; ++p)
        for (int64_t j = 0; j < nb; ++j)
          panel[p * nb + j] = transposeB ? b[(n0 + j) * ldb + (k0 + p)]
                                         : b[(k0 + p) * ldb + (n0 + j)];
      for (int64_t i = 0; i < m; ++i) {
        T *row = c + i * ldc + n0;
        for (int64_t p = 0; p < kb; ++p) {
          T scale = transposeA ? a[(k0 + p) * lda + i] : a[i * lda + k0 + p];
          const T *panelRow = panel.data() + p * nb;
          for (int64_t j = 0; j < nb; ++j)
            row[j] = wrappingAdd(row[j], wrappingMul(scale, panelRow[j]));
        }
      }
    }
  }
}

#ifdef PARTITA_HAVE_OPENBLAS
void useOneOpenBlasThread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

bool fitsBlas(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
              int64_t ldc) {
  return m > 0 && n > 0 && k > 0 && m <= INT_MAX && n <= INT_MAX &&
         k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX;
}
#endif

/// PARTITA_GEMM=builtin, read once: the built-in kernel by default.
bool builtinFromEnvironment() {
  static const bool builtin = [] {
    const char *choice = std::getenv("PARTITA_GEMM");
    return choice && std::strcmp(choice, "builtin") == 0;
  }();
  return builtin;
}

bool useBuiltin() {
  if (!haveOpenBlas())
    return true;
  GemmImplementation selected = selectedGemm.load(std::memory_order_relaxed);
  return selected == GemmImplementation::Builtin ||
         (selected == GemmImplementation::Default && builtinFromEnvironment());
}

} // namespace

void setGemmImplementation(GemmImplementation implementation) {
  selectedGemm.store(implementation, std::memory_order_relaxed);
}

GemmImplementation gemmImplementation() {
  return selectedGemm.load(std::memory_order_relaxed);
}

bool haveOpenBlas() {
#ifdef PARTITA_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

void gemmF32(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
             int64_t ldc) {
#ifdef PARTITA_HAVE_OPENBLAS
  if (!useBuiltin() && fitsBlas(m, n, k, lda, ldb, ldc)) {
    useOneOpenBlasThread();
    // One row or one column: a matrix-vector product, which sgemm would
    // first pack the whole matrix for (a decode step's attention reads
    // each head's cached keys and values this way, once).
    if (m == 1) {
      // c[n] = op(B)^T a: B is [n, k] (transposed) or [k, n].
      cblas_sgemv(CblasRowMajor, transposeB ? CblasNoTrans : CblasTrans,
                  transposeB ? int(n) : int(k), transposeB ? int(k) : int(n),
                  1.0f, b, int(ldb), a, transposeA ? int(lda) : 1, 0.0f, c, 1);
      return;
    }
    if (n == 1) {
      // c[m] = op(A) b: A is [m, k] or [k, m] (transposed).
      cblas_sgemv(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                  transposeA ? int(k) : int(m), transposeA ? int(m) : int(k),
                  1.0f, a, int(lda), b, transposeB ? 1 : int(ldb), 0.0f, c,
                  int(ldc));
      return;
    }
    cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                transposeB ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
                1.0f, a, int(lda), b, int(ldb), 0.0f, c, int(ldc));
    return;
  }
#endif
  builtinGemm(transposeA, transposeB, m, n, k, a, lda, b, ldb, c, ldc);
}

void gemmF64(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const double *a, int64_t lda, const double *b, int64_t ldb,
             double *c, int64_t ldc) {
#ifdef PARTITA_HAVE_OPENBLAS
  if (!useBuiltin() && fitsBlas(m, n, k, lda, ldb, ldc)) {
    useOneOpenBlasThread();
    cblas_dgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                transposeB ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
                1.0, a, int(lda), b, int(ldb), 0.0, c, int(ldc));
    return;
  }
#endif
  builtinGemm(transposeA, transposeB, m, n, k, a, lda, b, ldb, c, ldc);
}

/// Integer GEMM (einsum on integer tensors), wrapping on overflow.
void gemmI64(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const int64_t *a, int64_t lda, const int64_t *b, int64_t ldb,
             int64_t *c, int64_t ldc) {
  builtinGemm(transposeA, transposeB, m, n, k, a, lda, b, ldb, c, ldc);
}

} // namespace cpu
} // namespace partita
