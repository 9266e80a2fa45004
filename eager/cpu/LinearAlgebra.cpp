// Matrix products: the CPU kernels mm, bmm, addmm, baddbmm and dot, and the
// composites built on them (matmul, mv, outer, linear).
//
// Note [Matrix products on the CPU]
// float32/float64 go to OpenBLAS. A matrix operand is passed to BLAS as it
// lies in memory whenever one of its two dims has unit stride: row-major as
// CblasNoTrans, column-major (a transposed view) as CblasTrans, with the
// other stride as the leading dimension. Only an operand that fits neither
// layout (an expanded or doubly strided view) is copied with contiguous().
// The output is always a fresh contiguous tensor that BLAS writes directly,
// with beta = 0 when there is nothing to add, so mm costs exactly one gemm
// call. float16 and bfloat16 are converted once to float32 (operands and,
// when beta is used, the addend), multiplied by sgemm and rounded once to
// the output dtype: float32 accumulation, as PyTorch's CPU kernels (the
// matmuls autocast runs in bfloat16 take this path). Integers run a
// portable kernel: the operands are converted once to int64, multiplied in
// i-k-j order over blocks that stay in cache, and the epilogue applies alpha
// and beta. Each output element is produced by one thread with a fixed
// summation order, so results do not depend on the thread count.
//
// Note [Threading matrix products]
// OpenBLAS runs on one thread (runtime/ThreadPool.cpp keeps it there) and
// ember threads its products on the intra-op pool: a product is cut into
// blocks of output rows (or of columns, when there are more of those), each
// a single-threaded gemm on one pool thread, and a batch runs whole
// products per thread when its count divides among the threads. Measured on
// the 2-core VM (sgemm, medians of 150 calls alternating): OpenBLAS's own
// two threads against two blocks on two threads took 3.22 / 2.65 ms at
// 1024x256x1024, 0.90 / 0.66 at 1024x256x256, 2.91 / 2.47 at 1024x1024x256:
// its threads hand packed panels to each other, and between products its
// idle threads spin (yielding) on the cores ember's kernels then need.
// Each block repacks the operand the blocks share (K x N for row blocks),
// a small cost beside its K * rows * N multiply-adds; a block has at least
// kMinBlock of them and kBlockAlign rows or columns (a multiple of the
// kernels' register tiles). The cut depends only on the shapes and the
// thread count, so a product gives the same bits at every call with the
// same thread count; between thread counts the last bits may differ (an
// independent probe found 10% of random shapes so): OpenBLAS picks its
// register tiles and cache blocks by the size of the product it is given,
// so an element on the edge of a tile of the whole product can fall in a
// tile of another shape in a block, with its sum rounded in another order.
// PyTorch's BLAS products differ between thread counts in the same way.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/cuda/Blas.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/ThreadPool.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

namespace ember::native {

namespace {

/// Matrix products are defined for every dtype but bool (as PyTorch).
void checkProductDtype(const char *op, ScalarType t) {
  if (t == kBool)
    throw_unsupported_dtype(op, t);
}

/// How BLAS can read a rows x cols matrix with element strides (rs, cs).
struct BlasLayout {
  bool trans; // column-major: passed as CblasTrans of its transpose
  int64_t ld;
};

// Note [BLAS-compatible strides]
// The stride of a dim of size 1 is never used, so such a dim is compatible
// with either layout. A leading dimension must be at least the length of a
// row (row-major) or of a column (column-major) and fit BLAS's int.
std::optional<BlasLayout> blasLayout(int64_t rows, int64_t cols, int64_t rs,
                                     int64_t cs) {
  if ((cs == 1 || cols == 1) &&
      (rows == 1 || rs >= std::max<int64_t>(1, cols))) {
    int64_t ld = rows == 1 ? std::max<int64_t>(1, cols) : rs;
    if (ld <= INT_MAX)
      return BlasLayout{false, ld};
  }
  if ((rs == 1 || rows == 1) &&
      (cols == 1 || cs >= std::max<int64_t>(1, rows))) {
    int64_t ld = cols == 1 ? std::max<int64_t>(1, rows) : cs;
    if (ld <= INT_MAX)
      return BlasLayout{true, ld};
  }
  return std::nullopt;
}

/// The layout of the matrices of a (batch, rows, cols) tensor.
std::optional<BlasLayout> blasLayout3(const Tensor &t) {
  return blasLayout(t.size(1), t.size(2), t.stride(1), t.stride(2));
}

/// BLAS's operand arguments for one matrix of a batch.
struct BlasOperand {
  const char *data;
  int64_t batchStride; // bytes
  BlasLayout layout;
  int64_t rs, cs; // element strides (for the gemv forms)

