// nn::functional and the _im2col / _col2im primitives, each against an
// independent float64 reference computed by naive loops (direct convolution,
// direct pooling windows, losses by formula, attention by explicit loops).
#include "TestUtil.h"

#include "eager/autograd/GradMode.h"
#include "eager/nn/Functional.h"

#include <cmath>
#include <limits>

using namespace ember;
using namespace ember::test;
namespace F = ember::nn::functional;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A 4-d array of doubles read from a tensor, with bounds-checked reads that
/// return `outside` beyond the spatial extent.
struct Arr4 {
  std::vector<double> v;
  Shape s;
  explicit Arr4(const Tensor &t) : v(values(t)), s(shapeOf(t)) {}
  double at(int64_t a, int64_t b, int64_t c, int64_t d,
            double outside = 0) const {
    if (c < 0 || c >= s[2] || d < 0 || d >= s[3])
      return outside;
    return v[size_t(((a * s[1] + b) * s[2] + c) * s[3] + d)];
  }
};

struct Conv2dCase {
  Shape x, w;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1,
          groups = 1;
  bool bias = true;
};

/// Direct convolution in double (7 nested loops), with asymmetric padding
/// (top/left, bottom/right) so that padding="same" can be checked too.
Tensor refConv2d(const Tensor &x, const Tensor &w, const Tensor &b,
                 const Conv2dCase &c) {
  Arr4 X(x), Wt(w);
  std::vector<double> B = b.defined() ? values(b) : std::vector<double>();
  int64_t N = X.s[0], C = X.s[1], H = X.s[2], W = X.s[3];
  int64_t O = Wt.s[0], Cg = Wt.s[1], kh = Wt.s[2], kw = Wt.s[3];
  int64_t OH = (H + c.pt + c.pb - c.dh * (kh - 1) - 1) / c.sh + 1;
  int64_t OW = (W + c.pl + c.pr - c.dw * (kw - 1) - 1) / c.sw + 1;
  int64_t Og = O / c.groups;
  (void)C;
  return ref({N, O, OH, OW}, [&](const Shape &i) {
    int64_t n = i[0], o = i[1], oh = i[2], ow = i[3];
    int64_t g = o / Og;
    double acc = B.empty() ? 0.0 : B[size_t(o)];
    for (int64_t ci = 0; ci < Cg; ++ci)
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t bb = 0; bb < kw; ++bb)
          acc += X.at(n, g * Cg + ci, oh * c.sh - c.pt + a * c.dh,
                      ow * c.sw - c.pl + bb * c.dw) *
                 Wt.at(o, ci, a, bb);
    return acc;
  });
}

/// Naive unfold in double: (N, C, H, W) -> (N, C*kh*kw, L).
Tensor refIm2col(const Tensor &x, Shape k, Shape d, Shape p, Shape s,
                 double padValue) {
  Arr4 X(x);
  int64_t N = X.s[0], C = X.s[1], H = X.s[2], W = X.s[3];
  int64_t OH = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) / s[0] + 1;
  int64_t OW = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1] + 1;
  return ref({N, C * k[0] * k[1], OH * OW}, [&](const Shape &i) {
    int64_t c = i[1] / (k[0] * k[1]), r = i[1] % (k[0] * k[1]);
    int64_t a = r / k[1], b = r % k[1];
    int64_t oh = i[2] / OW, ow = i[2] % OW;
    return X.at(i[0], c, oh * s[0] - p[0] + a * d[0],
                ow * s[1] - p[1] + b * d[1], padValue);
  });
}

double dotAll(const Tensor &a, const Tensor &b) {
  auto x = values(a), y = values(b);
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i)
    s += x[i] * y[i];
  return s;
}

} // namespace

// =============================================================================
// _im2col / _col2im
// =============================================================================

TEST(Im2col, MatchesNaiveUnfold) {
  struct Case {
    Shape x, k, d, p, s;
  };
  std::vector<Case> cases = {
      {{2, 3, 5, 6}, {2, 3}, {1, 1}, {0, 0}, {1, 1}},
      {{1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 2}, {2, 1}},
      {{2, 1, 4, 4}, {1, 1}, {1, 1}, {0, 0}, {3, 2}},
      {{1, 2, 6, 9}, {3, 3}, {1, 2}, {1, 1}, {1, 3}},
  };
  uint64_t seed = 1;
  for (const Case &c : cases) {
    Tensor x = random(c.x, kDouble, seed++);
    Tensor want = refIm2col(x, c.k, c.d, c.p, c.s, 0);
    EXPECT_TRUE(close(ember::_im2col(x, c.k, c.d, c.p, c.s), want, 0, 0));
    EXPECT_TRUE(close(ember::_im2col(noncontiguous(x), c.k, c.d, c.p, c.s),
                      want, 0, 0));
    Tensor wantNeg = refIm2col(x, c.k, c.d, c.p, c.s, -kInf);
    EXPECT_TRUE(
        close(ember::_im2col(x, c.k, c.d, c.p, c.s, -kInf), wantNeg, 0, 0));
    // Every dtype is moved exactly (floats through their own type).
    for (ScalarType dt : {kFloat, kHalf, kBFloat16, kLong, kInt}) {
      Tensor xd = x.to(dt);
      EXPECT_TRUE(close(ember::_im2col(xd, c.k, c.d, c.p, c.s, 7),
                        refIm2col(xd, c.k, c.d, c.p, c.s, 7), 0, 0))
          << toString(dt);
    }
  }
}

TEST(Im2col, UnbatchedEmptyBatchAndIntegerPadValue) {
  Tensor x = random({3, 4, 5}, kFloat, 2);
  Tensor got = ember::_im2col(x, {2, 2}, {1, 1}, {1, 0}, {1, 1});
  EXPECT_TRUE(close(
      got,
      refIm2col(x.unsqueeze(0), {2, 2}, {1, 1}, {1, 0}, {1, 1}, 0).squeeze(0)));
  Tensor e =
      ember::_im2col(zeros({0, 2, 4, 4}), {2, 2}, {1, 1}, {0, 0}, {1, 1});
  EXPECT_EQ(shapeOf(e), (Shape{0, 8, 9}));
  // -inf saturates to the lowest value of an integer dtype.
  Tensor xi = random({1, 1, 2, 2}, kInt, 3);
  Tensor ci = ember::_im2col(xi, {2, 2}, {1, 1}, {1, 1}, {1, 1}, -kInf);
  EXPECT_EQ(values(ci)[0], double(std::numeric_limits<int32_t>::lowest()));
}

TEST(Im2col, Errors) {
  Tensor x = random({1, 2, 3, 3});
  EXPECT_EMBER_ERROR(ember::_im2col(x, {4, 4}, {1, 1}, {0, 0}, {1, 1}),
                     "calculated shape of the array of sliding blocks as (0, "
                     "0), but its components must be at least one");
  EXPECT_EMBER_ERROR(ember::_im2col(x, {2, 2, 2}, {1, 1}, {0, 0}, {1, 1}),
                     "It is expected kernel_size equals to 2, but got size 3");
  EXPECT_EMBER_ERROR(ember::_im2col(x, {0, 2}, {1, 1}, {0, 0}, {1, 1}),
                     "kernel_size to be greater than zero");
  EXPECT_EMBER_ERROR(ember::_im2col(x, {2, 2}, {1, 1}, {-1, 0}, {1, 1}),
                     "padding to be non-negative");
  EXPECT_EMBER_ERROR(ember::_im2col(x, {2, 2}, {1, 1}, {0, 0}, {0, 1}),
                     "stride to be greater than zero");
  EXPECT_EMBER_ERROR(
      ember::_im2col(random({2, 3}), {1, 1}, {1, 1}, {0, 0}, {1, 1}),
      "Expected 3D or 4D (batch mode) tensor");
  EXPECT_EMBER_ERROR(
      ember::_im2col(zeros({1, 0, 3, 3}), {1, 1}, {1, 1}, {0, 0}, {1, 1}),
      "non-zero dimensions");
  Tensor cols = random({1, 8, 5});
  EXPECT_EMBER_ERROR(
      ember::_col2im(cols, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}),
      "to match the calculated number of sliding blocks 2 * 2 = 4, but got "
      "input.size(2)=5.");
  EXPECT_EMBER_ERROR(
      ember::_col2im(random({1, 7, 4}), {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}),
      "to be divisible by the product of kernel_size");
  EXPECT_EMBER_ERROR(ember::_col2im(random({1, 8, 4}).to(kBool), {3, 3}, {2, 2},
                                    {1, 1}, {0, 0}, {1, 1}),
                     "bool");
}

// <im2col(x), y> == <x, col2im(y)>: the two are adjoint, so each is the
// other's derivative.
TEST(Im2col, Col2imIsTheAdjoint) {
  struct Case {
    Shape x, k, d, p, s;
  };
  std::vector<Case> cases = {
      {{2, 3, 5, 6}, {2, 3}, {1, 1}, {0, 0}, {1, 1}},
      {{1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 2}, {2, 1}},
      {{2, 2, 8, 8}, {3, 3}, {1, 1}, {1, 1}, {2, 2}},
      {{1, 1, 6, 9}, {2, 4}, {2, 2}, {2, 1}, {3, 1}},
  };
  uint64_t seed = 10;
  for (const Case &c : cases) {
    Tensor x = random(c.x, kDouble, seed++);
    Tensor cols = ember::_im2col(x, c.k, c.d, c.p, c.s);
    Tensor y = random(shapeOf(cols), kDouble, seed++);
    Tensor back = ember::_col2im(y, {c.x[2], c.x[3]}, c.k, c.d, c.p, c.s);
    EXPECT_EQ(shapeOf(back), c.x);
    double lhs = dotAll(cols, y), rhs = dotAll(x, back);
    EXPECT_NEAR(lhs, rhs, 1e-10 * (1 + std::fabs(lhs)));
    // Non-contiguous columns, float and half sum the same way.
    EXPECT_TRUE(close(
        ember::_col2im(noncontiguous(y), {c.x[2], c.x[3]}, c.k, c.d, c.p, c.s),
        back, 1e-12, 1e-12));
    EXPECT_TRUE(close(
        ember::_col2im(y.to(kFloat), {c.x[2], c.x[3]}, c.k, c.d, c.p, c.s),
        back, 1e-5, 1e-5));
    EXPECT_TRUE(
        close(ember::_col2im(y.to(kHalf), {c.x[2], c.x[3]}, c.k, c.d, c.p, c.s),
              back, 1e-2, 2e-2));
    // F::fold / F::unfold are the same primitives.
    EXPECT_TRUE(close(
        F::unfold(
            x,
            F::UnfoldFuncOptions(c.k).dilation(c.d).padding(c.p).stride(c.s)),
        cols, 0, 0));
    EXPECT_TRUE(close(F::fold(y, F::FoldFuncOptions({c.x[2], c.x[3]}, c.k)
                                     .dilation(c.d)
                                     .padding(c.p)
                                     .stride(c.s)),
                      back, 0, 0));
  }
  // Unbatched columns.
  Tensor y2 = random({8, 4}, kDouble, 3);
  EXPECT_TRUE(close(
      ember::_col2im(y2, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}),
      ember::_col2im(y2.unsqueeze(0), {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1})
          .squeeze(0),
      0, 0));
}

TEST(Im2col, SameAcrossThreadCounts) {
  Tensor x = random({4, 16, 40, 40}, kFloat, 4);
  expect_same_across_thread_counts([&] {
    Tensor c = ember::_im2col(x, {3, 3}, {1, 1}, {1, 1}, {1, 1});
    return std::vector<Tensor>{
        c, ember::_col2im(c, {40, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1})};
  });
}

// =============================================================================
// Convolution
// =============================================================================

