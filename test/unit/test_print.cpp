// Printing: operator<< must give exactly PyTorch's repr (torch/_tensor_str.py)
// with "ember." for "torch."; every expected string below is what PyTorch
// prints for the same values.

#include "TestUtil.h"

#include "eager/Print.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

using namespace ember;

namespace {

std::string S(const Tensor &t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

/// Restores the default print options after each test.
class Print : public ::testing::Test {
protected:
  void SetUp() override { set_printoptions(PrintOptions{}); }
  void TearDown() override { set_printoptions(PrintOptions{}); }
};

/// A stand-in for the autograd layer's meta, naming a grad_fn.
struct FakeAutogradMeta final : AutogradMetaInterface {
  explicit FakeAutogradMeta(std::string n) : name(std::move(n)) {}
  bool requires_grad() const override { return true; }
  void set_requires_grad(bool, TensorImpl *) override {}
  std::string grad_fn_name() const override { return name; }
  std::string name;
};

/// 0, 1, 2, ... as a float tensor of `shape`.
Tensor iota(IntArrayRef shape, ScalarType dtype = kFloat) {
  return arange(multiply_sizes(shape), TensorOptions(dtype)).reshape(shape);
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

} // namespace

// --- dtypes and modes
// ----------------------------------------------------------

TEST_F(Print, IntegralFloats) {
  EXPECT_EQ(S(tensor({1., 2., 3.})), "tensor([1., 2., 3.])");
  EXPECT_EQ(S(tensor({0., 0.})), "tensor([0., 0.])");
}

TEST_F(Print, Matrix) {
  EXPECT_EQ(S(tensor({{1., 2.}, {3., 4.}})), "tensor([[1., 2.],\n"
                                             "        [3., 4.]])");
}

TEST_F(Print, Int64HasNoDtype) {
  EXPECT_EQ(S(tensor({1, 2, 3})), "tensor([1, 2, 3])");
  EXPECT_EQ(S(tensor({{1, -2, 3}, {40, 5, 6}})), "tensor([[ 1, -2,  3],\n"
                                                 "        [40,  5,  6]])");
}

TEST_F(Print, OtherIntegralDtypes) {
  EXPECT_EQ(S(tensor({1, 2, 3}).to(kInt)),
            "tensor([1, 2, 3], dtype=ember.int32)");
  EXPECT_EQ(S(tensor({0, 255, 7}).to(kByte)),
            "tensor([  0, 255,   7], dtype=ember.uint8)");
  EXPECT_EQ(S(tensor({-128, 5}).to(kChar)),
            "tensor([-128,    5], dtype=ember.int8)");
  EXPECT_EQ(S(tensor({-3, 4}).to(kShort)),
            "tensor([-3,  4], dtype=ember.int16)");
}

TEST_F(Print, Bool) {
  EXPECT_EQ(S(tensor({true, false})), "tensor([ True, False])");
  EXPECT_EQ(S(tensor({true, true})), "tensor([True, True])");
}

TEST_F(Print, ZeroDim) {
  EXPECT_EQ(S(scalar_tensor(3.5)), "tensor(3.5000)");
  EXPECT_EQ(S(scalar_tensor(2.0)), "tensor(2.)");
  EXPECT_EQ(S(scalar_tensor(5)), "tensor(5.)"); // (the default dtype)
  EXPECT_EQ(S(scalar_tensor(5, kLong)), "tensor(5)");
  EXPECT_EQ(S(scalar_tensor(5, kInt)), "tensor(5, dtype=ember.int32)");
  EXPECT_EQ(S(scalar_tensor(true, kBool)), "tensor(True)");
  EXPECT_EQ(S(scalar_tensor(1e-5)), "tensor(1.0000e-05)");
}

TEST_F(Print, FixedPrecisionCommonWidth) {
  EXPECT_EQ(S(tensor({0.12345, 1.0})), "tensor([0.1235, 1.0000])");
  EXPECT_EQ(S(tensor({1.5, -2.25, 100.125})),
            "tensor([  1.5000,  -2.2500, 100.1250])");
  EXPECT_EQ(S(tensor({0.001, 0.5})), "tensor([0.0010, 0.5000])");
}

TEST_F(Print, ScientificRules) {
  // max / min > 1000
  EXPECT_EQ(S(tensor({1e-5, 1e5})), "tensor([1.0000e-05, 1.0000e+05])");
  EXPECT_EQ(S(tensor({1., 2000.})), "tensor([1.0000e+00, 2.0000e+03])");
  // max > 1e8, integral values
  EXPECT_EQ(S(tensor({1e9, 1.})), "tensor([1.0000e+09, 1.0000e+00])");
  // min < 1e-4 with a small ratio
  EXPECT_EQ(S(tensor({0.00005, 0.00009})), "tensor([5.0000e-05, 9.0000e-05])");
  EXPECT_EQ(S(tensor({-1e-5})), "tensor([-1.0000e-05])");
  // Integral values with ratio <= 1000 stay integral.
  EXPECT_EQ(S(tensor({1., 1000.})), "tensor([   1., 1000.])");
}

TEST_F(Print, NonFinite) {
  EXPECT_EQ(S(tensor({kNan, kInf, -kInf, 1.})), "tensor([nan, inf, -inf, 1.])");
  EXPECT_EQ(S(tensor({kNan, kNan})), "tensor([nan, nan])");
  // NaN prints without sign, as Python's format does.
  EXPECT_EQ(S(tensor({-kNan, 0.5})), "tensor([   nan, 0.5000])");
  EXPECT_EQ(S(tensor({kInf, 1e-5, 1.})),
            "tensor([       inf, 1.0000e-05, 1.0000e+00])");
}

TEST_F(Print, NegativeZero) {
  // Zeros do not count towards the width; "-0." is wider than it.
  EXPECT_EQ(S(tensor({-0., 1.})), "tensor([-0., 1.])");
  EXPECT_EQ(S(tensor({-0., 1.5})), "tensor([-0.0000, 1.5000])");
}

TEST_F(Print, LargeIntegers) {
  EXPECT_EQ(S(tensor({int64_t(123456789012), int64_t(-5)})),
            "tensor([123456789012,           -5])");
  EXPECT_EQ(S(tensor({std::numeric_limits<int64_t>::min(), int64_t(0)})),
            "tensor([-9223372036854775808,                    0])");
}

TEST_F(Print, FloatDtypes) {
  EXPECT_EQ(S(tensor({1., 2.}).to(kDouble)),
            "tensor([1., 2.], dtype=ember.float64)");
  EXPECT_EQ(S(tensor({1., 2.}).to(kHalf)),
            "tensor([1., 2.], dtype=ember.float16)");
  // Half and bfloat16 print their exact float values: 0.1 rounds to
  // 0.0999755859375 in half and to 0.10009765625 in bfloat16.
  EXPECT_EQ(S(tensor({0.1, 2.5}).to(kHalf)),
            "tensor([0.1000, 2.5000], dtype=ember.float16)");
  EXPECT_EQ(S(tensor({0.1, 2.5}).to(kBFloat16)),
            "tensor([0.1001, 2.5000], dtype=ember.bfloat16)");
  // Each value prints from its own dtype's exact value: 0.123449999999 is
  // below 0.12345 in float64 but rounds up to 0.12345000356... in float32.
  EXPECT_EQ(S(tensor({0.123449999999}, kDouble)),
            "tensor([0.1234], dtype=ember.float64)");
  EXPECT_EQ(S(tensor({0.123449999999})), "tensor([0.1235])");
}

TEST_F(Print, DefaultDtypeDecidesTheSuffix) {
  struct Restore {
    ScalarType saved = get_default_dtype();
    ~Restore() { set_default_dtype(saved); }
  } restore;
  set_default_dtype(kDouble);
  EXPECT_EQ(S(tensor({1., 2.}).to(kDouble)), "tensor([1., 2.])");
  EXPECT_EQ(S(tensor({1., 2.}).to(kFloat)),
            "tensor([1., 2.], dtype=ember.float32)");
  EXPECT_EQ(S(empty({0}, kDouble)), "tensor([])");
  EXPECT_EQ(S(empty({0}, kFloat)), "tensor([], dtype=ember.float32)");
}

// --- empty tensors
// -------------------------------------------------------------

TEST_F(Print, Empty) {
  EXPECT_EQ(S(empty({0})), "tensor([])");
  EXPECT_EQ(S(empty({0, 3})), "tensor([], size=(0, 3))");
  EXPECT_EQ(S(empty({2, 0, 1})), "tensor([], size=(2, 0, 1))");
  EXPECT_EQ(S(empty({0}, kInt)), "tensor([], dtype=ember.int32)");
  // No element tells the dtype, so int64 and bool are shown too.
  EXPECT_EQ(S(empty({0}, kLong)), "tensor([], dtype=ember.int64)");
  EXPECT_EQ(S(empty({0, 2}, kBool)),
            "tensor([], size=(0, 2), dtype=ember.bool)");
}

// --- autograd suffixes
// ---------------------------------------------------------

TEST_F(Print, RequiresGrad) {
  Tensor t = tensor({1., 2., 3.});
  t.set_requires_grad(true);
  EXPECT_EQ(S(t), "tensor([1., 2., 3.], requires_grad=True)");
  Tensor d = tensor({1., 2.}, TensorOptions(kDouble).requires_grad(true));
  EXPECT_EQ(S(d), "tensor([1., 2.], dtype=ember.float64, requires_grad=True)");
  EXPECT_EQ(S(empty({0}, TensorOptions().requires_grad(true))),
            "tensor([], requires_grad=True)");
}

TEST_F(Print, GradFn) {
  Tensor t = tensor({3., 5., 7.});
  t.unsafeGetTensorImpl()->set_autograd_meta(
      std::make_unique<FakeAutogradMeta>("AddBackward0"));
  EXPECT_EQ(S(t), "tensor([3., 5., 7.], grad_fn=<AddBackward0>)");
  // An empty name means no grad_fn: a leaf that requires grad.
  Tensor leaf = tensor({1.});
  leaf.unsafeGetTensorImpl()->set_autograd_meta(
      std::make_unique<FakeAutogradMeta>(""));
  EXPECT_EQ(S(leaf), "tensor([1.], requires_grad=True)");
}

TEST_F(Print, SuffixWrapsPastLinewidth) {
  EXPECT_EQ(S(iota({14}, kDouble)),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., "
            "11., 12., 13.],\n"
            "       dtype=ember.float64)");
  Tensor t = iota({9}) / 3;
  t.unsafeGetTensorImpl()->set_autograd_meta(
      std::make_unique<FakeAutogradMeta>("MulBackward0"));
  EXPECT_EQ(S(t), "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, "
                  "2.0000, 2.3333, 2.6667],\n"
                  "       grad_fn=<MulBackward0>)");
}

// --- layout
// --------------------------------------------------------------------

TEST_F(Print, LongVectorWraps) {
  EXPECT_EQ(S(iota({30})),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., "
            "11., 12., 13.,\n"
            "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., "
            "25., 26., 27.,\n"
            "        28., 29.])");
}

TEST_F(Print, MatrixRowsWrap) {
  EXPECT_EQ(S(iota({2, 20}) / 8),
            "tensor([[0.0000, 0.1250, 0.2500, 0.3750, 0.5000, 0.6250, 0.7500, "
            "0.8750, 1.0000,\n"
            "         1.1250, 1.2500, 1.3750, 1.5000, 1.6250, 1.7500, 1.8750, "
            "2.0000, 2.1250,\n"
            "         2.2500, 2.3750],\n"
            "        [2.5000, 2.6250, 2.7500, 2.8750, 3.0000, 3.1250, 3.2500, "
            "3.3750, 3.5000,\n"
            "         3.6250, 3.7500, 3.8750, 4.0000, 4.1250, 4.2500, 4.3750, "
            "4.5000, 4.6250,\n"
            "         4.7500, 4.8750]])");
}

TEST_F(Print, ThreeAndFourDims) {
  EXPECT_EQ(S(iota({2, 2, 2})), "tensor([[[0., 1.],\n"
                                "         [2., 3.]],\n"
                                "\n"
                                "        [[4., 5.],\n"
                                "         [6., 7.]]])");
  EXPECT_EQ(S(iota({1, 2, 1, 2}, kLong) + 1), "tensor([[[[1, 2]],\n"
                                              "\n"
                                              "         [[3, 4]]]])");
}

TEST_F(Print, NonContiguous) {
  EXPECT_EQ(S(tensor({{0.5, 1.}, {2., 3.}}).t()), "tensor([[0.5000, 2.0000],\n"
                                                  "        [1.0000, 3.0000]])");
  Tensor x = iota({10}, kLong).slice(0, 1, std::nullopt, 3); // 1, 4, 7
  EXPECT_EQ(S(x), "tensor([1, 4, 7])");
  EXPECT_EQ(S(test::noncontiguous(tensor({true, false, true}))),
            "tensor([ True, False,  True])");
  EXPECT_EQ(S(tensor({1.5, 2.})[1]), "tensor(2.)");
}

// --- summarisation
// -------------------------------------------------------------

TEST_F(Print, SummarisedVector) {
  EXPECT_EQ(S(arange(10000)),
            "tensor([   0,    1,    2,  ..., 9997, 9998, 9999])");
  // At the threshold nothing is summarised.
  EXPECT_EQ(S(arange(1000)).find("..."), std::string::npos);
  EXPECT_NE(S(arange(1001)).find("..."), std::string::npos);
}

TEST_F(Print, WidthOnlyFromShownElements) {
  // The hidden middle element would force scientific notation.
  std::vector<float> data(2000, 1.f);
  data[1000] = 1e10f;
  Tensor t = from_blob(data.data(), {2000});
  EXPECT_EQ(S(t), "tensor([1., 1., 1.,  ..., 1., 1., 1.])");
}

TEST_F(Print, SummarisedMatrix) {
  EXPECT_EQ(S(ones({100, 100})), "tensor([[1., 1., 1.,  ..., 1., 1., 1.],\n"
                                 "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
                                 "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
                                 "        ...,\n"
                                 "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
                                 "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
                                 "        [1., 1., 1.,  ..., 1., 1., 1.]])");
  EXPECT_EQ(S(iota({100, 100})),
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, "
            "9.8000e+01,\n"
            "         9.9000e+01],\n"
            "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, "
            "1.9800e+02,\n"
            "         1.9900e+02],\n"
            "        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, "
            "2.9800e+02,\n"
            "         2.9900e+02],\n"
            "        ...,\n"
            "        [9.7000e+03, 9.7010e+03, 9.7020e+03,  ..., 9.7970e+03, "
            "9.7980e+03,\n"
            "         9.7990e+03],\n"
            "        [9.8000e+03, 9.8010e+03, 9.8020e+03,  ..., 9.8970e+03, "
            "9.8980e+03,\n"
            "         9.8990e+03],\n"
            "        [9.9000e+03, 9.9010e+03, 9.9020e+03,  ..., 9.9970e+03, "
            "9.9980e+03,\n"
            "         9.9990e+03]])");
}

TEST_F(Print, SummarisedThreeDims) {
  std::string s = S(iota({10, 10, 11}, kLong));
  std::string head = "tensor([[[   0,    1,    2,  ...,    8,    9,   10],\n"
                     "         [  11,   12,   13,  ...,   19,   20,   21],\n"
                     "         [  22,   23,   24,  ...,   30,   31,   32],\n"
                     "         ...,\n"
                     "         [  77,   78,   79,  ...,   85,   86,   87],\n"
                     "         [  88,   89,   90,  ...,   96,   97,   98],\n"
                     "         [  99,  100,  101,  ...,  107,  108,  109]],\n"
                     "\n"
                     "        [[ 110,  111,  112,  ...,  118,  119,  120],\n";
  std::string middle = "         [ 319,  320,  321,  ...,  327,  328,  329]],\n"
                       "\n"
                       "        ...,\n"
                       "\n"
                       "        [[ 770,  771,  772,  ...,  778,  779,  780],\n";
  std::string tail = "         [1078, 1079, 1080,  ..., 1086, 1087, 1088],\n"
                     "         [1089, 1090, 1091,  ..., 1097, 1098, 1099]]])";
  EXPECT_EQ(s.substr(0, head.size()), head);
  EXPECT_NE(s.find(middle), std::string::npos) << s;
  ASSERT_GE(s.size(), tail.size());
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
  // 6 blocks of 7 lines (3 + "..." + 3) and one "..." line for dim 0.
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 6 * 7 - 1 + 5 + 2);
}

// --- print options
// -------------------------------------------------------------

TEST_F(Print, Precision) {
  set_printoptions(2);
  EXPECT_EQ(S(tensor({1.12345})), "tensor([1.12])");
  EXPECT_EQ(S(tensor({1e-5, 1.})), "tensor([1.00e-05, 1.00e+00])");
  set_printoptions(0);
  EXPECT_EQ(S(tensor({0.5, 1.5, 2.5})), "tensor([0, 2, 2])");
}

TEST_F(Print, ThresholdAndEdgeItems) {
  set_printoptions(std::nullopt, 5);
  EXPECT_EQ(S(arange(10)), "tensor([0, 1, 2,  ..., 7, 8, 9])");
  set_printoptions(std::nullopt, 10, 1);
  EXPECT_EQ(S(iota({4, 5}, kLong)), "tensor([[ 0,  ...,  4],\n"
                                    "        ...,\n"
                                    "        [15,  ..., 19]])");
  // Huge edgeitems: nothing is cut (and nothing overflows).
  set_printoptions(std::nullopt, 5, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(S(arange(10)), "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])");
  set_printoptions(PrintOptions::profile("full"));
  EXPECT_EQ(S(arange(2000)).find("..."), std::string::npos);
  set_printoptions(PrintOptions::profile("short"));
  EXPECT_EQ(S(tensor({1.12345})), "tensor([1.12])");
  EXPECT_EQ(S(arange(2000)), "tensor([   0,    1,  ..., 1998, 1999])");
}

TEST_F(Print, SciMode) {
  set_printoptions(std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                   false);
  // The width still comes from the automatic (scientific) choice.
  EXPECT_EQ(S(tensor({1e-5, 1e5})), "tensor([    0.0000, 100000.0000])");
  set_printoptions(std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                   true);
  EXPECT_EQ(S(tensor({1., 2.})), "tensor([1.0000e+00, 2.0000e+00])");
  EXPECT_EQ(S(tensor({1, 2})), "tensor([1, 2])");
  // Setting any option without sci_mode returns to the automatic choice.
  set_printoptions(4);
  EXPECT_EQ(S(tensor({1., 2.})), "tensor([1., 2.])");
}

TEST_F(Print, Linewidth) {
  set_printoptions(std::nullopt, std::nullopt, std::nullopt, 20);
  EXPECT_EQ(S(iota({7}) + 1), "tensor([1., 2., 3.,\n"
                              "        4., 5., 6.,\n"
                              "        7.])");
  // Narrower than one element: one element a line.
  set_printoptions(std::nullopt, std::nullopt, std::nullopt, 1);
  EXPECT_EQ(S(tensor({1, 2})), "tensor([1,\n"
                               "        2])");
  set_printoptions(std::nullopt, std::nullopt, std::nullopt,
                   std::numeric_limits<int64_t>::min());
  EXPECT_EQ(S(tensor({1, 2})), "tensor([1,\n"
                               "        2])");
}

TEST_F(Print, OptionsGuardAndGetter) {
  {
    PrintOptions o;
    o.precision = 1;
    PrintOptionsGuard g(o);
    EXPECT_EQ(get_printoptions().precision, 1);
    EXPECT_EQ(S(tensor({0.25, 1.})), "tensor([0.2, 1.0])");
  }
  EXPECT_EQ(get_printoptions().precision, 4);
  EXPECT_FALSE(get_printoptions().sci_mode.has_value());
}

TEST_F(Print, BadOptionsRaise) {
  EXPECT_THROW(set_printoptions(-1), ValueError);
  EXPECT_EMBER_ERROR(set_printoptions(-1),
                     "precision must be a non-negative integer, got -1");
  EXPECT_THROW(set_printoptions(std::nullopt, std::nullopt, 0), ValueError);
  EXPECT_EMBER_ERROR(set_printoptions(std::nullopt, std::nullopt, 0),
                     "edgeitems must be at least 1");
  EXPECT_THROW(set_printoptions(std::nullopt, kNan), ValueError);
  EXPECT_EMBER_ERROR(set_printoptions(std::nullopt, kNan),
                     "threshold must be a number");
  PrintOptions bad;
  bad.edgeitems = -2;
  EXPECT_EMBER_ERROR(set_printoptions(bad), "edgeitems must be at least 1");
  EXPECT_THROW(PrintOptions::profile("long"), ValueError);
  EXPECT_EMBER_ERROR(PrintOptions::profile("long"), "unknown profile 'long'");
  // A failed call changes nothing.
  EXPECT_EQ(get_printoptions().precision, 4);
  EXPECT_EQ(get_printoptions().edgeitems, 3);
}

TEST_F(Print, UndefinedTensor) {
  EXPECT_EQ(S(Tensor()), "[ Tensor (undefined) ]");
}