  /// The same operand starting `elements` further (a block of it).
  BlasOperand shifted(int64_t elements, int64_t elementSize) const {
    BlasOperand o = *this;
    o.data += elements * elementSize;
    return o;
  }
};

// cblas dispatch on the element type.
void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
          int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}
void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double *a,
          int lda, const double *b, int ldb, double beta, double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}
void gemv(bool ta, int m, int n, float alpha, const float *a, int lda,
          const float *x, int incx, float beta, float *y, int incy) {
  cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, m, n, alpha, a,
              lda, x, incx, beta, y, incy);
}
void gemv(bool ta, int m, int n, double alpha, const double *a, int lda,
          const double *x, int incx, double beta, double *y, int incy) {
  cblas_dgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, m, n, alpha, a,
              lda, x, incx, beta, y, incy);
}

/// An element stride as a BLAS increment (any value works for length 1).
int blasInc(int64_t len, int64_t stride) { return len == 1 ? 1 : int(stride); }

/// C = alpha * A @ B + beta * C for one matrix: M x K times K x N into the
/// M x N block at c, rows ldc apart. beta == 0 never reads C.
template <class T>
void blasProduct(const BlasOperand &A, const BlasOperand &B, T *c, int64_t M,
                 int64_t N, int64_t K, T alpha, T beta, int64_t batch,
                 int64_t ldc) {
  const T *a = reinterpret_cast<const T *>(A.data + batch * A.batchStride);
  const T *b = reinterpret_cast<const T *>(B.data + batch * B.batchStride);
  // Note [gemv forms]
  // A product with one output row or column is a matrix-vector product;
  // gemv reads the matrix once instead of packing it as gemm would. BLAS may
  // scale y by beta = 0 by multiplication (NaN * 0 stays NaN), so a y that
  // must not be read is zeroed first (O(M), negligible).
  if (N == 1 && M > 1) {
    // y(M) = A(M x K) x(K), x = B's only column; gemv's matrix is A itself
    // (row-major) or the row-major K x M matrix A^T.
    if (beta == T(0))
      std::fill(c, c + M, T(0));
    int rows = A.layout.trans ? int(K) : int(M);
    int cols = A.layout.trans ? int(M) : int(K);
    gemv(A.layout.trans, rows, cols, alpha, a, int(A.layout.ld), b,
         blasInc(K, B.rs), beta, c, 1);
    return;
  }
  if (M == 1 && N > 1) {
    // y(N) = B^T(N x K) x(K), x = A's only row.
    if (beta == T(0))
      std::fill(c, c + N, T(0));
    // B row-major K x N: y = B^T x is gemv with CblasTrans on (K, N).
    // B column-major: B^T is row-major N x K: CblasNoTrans on (N, K).
    int rows = B.layout.trans ? int(N) : int(K);
    int cols = B.layout.trans ? int(K) : int(N);
    gemv(!B.layout.trans, rows, cols, alpha, b, int(B.layout.ld), a,
         blasInc(K, A.cs), beta, c, 1);
    return;
  }
  gemm(A.layout.trans, B.layout.trans, int(M), int(N), int(K), alpha, a,
       int(A.layout.ld), b, int(B.layout.ld), beta, c,
       int(std::max<int64_t>(1, ldc)));
}

/// The fewest multiply-adds of a block (Note [Threading matrix products]):
/// OpenBLAS's own threshold for threading a gemm.
constexpr double kMinBlock = double(1 << 18);
/// Block boundaries fall on multiples of this many rows or columns.
constexpr int64_t kBlockAlign = 16;

/// How one product of a batch is cut: `parts` blocks of rows (or columns).
struct ProductSplit {
  bool rows = true;
  int64_t parts = 1;
};