TEST(Conv2d, MatchesDirectConvolution) {
  std::vector<Conv2dCase> cases;
  cases.push_back({{2, 3, 7, 6}, {4, 3, 3, 3}});
  cases.push_back({{2, 3, 7, 6}, {4, 3, 3, 2}, 2, 1, 1, 1, 1, 1});
  cases.push_back({{1, 4, 9, 8}, {6, 2, 3, 3}, 1, 2, 2, 1, 2, 1, 2, 1, 2});
  cases.push_back({{2, 6, 5, 5},
                   {6, 1, 2, 2},
                   1,
                   1,
                   0,
                   0,
                   0,
                   0,
                   1,
                   1,
                   6,
                   false}); // depthwise
  cases.push_back({{1, 2, 4, 4}, {3, 2, 1, 1}, 2, 2, 0, 0, 0, 0, 1, 1, 1});
  uint64_t seed = 20;
  for (const Conv2dCase &c : cases) {
    Tensor x = random(c.x, kFloat, seed++);
    Tensor w = random(c.w, kFloat, seed++);
    Tensor b = c.bias ? random({c.w[0]}, kFloat, seed++) : Tensor();
    Tensor want = refConv2d(x, w, b, c);
    auto opts = F::Conv2dFuncOptions()
                    .stride({c.sh, c.sw})
                    .padding({c.pt, c.pl})
                    .dilation({c.dh, c.dw})
                    .groups(c.groups)
                    .bias(b);
    EXPECT_TRUE(close(F::conv2d(x, w, opts), want, 1e-4, 1e-4));
    EXPECT_TRUE(close(F::conv2d(noncontiguous(x), noncontiguous(w), opts), want,
                      1e-4, 1e-4));
    EXPECT_TRUE(close(F::conv2d(x.to(kDouble), w.to(kDouble),
                                b.defined() ? b.to(kDouble) : b, {c.sh, c.sw},
                                {c.pt, c.pl}, {c.dh, c.dw}, c.groups),
                      want, 1e-12, 1e-12));
    // Unbatched input.
    EXPECT_TRUE(close(F::conv2d(x[0], w, opts), want[0], 1e-4, 1e-4));
  }
}

TEST(Conv2d, SameValidEmptyBatchAndHalf) {
  Tensor x = random({2, 2, 6, 7}, kDouble, 30);
  Tensor w = random({3, 2, 4, 3}, kDouble, 31); // even kernel height
  // "same" with dilation 1: total pad (3, 2) -> top 1, bottom 2, left 1,
  // right 1.
  Conv2dCase same{{2, 2, 6, 7}, {3, 2, 4, 3}, 1, 1, 1, 1, 2, 1};
  Tensor got = F::conv2d(x, w, F::Conv2dFuncOptions().padding(ember::kSame));
  EXPECT_EQ(shapeOf(got), (Shape{2, 3, 6, 7}));
  EXPECT_TRUE(close(got, refConv2d(x, w, Tensor(), same), 1e-12, 1e-12));
  EXPECT_TRUE(close(F::conv2d(x, w, F::Conv2dFuncOptions().padding("same")),
                    got, 0, 0));
  Conv2dCase valid{{2, 2, 6, 7}, {3, 2, 4, 3}};
  EXPECT_TRUE(close(F::conv2d(x, w, F::Conv2dFuncOptions().padding("valid")),
                    refConv2d(x, w, Tensor(), valid), 1e-12, 1e-12));
  Tensor e = F::conv2d(zeros({0, 2, 6, 7}), random({3, 2, 3, 3}),
                       F::Conv2dFuncOptions().padding(1));
  EXPECT_EQ(shapeOf(e), (Shape{0, 3, 6, 7}));
  Tensor h = F::conv2d(x.to(kHalf), w.to(kHalf));
  EXPECT_EQ(h.dtype(), kHalf);
  EXPECT_TRUE(close(h, refConv2d(x, w, Tensor(), valid), 2e-2, 5e-2));
}

TEST(Conv2d, Errors) {
  Tensor x = random({2, 3, 5, 5}), w = random({8, 4, 3, 3});
  EXPECT_EMBER_ERROR(F::conv2d(x, w),
                     "Given groups=1, weight of size [8, 4, 3, 3], expected "
                     "input[2, 3, 5, 5] to have 4 channels, but got 3 "
                     "channels instead");
  EXPECT_EMBER_ERROR(F::conv2d(random({1, 4, 4, 4}), random({2, 4, 5, 5})),
                     "Calculated padded input size per channel: (4 x 4). "
                     "Kernel size: (5 x 5). Kernel size can't be greater "
                     "than actual input size");
  EXPECT_EMBER_ERROR(F::conv2d(random({1, 4, 4, 4}), random({3, 2, 1, 1}),
                               F::Conv2dFuncOptions().groups(2)),
                     "expected weight to be divisible by 2 at dimension 0");
  EXPECT_EMBER_ERROR(
      F::conv2d(x, random({8, 3, 3, 3}),
                F::Conv2dFuncOptions().bias(random({4}))),
      "expected bias to be 1-dimensional with 8 elements, but got bias of "
      "size [4]");
  EXPECT_EMBER_ERROR(
      F::conv2d(x, random({8, 3, 3, 3}, kDouble)),
      "Input type (float32) and weight type (float64) should be the same");
  EXPECT_EMBER_ERROR(
      F::conv2d(x, random({8, 3, 3, 3}),
                F::Conv2dFuncOptions().padding("same").stride(2)),
      "padding='same' is not supported for strided");
  EXPECT_EMBER_ERROR(F::conv2d(random({5, 5}), random({1, 1, 1, 1})),
                     "Expected 3D (unbatched) or 4D (batched) input to "
                     "conv2d, but got input of size: [5, 5]");
  EXPECT_EMBER_ERROR(F::conv2d(x, random({8, 3, 3})), "-dimensional weight");
  EXPECT_EMBER_ERROR(
      F::conv2d(x, random({8, 3, 3, 3}), F::Conv2dFuncOptions().stride(0)),
      "non-positive stride is not supported");
  EXPECT_EMBER_ERROR(
      F::conv2d(x, random({8, 3, 3, 3}), F::Conv2dFuncOptions().padding(-1)),
      "negative padding is not supported");
  EXPECT_EMBER_ERROR(F::conv2d(x, random({8, 3, 3, 3}),
                               F::Conv2dFuncOptions().padding("full")),
                     "Invalid padding string 'full'");
  EXPECT_EMBER_ERROR(F::conv2d(x, random({8, 3, 3, 3}),
                               F::Conv2dFuncOptions().stride({1, 2, 3})),
                     "Expected 2 values");
}

TEST(Conv1d, MatchesDirectConvolution) {
  struct Case {
    Shape x, w;
    int64_t s, p, d, g;
  };
  std::vector<Case> cases = {{{2, 3, 9}, {4, 3, 3}, 1, 0, 1, 1},
                             {{2, 4, 11}, {6, 2, 2}, 2, 1, 2, 2},
                             {{1, 2, 5}, {2, 2, 5}, 1, 2, 1, 1}};
  uint64_t seed = 40;
  for (const Case &c : cases) {
    Tensor x = random(c.x, kDouble, seed++), w = random(c.w, kDouble, seed++);
    Tensor b = random({c.w[0]}, kDouble, seed++);
    Conv2dCase c2{{c.x[0], c.x[1], 1, c.x[2]},
                  {c.w[0], c.w[1], 1, c.w[2]},
                  1,
                  c.s,
                  0,
                  c.p,
                  0,
                  c.p,
                  1,
                  c.d,
                  c.g};
    Tensor want = refConv2d(x.unsqueeze(2), w.unsqueeze(2), b, c2).squeeze(2);
    auto o = F::Conv1dFuncOptions()
                 .stride(c.s)
                 .padding(c.p)
                 .dilation(c.d)
                 .groups(c.g)
                 .bias(b);
    EXPECT_TRUE(close(F::conv1d(x, w, o), want, 1e-12, 1e-12));
    EXPECT_TRUE(close(F::conv1d(noncontiguous(x), w, o), want, 1e-12, 1e-12));
    EXPECT_TRUE(close(F::conv1d(x[0], w, o), want[0], 1e-12, 1e-12));
    EXPECT_TRUE(
        close(F::conv1d(x, w, b, c.s, c.p, c.d, c.g), want, 1e-12, 1e-12));
  }
  EXPECT_EMBER_ERROR(F::conv1d(random({2, 3, 4, 4}), random({1, 3, 1})),
                     "Expected 2D (unbatched) or 3D (batched) input to "
                     "conv1d");
  EXPECT_EMBER_ERROR(F::conv1d(random({1, 3, 4}), random({1, 3, 6})),
                     "Calculated padded input size per channel: (4). Kernel "
                     "size: (6).");
}

// =============================================================================
// Pooling
// =============================================================================

namespace {
struct PoolCase {
  Shape x;
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  bool ceil = false;
};

/// PyTorch's pooling_output_shape: with ceil_mode a last partial window
/// counts when it starts inside the input or its left padding.
int64_t poolOut(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d,
                bool ceil) {
  int64_t num = size + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  int64_t n = num / s + 1; // num >= 0 in these cases
  if (ceil && (n - 1) * s >= size + p)
    --n;
  return n;
}

/// Direct max / average pooling over explicit windows, in double.
/// mode 0: max; 1: avg counting padding; 2: avg over real positions;
/// 3: sum / divisor.
Tensor refPool(const Tensor &x, const PoolCase &c, int mode,
               double divisor = 1) {
  Arr4 X(x);
  int64_t N = X.s[0], C = X.s[1], H = X.s[2], W = X.s[3];
  int64_t OH = poolOut(H, c.kh, c.sh, c.ph, c.dh, c.ceil);
  int64_t OW = poolOut(W, c.kw, c.sw, c.pw, c.dw, c.ceil);
  return ref({N, C, OH, OW}, [&](const Shape &i) {
    // avg_pool2d's window size counting padding, clipped at the padded
    // input's end (a ceil_mode window may hang over it).
    int64_t h0 = i[2] * c.sh - c.ph, w0 = i[3] * c.sw - c.pw;
    int64_t padded = (std::min(h0 + c.kh, H + c.ph) - h0) *
                     (std::min(w0 + c.kw, W + c.pw) - w0);
    double best = -kInf, sum = 0;
    int64_t real = 0;
    bool nan = false;
    for (int64_t a = 0; a < c.kh; ++a)
      for (int64_t b = 0; b < c.kw; ++b) {
        int64_t y = i[2] * c.sh - c.ph + a * c.dh;
        int64_t z = i[3] * c.sw - c.pw + b * c.dw;
        if (y < 0 || y >= H || z < 0 || z >= W)
          continue;
        double v = X.at(i[0], i[1], y, z);
        nan = nan || std::isnan(v);
        best = std::max(best, v);
        sum += v;
        ++real;
      }
    if (mode == 0)
      return nan ? std::nan("") : best;
    if (mode == 1)
      return sum / double(padded);
    if (mode == 2)
      return sum / double(real);
    return sum / divisor;
  });
}
} // namespace

