#include "eager/cuda/Blas.h"

#include "eager/Dtype.h"
#include "runtime/Cuda.h"
#include "runtime/CudaDriver.h"
#include "runtime/Profiler.h"

#include <array>
#include <climits>
#include <dlfcn.h>
#include <string>

namespace ember::cuda {

namespace {

using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext *;
constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
constexpr int CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14;
constexpr int CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
constexpr int CUBLAS_GEMM_DEFAULT = -1;

// name, arguments: the entry points ember opens.
#define EMBER_FORALL_CUBLAS(_)                                                 \
  _(cublasCreate_v2, cublasHandle_t *)                                         \
  _(cublasSetStream_v2, cublasHandle_t, void *)                                \
  _(cublasSgemmStridedBatched, cublasHandle_t, int, int, int, int, int,        \
    const float *, const float *, int, long long, const float *, int,          \
    long long, const float *, float *, int, long long, int)                    \
  _(cublasDgemmStridedBatched, cublasHandle_t, int, int, int, int, int,        \
    const double *, const double *, int, long long, const double *, int,       \
    long long, const double *, double *, int, long long, int)                  \
  _(cublasGemmStridedBatchedEx, cublasHandle_t, int, int, int, int, int,       \
    const void *, const void *, int, int, long long, const void *, int, int,   \
    long long, const void *, void *, int, int, long long, int, int, int)

struct Lib {
#define EMBER_CUBLAS_FIELD(name, ...)                                          \
  cublasStatus_t (*name)(__VA_ARGS__) = nullptr;
  EMBER_FORALL_CUBLAS(EMBER_CUBLAS_FIELD)
#undef EMBER_CUBLAS_FIELD
  const char *(*cublasGetStatusString)(cublasStatus_t) = nullptr;
  bool ok = false;
  std::string why;
};

const Lib &lib() {
  static const Lib l = [] {
    Lib r;
    void *h = driver::open_toolkit_library("libcublas");
    if (!h) {
      r.why = "cuBLAS (libcublas.so) was not found; install the CUDA "
              "toolkit's cuBLAS or set CUDA_HOME";
      return r;
    }
#define EMBER_CUBLAS_LOAD(name, ...)                                           \
  r.name = reinterpret_cast<decltype(r.name)>(dlsym(h, #name));                \
  if (!r.name) {                                                               \
    r.why = "cuBLAS has no entry point " #name " (too old?)";                  \
    return r;                                                                  \
  }
    EMBER_FORALL_CUBLAS(EMBER_CUBLAS_LOAD)
    EMBER_CUBLAS_LOAD(cublasGetStatusString)
#undef EMBER_CUBLAS_LOAD
    r.ok = true;
    return r;
  }();
  return l;
}

void check(cublasStatus_t s, const char *call) {
  if (s != 0)
    throw Error(detail::str("cuBLAS error: ", lib().cublasGetStatusString(s),
                            " (status ", s, ") in ", call));
}

/// This thread's handle for `device` (cuBLAS handles are not to be shared
/// by threads calling at once), created on first use.
cublasHandle_t handle(int device) {
  thread_local std::array<cublasHandle_t, 64> handles{};
  cublasHandle_t &h = handles[size_t(device)];
  if (!h) {
    EMBER_CHECK(lib().ok, "CUDA matrix products need cuBLAS: ", lib().why);
    driver::set_context(device);
    check(lib().cublasCreate_v2(&h), "cublasCreate");
  }
  return h;
}

int as_int(int64_t v, const char *what) {
  EMBER_CHECK(v <= INT_MAX, "CUDA matrix product: ", what, " ", v,
              " exceeds cuBLAS's int limit (", INT_MAX, ")");
  return int(v);
}

} // namespace

void gemm_batched(const Tensor &out, const GemmOperand &a, const GemmOperand &b,
                  int64_t M, int64_t N, int64_t K, int64_t batch, double alpha,
                  double beta) {
  const ScalarType dt = out.dtype();
  if (!(dt == kFloat || dt == kDouble || dt == kHalf || dt == kBFloat16))
    EMBER_CHECK_TYPE(false, "\"addmm_cuda\" not implemented for '",
                     toTypeName(dt),
                     "': CUDA matrix products take float32, float64, "
                     "float16 and bfloat16 (convert with .to(ember::kFloat))");
  const int device = out.device().index();
  cublasHandle_t h = handle(device);
  driver::set_context(device);
  void *stream = getCurrentCUDAStream(device).stream();
  check(lib().cublasSetStream_v2(h, stream), "cublasSetStream");
  // Note [cuBLAS precision]: TF32 only where the user allowed it.
  const bool tf32 = dt == kFloat && allow_tf32();
  profiler::record_device timed(tf32            ? "cublasGemmStridedBatchedEx"
                                : dt == kFloat  ? "cublasSgemmStridedBatched"
                                : dt == kDouble ? "cublasDgemmStridedBatched"
                                                : "cublasGemmStridedBatchedEx",
                                out.device(),
                                reinterpret_cast<uint64_t>(stream));
  // Row-major C = A B is column-major C^T = B^T A^T: B's memory read as
  // column-major is B^T (op N) unless B is stored column-major (op T).
  const int m = as_int(N, "size"), n = as_int(M, "size"), k = as_int(K, "size"),
            count = as_int(batch, "batch");
  const int opb = b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int opa = a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = as_int(b.ld, "leading dimension"),
            lda = as_int(a.ld, "leading dimension"), ldc = std::max(m, 1);
  const long long sb = b.batch_stride, sa = a.batch_stride,
                  sc = (long long)M * N;
  if (dt == kFloat && !tf32) {
    float al = float(alpha), be = float(beta);
    check(lib().cublasSgemmStridedBatched(
              h, opb, opa, m, n, k, &al, static_cast<const float *>(b.data),
              ldb, sb, static_cast<const float *>(a.data), lda, sa, &be,
              static_cast<float *>(out.data_ptr()), ldc, sc, count),
          "cublasSgemmStridedBatched");
  } else if (dt == kDouble) {
    check(lib().cublasDgemmStridedBatched(
              h, opb, opa, m, n, k, &alpha, static_cast<const double *>(b.data),
              ldb, sb, static_cast<const double *>(a.data), lda, sa, &beta,
              static_cast<double *>(out.data_ptr()), ldc, sc, count),
          "cublasDgemmStridedBatched");
  } else {
    const int type = dt == kFloat  ? CUDA_R_32F
                     : dt == kHalf ? CUDA_R_16F
                                   : CUDA_R_16BF;
    float al = float(alpha), be = float(beta);
    check(lib().cublasGemmStridedBatchedEx(
              h, opb, opa, m, n, k, &al, b.data, type, ldb, sb, a.data, type,
              lda, sa, &be, out.data_ptr(), type, ldc, sc, count,
              tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
              CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  }
}

} // namespace ember::cuda