/// The cut of each of Bt products of M x K by K x N for the pool's threads:
/// none when the products divide evenly among them, else into up to
/// threads / gcd(Bt, threads) blocks (a lone product into one per thread).
ProductSplit splitProducts(int64_t Bt, int64_t M, int64_t N, int64_t K) {
  int64_t threads =
      detail::in_parallel_region() ? 1 : int64_t(get_num_threads());
  // A product with one output row or column runs whole (Note [gemv
  // forms]): gemv is bound by reading the matrix, which one thread does
  // nearly as fast as two on a machine of few cores.
  if (threads == 1 || Bt >= 4 * threads || Bt % threads == 0 || M == 1 ||
      N == 1)
    return {};
  ProductSplit s;
  s.rows = M >= N;
  int64_t len = s.rows ? M : N;
  double work = double(M) * double(N) * double(K);
  int64_t want = threads / std::gcd(Bt, threads);
  int64_t byWork = int64_t(std::min(double(want), work / kMinBlock));
  s.parts = std::max<int64_t>(1, std::min({want, len / kBlockAlign, byWork}));
  return s;
}

/// The first row (or column) of block p of `parts` over len, on a multiple
/// of kBlockAlign (len >= parts * kBlockAlign keeps every block non-empty).
int64_t blockStart(int64_t len, int64_t p, int64_t parts) {
  if (p == parts)
    return len;
  int64_t at = int64_t(__int128(len) * p / parts);
  return at / kBlockAlign * kBlockAlign;
}

template <class T>
void blasBatched(const Tensor &out, const Tensor &a, const Tensor &b, T alpha,
                 T beta) {
  int64_t Bt = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  auto operand = [](const Tensor &t) {
    auto layout = blasLayout3(t);
    EMBER_INTERNAL_ASSERT(layout.has_value());
    return BlasOperand{static_cast<const char *>(t.data_ptr()),
                       t.stride(0) * int64_t(sizeof(T)), *layout, t.stride(1),
                       t.stride(2)};
  };
  BlasOperand A = operand(a), B = operand(b);
  T *c = out.data_ptr<T>();
  ProductSplit split = splitProducts(Bt, M, N, K);
  const int64_t len = split.rows ? M : N; // what the blocks cut
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t i = task / split.parts, p = task % split.parts;
      T *ci = c + i * M * N;
      int64_t lo = blockStart(len, p, split.parts);
      int64_t hi = blockStart(len, p + 1, split.parts);
      if (split.rows)
        blasProduct<T>(A.shifted(lo * A.rs, sizeof(T)), B, ci + lo * N, hi - lo,
                       N, K, alpha, beta, i, N);
      else
        blasProduct<T>(A, B.shifted(lo * B.cs, sizeof(T)), ci + lo, M, hi - lo,
                       K, alpha, beta, i, N);
    }
  };
  // A task is one product (or block): a task of less than kGrainSize
  // multiply-adds shares its chunk of the pool with others.
  double work = double(M) * double(N) * double(K) / double(split.parts);
  int64_t grain = work >= double(kGrainSize)
                      ? 1
                      : kGrainSize / std::max<int64_t>(1, int64_t(work));
  parallel_for(0, Bt * split.parts, grain, run);
}

// --- the portable kernel ----------------------------------------------------

/// The type the portable kernel accumulates T in, stored in memory: float for
/// the floats below double, int64 for every integer dtype.
template <class T> struct GemmAccOf {
  using type = std::conditional_t<
      std::is_same_v<T, double>, double,
      std::conditional_t<std::is_floating_point_v<compute_t<T>>, float,
                         int64_t>>;
};
template <class T> using gemm_acc_t = typename GemmAccOf<T>::type;

/// The arithmetic type: integers wrap around (as PyTorch's int64 products)
/// instead of overflowing, so they compute in uint64.
template <class Acc>
using gemm_math_t =
    std::conditional_t<std::is_same_v<Acc, int64_t>, uint64_t, Acc>;

constexpr int64_t kBlockM = 64;  // rows a task computes
constexpr int64_t kBlockN = 256; // columns of the accumulator tile
constexpr int64_t kBlockK = 128; // rows of B kept in cache for a pass
constexpr int kMicroM = 4;       // rows of the register tile
constexpr int kVecBytes = 32;    // one 256-bit vector
constexpr int kMicroVecs = 2;    // vectors per row of the register tile

/// Columns of the register tile.
template <class Math> constexpr int microN() {
  return int(kMicroVecs * kVecBytes / sizeof(Math));
}