TEST(MaxPool2d, MatchesDirectWindows) {
  std::vector<PoolCase> cases = {
      {{2, 3, 6, 7}, 2, 2, 2, 2, 0, 0},
      {{1, 2, 7, 7}, 3, 3, 2, 2, 1, 1},
      {{2, 2, 9, 8}, 3, 2, 1, 2, 1, 1, 2, 1},
      {{1, 1, 5, 5}, 1, 3, 1, 1, 0, 1},
      // ceil_mode: a last window over the edge (7 -> 4 windows, not 3), one
      // that would start in the right padding (dropped), dilation.
      {{2, 3, 7, 7}, 2, 2, 2, 2, 0, 0, 1, 1, true},
      {{1, 2, 6, 5}, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {{1, 2, 9, 10}, 3, 2, 3, 3, 1, 1, 2, 1, true},
  };
  uint64_t seed = 50;
  for (const PoolCase &c : cases) {
    Tensor x = random(c.x, kFloat, seed++);
    Tensor want = refPool(x, c, 0);
    auto o = F::MaxPool2dFuncOptions({c.kh, c.kw})
                 .stride({c.sh, c.sw})
                 .padding({c.ph, c.pw})
                 .dilation({c.dh, c.dw})
                 .ceil_mode(c.ceil);
    EXPECT_TRUE(close(F::max_pool2d(x, o), want, 0, 0));
    EXPECT_TRUE(close(F::max_pool2d(noncontiguous(x), o), want, 0, 0));
    EXPECT_TRUE(close(F::max_pool2d(x[0], o), want[0], 0, 0));
    Tensor xl = random(c.x, kLong, seed++);
    EXPECT_TRUE(close(F::max_pool2d(xl, o), refPool(xl, c, 0), 0, 0));
    // The indices point at the maximum of each window in its input plane.
    auto [v, idx] = F::max_pool2d_with_indices(x, o);
    EXPECT_EQ(idx.dtype(), kLong);
    Tensor flat = x.reshape({c.x[0], c.x[1], -1});
    Tensor picked =
        flat.gather(2, idx.reshape({c.x[0], c.x[1], -1})).view(v.sizes());
    EXPECT_TRUE(close(picked, v, 0, 0));
  }
  // Default stride is the kernel size; NaN propagates.
  Tensor x = random({1, 1, 4, 4}, kDouble, 60);
  Tensor xn = x.clone();
  xn.index_put_({0, 0, 1, 1}, std::nan(""));
  PoolCase c{{1, 1, 4, 4}, 2, 2, 2, 2, 0, 0};
  EXPECT_TRUE(close(F::max_pool2d(xn, F::MaxPool2dFuncOptions(2)),
                    refPool(xn, c, 0), 0, 0));
  EXPECT_TRUE(
      std::isnan(values(F::max_pool2d(xn, F::MaxPool2dFuncOptions(2)))[0]));
  Tensor e = F::max_pool2d(zeros({0, 2, 4, 4}), F::MaxPool2dFuncOptions(2));
  EXPECT_EQ(shapeOf(e), (Shape{0, 2, 2, 2}));
}

TEST(MaxPool2d, Errors) {
  Tensor x = random({1, 2, 4, 4});
  EXPECT_EMBER_ERROR(F::max_pool2d(x, F::MaxPool2dFuncOptions(3).padding(2)),
                     "pad should be at most half of effective kernel size");
  EXPECT_EMBER_ERROR(
      F::max_pool2d(x, F::MaxPool2dFuncOptions(3).padding({-1, 0})),
      "pad must be non-negative, but got pad=");
  EXPECT_EMBER_ERROR(
      F::max_pool2d(random({1, 3, 2, 2}), F::MaxPool2dFuncOptions(3)),
      "Given input size: (3x2x2). Calculated output size: "
      "(3x0x0). Output size is too small");
  EXPECT_EMBER_ERROR(F::max_pool2d(random({4, 4}), F::MaxPool2dFuncOptions(2)),
                     "Expected 3D or 4D (batch mode) tensor");
  EXPECT_EMBER_ERROR(F::max_pool2d(x, F::MaxPool2dFuncOptions(2).stride(0)),
                     "stride should be greater than zero");
  EXPECT_EMBER_ERROR(F::max_pool2d(x, F::MaxPool2dFuncOptions(0)),
                     "kernel size should be greater than zero");
}

TEST(AvgPool2d, MatchesDirectWindows) {
  std::vector<PoolCase> cases = {
      {{2, 3, 6, 7}, 2, 2, 2, 2, 0, 0},
      {{1, 2, 7, 7}, 3, 3, 2, 2, 1, 1},
      {{2, 2, 9, 8}, 3, 2, 1, 2, 1, 1},
      {{2, 3, 7, 7}, 2, 2, 2, 2, 0, 0, 1, 1, true},
      {{1, 2, 6, 5}, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {{1, 2, 8, 9}, 3, 2, 3, 3, 1, 1, 1, 1, true},
  };
  uint64_t seed = 70;
  for (const PoolCase &c : cases) {
    Tensor x = random(c.x, kFloat, seed++);
    auto o = F::AvgPool2dFuncOptions({c.kh, c.kw})
                 .stride({c.sh, c.sw})
                 .padding({c.ph, c.pw})
                 .ceil_mode(c.ceil);
    EXPECT_TRUE(close(F::avg_pool2d(x, o), refPool(x, c, 1), 1e-5, 1e-6));
    EXPECT_TRUE(close(F::avg_pool2d(noncontiguous(x), o), refPool(x, c, 1),
                      1e-5, 1e-6));
    EXPECT_TRUE(close(
        F::avg_pool2d(x, F::AvgPool2dFuncOptions(o).count_include_pad(false)),
        refPool(x, c, 2), 1e-5, 1e-6));
    EXPECT_TRUE(
        close(F::avg_pool2d(x, F::AvgPool2dFuncOptions(o).divisor_override(5)),
              refPool(x, c, 3, 5), 1e-5, 1e-6));
    EXPECT_TRUE(close(F::avg_pool2d(x[0], o), refPool(x, c, 1)[0], 1e-5, 1e-6));
    EXPECT_TRUE(
        close(F::avg_pool2d(x.to(kDouble), o), refPool(x, c, 1), 1e-12, 1e-12));
  }
  EXPECT_EMBER_ERROR(
      F::avg_pool2d(random({1, 1, 4, 4}, kLong), F::AvgPool2dFuncOptions(2)),
      "expected a floating input");
  EXPECT_EMBER_ERROR(
      F::avg_pool2d(random({1, 1, 4, 4}),
                    F::AvgPool2dFuncOptions(2).divisor_override(0)),
      "divisor must be not zero");
}

TEST(Pool2d, CeilModeGradients) {
  using autograd::gradcheck;
  using autograd::variable_list;
  // Note [Pooling with ceil_mode]: the overhanging windows take no gradient
  // from outside the input (the extension is not a parameter).
  Tensor x = random({1, 2, 7, 6}, kDouble, 90).requires_grad_();
  EXPECT_TRUE(gradcheck(
      [](const variable_list &in) {
        return variable_list{F::max_pool2d(
            in[0], F::MaxPool2dFuncOptions(2).stride({2, 3}).ceil_mode(true))};
      },
      {x}));
  for (bool pad : {true, false})
    EXPECT_TRUE(gradcheck(
        [pad](const variable_list &in) {
          return variable_list{
              F::avg_pool2d(in[0], F::AvgPool2dFuncOptions(3)
                                       .stride(2)
                                       .padding(1)
                                       .ceil_mode(true)
                                       .count_include_pad(pad))};
        },
        {x}));
  // PyTorch 2.x's values: F.avg_pool2d(torch.arange(42.).view(1, 1, 7, 6),
  // 3, 2, 1, ceil_mode=True), whose last column divides by 6 (3 rows, the
  // columns 5 and 6 of the padded input).
  Tensor a = arange(42, TensorOptions(kDouble)).view({1, 1, 7, 6});
  Tensor want = tensor({14.0 / 9, 30.0 / 9, 42.0 / 9, 16.0 / 6, 75.0 / 9, 14.0,
                        16.0, 51.0 / 6, 147.0 / 9, 26.0, 28.0, 87.0 / 6,
                        134.0 / 9, 210.0 / 9, 222.0 / 9, 76.0 / 6},
                       kDouble)
                    .view({1, 1, 4, 4});
  EXPECT_TRUE(close(
      F::avg_pool2d(
          a, F::AvgPool2dFuncOptions(3).stride(2).padding(1).ceil_mode(true)),
      want, 1e-12, 1e-12));
  // A 1-d input shorter than the kernel takes one overhanging window.
  Tensor s = tensor({1.0, 3.0}, kDouble).view({1, 1, 2});
  EXPECT_TRUE(close(
      F::max_pool1d(s, F::MaxPool1dFuncOptions(3).stride(2).ceil_mode(true)),
      tensor({3.0}, kDouble).view({1, 1, 1}), 0, 0));
}

TEST(Pool1d, MaxAndAvg) {
  Tensor x = random({2, 3, 11}, kDouble, 80);
  PoolCase c{{2, 3, 1, 11}, 1, 3, 1, 2, 0, 1, 1, 2};
  EXPECT_TRUE(
      close(F::max_pool1d(
                x, F::MaxPool1dFuncOptions(3).stride(2).padding(1).dilation(2)),
            refPool(x.unsqueeze(2), c, 0).squeeze(2), 0, 0));
  PoolCase a{{2, 3, 1, 11}, 1, 4, 1, 3, 0, 2};
  EXPECT_TRUE(
      close(F::avg_pool1d(x, F::AvgPool1dFuncOptions(4).stride(3).padding(2)),
            refPool(x.unsqueeze(2), a, 1).squeeze(2), 1e-12, 1e-12));
  EXPECT_TRUE(close(
      F::avg_pool1d(
          x[0],
          F::AvgPool1dFuncOptions(4).stride(3).padding(2).count_include_pad(
              false)),
      refPool(x.unsqueeze(2), a, 2).squeeze(2)[0], 1e-12, 1e-12));
  EXPECT_EMBER_ERROR(
      F::max_pool1d(random({1, 2, 2}), F::MaxPool1dFuncOptions(3)),
      "Given input size: (2x2). Calculated output size: "
      "(2x0). Output size is too small");
}

// =============================================================================
// Activations, linear, dropout, embedding
// =============================================================================

namespace {
/// f applied elementwise in double.
Tensor mapRef(const Tensor &x, const std::function<double(double)> &f) {
  auto v = values(x);
  return from_fn(shapeOf(x), [&](int64_t i) { return f(v[size_t(i)]); });
}
double sigm(double v) { return 1 / (1 + std::exp(-v)); }
} // namespace

// As PyTorch's hardtanh_backward: the gradient of hardtanh and relu6 is 0 at
// the bounds themselves and outside, 1 strictly inside and at NaN (found by
// a probe: clamp's gradient, which they used, is 1 at the bounds), in place
// too; the values are clamp's.
TEST(Activations, HardtanhGradientIsZeroAtTheBounds) {
  for (bool inplace : {false, true}) {
    SCOPED_TRACE(inplace);
    Tensor x = ember::tensor({-1.0, 0.0, 0.5, 6.0, 7.0, std::nan("")},
                             TensorOptions(kDouble))
                   .requires_grad_(true);
    Tensor in = x * 1;
    Tensor y = F::relu6(in, F::ReLU6FuncOptions(inplace));
    y.sum().backward();
    EXPECT_TRUE(close(y.detach(),
                      ember::tensor({0.0, 0.0, 0.5, 6.0, 6.0, std::nan("")},
                                    TensorOptions(kDouble)),
                      0, 0));
    EXPECT_TRUE(close(
        x.grad(),
        ember::tensor({0.0, 0.0, 1.0, 0.0, 0.0, 1.0}, TensorOptions(kDouble)),
        0, 0));
    Tensor z =
        ember::tensor({-2.0f, -1.0f, 0.0f, 2.0f, 3.0f}).requires_grad_(true);
    F::hardtanh(
        z * 1, F::HardtanhFuncOptions().min_val(-1).max_val(2).inplace(inplace))
        .sum()
        .backward();
    EXPECT_TRUE(
        close(z.grad(), ember::tensor({0.0f, 0.0f, 1.0f, 0.0f, 0.0f}), 0, 0));
  }
}

// clamp with two numbers is one op (ember::_clamp), whose gradient passes
// strictly inside the bounds and is 0 at NaN, as PyTorch 2.15's (Note
// [Clamp's gradients]); the autograd nodes print PyTorch's names.
TEST(Activations, ClampWithTwoNumbersIsOneOpWithPyTorchsGradient) {
  Tensor x = ember::tensor({-3.0, -1.0, 0.5, 2.0, 5.0, std::nan("")},
                           TensorOptions(kDouble))
                 .requires_grad_(true);
  Tensor y = x.clamp(-1, 2);
  EXPECT_EQ(y.grad_fn()->name(), "ClampBackward1");
  y.sum().backward();
  EXPECT_TRUE(close(y.detach(),
                    ember::tensor({-1.0, -1.0, 0.5, 2.0, 2.0, std::nan("")},
                                  TensorOptions(kDouble)),
                    0, 0));
  EXPECT_TRUE(close(
      x.grad(),
      ember::tensor({0.0, 0.0, 1.0, 0.0, 0.0, 0.0}, TensorOptions(kDouble)), 0,
      0));
  // min > max: max everywhere (as PyTorch's); one bound: clamp_min's node.
  EXPECT_TRUE(close(x.detach().clamp(3, 1),
                    ember::tensor({1.0, 1.0, 1.0, 1.0, 1.0, std::nan("")},
                                  TensorOptions(kDouble)),
                    0, 0));
  EXPECT_EQ(x.clamp(-1).grad_fn()->name(), "ClampMinBackward0");
  EXPECT_EQ(F::relu6(x).grad_fn()->name(), "HardtanhBackward0");
  EXPECT_EQ(F::gelu(x).grad_fn()->name(), "GeluBackward0");
  EXPECT_EQ(
      F::gelu(x, F::GELUFuncOptions().approximate("tanh")).grad_fn()->name(),
      "GeluBackward0");
}

TEST(Activations, MatchFormulas) {
  Tensor x = random({4, 5}, kDouble, 90) * 3;
  x.index_put_({0, 0}, 0.0);
  EXPECT_TRUE(
      close(F::relu(x), mapRef(x, [](double v) { return v > 0 ? v : 0; })));
  EXPECT_TRUE(close(F::relu6(x * 3), mapRef(x * 3, [](double v) {
                      return std::min(std::max(v, 0.0), 6.0);
                    })));
  EXPECT_TRUE(
      close(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)),
            mapRef(x, [](double v) { return v > 0 ? v : 0.2 * v; })));
  EXPECT_TRUE(close(
      F::elu(x, F::ELUFuncOptions().alpha(1.5)),
      mapRef(x, [](double v) { return v > 0 ? v : 1.5 * std::expm1(v); })));
  EXPECT_TRUE(close(
      F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(1)),
      mapRef(x, [](double v) { return std::min(std::max(v, -2.0), 1.0); })));
  EXPECT_TRUE(close(F::gelu(x),
                    mapRef(x,
                           [](double v) {
                             return 0.5 * v *
                                    (1 + std::erf(v / std::sqrt(2.0)));
                           }),
                    1e-10, 1e-10));
  EXPECT_TRUE(close(F::gelu(x, F::GELUFuncOptions().approximate("tanh")),
                    mapRef(x,
                           [](double v) {
                             return 0.5 * v *
                                    (1 + std::tanh(std::sqrt(2 / M_PI) *
                                                   (v + 0.044715 * v * v * v)));
                           }),
                    1e-10, 1e-10));
  EXPECT_TRUE(close(F::silu(x), mapRef(x, [](double v) { return v * sigm(v); }),
                    1e-10, 1e-10));
  EXPECT_TRUE(
      close(F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(3)),
            mapRef(x,
                   [](double v) {
                     return 2 * v > 3 ? v : std::log1p(std::exp(2 * v)) / 2;
                   }),
            1e-10, 1e-10));
  Tensor big = tensor({-200.0, -30.0, -1.0, 0.0, 2.0, 40.0, 200.0}, kDouble);
  EXPECT_TRUE(close(F::logsigmoid(big),
                    mapRef(big,
                           [](double v) {
                             return std::min(v, 0.0) -
                                    std::log1p(std::exp(-std::fabs(v)));
                           }),
                    1e-12, 1e-12));
  EXPECT_TRUE(close(F::logsigmoid(x.to(kFloat)),
                    mapRef(x, [](double v) { return std::log(sigm(v)); }), 1e-5,
                    1e-6));
  // Softmax / log_softmax over a dim of a non-contiguous input.
  Tensor y = noncontiguous(random({3, 4}, kFloat, 91));
  Tensor sm = from_fn({3, 4}, [&](int64_t i) {
    auto v = values(y);
    int64_t r = i / 4;
    double m = -kInf, s = 0;
    for (int k = 0; k < 4; ++k)
      m = std::max(m, v[size_t(r * 4 + k)]);
    for (int k = 0; k < 4; ++k)
      s += std::exp(v[size_t(r * 4 + k)] - m);
    return std::exp(v[size_t(i)] - m) / s;
  });
  EXPECT_TRUE(close(F::softmax(y, F::SoftmaxFuncOptions(1)), sm));
  EXPECT_TRUE(close(F::softmax(y, -1), sm));
  EXPECT_TRUE(close(F::log_softmax(y, 1),
                    mapRef(sm, [](double v) { return std::log(v); })));
  Tensor smd = F::softmax(y, F::SoftmaxFuncOptions(1).dtype(kDouble));
  EXPECT_EQ(smd.dtype(), kDouble);
  // In-place forms write into the input.
  Tensor z = x.clone();
  Tensor r = F::relu(z, F::ReLUFuncOptions(true));
  EXPECT_TRUE(r.is_same(z) || r.is_alias_of(z));
  EXPECT_TRUE(close(z, F::relu(x), 0, 0));
  Tensor z2 = x.clone();
  F::leaky_relu(z2, F::LeakyReLUFuncOptions().inplace(true));
  EXPECT_TRUE(close(z2, F::leaky_relu(x), 0, 0));
  EXPECT_EMBER_ERROR(
      F::hardtanh(x, F::HardtanhFuncOptions().min_val(2).max_val(1)),
      "must be greater than or equal to min_val");
}

TEST(Linear, MatchesReference) {
  Tensor x = random({2, 3, 4}, kDouble, 100), w = random({5, 4}, kDouble, 101),
         b = random({5}, kDouble, 102);
  auto X = values(x), Wv = values(w), B = values(b);
  Tensor want = ref({2, 3, 5}, [&](const Shape &i) {
    double s = B[size_t(i[2])];
    for (int k = 0; k < 4; ++k)
      s += X[size_t((i[0] * 3 + i[1]) * 4 + k)] * Wv[size_t(i[2] * 4 + k)];
    return s;
  });
  EXPECT_TRUE(close(F::linear(x, w, b), want, 1e-12, 1e-12));
  EXPECT_TRUE(close(F::linear(noncontiguous(x), w, b), want, 1e-12, 1e-12));
  EXPECT_TRUE(close(F::linear(x, w), want - b, 1e-12, 1e-12));
}

TEST(Dropout, MasksAndScales) {
  Tensor x = random_positive({100, 100}, kFloat, 0.5, 2.0, 110);
  EXPECT_TRUE(F::dropout(x, F::DropoutFuncOptions(0.0)).is_same(x));
  EXPECT_TRUE(
      F::dropout(x, F::DropoutFuncOptions(0.5).training(false)).is_same(x));
  Tensor y = F::dropout(x, F::DropoutFuncOptions().p(0.3).training(true));
  auto xv = values(x), yv = values(y);
  int64_t zerosN = 0;
  bool scaled = true;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0)
      ++zerosN;
    else
      scaled = scaled && std::fabs(yv[i] - xv[i] / 0.7) <= 1e-5 * xv[i];
  }
  EXPECT_TRUE(scaled);
  double frac = double(zerosN) / double(xv.size());
  EXPECT_NEAR(frac, 0.3, 0.03);
  Tensor all = F::dropout(x, 1.0, true);
  EXPECT_TRUE(close(all, zeros_like(x), 0, 0));
  Tensor h = F::dropout(x.to(kHalf), 0.5, true);
  EXPECT_EQ(h.dtype(), kHalf);
  Tensor inplace = x.clone();
  Tensor r = F::dropout(inplace, F::DropoutFuncOptions(0.5).inplace(true));
  EXPECT_TRUE(r.is_alias_of(inplace));
  EXPECT_EMBER_ERROR(F::dropout(x, 1.5), "dropout probability has to be "
                                         "between 0 and 1, but got 1.5");
  EXPECT_EMBER_ERROR(F::dropout(random({3}, kLong), 0.5),
                     "expected a floating input");
}

TEST(Embedding, LooksUpRows) {
  Tensor w = random({6, 3}, kDouble, 120);
  Tensor idx = tensor({{0, 5, 2}, {2, 2, 1}});
  auto Wv = values(w), I = values(idx);
  Tensor want = ref({2, 3, 3}, [&](const Shape &i) {
    return Wv[size_t(int64_t(I[size_t(i[0] * 3 + i[1])]) * 3 + i[2])];
  });
  EXPECT_TRUE(close(F::embedding(idx, w), want, 0, 0));
  EXPECT_TRUE(close(F::embedding(idx.to(kInt), w), want, 0, 0));
  EXPECT_TRUE(close(F::embedding(noncontiguous(idx), w), want, 0, 0));
  // padding_idx keeps the row's values (it only changes the gradient).
  EXPECT_TRUE(
      close(F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(2)),
            want, 0, 0));
  EXPECT_TRUE(
      close(F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(-4)),
            want, 0, 0));
  EXPECT_EQ(shapeOf(F::embedding(tensor({5}).view({}), w)), (Shape{3}));
  EXPECT_EQ(shapeOf(F::embedding(zeros({0, 4}, kLong), w)), (Shape{0, 4, 3}));
  // max_norm renormalises the looked-up rows in place.
  Tensor w2 = w.clone() * 4;
  Tensor out = F::embedding(tensor({1, 3, 1}), w2,
                            F::EmbeddingFuncOptions().max_norm(1.0));
  auto W2 = values(w2), W4 = values(w * 4);
  for (int r = 0; r < 6; ++r) {
    double n = 0, n4 = 0;
    for (int c = 0; c < 3; ++c) {
      n += W2[size_t(r * 3 + c)] * W2[size_t(r * 3 + c)];
      n4 += W4[size_t(r * 3 + c)] * W4[size_t(r * 3 + c)];
    }
    if (r == 1 || r == 3)
      EXPECT_NEAR(std::sqrt(n), std::min(1.0, std::sqrt(n4)), 1e-6) << r;
    else
      EXPECT_NEAR(n, n4, 1e-12) << r;
  }
  EXPECT_TRUE(close(out, w2.index_select(0, tensor({1, 3, 1})), 0, 0));
  EXPECT_EMBER_ERROR(F::embedding(tensor({1.0, 2.0}), w),
                     "'indices' to have one of the following scalar types: "
                     "Long, Int");
  EXPECT_EMBER_ERROR(F::embedding(tensor({6}), w), "index 6 is out of bounds");
  EXPECT_EMBER_ERROR(F::embedding(idx, random({6})), "'weight' must be 2-D");
  EXPECT_EMBER_ERROR(
      F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(6)),
      "Padding_idx must be within num_embeddings");
  EXPECT_TRUE(close(F::one_hot(tensor({0, 2}), 3),
                    tensor({{1, 0, 0}, {0, 0, 1}}), 0, 0));
}

// =============================================================================
// Normalization
// =============================================================================

namespace {
/// Normalises groups of `inner` consecutive elements (after `outer` groups)
/// in double: (v - mean) / sqrt(var_biased + eps).
std::vector<double> normalizeGroups(const std::vector<double> &v, int64_t inner,
                                    double eps) {
  std::vector<double> out(v.size());
  for (size_t g = 0; g < v.size() / size_t(inner); ++g) {
    double m = 0, s = 0;
    for (int64_t k = 0; k < inner; ++k)
      m += v[g * size_t(inner) + size_t(k)];
    m /= double(inner);
    for (int64_t k = 0; k < inner; ++k) {
      double d = v[g * size_t(inner) + size_t(k)] - m;
      s += d * d;
    }
    s /= double(inner);
    for (int64_t k = 0; k < inner; ++k)
      out[g * size_t(inner) + size_t(k)] =
          (v[g * size_t(inner) + size_t(k)] - m) / std::sqrt(s + eps);
  }
  return out;
}
} // namespace

TEST(LayerNorm, MatchesReference) {
  Tensor x = random({3, 4, 5}, kFloat, 130) * 2 + 1;
  Tensor w = random({4, 5}, kFloat, 131), b = random({4, 5}, kFloat, 132);
  auto n = normalizeGroups(values(x), 20, 1e-5);
  auto Wv = values(w), B = values(b);
  Tensor want = from_fn({3, 4, 5}, [&](int64_t i) {
    return n[size_t(i)] * Wv[size_t(i % 20)] + B[size_t(i % 20)];
  });
  auto o = F::LayerNormFuncOptions({4, 5}).weight(w).bias(b).eps(1e-5);
  EXPECT_TRUE(close(F::layer_norm(x, o), want, 1e-4, 1e-5));
  EXPECT_TRUE(close(F::layer_norm(noncontiguous(x), o), want, 1e-4, 1e-5));
  auto n5 = normalizeGroups(values(x), 5, 1e-3);
  EXPECT_TRUE(
      close(F::layer_norm(x, F::LayerNormFuncOptions({5}).eps(1e-3)),
            from_fn({3, 4, 5}, [&](int64_t i) { return n5[size_t(i)]; }), 1e-4,
            1e-5));
  Tensor h =
      F::layer_norm(x.to(kHalf), o.weight(w.to(kHalf)).bias(b.to(kHalf)));
  EXPECT_EQ(h.dtype(), kHalf);
  EXPECT_TRUE(close(h, want, 1e-2, 2e-2));
  EXPECT_EQ(shapeOf(F::layer_norm(zeros({0, 5}), F::LayerNormFuncOptions({5}))),
            (Shape{0, 5}));
  EXPECT_EMBER_ERROR(F::layer_norm(x, F::LayerNormFuncOptions({4})),
                     "Given normalized_shape=[4], expected input with shape "
                     "[*, 4], but got input of size[3, 4, 5]");
  EXPECT_EMBER_ERROR(
      F::layer_norm(x, F::LayerNormFuncOptions({5}).weight(random({4}))),
      "Expected weight to be of same shape as normalized_shape");
}