// Note [Portable matmul micro-kernel]
// The accumulator tile (kBlockM x kBlockN, in memory) is updated in
// kMicroM x microN register tiles of GCC vector-extension vectors: for each
// k, one row of B's panel is loaded once and multiplied by kMicroM broadcast
// elements of A, so every load feeds several multiply-adds and the tile
// never leaves the registers during the k loop. Ragged edges use the plain
// loop.
template <class Math>
inline void microKernel(int64_t kb, const Math *__restrict a, int64_t lda,
                        const Math *__restrict b, int64_t ldb,
                        Math *__restrict c, int64_t ldc) {
  using Vec [[gnu::vector_size(kVecBytes)]] = Math;
  constexpr int L = kVecBytes / int(sizeof(Math));
  Vec acc[kMicroM][kMicroVecs];
  for (int r = 0; r < kMicroM; ++r)
    for (int v = 0; v < kMicroVecs; ++v)
      std::memcpy(&acc[r][v], c + r * ldc + v * L, sizeof(Vec));
  for (int64_t k = 0; k < kb; ++k) {
    Vec bv[kMicroVecs];
    for (int v = 0; v < kMicroVecs; ++v)
      std::memcpy(&bv[v], b + k * ldb + v * L, sizeof(Vec));
    for (int r = 0; r < kMicroM; ++r) {
      const Math av = a[r * lda + k];
      for (int v = 0; v < kMicroVecs; ++v)
        acc[r][v] += bv[v] * av;
    }
  }
  for (int r = 0; r < kMicroM; ++r)
    for (int v = 0; v < kMicroVecs; ++v)
      std::memcpy(c + r * ldc + v * L, &acc[r][v], sizeof(Vec));
}

/// The same update for a ragged mr x nr tile.
template <class Math>
void edgeKernel(int64_t mr, int64_t nr, int64_t kb, const Math *a, int64_t lda,
                const Math *b, int64_t ldb, Math *c, int64_t ldc) {
  for (int64_t r = 0; r < mr; ++r) {
    Math *__restrict crow = c + r * ldc;
    for (int64_t k = 0; k < kb; ++k) {
      const Math av = a[r * lda + k];
      const Math *__restrict brow = b + k * ldb;
      for (int64_t j = 0; j < nr; ++j)
        crow[j] += av * brow[j];
    }
  }
}

/// out[b] = alpha * a[b] @ b[b] + beta * out[b] for contiguous (Bt, M, K)
/// and (Bt, K, N) operands of type Acc and a contiguous (Bt, M, N) output of
/// type T. beta_used false: out is not read.
template <class T, class Acc>
void portableBatched(const Tensor &out, const Tensor &a, const Tensor &b,
                     const Scalar &alphaS, const Scalar &betaS,
                     bool beta_used) {
  using Math = gemm_math_t<Acc>;
  constexpr int64_t NR = microN<Math>();
  int64_t Bt = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  const Math *A = reinterpret_cast<const Math *>(a.data_ptr<Acc>());
  const Math *B = reinterpret_cast<const Math *>(b.data_ptr<Acc>());
  T *C = out.data_ptr<T>();
  Math alpha, beta;
  if constexpr (std::is_same_v<Acc, int64_t>) {
    alpha = Math(alphaS.toLong());
    beta = Math(betaS.toLong());
  } else {
    alpha = alphaS.to<Acc>();
    beta = betaS.to<Acc>();
  }
  int64_t rowBlocks = (M + kBlockM - 1) / kBlockM;
  int64_t tasks = Bt * rowBlocks;
  int64_t taskWork = std::min(M, kBlockM) * N * std::max<int64_t>(K, 1);
  int64_t grain =
      std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, taskWork));
  parallel_for(0, tasks, grain, [&](int64_t tb, int64_t te) {
    std::vector<Math> tile(size_t(std::min(M, kBlockM) * std::min(N, kBlockN)));
    for (int64_t task = tb; task < te; ++task) {
      int64_t bi = task / rowBlocks;
      int64_t i0 = (task % rowBlocks) * kBlockM;
      int64_t i1 = std::min(M, i0 + kBlockM);
      const Math *Ab = A + bi * M * K;
      const Math *Bb = B + bi * K * N;
      T *Cb = C + bi * M * N;
      for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
        int64_t nb = std::min(kBlockN, N - j0);
        std::fill(tile.begin(), tile.end(), Math(0));
        for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
          int64_t kb = std::min(kBlockK, K - k0);
          // A kb x NR panel of B stays in L1 while every row block uses it.
          for (int64_t jj = 0; jj < nb; jj += NR) {
            int64_t nr = std::min<int64_t>(NR, nb - jj);
            const Math *bp = Bb + k0 * N + j0 + jj;
            for (int64_t i = i0; i < i1; i += kMicroM) {
              int64_t mr = std::min<int64_t>(kMicroM, i1 - i);
              const Math *ap = Ab + i * K + k0;
              Math *cp = tile.data() + (i - i0) * nb + jj;
              if (mr == kMicroM && nr == NR)
                microKernel<Math>(kb, ap, K, bp, N, cp, nb);
              else
                edgeKernel<Math>(mr, nr, kb, ap, K, bp, N, cp, nb);
            }
          }
        }
        for (int64_t i = i0; i < i1; ++i) {
          const Math *acc = tile.data() + (i - i0) * nb;
          T *crow = Cb + i * N + j0;
          for (int64_t j = 0; j < nb; ++j) {
            Math v = alpha * acc[j];
            if (beta_used)
              v += beta *
                   Math(static_cast<Acc>(static_cast<compute_t<T>>(crow[j])));
            crow[j] = T(static_cast<compute_t<T>>(static_cast<Acc>(v)));
          }
        }
      }
    }
  });
}