namespace {

/// layer_norm over the last `k` dims in ember ops, in float64: the
/// reference of the native kernels (forward and, through autograd, backward).
Tensor layer_norm_reference(const Tensor &x, int64_t k, const Tensor &w,
                            const Tensor &b, double eps) {
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d)
    dims.push_back(d);
  Tensor c = x - x.mean(dims, true);
  Tensor y = c * ((c * c).mean(dims, true) + eps).rsqrt();
  if (w.defined())
    y = y * w;
  if (b.defined())
    y = y + b;
  return y;
}

/// A float64 leaf requiring grad with t's values.
Tensor leaf64(const Tensor &t) {
  return t.detach().to(kDouble).requires_grad_();
}

/// The native layer_norm of x (any dtype, any strides) against the float64
/// reference: output, mean, rstd, and the gradients for input, weight and
/// bias from the output gradient g (which may be expanded).
void expect_layer_norm_matches(const Tensor &x, int64_t k, const Tensor &w,
                               const Tensor &b, const Tensor &g,
                               double rtol = 1e-4, double atol = 1e-5) {
  std::vector<int64_t> shape(x.sizes().end() - k, x.sizes().end());
  Tensor xl = x.detach().requires_grad_();
  Tensor wl = w.defined() ? w.detach().requires_grad_() : Tensor();
  Tensor bl = b.defined() ? b.detach().requires_grad_() : Tensor();
  auto opt = [](const Tensor &t) {
    return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
  };
  auto [y, mean, rstd] =
      ember::native_layer_norm(xl, shape, opt(wl), opt(bl), 1e-5);
  Tensor xd = leaf64(x);
  Tensor wd = w.defined() ? leaf64(w) : Tensor();
  Tensor bd = b.defined() ? leaf64(b) : Tensor();
  Tensor want = layer_norm_reference(xd, k, wd, bd, 1e-5);
  EXPECT_EQ(y.dtype(), x.dtype());
  EXPECT_TRUE(close(y, want.detach(), rtol, atol)) << "output";
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d)
    dims.push_back(d);
  Tensor xdd = xd.detach();
  EXPECT_TRUE(close(mean, xdd.mean(dims, true), rtol, atol)) << "mean";
  EXPECT_TRUE(
      close(rstd, (xdd.var(dims, Scalar(0), true) + 1e-5).rsqrt(), rtol, atol))
      << "rstd";
  autograd::variable_list ins{xl}, ref_ins{xd};
  if (w.defined()) {
    ins.push_back(wl);
    ref_ins.push_back(wd);
  }
  if (b.defined()) {
    ins.push_back(bl);
    ref_ins.push_back(bd);
  }
  autograd::variable_list got = autograd::grad({y}, ins, {g});
  autograd::variable_list exp =
      autograd::grad({want}, ref_ins, {g.to(kDouble)});
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), ins[i].dtype()) << "gradient " << i;
    EXPECT_EQ(got[i].sizes(), ins[i].sizes()) << "gradient " << i;
    // The weight and bias gradients sum over rows: scale the tolerance.
    double scale =
        i == 0 ? 1.0
               : std::sqrt(
                     double(std::max<int64_t>(1, x.numel() / ins[i].numel())));
    EXPECT_TRUE(close(got[i], exp[i], rtol * scale, atol * scale))
        << "gradient " << i;
  }
}

} // namespace

TEST(LayerNorm, NativeKernelsMatchFloat64Reference) {
  Tensor w = random({4, 5}, kFloat, 140), b = random({4, 5}, kFloat, 141);
  Tensor x = random({3, 4, 5}, kFloat, 142) * 2 + 1;
  Tensor g = random({3, 4, 5}, kFloat, 143);
  expect_layer_norm_matches(x, 2, w, b, g);
  expect_layer_norm_matches(x, 2, Tensor(), Tensor(), g); // no affine
  expect_layer_norm_matches(x, 2, w, Tensor(), g);
  expect_layer_norm_matches(x, 2, Tensor(), b, g);
  expect_layer_norm_matches(x, 1, random({5}, kFloat, 144), Tensor(), g);
  // Non-contiguous input and gradient, an expanded (broadcast) gradient.
  expect_layer_norm_matches(noncontiguous(x), 2, w, b, noncontiguous(g));
  expect_layer_norm_matches(x, 1, Tensor(), random({5}, kFloat, 159),
                            random({5}, kFloat, 145).expand({3, 4, 5}));
  // One row; a 1-d input; float64.
  expect_layer_norm_matches(random({1, 7}, kFloat, 146), 1, Tensor(), Tensor(),
                            random({1, 7}, kFloat, 147));
  expect_layer_norm_matches(random({7}, kDouble, 148), 1,
                            random({7}, kDouble, 149), Tensor(),
                            random({7}, kDouble, 150), 1e-10, 1e-12);
  // Long rows with a mean far from 0 (two-pass variance), many rows (the
  // weight/bias gradients are summed over chunks of rows).
  Tensor wl = random({4096}, kFloat, 151), bl = random({4096}, kFloat, 152);
  expect_layer_norm_matches(random({3, 4096}, kFloat, 153) * 0.1 + 100, 1, wl,
                            bl, random({3, 4096}, kFloat, 154), 1e-3, 1e-4);
  expect_layer_norm_matches(
      random({300, 33}, kFloat, 155), 1, random({33}, kFloat, 156),
      random({33}, kFloat, 157), random({300, 33}, kFloat, 158));
  // float16 computes in float: its gradients match within float16 rounding.
  expect_layer_norm_matches(x.to(kHalf), 2, w.to(kHalf), b.to(kHalf),
                            g.to(kHalf), 2e-2, 2e-2);
}

TEST(LayerNorm, NativeKernelEdgeCases) {
  // No rows: empty output and gradients, zero weight/bias gradients.
  Tensor x = zeros({0, 5}).requires_grad_();
  Tensor w = ones({5}).requires_grad_(), b = zeros({5}).requires_grad_();
  auto [y, mean, rstd] = ember::native_layer_norm(x, {5}, w, b, 1e-5);
  EXPECT_EQ(shapeOf(y), (Shape{0, 5}));
  EXPECT_EQ(shapeOf(mean), (Shape{0, 1}));
  autograd::variable_list gs = autograd::grad({y}, {x, w, b}, {zeros({0, 5})});
  EXPECT_EQ(shapeOf(gs[0]), (Shape{0, 5}));
  EXPECT_TRUE(close(gs[1], zeros({5}), 0, 0));
  EXPECT_TRUE(close(gs[2], zeros({5}), 0, 0));
  // mean and rstd have no gradient history (as PyTorch's).
  EXPECT_FALSE(mean.requires_grad());
  EXPECT_FALSE(rstd.requires_grad());
  EXPECT_TRUE(y.requires_grad());
  // output_mask leaves gradients undefined.
  Tensor xs = random({3, 5}, kFloat, 160), g = random({3, 5}, kFloat, 161);
  auto [y2, m2, r2] = ember::native_layer_norm(xs, {5}, w.detach(), {}, 1e-5);
  auto [dx, dw, db] = ember::native_layer_norm_backward(
      g, xs, {5}, m2, r2, w.detach(), {}, {1, 0, 0});
  EXPECT_TRUE(dx.defined());
  EXPECT_FALSE(dw.defined());
  EXPECT_FALSE(db.defined());
  auto [dx2, dw2, db2] = ember::native_layer_norm_backward(
      g, xs, {5}, m2, r2, w.detach(), {}, {0, 1, 1});
  EXPECT_FALSE(dx2.defined());
  EXPECT_TRUE(close(db2, g.sum({0}), 1e-5, 1e-6));
  // Bad arguments raise PyTorch's errors.
  EXPECT_EMBER_ERROR(ember::native_layer_norm(xs, {4}, {}, {}, 1e-5),
                     "Given normalized_shape=[4]");
  EXPECT_EMBER_ERROR(ember::native_layer_norm(
                         ones({2, 3}, TensorOptions(kLong)), {3}, {}, {}, 1e-5),
                     "layer_norm: expected a floating input");
  EXPECT_EMBER_ERROR(
      ember::native_layer_norm_backward(g, xs, {5}, m2, r2, {}, {}, {1, 1}),
      "output_mask must have 3 elements");
  // Values near FLT_MAX of both signs (found by a probe): the deviations
  // from the first value overflowed and the mean and every output were NaN;
  // now the variance overflows and the output is 0, as PyTorch's float
  // kernel and the compiled kernel give. An inf input still gives NaN.
  Tensor huge = ember::tensor({2e38f, -2e38f, 2e38f, -2e38f}).view({2, 2});
  Tensor yh = F::layer_norm(huge, F::LayerNormFuncOptions({2}));
  EXPECT_TRUE(close(yh, zeros({2, 2}), 0, 0)) << yh;
  auto ln2 = [](const Tensor &t) {
    return F::layer_norm(t, F::LayerNormFuncOptions({2}));
  };
  EXPECT_TRUE(close(compile(ln2)(huge), yh, 0, 0));
  Tensor with_inf =
      ember::tensor({std::numeric_limits<float>::infinity(), 1.f});
  EXPECT_TRUE(ln2(with_inf.view({1, 2})).isnan().all().item<bool>());
  // The weight/bias gradients do not depend on the thread count.
  Tensor xb = random({257, 40}, kFloat, 162),
         gb = random({257, 40}, kFloat, 163);
  Tensor wb = random({40}, kFloat, 164);
  expect_same_across_thread_counts([&] {
    auto [yb, mb, rb] = ember::native_layer_norm(xb, {40}, wb, {}, 1e-5);
    auto [a, c, d] = ember::native_layer_norm_backward(gb, xb, {40}, mb, rb, wb,
                                                       {}, {1, 1, 1});
    return std::vector<Tensor>{yb, a, c, d};
  });
}

TEST(LayerNorm, CreateGraphGivesSecondDerivatives) {
  // The backward kernel has no derivative of its own: under create_graph the
  // formula runs in ember ops. Compare d/dx of sum(dL/dx * v) with the
  // float64 reference graph.
  Tensor x = random({4, 6}, kDouble, 170), w = random({6}, kDouble, 171);
  Tensor g = random({4, 6}, kDouble, 172), v = random({4, 6}, kDouble, 173);
  auto second = [&](bool native) {
    Tensor xl = x.clone().requires_grad_(), wl = w.clone().requires_grad_();
    Tensor y = native
                   ? F::layer_norm(xl, F::LayerNormFuncOptions({6}).weight(wl))
                   : layer_norm_reference(xl, 1, wl, Tensor(), 1e-5);
    Tensor dx = autograd::grad({y}, {xl}, {g}, true, true)[0];
    return autograd::grad({(dx * v).sum()}, {xl, wl});
  };
  autograd::variable_list got = second(true), want = second(false);
  EXPECT_TRUE(close(got[0], want[0], 1e-8, 1e-10));
  EXPECT_TRUE(close(got[1], want[1], 1e-8, 1e-10));
}

TEST(Softmax, NativeBackwardMatchesFloat64Reference) {
  // Inner, middle and outer dims; non-contiguous input and gradient; an
  // expanded gradient; float16; an empty tensor and a 0-dim one.
  struct C {
    Tensor x, g;
    int64_t dim;
  };
  Tensor x3 = random({4, 37, 5}, kFloat, 180) * 3;
  Tensor g3 = random({4, 37, 5}, kFloat, 181);
  std::vector<C> cases = {
      {x3, g3, -1},
      {x3, g3, 1},
      {x3, g3, 0},
      {noncontiguous(x3), noncontiguous(g3), 1},
      {x3.transpose(0, 2), g3.transpose(0, 2), 2},
      {x3, random({5}, kFloat, 182).expand({4, 37, 5}), 1},
      {random({3, 300}, kFloat, 183) * 5, random({3, 300}, kFloat, 184), 1},
      {x3.to(kHalf), g3.to(kHalf), 1},
      {zeros({0, 4}), zeros({0, 4}), 1},
      {random({}, kFloat, 185), random({}, kFloat, 186), 0}};
  for (bool log : {false, true}) {
    for (const C &c : cases) {
      SCOPED_TRACE(std::string(log ? "log_softmax" : "softmax") + " dim " +
                   std::to_string(c.dim) + " of " +
                   ::testing::PrintToString(shapeOf(c.x)) + " " +
                   toString(c.x.dtype()));
      Tensor xl = c.x.detach().requires_grad_();
      Tensor y = log ? xl.log_softmax(c.dim) : xl.softmax(c.dim);
      Tensor got = autograd::grad({y}, {xl}, {c.g})[0];
      Tensor xd = leaf64(c.x);
      Tensor yd = xd - xd.amax({c.dim}, true);
      Tensor e = yd.exp(), sum = e.sum({c.dim}, true);
      Tensor want_y = log ? yd - sum.log() : e / sum;
      Tensor want = autograd::grad({want_y}, {xd}, {c.g.to(kDouble)})[0];
      EXPECT_EQ(got.dtype(), c.x.dtype());
      bool half = c.x.dtype() == kHalf;
      EXPECT_TRUE(close(got, want, half ? 1e-2 : 1e-5, half ? 1e-2 : 1e-6));
    }
  }
}

TEST(BatchNorm, TrainingUpdatesRunningStats) {
  Tensor x = random({4, 3, 2, 5}, kDouble, 140) * 2 + 0.5;
  Tensor w = random({3}, kDouble, 141), b = random({3}, kDouble, 142);
  Tensor rm = random({3}, kDouble, 143),
         rv = random_positive({3}, kDouble, 0.5, 2, 144);
  auto X = values(x), RM = values(rm), RV = values(rv), Wv = values(w),
       B = values(b);
  // Per channel statistics over (N, H, W).
  std::vector<double> mean(3, 0), var(3, 0);
  for (size_t i = 0; i < X.size(); ++i)
    mean[(i / 10) % 3] += X[i] / 40;
  for (size_t i = 0; i < X.size(); ++i) {
    double d = X[i] - mean[(i / 10) % 3];
    var[(i / 10) % 3] += d * d / 40;
  }
  Tensor want = from_fn({4, 3, 2, 5}, [&](int64_t i) {
    size_t c = size_t(i / 10) % 3;
    return (X[size_t(i)] - mean[c]) / std::sqrt(var[c] + 1e-5) * Wv[c] + B[c];
  });
  Tensor got = F::batch_norm(
      x, rm, rv,
      F::BatchNormFuncOptions().weight(w).bias(b).training(true).momentum(0.2));
  EXPECT_TRUE(close(got, want, 1e-10, 1e-10));
  Tensor wantRm = from_fn({3}, [&](int64_t c) {
    return 0.8 * RM[size_t(c)] + 0.2 * mean[size_t(c)];
  });
  Tensor wantRv = from_fn({3}, [&](int64_t c) {
    return 0.8 * RV[size_t(c)] + 0.2 * var[size_t(c)] * 40.0 / 39.0;
  });
  EXPECT_TRUE(close(rm, wantRm, 1e-12, 1e-12));
  EXPECT_TRUE(close(rv, wantRv, 1e-12, 1e-12));
  // Evaluation uses the running statistics and leaves them unchanged.
  auto RM2 = values(rm), RV2 = values(rv);
  Tensor evalWant = from_fn({4, 3, 2, 5}, [&](int64_t i) {
    size_t c = size_t(i / 10) % 3;
    return (X[size_t(i)] - RM2[c]) / std::sqrt(RV2[c] + 1e-3);
  });
  EXPECT_TRUE(close(F::batch_norm(noncontiguous(x), rm, rv,
                                  F::BatchNormFuncOptions().eps(1e-3)),
                    evalWant, 1e-10, 1e-10));
  EXPECT_EQ(values(rm), RM2);
  // (N, C) input, float, no running stats.
  Tensor x2 = random({6, 3}, kFloat, 145);
  auto n2 = values(F::batch_norm(x2, Tensor(), Tensor(),
                                 F::BatchNormFuncOptions().training(true)));
  auto t2 = values(x2.t().contiguous());
  auto nt = normalizeGroups(t2, 6, 1e-5);
  for (int64_t i = 0; i < 18; ++i)
    EXPECT_NEAR(n2[size_t(i)], nt[size_t((i % 3) * 6 + i / 3)], 1e-5);
  EXPECT_EMBER_ERROR(F::batch_norm(random({1, 3}), Tensor(), Tensor(),
                                   F::BatchNormFuncOptions().training(true)),
                     "Expected more than 1 value per channel when training, "
                     "got input size [1, 3]");
  EXPECT_EMBER_ERROR(F::batch_norm(x, random({4}, kDouble), rv),
                     "running_mean should contain 3 elements not 4");
  EXPECT_EMBER_ERROR(F::batch_norm(x, Tensor(), Tensor()),
                     "must be defined in evaluation mode");
}

TEST(BatchNorm, RunningUpdateRecordsNoGradient) {
  Tensor x = random({4, 2}, kFloat, 146).requires_grad_();
  Tensor rm = zeros({2}), rv = ones({2});
  Tensor y = F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().training(true));
  EXPECT_FALSE(rm.requires_grad());
  EXPECT_FALSE(rv.requires_grad());
  EXPECT_EQ(y.sizes(), x.sizes());
}

TEST(GroupNorm, MatchesReference) {
  Tensor x = random({2, 6, 3}, kDouble, 150);
  Tensor w = random({6}, kDouble, 151), b = random({6}, kDouble, 152);
  auto n = normalizeGroups(values(x), 6, 1e-5); // 3 groups of 2 channels
  auto Wv = values(w), B = values(b);
  Tensor want = from_fn({2, 6, 3}, [&](int64_t i) {
    size_t c = size_t(i / 3) % 6;
    return n[size_t(i)] * Wv[c] + B[c];
  });
  EXPECT_TRUE(
      close(F::group_norm(x, F::GroupNormFuncOptions(3).weight(w).bias(b)),
            want, 1e-10, 1e-10));
  EXPECT_EMBER_ERROR(F::group_norm(x, F::GroupNormFuncOptions(4)),
                     "Expected number of channels in input to be divisible "
                     "by num_groups");
}

// =============================================================================
// Padding
// =============================================================================

namespace {
int64_t mapPad(int64_t q, int64_t n, const std::string &mode) {
  if (mode == "reflect")
    return q < 0 ? -q : q >= n ? 2 * (n - 1) - q : q;
  if (mode == "replicate")
    return std::clamp<int64_t>(q, 0, n - 1);
  return ((q % n) + n) % n;
}
/// Pads the last two dims of x (any leading dims) by (l, r, t, b).
Tensor refPad2d(const Tensor &x, Shape p, const std::string &mode) {
  Shape s = shapeOf(x);
  int64_t H = s[s.size() - 2], W = s.back();
  int64_t l = p[0], r = p[1], t = p.size() > 2 ? p[2] : 0,
          bt = p.size() > 2 ? p[3] : 0;
  Shape os = s;
  os[os.size() - 2] = H + t + bt;
  os.back() = W + l + r;
  auto v = values(x);
  return ref(os, [&](const Shape &i) {
    int64_t lead = 0;
    for (size_t d = 0; d + 2 < s.size(); ++d)
      lead = lead * s[d] + i[d];
    int64_t y = mapPad(i[i.size() - 2] - t, H, mode);
    int64_t z = mapPad(i.back() - l, W, mode);
    return v[size_t((lead * H + y) * W + z)];
  });
}
} // namespace

TEST(Pad, NonConstantModes) {
  Tensor x3 = random({2, 4, 5}, kFloat, 160);
  Tensor x4 = random({2, 3, 4, 5}, kFloat, 161);
  for (std::string mode : {"reflect", "replicate", "circular"}) {
    F::PadMode m(mode);
    EXPECT_TRUE(close(F::pad(x3, F::PadFuncOptions({2, 3}).mode(m)),
                      refPad2d(x3.unsqueeze(1), {2, 3}, mode).squeeze(1), 0, 0))
        << mode;
    EXPECT_TRUE(close(F::pad(x4, F::PadFuncOptions({1, 3, 2, 1}).mode(m)),
                      refPad2d(x4, {1, 3, 2, 1}, mode), 0, 0))
        << mode;
    EXPECT_TRUE(close(
        F::pad(noncontiguous(x4), F::PadFuncOptions({1, 0, 0, 2}).mode(m)),
        refPad2d(x4, {1, 0, 0, 2}, mode), 0, 0))
        << mode;
    EXPECT_TRUE(close(F::pad(x3, F::PadFuncOptions({1, 1, 1, 1}).mode(m)),
                      refPad2d(x3, {1, 1, 1, 1}, mode), 0, 0))
        << mode;
  }
  // Negative amounts crop.
  EXPECT_TRUE(
      close(F::pad(x3, F::PadFuncOptions({-1, 2}).mode(ember::kReplicate)),
            refPad2d(x3.narrow(2, 1, 4).contiguous().unsqueeze(1), {0, 2},
                     "replicate")
                .squeeze(1),
            0, 0));
  EXPECT_EMBER_ERROR(
      F::pad(x3, F::PadFuncOptions({5, 0}).mode(ember::kReflect)),
      "Padding size should be less than the corresponding "
      "input dimension, but got: padding (5, 0) at dimension 2");
  EXPECT_EMBER_ERROR(
      F::pad(x3, F::PadFuncOptions({6, 0}).mode(ember::kCircular)),
      "wrapping around more than once");
  // Cropping a dim away: PyTorch raises for reflect and replicate ("input
  // (W: 5) is too small. Calculated output W: 0").
  for (const char *mode : {"reflect", "replicate"})
    EXPECT_EMBER_ERROR(F::pad(arange(10, kFloat).reshape({1, 2, 5}),
                              F::PadFuncOptions({-3, -2}).mode(mode)),
                       "is too small. Calculated output size: 0");
  EXPECT_EMBER_ERROR(
      F::pad(random({5}), F::PadFuncOptions({1, 1}).mode("reflect")),
      "expects a 2-D or 3-D input");
  EXPECT_EMBER_ERROR(F::PadFuncOptions({1, 1}).mode("wrap"),
                     "Unsupported padding mode: wrap");
}

TEST(Pad, ConstantMode) {
  Tensor x = random({2, 3}, kDouble, 162);
  auto v = values(x);
  Tensor got = F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).value(-3.5));
  Tensor want = ref({3, 6}, [&](const Shape &i) {
    int64_t r = i[0], c = i[1] - 1;
    return r < 2 && c >= 0 && c < 3 ? v[size_t(r * 3 + c)] : -3.5;
  });
  EXPECT_TRUE(close(got, want, 0, 0));
  EXPECT_TRUE(
      close(F::pad(x, F::PadFuncOptions({-1, 0})), x.narrow(1, 1, 2), 0, 0));
}

// =============================================================================
// Attention
// =============================================================================

namespace {
/// Attention with explicit loops over (B, L, S); mask(b, l, s) returns
/// {allowed, additive}.
Tensor refAttention(
    const Tensor &q, const Tensor &k, const Tensor &v, double scale,
    const std::function<std::pair<bool, double>(int64_t, int64_t, int64_t)>
        &mask) {
  Shape qs = shapeOf(q);
  int64_t E = qs.back(), L = qs[qs.size() - 2];
  int64_t S = k.size(-2), Ev = v.size(-1);
  int64_t Bn = q.numel() / (L * E);
  auto Q = values(q), K = values(k), V = values(v);
  Shape os = qs;
  os.back() = Ev;
  std::vector<double> out(size_t(Bn * L * Ev));
  for (int64_t b = 0; b < Bn; ++b)
    for (int64_t l = 0; l < L; ++l) {
      std::vector<double> sc(static_cast<size_t>(S));
      double m = -kInf;
      for (int64_t s = 0; s < S; ++s) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e)
          d += Q[size_t((b * L + l) * E + e)] * K[size_t((b * S + s) * E + e)];
        auto [ok, add] = mask(b, l, s);
        sc[size_t(s)] = ok ? d * scale + add : -kInf;
        m = std::max(m, sc[size_t(s)]);
      }
      double z = 0;
      for (auto &x : sc)
        z += (x = std::exp(x - m));
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0;
        for (int64_t s = 0; s < S; ++s)
          acc += sc[size_t(s)] / z * V[size_t((b * S + s) * Ev + e)];
        out[size_t((b * L + l) * Ev + e)] = acc;
      }
    }
  return from_fn(os, [&](int64_t i) { return out[size_t(i)]; });
}
} // namespace