/// out = beta * out (beta_used) or 0: the whole product when K == 0.
void scaleOutput(const Tensor &out, const Scalar &beta, bool beta_used) {
  if (!beta_used)
    out.zero_();
  else if (out.is_cuda())
    out.mul_(beta);
  else
    dispatch_dtype(out.dtype(), "addmm", [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        using Acc = gemm_acc_t<T>;
        using Math = gemm_math_t<Acc>;
        Math b = std::is_same_v<Acc, int64_t> ? Math(beta.toLong())
                                              : Math(beta.to<Acc>());
        T *p = out.data_ptr<T>();
        for (int64_t i = 0; i < out.numel(); ++i)
          p[i] = T(static_cast<compute_t<T>>(static_cast<Acc>(
              b * Math(static_cast<Acc>(static_cast<compute_t<T>>(p[i]))))));
      }
    });
}

/// The shared body of every matrix product: out (Bt, M, N), contiguous and
/// holding beta's addend when beta_used, gets alpha * a @ b + beta * out.
/// a is (Bt, M, K), b (Bt, K, N), both of out's dtype, any strides.
void batchedProduct(const char *op, const Tensor &out, Tensor a, Tensor b,
                    const Scalar &alpha, const Scalar &beta, bool beta_used) {
  ScalarType dt = out.dtype();
  checkProductDtype(op, dt);
  for (const Tensor *t : {&a, &b})
    EMBER_CHECK(t->device() == out.device(),
                "Expected all tensors to be on the same device, but found at "
                "least two devices, ",
                out.device(), " and ", t->device(), "! (in ", op, ")");
  int64_t M = a.size(1), K = a.size(2), N = b.size(2);
  if (out.numel() == 0)
    return;
  if (K == 0) {
    scaleOutput(out, beta, beta_used);
    return;
  }
  if (out.is_cuda()) {
    // cuBLAS (eager/cuda/Blas.h) with the layouts BLAS reads.
    if (!blasLayout3(a))
      a = a.contiguous();
    if (!blasLayout3(b))
      b = b.contiguous();
    std::optional<BlasLayout> la = blasLayout3(a), lb = blasLayout3(b);
    EMBER_CHECK(la && lb, op, ": a matrix of ", M, " x ", K, " x ", N,
                " exceeds cuBLAS's int limits");
    cuda::gemm_batched(out, {a.data_ptr(), a.stride(0), la->trans, la->ld},
                       {b.data_ptr(), b.stride(0), lb->trans, lb->ld}, M, N, K,
                       a.size(0), alpha.toDouble(),
                       beta_used ? beta.toDouble() : 0.0);
    return;
  }
  const bool fits_blas = M <= INT_MAX && N <= INT_MAX && K <= INT_MAX;
  bool blas = (dt == kFloat || dt == kDouble) && fits_blas;
  if (blas) {
    if (!blasLayout3(a))
      a = a.contiguous();
    if (!blasLayout3(b))
      b = b.contiguous();
    blas = blasLayout3(a).has_value() && blasLayout3(b).has_value();
  }
  if (isReducedFloatingType(dt) && fits_blas) {
    Tensor out32 = beta_used ? out.to(kFloat) : empty(out.sizes(), kFloat);
    blasBatched<float>(out32, a.to(kFloat).contiguous(),
                       b.to(kFloat).contiguous(), alpha.to<float>(),
                       beta_used ? beta.to<float>() : 0.0f);
    out.copy_(out32);
    return;
  }
  if (blas) {
    if (dt == kFloat)
      blasBatched<float>(out, a, b, alpha.to<float>(),
                         beta_used ? beta.to<float>() : 0.0f);
    else
      blasBatched<double>(out, a, b, alpha.to<double>(),
                          beta_used ? beta.to<double>() : 0.0);
    return;
  }
  dispatch_dtype(dt, op, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = gemm_acc_t<T>;
      ScalarType accType = dtype_of<Acc>();
      Tensor aa = a.to(accType).contiguous();
      Tensor bb = b.to(accType).contiguous();
      portableBatched<T, Acc>(out, aa, bb, alpha, beta, beta_used);
    }
  });
}

bool isZero(const Scalar &s) { return s.equal(0.0); }

/// Allocates the output of an addmm-like op and, when beta is used, fills it
/// with `self` broadcast to `shape` (PyTorch ignores self when beta == 0, so
/// NaN or inf in it do not propagate, but its shape is still checked).
/// meta::addmm_sizes / baddbmm_sizes checked self's dtype and shape.
Tensor outputWithAddend(const Tensor &self, IntArrayRef shape,
                        const Tensor &other, const Scalar &beta) {
  EMBER_CHECK(self.device() == other.device(),
              "Expected all tensors to be on the same device, but found at "
              "least two devices, ",
              other.device(), " and ", self.device(), "!");
  Tensor expanded = self.expand(shape);
  Tensor out = empty(shape, other.options());
  if (!isZero(beta))
    out.copy_(expanded);
  return out;
}

} // namespace

// --- kernels ----------------------------------------------------------------

Tensor mm(const Tensor &self, const Tensor &mat2) {
  Tensor out = empty(meta::mm_sizes(self, mat2), self.options());
  batchedProduct("mm", out.unsqueeze(0), self.unsqueeze(0), mat2.unsqueeze(0),
                 1, 0, /*beta_used=*/false);
  return out;
}

Tensor addmm(const Tensor &self, const Tensor &mat1, const Tensor &mat2,
             const Scalar &beta, const Scalar &alpha) {
  DimVector shape = meta::addmm_sizes(self, mat1, mat2);
  Tensor out = outputWithAddend(self, shape, mat2, beta);
  batchedProduct("addmm", out.unsqueeze(0), mat1.unsqueeze(0),
                 mat2.unsqueeze(0), alpha, beta, !isZero(beta));
  return out;
}

Tensor bmm(const Tensor &self, const Tensor &mat2) {
  Tensor out = empty(meta::bmm_sizes(self, mat2), self.options());
  batchedProduct("bmm", out, self, mat2, 1, 0, /*beta_used=*/false);
  return out;
}

Tensor baddbmm(const Tensor &self, const Tensor &batch1, const Tensor &batch2,
               const Scalar &beta, const Scalar &alpha) {
  DimVector shape = meta::baddbmm_sizes(self, batch1, batch2);
  Tensor out = outputWithAddend(self, shape, batch2, beta);
  batchedProduct("baddbmm", out, batch1, batch2, alpha, beta, !isZero(beta));
  return out;
}