TEST(Attention, MatchesExplicitLoops) {
  Tensor q = random({2, 3, 4, 8}, kDouble, 170);
  Tensor k = random({2, 3, 6, 8}, kDouble, 171);
  Tensor v = random({2, 3, 6, 5}, kDouble, 172);
  auto none = [](int64_t, int64_t, int64_t) { return std::pair{true, 0.0}; };
  double sc = 1 / std::sqrt(8.0);
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v),
                    refAttention(q, k, v, sc, none), 1e-10, 1e-10));
  EXPECT_TRUE(close(
      F::scaled_dot_product_attention(noncontiguous(q), k, noncontiguous(v)),
      refAttention(q, k, v, sc, none), 1e-10, 1e-10));
  EXPECT_TRUE(
      close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, 0.3),
            refAttention(q, k, v, 0.3, none), 1e-10, 1e-10));
  // Causal (L = S).
  Tensor kc = k.narrow(2, 0, 4), vc = v.narrow(2, 0, 4);
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, kc, vc, {}, 0.0, true),
                    refAttention(q, kc, vc, sc,
                                 [](int64_t, int64_t l, int64_t s) {
                                   return std::pair{s <= l, 0.0};
                                 }),
                    1e-10, 1e-10));
  // A bool mask (L, S) broadcast over batch and heads; a float mask added.
  Tensor bm = random({4, 6}, kBool, 173);
  bm.index_put_({indexing::Slice(), 0}, true); // no fully masked row
  auto B = values(bm);
  EXPECT_TRUE(
      close(F::scaled_dot_product_attention(q, k, v, bm),
            refAttention(q, k, v, sc,
                         [&](int64_t, int64_t l, int64_t s) {
                           return std::pair{B[size_t(l * 6 + s)] != 0, 0.0};
                         }),
            1e-10, 1e-10));
  Tensor fm = random({3, 4, 6}, kDouble, 174);
  auto FM = values(fm);
  EXPECT_TRUE(
      close(F::scaled_dot_product_attention(q, k, v, fm),
            refAttention(
                q, k, v, sc,
                [&](int64_t b, int64_t l, int64_t s) {
                  return std::pair{true, FM[size_t(((b % 3) * 4 + l) * 6 + s)]};
                }),
            1e-10, 1e-10));
  Tensor f =
      F::scaled_dot_product_attention(q.to(kFloat), k.to(kFloat), v.to(kFloat));
  EXPECT_TRUE(close(f, refAttention(q, k, v, sc, none), 1e-4, 1e-5));
  // A query with every key masked attends to nothing: zeros, not NaN.
  Tensor bm2 = bm.clone();
  bm2.index_put_({1}, false);
  Tensor masked = F::scaled_dot_product_attention(q, k, v, bm2);
  EXPECT_TRUE(close(masked.select(2, 1), zeros({2, 3, 5}, kDouble), 0, 0));
  EXPECT_TRUE(close(masked.select(2, 0),
                    F::scaled_dot_product_attention(q, k, v, bm).select(2, 0),
                    0, 0));
  // dropout_p = 1 drops every weight.
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, {}, 1.0),
                    zeros({2, 3, 4, 5}, kDouble), 0, 0));
  EXPECT_EMBER_ERROR(
      F::scaled_dot_product_attention(q, kc, vc, bm.narrow(1, 0, 4), 0.0, true),
      "Explicit attn_mask should not be set when is_causal=True");
  EXPECT_EMBER_ERROR(F::scaled_dot_product_attention(q, k.to(kFloat), v),
                     "Expected query, key, and value to have the same dtype");
  EXPECT_EMBER_ERROR(F::scaled_dot_product_attention(q, k, v, bm.to(kLong)),
                     "Expected attn_mask dtype to be bool or float");
  EXPECT_EMBER_ERROR(
      F::scaled_dot_product_attention(q, random({2, 3, 6, 7}, kDouble), v),
      "same embedding size");
}

// =============================================================================
// Losses
// =============================================================================

namespace {
double reduceRef(const std::vector<double> &v, const std::string &r) {
  double s = 0;
  for (double x : v)
    s += x;
  return r == "sum" ? s : s / double(v.size());
}
Tensor lossRef(const Tensor &a, const Tensor &b, const std::string &r,
               const std::function<double(double)> &f) {
  auto x = values(a), y = values(b);
  std::vector<double> l(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    l[i] = f(x[i] - y[i]);
  if (r == "none")
    return from_fn(shapeOf(a), [&](int64_t i) { return l[size_t(i)]; });
  return scalar_tensor(reduceRef(l, r), kDouble);
}
} // namespace

TEST(Losses, Regression) {
  Tensor a = random({3, 4}, kFloat, 180) * 2, b = random({3, 4}, kFloat, 181);
  for (std::string r : {"none", "mean", "sum"}) {
    Reduction red(r);
    EXPECT_TRUE(close(F::mse_loss(a, b, F::MSELossFuncOptions(red)),
                      lossRef(a, b, r, [](double d) { return d * d; }), 1e-5,
                      1e-5))
        << r;
    EXPECT_TRUE(close(F::l1_loss(noncontiguous(a), b, red),
                      lossRef(a, b, r, [](double d) { return std::fabs(d); }),
                      1e-5, 1e-5))
        << r;
    EXPECT_TRUE(close(
        F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions(red).beta(0.5)),
        lossRef(a, b, r,
                [](double d) {
                  d = std::fabs(d);
                  return d < 0.5 ? 0.5 * d * d / 0.5 : d - 0.25;
                }),
        1e-5, 1e-5))
        << r;
    EXPECT_TRUE(
        close(F::huber_loss(a, b, F::HuberLossFuncOptions(red).delta(0.7)),
              lossRef(a, b, r,
                      [](double d) {
                        d = std::fabs(d);
                        return d < 0.7 ? 0.5 * d * d : 0.7 * (d - 0.35);
                      }),
              1e-5, 1e-5))
        << r;
  }
  EXPECT_TRUE(close(F::mse_loss(a, b), F::mse_loss(a, b, ember::kMean), 0, 0));
  EXPECT_TRUE(
      close(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().beta(0)),
            F::l1_loss(a, b), 0, 0));
  // Broadcasting target.
  EXPECT_TRUE(close(F::mse_loss(a, b[0], ember::kNone),
                    F::mse_loss(a, b[0].expand({3, 4}), ember::kNone), 0, 0));
  EXPECT_EMBER_ERROR(
      F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().beta(-1)),
      "smooth_l1_loss does not support negative values for beta");
  EXPECT_EMBER_ERROR(F::mse_loss(a, b, F::MSELossFuncOptions("avg")),
                     "avg is not a valid value for reduction");
}

namespace {
/// Cross-entropy / nll in double over (N, C, S) input (S: flattened
/// spatial positions). logits=false treats x as log-probabilities (nll).
Tensor ceRef(const Tensor &x, const Tensor &t, const std::vector<double> &w,
             int64_t ignore, double eps, const std::string &r, bool logits) {
  Shape xs = shapeOf(x);
  int64_t N = xs[0], C = xs[1], S = x.numel() / (N * C);
  auto X = values(x), T = values(t);
  std::vector<double> per(size_t(N * S));
  double nll = 0, smooth = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) {
      std::vector<double> lp(static_cast<size_t>(C));
      double m = -kInf, z = 0;
      for (int64_t c = 0; c < C; ++c)
        m = std::max(m, X[size_t((n * C + c) * S + s)]);
      for (int64_t c = 0; c < C; ++c)
        z += std::exp(X[size_t((n * C + c) * S + s)] - m);
      for (int64_t c = 0; c < C; ++c)
        lp[size_t(c)] = logits
                            ? X[size_t((n * C + c) * S + s)] - m - std::log(z)
                            : X[size_t((n * C + c) * S + s)];
      int64_t tc = int64_t(T[size_t(n * S + s)]);
      if (tc == ignore) {
        per[size_t(n * S + s)] = 0;
        continue;
      }
      double wt = w.empty() ? 1 : w[size_t(tc)];
      double sm = 0;
      for (int64_t c = 0; c < C; ++c)
        sm -= (w.empty() ? 1 : w[size_t(c)]) * lp[size_t(c)];
      double l = -wt * lp[size_t(tc)];
      per[size_t(n * S + s)] = (1 - eps) * l + eps / double(C) * sm;
      nll += l;
      smooth += sm;
      wsum += wt;
    }
  if (r == "none") {
    Shape ts = shapeOf(t);
    return from_fn(ts, [&](int64_t i) { return per[size_t(i)]; });
  }
  if (r == "sum")
    return scalar_tensor((1 - eps) * nll + eps / double(C) * smooth, kDouble);
  return scalar_tensor(((1 - eps) * nll + eps / double(C) * smooth) / wsum,
                       kDouble);
}
} // namespace

TEST(Losses, NllLoss) {
  Tensor x = F::log_softmax(random({5, 4}, kDouble, 190), 1);
  Tensor t = tensor({0, 3, 1, 3, 2});
  std::vector<double> w = {0.5, 2.0, 1.0, 0.3};
  Tensor wt = tensor(w, kDouble);
  for (std::string r : {"none", "mean", "sum"}) {
    EXPECT_TRUE(close(F::nll_loss(x, t, F::NLLLossFuncOptions(r)),
                      ceRef(x, t, {}, -100, 0, r, false), 1e-12, 1e-12))
        << r;
    EXPECT_TRUE(
        close(F::nll_loss(noncontiguous(x), t,
                          F::NLLLossFuncOptions(r).weight(wt).ignore_index(3)),
              ceRef(x, t, w, 3, 0, r, false), 1e-12, 1e-12))
        << r;
  }
  // (N, C, d1, d2) input.
  Tensor x4 = random({2, 3, 2, 3}, kDouble, 191);
  Tensor t4 = tensor({{{0, 2, 1}, {1, 1, 0}}, {{2, 2, 0}, {1, 0, 2}}});
  EXPECT_TRUE(close(F::nll_loss(x4, t4),
                    ceRef(x4, t4, {}, -100, 0, "mean", false), 1e-12, 1e-12));
  EXPECT_TRUE(close(F::nll_loss(x4, t4, ember::kNone),
                    ceRef(x4, t4, {}, -100, 0, "none", false), 1e-12, 1e-12));
  // Unbatched.
  EXPECT_TRUE(close(F::nll_loss(x[1], tensor(3).view({})),
                    scalar_tensor(-values(x)[7], kDouble), 1e-12, 1e-12));
  // Every target ignored: mean is 0/0 = NaN (as PyTorch).
  EXPECT_TRUE(
      std::isnan(F::nll_loss(x, full({5}, -100, kLong)).item<double>()));
  EXPECT_EQ(
      shapeOf(F::nll_loss(zeros({0, 4}), zeros({0}, kLong), ember::kNone)),
      (Shape{0}));
  EXPECT_EMBER_ERROR(F::nll_loss(x, tensor({0, 5, 1, 3, 2})),
                     "Target 5 is out of bounds.");
  try {
    F::nll_loss(x, tensor({0, -2, 1, 3, 2}));
    ADD_FAILURE() << "expected IndexError";
  } catch (const IndexError &e) {
    EXPECT_STREQ(e.what(), "Target -2 is out of bounds.");
  }
  EXPECT_EMBER_ERROR(F::nll_loss(x, tensor({0, 1, 1})),
                     "Expected input batch_size (5) to match target "
                     "batch_size (3).");
  EXPECT_EMBER_ERROR(F::nll_loss(x, t.to(kFloat)), "scalar type Long");
  EXPECT_EMBER_ERROR(
      F::nll_loss(x, t, F::NLLLossFuncOptions().weight(ones({3}))),
      "weight tensor should be defined either for all 4 "
      "classes or no classes");
  EXPECT_EMBER_ERROR(F::nll_loss(x4, zeros({2, 2}, kLong)),
                     "Expected target size [2, 2, 3], got [2, 2]");
}

TEST(Losses, CrossEntropyClassIndices) {
  Tensor x = random({6, 5}, kFloat, 200) * 2;
  Tensor t = tensor({4, 0, 2, 2, 1, 3});
  std::vector<double> w = {1.0, 0.5, 2.0, 0.25, 1.5};
  Tensor wt = tensor(w, kFloat);
  for (std::string r : {"none", "mean", "sum"}) {
    EXPECT_TRUE(close(F::cross_entropy(x, t, F::CrossEntropyFuncOptions(r)),
                      ceRef(x, t, {}, -100, 0, r, true), 1e-5, 1e-5))
        << r;
    for (double eps : {0.0, 0.1, 0.6}) {
      auto o = F::CrossEntropyFuncOptions()
                   .reduction(Reduction(r))
                   .weight(wt)
                   .ignore_index(2)
                   .label_smoothing(eps);
      EXPECT_TRUE(close(F::cross_entropy(x, t, o),
                        ceRef(x, t, w, 2, eps, r, true), 1e-5, 1e-5))
          << r << " eps " << eps;
      auto o2 = F::CrossEntropyFuncOptions(r).label_smoothing(eps);
      EXPECT_TRUE(close(F::cross_entropy(noncontiguous(x), t, o2),
                        ceRef(x, t, {}, -100, eps, r, true), 1e-5, 1e-5))
          << r << " eps " << eps;
    }
  }
  // (N, C, d) input with smoothing; unbatched (C) input.
  Tensor x3 = random({2, 4, 3}, kDouble, 201);
  Tensor t3 = tensor({{0, 3, 1}, {2, 2, 0}});
  EXPECT_TRUE(
      close(F::cross_entropy(x3, t3,
                             F::CrossEntropyFuncOptions().label_smoothing(0.2)),
            ceRef(x3, t3, {}, -100, 0.2, "mean", true), 1e-12, 1e-12));
  EXPECT_TRUE(close(F::cross_entropy(x3, t3, ember::kNone),
                    ceRef(x3, t3, {}, -100, 0, "none", true), 1e-12, 1e-12));
  Tensor x1 = random({5}, kDouble, 202);
  EXPECT_TRUE(close(
      F::cross_entropy(x1, tensor(2).view({}), ember::kNone),
      ceRef(x1.unsqueeze(0), tensor({2}), {}, -100, 0, "mean", true).view({}),
      1e-12, 1e-12));
  EXPECT_EMBER_ERROR(F::cross_entropy(x, tensor({4, 0, 9, 2, 1, 3})),
                     "Target 9 is out of bounds.");
  EXPECT_EMBER_ERROR(
      F::cross_entropy(x, t, F::CrossEntropyFuncOptions().label_smoothing(1.5)),
      "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
}

TEST(Losses, CrossEntropyProbabilities) {
  Tensor x = random({4, 3, 2}, kDouble, 210);
  Tensor p = F::softmax(random({4, 3, 2}, kDouble, 211), 1);
  std::vector<double> w = {0.5, 1.0, 2.0};
  auto X = values(x), P = values(p);
  for (double eps : {0.0, 0.3})
    for (std::string r : {"none", "mean", "sum"})
      for (bool useW : {false, true}) {
        std::vector<double> per(8);
        for (int64_t n = 0; n < 4; ++n)
          for (int64_t s = 0; s < 2; ++s) {
            double m = -kInf, z = 0, l = 0;
            for (int64_t c = 0; c < 3; ++c)
              m = std::max(m, X[size_t((n * 3 + c) * 2 + s)]);
            for (int64_t c = 0; c < 3; ++c)
              z += std::exp(X[size_t((n * 3 + c) * 2 + s)] - m);
            for (int64_t c = 0; c < 3; ++c) {
              double lp = X[size_t((n * 3 + c) * 2 + s)] - m - std::log(z);
              double tp = P[size_t((n * 3 + c) * 2 + s)] * (1 - eps) + eps / 3;
              l -= (useW ? w[size_t(c)] : 1.0) * lp * tp;
            }
            per[size_t(n * 2 + s)] = l;
          }
        Tensor want =
            r == "none"
                ? from_fn({4, 2}, [&](int64_t i) { return per[size_t(i)]; })
                : scalar_tensor(reduceRef(per, r), kDouble);
        auto o = F::CrossEntropyFuncOptions(r).label_smoothing(eps);
        if (useW)
          o.weight(tensor(w, kDouble));
        EXPECT_TRUE(close(F::cross_entropy(x, p, o), want, 1e-12, 1e-12))
            << r << " eps " << eps << " weight " << useW;
      }
  EXPECT_EMBER_ERROR(F::cross_entropy(x, p.to(kLong)),
                     "Expected floating point type for target with class "
                     "probabilities, got int64");
  EXPECT_EMBER_ERROR(
      F::cross_entropy(x, p, F::CrossEntropyFuncOptions().ignore_index(0)),
      "ignore_index is not supported for floating point target");
}

TEST(Losses, BinaryCrossEntropy) {
  Tensor x = random_positive({3, 4}, kDouble, 0.01, 0.99, 220);
  Tensor t = random_positive({3, 4}, kDouble, 0.0, 1.0, 221);
  Tensor w = random_positive({4}, kDouble, 0.5, 2.0, 222);
  auto X = values(x), T = values(t), W = values(w);
  for (std::string r : {"none", "mean", "sum"}) {
    std::vector<double> l(12);
    for (size_t i = 0; i < 12; ++i)
      l[i] =
          -W[i % 4] * (T[i] * std::log(X[i]) + (1 - T[i]) * std::log(1 - X[i]));
    Tensor want = r == "none"
                      ? from_fn({3, 4}, [&](int64_t i) { return l[size_t(i)]; })
                      : scalar_tensor(reduceRef(l, r), kDouble);
    EXPECT_TRUE(close(F::binary_cross_entropy(
                          x, t, F::BinaryCrossEntropyFuncOptions(r).weight(w)),
                      want, 1e-12, 1e-12))
        << r;
  }
  // log(0) is clamped at -100.
  Tensor edge = F::binary_cross_entropy(tensor({0.0, 1.0, 0.0}),
                                        tensor({1.0, 0.0, 0.0}), ember::kNone);
  EXPECT_TRUE(close(edge, tensor({100.0, 100.0, 0.0}), 0, 0));
  EXPECT_EMBER_ERROR(F::binary_cross_entropy(tensor({1.5}), tensor({1.0})),
                     "all elements of input should be between 0 and 1");
  EXPECT_EMBER_ERROR(F::binary_cross_entropy(x, t.view({12})),
                     "must be the same as input size");
}

TEST(Losses, BinaryCrossEntropyWithLogits) {
  Tensor x = random({3, 4}, kDouble, 230) * 3;
  Tensor t = random_positive({3, 4}, kDouble, 0.0, 1.0, 231);
  Tensor pw = random_positive({4}, kDouble, 0.5, 3.0, 232);
  Tensor w = random_positive({3, 1}, kDouble, 0.5, 2.0, 233);
  auto X = values(x), T = values(t), PW = values(pw), W = values(w);
  for (std::string r : {"none", "mean", "sum"})
    for (bool usePw : {false, true}) {
      std::vector<double> l(12);
      for (size_t i = 0; i < 12; ++i) {
        double p = usePw ? PW[i % 4] : 1.0;
        l[i] = -W[i / 4] * (p * T[i] * std::log(sigm(X[i])) +
                            (1 - T[i]) * std::log(1 - sigm(X[i])));
      }
      Tensor want =
          r == "none" ? from_fn({3, 4}, [&](int64_t i) { return l[size_t(i)]; })
                      : scalar_tensor(reduceRef(l, r), kDouble);
      auto o = F::BinaryCrossEntropyWithLogitsFuncOptions(r).weight(w);
      if (usePw)
        o.pos_weight(pw);
      EXPECT_TRUE(
          close(F::binary_cross_entropy_with_logits(noncontiguous(x), t, o),
                want, 1e-10, 1e-10))
          << r << " pos_weight " << usePw;
    }
  // Large logits stay finite (float).
  Tensor big = F::binary_cross_entropy_with_logits(
      tensor({200.0f, -200.0f, 100.0f}), tensor({0.0f, 1.0f, 1.0f}),
      ember::kNone);
  EXPECT_TRUE(close(big, tensor({200.0, 200.0, 0.0}), 1e-6, 1e-6));
  EXPECT_EMBER_ERROR(F::binary_cross_entropy_with_logits(x, t.view({12})),
                     "must be the same as input size");
}

// =============================================================================
// Options
// =============================================================================

TEST(Options, ReductionsExpandingArraysAndPadding) {
  EXPECT_EQ(Reduction(ember::kSum).kind(), Reduction::Sum);
  EXPECT_EQ(Reduction("none"), Reduction(ember::kNone));
  EXPECT_EQ(F::MSELossFuncOptions().reduction(), Reduction(ember::kMean));
  EXPECT_EMBER_ERROR(Reduction("avg"),
                     "avg is not a valid value for reduction");
  ExpandingArray<2> a(3), b({1, 2});
  EXPECT_EQ(a[1], 3);
  EXPECT_EQ(b[1], 2);
  EXPECT_EMBER_ERROR(ExpandingArray<2>({1, 2, 3}), "Expected 2 values");
  auto o = F::Conv2dFuncOptions().padding(0);
  EXPECT_EQ(o.padding().kind(), nn::ConvPadding<2>::Explicit);
  EXPECT_TRUE(
      F::Conv2dFuncOptions().padding(ember::kValid).padding().is_valid());
  auto m = F::MaxPool2dFuncOptions({2, 3});
  EXPECT_EQ(m.stride(), ExpandingArray<2>({2, 3}));
  EXPECT_EQ(F::PadFuncOptions({1}).mode().kind(), nn::PadMode::Constant);
}

TEST(FunctionalProbe, CircularPaddingCropsBeforeItWraps) {
  // PyTorch's F.pad(arange(5), (-1, 2), "circular") is [1, 2, 3, 4, 1, 2]:
  // the negative amount crops first, the positive one wraps the rest.
  namespace F = ember::nn::functional;
  Tensor x = arange(5, TensorOptions(kFloat)).view({1, 5});
  auto circ = [&](int64_t a, int64_t b) {
    return F::pad(x, F::PadFuncOptions({a, b}).mode(kCircular));
  };
  EXPECT_TRUE(ember::test::close(
      circ(-1, 2), tensor({1.f, 2.f, 3.f, 4.f, 1.f, 2.f}).view({1, 6}), 0, 0));
  EXPECT_TRUE(ember::test::close(
      circ(2, -1), tensor({2.f, 3.f, 0.f, 1.f, 2.f, 3.f}).view({1, 6}), 0, 0));
  EXPECT_TRUE(ember::test::close(
      circ(2, 1), tensor({3.f, 4.f, 0.f, 1.f, 2.f, 3.f, 4.f, 0.f}).view({1, 8}),
      0, 0));
  // Cropped to nothing: an empty result, or an error when it must wrap.
  EXPECT_EQ(
      F::pad(x.narrow(1, 0, 2), F::PadFuncOptions({-1, -1}).mode(kCircular))
          .numel(),
      0);
  EXPECT_THROW(
      F::pad(x.narrow(1, 0, 2), F::PadFuncOptions({-2, 1}).mode(kCircular)),
      Error);
}

TEST(FunctionalProbe, FullyMaskedAttentionRowsHaveFiniteGradients) {
  // A float mask that blocks every key of one query: that query's output
  // and every gradient are finite (its row contributes zeros), as PyTorch.
  namespace F = ember::nn::functional;
  Generator g(3);
  Tensor q = randn({1, 3, 4}, g).requires_grad_(),
         k = randn({1, 3, 4}, g).requires_grad_(),
         v = randn({1, 3, 4}, g).requires_grad_();
  Tensor m = zeros({3, 3});
  m.select(0, 1).fill_(-std::numeric_limits<double>::infinity());
  Tensor o = F::scaled_dot_product_attention(q, k, v, m);
  o.sum().backward();
  EXPECT_TRUE(ember::test::close(o.select(1, 1), zeros({1, 4}), 0, 0));
  for (const Tensor &t : {q.grad(), k.grad(), v.grad()})
    EXPECT_FALSE(t.isnan().any().item<bool>());
  EXPECT_TRUE(ember::test::close(q.grad().select(1, 1), zeros({1, 4}), 0, 0));
}