Tensor dot(const Tensor &self, const Tensor &tensor) {
  meta::check_dot(self, tensor);
  int64_t n = self.numel();
  Tensor out = empty({}, self.options());
  int64_t sx = self.stride(0), sy = tensor.stride(0);
  bool blas =
      n <= INT_MAX && sx > 0 && sy > 0 && sx <= INT_MAX && sy <= INT_MAX;
  if (blas && self.dtype() == kFloat) {
    *out.data_ptr<float>() =
        n == 0 ? 0.0f
               : cblas_sdot(int(n), self.data_ptr<float>(), blasInc(n, sx),
                            tensor.data_ptr<float>(), blasInc(n, sy));
    return out;
  }
  if (blas && self.dtype() == kDouble) {
    *out.data_ptr<double>() =
        n == 0 ? 0.0
               : cblas_ddot(int(n), self.data_ptr<double>(), blasInc(n, sx),
                            tensor.data_ptr<double>(), blasInc(n, sy));
    return out;
  }
  dispatch_dtype(self.dtype(), "dot", [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = gemm_acc_t<T>;
      using Math = gemm_math_t<Acc>;
      const T *x = self.data_ptr<T>();
      const T *y = tensor.data_ptr<T>();
      // Fixed chunks summed in order: the result is independent of the
      // thread count.
      constexpr int64_t kChunk = 32768;
      int64_t nchunks = (n + kChunk - 1) / kChunk;
      std::vector<Math> partial(size_t(std::max<int64_t>(nchunks, 1)), Math(0));
      auto load = [](T v) {
        return Math(static_cast<Acc>(static_cast<compute_t<T>>(v)));
      };
      parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          Math s = 0;
          int64_t e = std::min(n, (c + 1) * kChunk);
          if (sx == 1 && sy == 1)
            for (int64_t i = c * kChunk; i < e; ++i)
              s += load(x[i]) * load(y[i]);
          else
            for (int64_t i = c * kChunk; i < e; ++i)
              s += load(x[i * sx]) * load(y[i * sy]);
          partial[size_t(c)] = s;
        }
      });
      Math total = 0;
      for (Math p : partial)
        total += p;
      *out.data_ptr<T>() =
          T(static_cast<compute_t<T>>(static_cast<Acc>(total)));
    }
  });
  return out;
}

// --- composites -------------------------------------------------------------

Tensor mv(const Tensor &self, const Tensor &vec) {
  EMBER_CHECK(self.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector ",
              "expected, got 1, ", self.dim(), ", ", vec.dim());
  EMBER_CHECK(self.size(1) == vec.size(0), "size mismatch, got input (",
              self.size(0), "), mat (", self.size(0), "x", self.size(1),
              "), vec (", vec.size(0), ")");
  return ember::mm(self, vec.unsqueeze(1)).squeeze(1);
}

Tensor outer(const Tensor &self, const Tensor &vec2) {
  EMBER_CHECK(self.dim() == 1, "outer: Expected 1-D argument self, but got ",
              self.dim(), "-D");
  EMBER_CHECK(vec2.dim() == 1, "outer: Expected 1-D argument vec2, but got ",
              vec2.dim(), "-D");
  return ember::mul(self.unsqueeze(1), vec2);
}

namespace {

// Note [Folding matmul into mm]
// A batched operand times a matrix or vector is one mm over the batch folded
// into the rows, when the fold is a view (the batch dims are contiguous with
// each other and the rows): no broadcast copy of the small operand and one
// large BLAS call instead of many small ones. When the small operand requires
// grad, folding is chosen even at the cost of a copy, so that its gradient
// is one mm instead of a sum over an expanded batch (PyTorch's should_fold).
bool shouldFold(const Tensor &tensor1, const Tensor &tensor2) {
  bool t1Larger = tensor1.dim() >= tensor2.dim();
  Tensor t1 = t1Larger ? tensor1 : tensor2.transpose(-2, -1);
  int64_t dimT1 = t1.dim();
  int64_t dimT2 = t1Larger ? tensor2.dim() : tensor1.dim();
  if (!(dimT1 >= 3 && dimT2 <= 2))
    return false;
  if ((t1Larger ? tensor2 : tensor1).requires_grad())
    return true;
  // 2-D @ N-D would fold into a transposed product that must be copied back.
  if (tensor1.dim() == 2)
    return false;
  if (t1.numel() == 0)
    return true;
  for (int64_t i = 0; i < dimT1 - 2; ++i)
    if (t1.stride(i) != t1.stride(i + 1) * t1.size(i + 1))
      return false;
  return true;
}

} // namespace

Tensor matmul(const Tensor &tensor1, const Tensor &tensor2) {
  int64_t dim1 = tensor1.dim(), dim2 = tensor2.dim();
  EMBER_CHECK(dim1 != 0 && dim2 != 0, "both arguments to matmul need to be ",
              "at least 1D, but they are ", dim1, "D and ", dim2, "D");
  if (dim1 == 1 && dim2 == 1)
    return ember::dot(tensor1, tensor2);
  if (dim1 == 2 && dim2 == 1)
    return ember::mv(tensor1, tensor2);
  if (dim1 == 1 && dim2 == 2)
    return ember::mm(tensor1.unsqueeze(0), tensor2).squeeze(0);
  if (dim1 == 2 && dim2 == 2)
    return ember::mm(tensor1, tensor2);

  if (shouldFold(tensor1, tensor2)) {
    // Larger operand t1 (batched), smaller t2 (matrix or vector); when the
    // right one is larger, compute (t2^T @ t1^T)^T.
    bool transpose = dim2 > dim1;
    Tensor t1 = transpose ? tensor2.transpose(-2, -1) : tensor1;
    Tensor t2 = !transpose ? tensor2 : dim1 == 2 ? tensor1.t() : tensor1;
    IntArrayRef sizes1 = t1.sizes();
    DimVector outShape(sizes1.begin(), sizes1.end() - 1);
    int64_t folded = 1;
    for (int64_t s : outShape)
      folded *= s;
    bool t2Matrix = t2.dim() == 2;
    if (t2Matrix)
      outShape.push_back(t2.size(1));
    // Not view(-1, k): -1 is ambiguous when k == 0.
    Tensor t1Folded = t1.reshape({folded, sizes1.back()});
    if (t2Matrix) {
      Tensor output = ember::mm(t1Folded, t2).view(outShape);
      return transpose ? output.transpose(-2, -1).contiguous() : output;
    }
    return ember::mv(t1Folded, t2).view(outShape);
  }

  // Batched: broadcast the batch dims, flatten them, bmm.
  int64_t n = dim1 > 1 ? tensor1.size(-2) : 1;
  int64_t m1 = tensor1.size(-1);
  IntArrayRef batch1 =
      tensor1.sizes().slice(0, size_t(std::max<int64_t>(dim1 - 2, 0)));
  int64_t m2 = dim2 > 1 ? tensor2.size(-2) : tensor2.size(0);
  int64_t p = dim2 > 1 ? tensor2.size(-1) : 1;
  IntArrayRef batch2 =
      tensor2.sizes().slice(0, size_t(std::max<int64_t>(dim2 - 2, 0)));
  DimVector outShape = infer_size(batch1, batch2);
  int64_t batchProduct = 1;
  for (int64_t s : outShape)
    batchProduct *= s;

  DimVector size1(outShape);
  size1.push_back(n);
  size1.push_back(m1);
  Tensor t1 = tensor1.expand(size1).reshape({batchProduct, n, m1});
  bool vectorRhs = dim2 == 1;
  DimVector size2(outShape);
  size2.push_back(m2);
  if (!vectorRhs)
    size2.push_back(p);
  Tensor t2 = tensor2.expand(size2);
  t2 = vectorRhs ? t2.reshape({batchProduct, m2}).unsqueeze(2)
                 : t2.reshape({batchProduct, m2, p});
  if (dim1 > 1)
    outShape.push_back(n);
  if (dim2 > 1)
    outShape.push_back(p);
  Tensor result = ember::bmm(t1, t2);
  if (vectorRhs)
    result = result.squeeze(-1);
  return result.view(outShape);
}

Tensor linear(const Tensor &input, const Tensor &weight,
              const std::optional<Tensor> &bias) {
  bool hasBias = bias.has_value() && bias->defined();
  if (input.dim() == 2 && hasBias)
    return ember::addmm(*bias, input, weight.t());
  if (hasBias && input.dim() >= 3 && input.is_contiguous() &&
      weight.dim() == 2) {
    // A contiguous batch folds into the rows of one addmm (bias fused).
    IntArrayRef sizes = input.sizes();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < sizes.size(); ++i)
      rows *= sizes[i];
    Tensor result =
        ember::addmm(*bias, input.view({rows, sizes.back()}), weight.t());
    DimVector outShape(sizes.begin(), sizes.end() - 1);
    outShape.push_back(result.size(1));
    return result.view(outShape);
  }
  Tensor output = ember::matmul(input, weight.t());
  return hasBias ? ember::add(output, *bias) : output;
}

} // namespace ember::native
