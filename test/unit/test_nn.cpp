// ember::nn: the Module system (registration, naming, modes, conversion,
// zero_grad, printing, cloning), every layer's forward against a float64
// reference computed with naive loops, nn::init statistics, and
// serialization (round trips, errors on mismatched or corrupt archives).
#include "TestUtil.h"

#include <ember/nn.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

using namespace ember;
using namespace ember::test;
namespace F = ember::nn::functional;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> vec(IntArrayRef a) { return a.vec(); }

/// A small network with nested modules, a buffer and an own parameter.
struct NetImpl : nn::Module {
  NetImpl() {
    scale = register_parameter("scale", ember::ones({1}));
    fc1 = register_module("fc1", nn::Linear(4, 3));
    fc2 = register_module("fc2", nn::Linear(3, 2));
    block =
        register_module("block", nn::Sequential(nn::Linear(2, 2), nn::ReLU()));
    steps = register_buffer("steps", ember::zeros({}, TensorOptions(kLong)));
  }
  Tensor forward(const Tensor &x) {
    return block->forward(fc2(fc1(x).relu())) * scale;
  }
  Tensor scale, steps;
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::Sequential block{nullptr};
};
EMBER_MODULE(Net);

/// Bit patterns equal (same dtype, shape and bytes).
bool bitwise_equal(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes())
    return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == 0 ||
         std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

std::string temp_path(const std::string &name) {
  return ::testing::TempDir() + "ember_test_nn_" + name;
}

std::string to_string(const nn::Module &m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

} // namespace

// =============================================================================
// Module system
// =============================================================================

TEST(NNModule, NamedParametersOfNestedModules) {
  Net net;
  auto params = net->named_parameters();
  std::vector<std::string> expected = {
      "scale",    "fc1.weight",     "fc1.bias",    "fc2.weight",
      "fc2.bias", "block.0.weight", "block.0.bias"};
  EXPECT_EQ(params.keys(), expected);
  EXPECT_EQ(net->parameters().size(), expected.size());
  EXPECT_EQ(vec(params["fc1.weight"].sizes()), (std::vector<int64_t>{3, 4}));
  // The recursive entries are the modules' own tensors.
  EXPECT_TRUE(params["fc1.weight"].is_same(net->fc1->weight));
  EXPECT_TRUE(
      params["block.0.bias"].is_same(net->block->ptr<nn::LinearImpl>(0)->bias));
  // Iteration yields items with key() and value().
  size_t i = 0;
  for (const auto &item : params) {
    EXPECT_EQ(item.key(), expected[i]);
    EXPECT_TRUE(item.value().defined());
    EXPECT_TRUE(item->defined());
    ++i;
  }
  EXPECT_EQ(params.items().size(), expected.size());
  EXPECT_EQ(params.values().size(), expected.size());
  EXPECT_EQ(params[1].key(), "fc1.weight");
  EXPECT_TRUE(params.contains("fc2.bias"));
  EXPECT_EQ(params.find("nope"), nullptr);
  EXPECT_EMBER_ERROR(params["nope"], "'nope' is not defined");

  // Non-recursive: only the module's own parameters.
  EXPECT_EQ(net->named_parameters(false).keys(),
            std::vector<std::string>{"scale"});
  EXPECT_EQ(net->fc1->named_parameters(false).keys(),
            (std::vector<std::string>{"weight", "bias"}));
}

TEST(NNModule, BuffersChildrenAndModules) {
  Net net;
  nn::BatchNorm1d bn(3);
  EXPECT_EQ(net->named_buffers().keys(), std::vector<std::string>{"steps"});
  EXPECT_EQ(bn->named_buffers().keys(),
            (std::vector<std::string>{"running_mean", "running_var",
                                      "num_batches_tracked"}));
  EXPECT_EQ(bn->buffers().size(), 3u);
  EXPECT_EQ(net->named_children().keys(),
            (std::vector<std::string>{"fc1", "fc2", "block"}));
  EXPECT_EQ(net->children().size(), 3u);
  EXPECT_EQ(net->named_modules().keys(),
            (std::vector<std::string>{"", "fc1", "fc2", "block", "block.0",
                                      "block.1"}));
  EXPECT_EQ(net->named_modules("net").keys()[4], "net.block.0");
  EXPECT_EQ(net->modules().size(), 6u);
  EXPECT_EQ(net->modules(/*include_self=*/false).size(), 5u);
  EXPECT_EQ(net->modules()[0].get(), net.get());
  EXPECT_EQ(net->named_modules("", false).keys()[0], "fc1");

  // apply visits every module depth first, with dotted names.
  std::vector<std::string> names;
  net->apply(
      [&](const std::string &name, nn::Module &) { names.push_back(name); });
  EXPECT_EQ(names, net->named_modules().keys());
  int count = 0;
  net->apply([&](nn::Module &) { ++count; });
  EXPECT_EQ(count, 6);
  std::vector<nn::Module *> visited;
  net->apply([&](const std::shared_ptr<nn::Module> &m) {
    visited.push_back(m.get());
  });
  ASSERT_EQ(visited.size(), 6u);
  EXPECT_EQ(visited[1], net->fc1.get());
  EXPECT_EQ(visited[4], net->block->ptr(0).get());

  // A module outside a shared_ptr cannot hand out shared_ptrs to itself.
  NetImpl plain;
  EXPECT_EQ(plain.named_parameters().size(), 7u);
  EXPECT_EMBER_ERROR(plain.modules(), "not stored in a shared_ptr");
}

TEST(NNModule, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", ember::zeros({2}));
  EXPECT_EMBER_ERROR(m.register_parameter("w", ember::zeros({2})),
                     "Parameter 'w' already defined");
  EXPECT_EMBER_ERROR(m.register_buffer("a.b", ember::zeros({2})),
                     "must not contain a dot");
  EXPECT_EMBER_ERROR(m.register_parameter("", ember::zeros({2})),
                     "must not be empty");
  m.register_module("sub", nn::Linear(2, 2));
  EXPECT_EMBER_ERROR(m.register_module("sub", nn::Linear(2, 2)),
                     "Submodule 'sub' already defined");
  EXPECT_EMBER_ERROR(m.register_module("x", nn::Linear(nullptr)),
                     "ModuleHolder");
  EXPECT_EMBER_ERROR(m.replace_module("nope", nn::Linear(2, 2)),
                     "no submodule of that name");
  auto replacement = m.replace_module("sub", nn::Linear(2, 5));
  EXPECT_EQ(m.named_parameters()["sub.weight"].size(0), 5);
  EXPECT_EQ(replacement->options.out_features(), 5);
  m.unregister_module("sub");
  EXPECT_EQ(m.children().size(), 0u);
  EXPECT_EMBER_ERROR(m.unregister_module("sub"), "No Module with name `sub`");
  // An undefined parameter is registered but not listed.
  m.register_parameter("absent", Tensor(), false);
  EXPECT_EQ(m.named_parameters().keys(), std::vector<std::string>{"w"});
}

TEST(NNModule, RequiresGradOfParameters) {
  nn::Module m;
  Tensor a = m.register_parameter("a", ember::zeros({2}));
  Tensor b = m.register_parameter("b", ember::zeros({2}), false);
  EXPECT_TRUE(a.requires_grad());
  EXPECT_FALSE(b.requires_grad());
  nn::Linear lin(3, 2);
  for (const auto &p : lin->parameters())
    EXPECT_TRUE(p.requires_grad());
  nn::BatchNorm1d bn(3);
  for (const auto &b2 : bn->buffers())
    EXPECT_FALSE(b2.requires_grad());
}

TEST(NNModule, ModuleHolder) {
  nn::Linear lin(3, 2);
  EXPECT_FALSE(lin.is_empty());
  EXPECT_TRUE(bool(lin));
  EXPECT_EQ(vec(lin->weight.sizes()), (std::vector<int64_t>{2, 3}));
  nn::Linear copy = lin; // shares the module
  EXPECT_EQ(copy.get(), lin.get());
  nn::Linear none{nullptr};
  EXPECT_TRUE(none.is_empty());
  EXPECT_EMBER_ERROR((void)none.ptr(), "empty ModuleHolder");
  // Holder call syntax is forward.
  Tensor x = random({4, 3}, kFloat, 1);
  EXPECT_TRUE(close(lin(x), lin->forward(x), 0, 0));
  // as<>() by holder or Impl type.
  std::shared_ptr<nn::Module> base = lin.ptr();
  EXPECT_EQ(base->as<nn::Linear>(), lin.get());
  EXPECT_EQ(base->as<nn::LinearImpl>(), lin.get());
  EXPECT_EQ(base->as<nn::Conv2d>(), nullptr);
  // The holder of a module type is `Impl`.
  static_assert(std::is_same_v<nn::Linear::Impl, nn::LinearImpl>);
  EXPECT_EQ(lin->name(), "ember::nn::LinearImpl");
  EXPECT_EQ(nn::Module("custom").name(), "custom");
}

TEST(NNModule, TrainEvalPropagates) {
  Net net;
  for (const auto &m : net->modules())
    EXPECT_TRUE(m->is_training());
  net->eval();
  for (const auto &m : net->modules())
    EXPECT_FALSE(m->is_training());
  net->train();
  for (const auto &m : net->modules())
    EXPECT_TRUE(m->is_training());
  net->block->train(false);
  EXPECT_TRUE(net->is_training());
  EXPECT_FALSE(net->block->ptr(1)->is_training());
}

TEST(NNModule, ToDtypeKeepsIdentityAndRequiresGrad) {
  Net net;
  nn::BatchNorm1d bn(3);
  Tensor w = net->fc1->weight;
  std::vector<double> before = values(w);
  net->to(kDouble);
  bn->to(kDouble);
  EXPECT_EQ(w.dtype(), kDouble);
  EXPECT_TRUE(net->fc1->weight.is_same(w));
  EXPECT_TRUE(net->named_parameters()["fc1.weight"].is_same(w));
  EXPECT_EQ(values(w), before);
  for (const auto &p : net->parameters()) {
    EXPECT_EQ(p.dtype(), kDouble);
    EXPECT_TRUE(p.requires_grad());
  }
  // Integer buffers keep their dtype (as PyTorch's Module.to).
  EXPECT_EQ(net->steps.dtype(), kLong);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kLong);
  EXPECT_EQ(bn->running_var.dtype(), kDouble);
  Tensor y = net->forward(random({2, 4}, kDouble, 3));
  EXPECT_EQ(y.dtype(), kDouble);
  net->to(Device(kCPU), kFloat);
  EXPECT_EQ(w.dtype(), kFloat);
  net->to(Device(kCPU));
  EXPECT_EQ(w.device(), Device(kCPU));
  EXPECT_EMBER_ERROR(net->to(kLong), "only accepts floating point dtypes");
}

TEST(NNModule, ZeroGrad) {
  nn::Linear lin(3, 2);
  lin->weight.mutable_grad() = ember::ones({2, 3});
  lin->bias.mutable_grad() = ember::ones({2});
  lin->zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(lin->weight.grad().defined());
  EXPECT_TRUE(close(lin->weight.grad(), ember::zeros({2, 3}), 0, 0));
  EXPECT_TRUE(close(lin->bias.grad(), ember::zeros({2}), 0, 0));
  lin->zero_grad();
  EXPECT_FALSE(lin->weight.grad().defined());
  EXPECT_FALSE(lin->bias.grad().defined());
  // Recurses into submodules; parameters without grads are fine.
  Net net;
  net->fc2->weight.mutable_grad() = ember::ones({2, 3});
  net->zero_grad();
  EXPECT_FALSE(net->fc2->weight.grad().defined());
}

TEST(NNModule, Printing) {
  EXPECT_EQ(to_string(*nn::Linear(3, 2)),
            "ember::nn::Linear(in_features=3, out_features=2, bias=true)");
  EXPECT_EQ(to_string(*nn::Linear(nn::LinearOptions(3, 2).bias(false))),
            "ember::nn::Linear(in_features=3, out_features=2, bias=false)");
  nn::Sequential seq(nn::Linear(3, 2), nn::ReLU(),
                     nn::Sequential(nn::Dropout(0.2), nn::Tanh()));
  std::ostringstream os;
  os << seq;
  EXPECT_EQ(os.str(), "ember::nn::Sequential(\n"
                      "  (0): ember::nn::Linear(in_features=3, out_features=2, "
                      "bias=true)\n"
                      "  (1): ember::nn::ReLU()\n"
                      "  (2): ember::nn::Sequential(\n"
                      "    (0): ember::nn::Dropout(p=0.2, inplace=false)\n"
                      "    (1): ember::nn::Tanh()\n"
                      "  )\n"
                      ")");
  EXPECT_EQ(
      to_string(*nn::Conv2d(nn::Conv2dOptions(3, 16, 3).stride(2).padding(1))),
      "ember::nn::Conv2d(3, 16, kernel_size=[3, 3], stride=[2, 2], "
      "padding=[1, 1])");
  EXPECT_EQ(to_string(*nn::Conv1d(nn::Conv1dOptions(2, 4, 3)
                                      .padding(ember::kSame)
                                      .groups(2)
                                      .bias(false)
                                      .padding_mode(ember::kReflect))),
            "ember::nn::Conv1d(2, 4, kernel_size=[3], stride=[1], "
            "padding='same', groups=2, bias=false, padding_mode=reflect)");
  EXPECT_EQ(to_string(*nn::BatchNorm2d(16)),
            "ember::nn::BatchNorm2d(16, eps=1e-05, momentum=0.1, "
            "affine=true, track_running_stats=true)");
  EXPECT_EQ(to_string(*nn::BatchNorm1d(
                nn::BatchNormOptions(4).momentum(std::nullopt).affine(false))),
            "ember::nn::BatchNorm1d(4, eps=1e-05, momentum=None, "
            "affine=false, track_running_stats=true)");
  EXPECT_EQ(to_string(*nn::LayerNorm(std::vector<int64_t>{4, 5})),
            "ember::nn::LayerNorm([4, 5], eps=1e-05, elementwise_affine=true)");
  EXPECT_EQ(
      to_string(*nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(-1))),
      "ember::nn::Embedding(num_embeddings=10, embedding_dim=3, "
      "padding_idx=9)");
  EXPECT_EQ(to_string(*nn::MaxPool2d(2)),
            "ember::nn::MaxPool2d(kernel_size=[2, 2], stride=[2, 2], "
            "padding=[0, 0], dilation=[1, 1], ceil_mode=false)");
  EXPECT_EQ(to_string(*nn::AvgPool2d(nn::AvgPool2dOptions(3).stride(1))),
            "ember::nn::AvgPool2d(kernel_size=[3, 3], stride=[1, 1], "
            "padding=[0, 0])");
  EXPECT_EQ(to_string(*nn::ReLU(true)), "ember::nn::ReLU(inplace=true)");
  EXPECT_EQ(to_string(*nn::GELU()), "ember::nn::GELU()");
  EXPECT_EQ(to_string(*nn::GELU(nn::GELUOptions().approximate("tanh"))),
            "ember::nn::GELU(approximate='tanh')");
  EXPECT_EQ(to_string(*nn::SiLU()), "ember::nn::SiLU()");
  EXPECT_EQ(to_string(*nn::Sigmoid()), "ember::nn::Sigmoid()");
  EXPECT_EQ(to_string(*nn::Softmax(1)), "ember::nn::Softmax(dim=1)");
  EXPECT_EQ(to_string(*nn::Flatten()),
            "ember::nn::Flatten(start_dim=1, end_dim=-1)");
  EXPECT_EQ(to_string(*nn::CrossEntropyLoss()),
            "ember::nn::CrossEntropyLoss()");
  EXPECT_EQ(to_string(*nn::MSELoss(nn::MSELossOptions(ember::kSum))),
            "ember::nn::MSELoss(reduction=sum)");
  EXPECT_EQ(to_string(*nn::MultiheadAttention(4, 2)),
            "ember::nn::MultiheadAttention(\n"
            "  (out_proj): ember::nn::Linear(in_features=4, out_features=4, "
            "bias=true)\n"
            ")");
  // A user module without pretty_print prints its type name.
  Net net;
  EXPECT_EQ(to_string(*net).substr(0, 10), "(anonymous");
  nn::ModuleList list(nn::Linear(1, 1));
  EXPECT_EQ(to_string(*list),
            "ember::nn::ModuleList(\n"
            "  (0): ember::nn::Linear(in_features=1, out_features=1, "
            "bias=true)\n"
            ")");
}

TEST(NNModule, Clone) {
  Net net;
  std::shared_ptr<nn::Module> copy =
      nn::Sequential(net->fc1, nn::ReLU()).ptr()->clone();
  auto seq = std::dynamic_pointer_cast<nn::SequentialImpl>(copy);
  ASSERT_NE(seq, nullptr);
  auto lin = seq->ptr<nn::LinearImpl>(0);
  EXPECT_NE(lin.get(), net->fc1.get());
  EXPECT_FALSE(lin->weight.is_alias_of(net->fc1->weight));
  EXPECT_TRUE(bitwise_equal(lin->weight, net->fc1->weight));
  EXPECT_TRUE(lin->weight.requires_grad());
  // The clone's members alias its registered parameters.
  EXPECT_TRUE(lin->named_parameters()["weight"].is_same(lin->weight));
  nn::BatchNorm2d bn(2);
  bn->running_mean.fill_(3);
  auto bn2 = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>(bn->clone());
  EXPECT_TRUE(bitwise_equal(bn2->running_mean, bn->running_mean));
  EXPECT_FALSE(bn2->running_mean.is_alias_of(bn->running_mean));
  // Plain Modules cannot be cloned.
  EXPECT_EMBER_ERROR(net->clone(), "Subclass ember::nn::Cloneable");
}

// =============================================================================
// Layers against float64 references
// =============================================================================

namespace {

/// y[..., o] = sum_i x[..., i] w[o, i] + b[o].
Tensor ref_linear(const Tensor &x, const Tensor &w, const Tensor &b) {
  auto xv = values(x), wv = values(w);
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  int64_t in = w.size(1), out = w.size(0), rows = x.numel() / in;
  Shape shape = shapeOf(x);
  shape.back() = out;
  return from_fn(shape, [&](int64_t idx) {
    int64_t r = idx / out, o = idx % out;
    double s = bv.empty() ? 0 : bv[size_t(o)];
    for (int64_t i = 0; i < in; ++i)
      s += xv[size_t(r * in + i)] * wv[size_t(o * in + i)];
    (void)rows;
    return s;
  });
}

/// Reflect / replicate / circular / zero padding index: the source index of
/// padded position i in a dim of size n, or -1 for a zero.
int64_t pad_index(int64_t i, int64_t n, const std::string &mode) {
  if (i >= 0 && i < n)
    return i;
  if (mode == "zeros")
    return -1;
  if (mode == "reflect")
    return i < 0 ? -i : 2 * (n - 1) - i;
  if (mode == "replicate")
    return i < 0 ? 0 : n - 1;
  return ((i % n) + n) % n; // circular
}

struct ConvRef {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  std::string mode = "zeros";
};

/// 2-d convolution of (N, C, H, W) by (O, C/g, KH, KW) in float64.
Tensor ref_conv2d(const Tensor &x, const Tensor &w, const Tensor &b,
                  const ConvRef &c) {
  auto xv = values(x), wv = values(w);
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int64_t O = w.size(0), Cg = w.size(1), KH = w.size(2), KW = w.size(3);
  int64_t OH =
      (H + 2 * c.padding[0] - c.dilation[0] * (KH - 1) - 1) / c.stride[0] + 1;
  int64_t OW =
      (W + 2 * c.padding[1] - c.dilation[1] * (KW - 1) - 1) / c.stride[1] + 1;
  int64_t Og = O / c.groups;
  return ref({N, O, OH, OW}, [&](const Shape &i) {
    int64_t n = i[0], o = i[1], g = o / Og;
    double s = bv.empty() ? 0 : bv[size_t(o)];
    for (int64_t ci = 0; ci < Cg; ++ci)
      for (int64_t p = 0; p < KH; ++p)
        for (int64_t q = 0; q < KW; ++q) {
          int64_t h = pad_index(
              i[2] * c.stride[0] - c.padding[0] + p * c.dilation[0], H, c.mode);
          int64_t ww = pad_index(
              i[3] * c.stride[1] - c.padding[1] + q * c.dilation[1], W, c.mode);
          if (h < 0 || ww < 0)
            continue;
          int64_t ch = g * Cg + ci;
          s += xv[size_t(((n * C + ch) * H + h) * W + ww)] *
               wv[size_t(((o * Cg + ci) * KH + p) * KW + q)];
        }
    return s;
  });
}

/// Max or average pooling of (N, C, H, W) in float64 (padding: -inf for max,
/// zeros counted or not for average).
Tensor ref_pool2d(const Tensor &x, bool is_max, std::vector<int64_t> k,
                  std::vector<int64_t> s, std::vector<int64_t> p,
                  bool count_include_pad = true) {
  auto xv = values(x);
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int64_t OH = (H + 2 * p[0] - k[0]) / s[0] + 1;
  int64_t OW = (W + 2 * p[1] - k[1]) / s[1] + 1;
  return ref({N, C, OH, OW}, [&](const Shape &i) {
    double acc = is_max ? -kInf : 0;
    int64_t cnt = 0;
    for (int64_t a = 0; a < k[0]; ++a)
      for (int64_t b = 0; b < k[1]; ++b) {
        int64_t h = i[2] * s[0] - p[0] + a, w = i[3] * s[1] - p[1] + b;
        bool inside = h >= 0 && h < H && w >= 0 && w < W;
        if (inside || count_include_pad)
          ++cnt;
        if (!inside)
          continue;
        double v = xv[size_t(((i[0] * C + i[1]) * H + h) * W + w)];
        acc = is_max ? std::max(acc, v) : acc + v;
      }
    return is_max ? acc : acc / double(cnt);
  });
}

} // namespace

TEST(NNLayers, LinearDefaultInitAndForward) {
  manual_seed(1);
  nn::Linear lin(5, 3);
  // Default init: kaiming_uniform_(a = sqrt(5)) gives |w| <= 1/sqrt(5), and
  // the bias is U(-1/sqrt(5), 1/sqrt(5)).
  double bound = 1 / std::sqrt(5.0);
  for (double v : values(lin->weight))
    EXPECT_LE(std::fabs(v), bound);
  for (double v : values(lin->bias))
    EXPECT_LE(std::fabs(v), bound);
  Tensor x = random({2, 4, 5}, kFloat, 2);
  EXPECT_TRUE(close(lin(x), ref_linear(x, lin->weight, lin->bias), 1e-5, 1e-5));
  // Non-contiguous input, float64 module.
  lin->to(kDouble);
  Tensor xd = noncontiguous(random({3, 5}, kDouble, 3));
  EXPECT_TRUE(
      close(lin(xd), ref_linear(xd, lin->weight, lin->bias), 1e-12, 1e-12));
  nn::Linear nobias(nn::LinearOptions(5, 2).bias(false));
  EXPECT_FALSE(nobias->bias.defined());
  EXPECT_EQ(nobias->parameters().size(), 1u);
  EXPECT_TRUE(
      close(nobias(x), ref_linear(x, nobias->weight, Tensor()), 1e-5, 1e-5));
  EXPECT_ANY_THROW(lin(random({2, 4}, kDouble, 4)));
}

TEST(NNLayers, Conv2dDefaultAndOptions) {
  manual_seed(2);
  nn::Conv2d conv(3, 4, 3);
  EXPECT_EQ(vec(conv->weight.sizes()), (std::vector<int64_t>{4, 3, 3, 3}));
  double bound = 1 / std::sqrt(27.0);
  for (double v : values(conv->weight))
    EXPECT_LE(std::fabs(v), bound);
  for (double v : values(conv->bias))
    EXPECT_LE(std::fabs(v), bound);
  Tensor x = random({2, 3, 6, 5}, kFloat, 5);
  EXPECT_TRUE(close(conv(x),
                    ref_conv2d(x, conv->weight, conv->bias,
                               {{1, 1}, {0, 0}, {1, 1}, 1, "zeros"}),
                    1e-4, 1e-5));

  nn::Conv2d conv2(nn::Conv2dOptions(4, 6, {3, 2})
                       .stride({2, 1})
                       .padding(1)
                       .dilation({1, 2})
                       .groups(2)
                       .bias(false));
  EXPECT_EQ(vec(conv2->weight.sizes()), (std::vector<int64_t>{6, 2, 3, 2}));
  Tensor x2 = random({1, 4, 7, 6}, kFloat, 6);
  EXPECT_TRUE(close(conv2(x2),
                    ref_conv2d(x2, conv2->weight, Tensor(),
                               {{2, 1}, {1, 1}, {1, 2}, 2, "zeros"}),
                    1e-4, 1e-5));

  for (const char *mode : {"reflect", "replicate", "circular"}) {
    nn::Conv2d conv3(nn::Conv2dOptions(2, 3, 3).padding(1).padding_mode(mode));
    Tensor x3 = random({2, 2, 5, 4}, kFloat, 7);
    EXPECT_TRUE(close(conv3(x3),
                      ref_conv2d(x3, conv3->weight, conv3->bias,
                                 {{1, 1}, {1, 1}, {1, 1}, 1, mode}),
                      1e-4, 1e-5))
        << mode;
  }
  // padding 'same' keeps the spatial size.
  nn::Conv2d same(nn::Conv2dOptions(2, 2, 3).padding(ember::kSame));
  EXPECT_EQ(vec(same(random({1, 2, 5, 5}, kFloat, 8)).sizes()),
            (std::vector<int64_t>{1, 2, 5, 5}));

  EXPECT_EMBER_ERROR(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)),
                     "in_channels must be divisible by groups");
  EXPECT_EMBER_ERROR(
      nn::Conv2d(nn::Conv2dOptions(2, 2, 3).padding(ember::kSame).stride(2)),
      "padding='same' is not supported for strided convolutions");
  EXPECT_EMBER_ERROR(nn::Conv2d(nn::Conv2dOptions(2, 2, 3).padding_mode("x")),
                     "padding_mode must be one of");
}

TEST(NNLayers, Conv1d) {
  manual_seed(3);
  nn::Conv1d conv(nn::Conv1dOptions(2, 3, 3).stride(2).padding(1));
  Tensor x = random({2, 2, 9}, kFloat, 9);
  // As a 2-d convolution with height 1.
  Tensor expected = ref_conv2d(x.unsqueeze(2), conv->weight.unsqueeze(2),
                               conv->bias, {{1, 2}, {0, 1}, {1, 1}, 1, "zeros"})
                        .squeeze(2);
  EXPECT_TRUE(close(conv(x), expected, 1e-4, 1e-5));
  double bound = 1 / std::sqrt(6.0);
  for (double v : values(conv->weight))
    EXPECT_LE(std::fabs(v), bound);
}

TEST(NNLayers, Pooling) {
  Tensor x = random({2, 3, 7, 6}, kFloat, 10);
  EXPECT_TRUE(close(nn::MaxPool2d(2)(x),
                    ref_pool2d(x, true, {2, 2}, {2, 2}, {0, 0}), 0, 0));
  nn::MaxPool2d mp(nn::MaxPool2dOptions(3).stride(2).padding(1));
  EXPECT_TRUE(close(mp(x), ref_pool2d(x, true, {3, 3}, {2, 2}, {1, 1}), 0, 0));
  auto [out, idx] = mp->forward_with_indices(x);
  EXPECT_TRUE(close(out, mp(x), 0, 0));
  EXPECT_EQ(idx.dtype(), kLong);
  EXPECT_TRUE(close(nn::AvgPool2d(2)(x),
                    ref_pool2d(x, false, {2, 2}, {2, 2}, {0, 0}), 1e-6, 1e-6));
  nn::AvgPool2d ap(
      nn::AvgPool2dOptions({3, 2}).stride(2).padding(1).count_include_pad(
          false));
  EXPECT_TRUE(close(ap(x), ref_pool2d(x, false, {3, 2}, {2, 2}, {1, 1}, false),
                    1e-6, 1e-6));
  Tensor x1 = random({2, 3, 8}, kFloat, 11);
  EXPECT_TRUE(close(
      nn::MaxPool1d(2)(x1),
      ref_pool2d(x1.unsqueeze(2), true, {1, 2}, {1, 2}, {0, 0}).squeeze(2), 0,
      0));
  EXPECT_TRUE(close(
      nn::AvgPool1d(4)(x1),
      ref_pool2d(x1.unsqueeze(2), false, {1, 4}, {1, 4}, {0, 0}).squeeze(2),
      1e-6, 1e-6));
}

namespace {

/// Batch statistics of (N, C, *) per channel: mean and biased variance.
void channel_stats(const Tensor &x, std::vector<double> &mean,
                   std::vector<double> &var) {
  auto v = values(x);
  int64_t N = x.size(0), C = x.size(1), inner = x.numel() / (N * C);
  mean.assign(size_t(C), 0);
  var.assign(size_t(C), 0);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        s += v[size_t((n * C + c) * inner + i)];
    double m = s / double(N * inner), q = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        double d = v[size_t((n * C + c) * inner + i)] - m;
        q += d * d;
      }
    mean[size_t(c)] = m;
    var[size_t(c)] = q / double(N * inner);
  }
}

/// (x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c] over (N, C, *).
Tensor ref_batch_norm(const Tensor &x, const std::vector<double> &mean,
                      const std::vector<double> &var, double eps,
                      const Tensor &w, const Tensor &b) {
  auto v = values(x);
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  int64_t C = x.size(1), inner = x.numel() / (x.size(0) * C);
  return from_fn(shapeOf(x), [&](int64_t i) {
    size_t c = size_t((i / inner) % C);
    double y = (v[size_t(i)] - mean[c]) / std::sqrt(var[c] + eps);
    return y * (wv.empty() ? 1 : wv[c]) + (bv.empty() ? 0 : bv[c]);
  });
}

} // namespace

TEST(NNLayers, BatchNormTrainingUpdatesRunningStats) {
  nn::BatchNorm2d bn(3);
  EXPECT_TRUE(close(bn->weight, ember::ones({3}), 0, 0));
  EXPECT_TRUE(close(bn->bias, ember::zeros({3}), 0, 0));
  EXPECT_TRUE(close(bn->running_mean, ember::zeros({3}), 0, 0));
  EXPECT_TRUE(close(bn->running_var, ember::ones({3}), 0, 0));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 0);
  {
    NoGradGuard g;
    bn->weight.copy_(ember::tensor({0.5, 2.0, -1.0}));
    bn->bias.copy_(ember::tensor({0.1, -0.2, 0.3}));
  }
  Tensor x1 = random({4, 3, 2, 3}, kFloat, 12) * 2 + 1;
  Tensor x2 = random({4, 3, 2, 3}, kFloat, 13) - 0.5;
  std::vector<double> m1, v1, m2, v2;
  channel_stats(x1, m1, v1);
  channel_stats(x2, m2, v2);
  const double n = 4 * 2 * 3, unbias = n / (n - 1);

  EXPECT_TRUE(close(bn(x1),
                    ref_batch_norm(x1, m1, v1, 1e-5, bn->weight, bn->bias),
                    1e-4, 1e-5));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  std::vector<double> rm(3), rv(3);
  for (size_t c = 0; c < 3; ++c) {
    rm[c] = 0.9 * 0 + 0.1 * m1[c];
    rv[c] = 0.9 * 1 + 0.1 * v1[c] * unbias;
  }
  EXPECT_TRUE(close(bn->running_mean,
                    from_fn({3}, [&](int64_t c) { return rm[size_t(c)]; }),
                    1e-5, 1e-6));
  EXPECT_TRUE(close(bn->running_var,
                    from_fn({3}, [&](int64_t c) { return rv[size_t(c)]; }),
                    1e-5, 1e-6));
  bn(x2);
  for (size_t c = 0; c < 3; ++c) {
    rm[c] = 0.9 * rm[c] + 0.1 * m2[c];
    rv[c] = 0.9 * rv[c] + 0.1 * v2[c] * unbias;
  }
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  EXPECT_TRUE(close(bn->running_mean,
                    from_fn({3}, [&](int64_t c) { return rm[size_t(c)]; }),
                    1e-5, 1e-6));

  // Evaluation uses the running statistics and does not update them.
  bn->eval();
  Tensor x3 = random({2, 3, 2, 2}, kFloat, 14);
  EXPECT_TRUE(close(bn(x3),
                    ref_batch_norm(x3, rm, rv, 1e-5, bn->weight, bn->bias),
                    1e-4, 1e-5));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);

  EXPECT_EMBER_ERROR(bn(random({2, 3, 4}, kFloat, 1)),
                     "expected 4D input (got 3D input)");
}

TEST(NNLayers, BatchNormOptions) {
  // momentum = None: cumulative moving average.
  nn::BatchNorm1d cma(nn::BatchNormOptions(2).momentum(std::nullopt));
  Tensor x1 = random({5, 2}, kFloat, 15), x2 = random({5, 2}, kFloat, 16);
  std::vector<double> m1, v1, m2, v2;
  channel_stats(x1, m1, v1);
  channel_stats(x2, m2, v2);
  cma(x1);
  cma(x2);
  EXPECT_TRUE(close(
      cma->running_mean,
      from_fn({2},
              [&](int64_t c) { return (m1[size_t(c)] + m2[size_t(c)]) / 2; }),
      1e-5, 1e-6));
  EXPECT_TRUE(close(cma->running_var,
                    from_fn({2},
                            [&](int64_t c) {
                              return (v1[size_t(c)] + v2[size_t(c)]) * 5.0 / 4 /
                                     2;
                            }),
                    1e-5, 1e-6));

  // Without running statistics: batch statistics in both modes, no buffers.
  nn::BatchNorm1d nostats(
      nn::BatchNormOptions(2).track_running_stats(false).affine(false));
  EXPECT_EQ(nostats->buffers().size(), 0u);
  EXPECT_EQ(nostats->parameters().size(), 0u);
  nostats->eval();
  Tensor x3 = random({4, 2, 3}, kFloat, 17);
  std::vector<double> m3, v3;
  channel_stats(x3, m3, v3);
  EXPECT_TRUE(close(nostats(x3),
                    ref_batch_norm(x3, m3, v3, 1e-5, Tensor(), Tensor()), 1e-4,
                    1e-5));
  nn::BatchNorm1d eps(nn::BatchNormOptions(2).eps(0.5).momentum(0.3));
  Tensor out = eps(x3);
  EXPECT_TRUE(close(out,
                    ref_batch_norm(x3, m3, v3, 0.5, eps->weight, eps->bias),
                    1e-4, 1e-5));
  EXPECT_TRUE(
      close(eps->running_mean,
            from_fn({2}, [&](int64_t c) { return 0.3 * m3[size_t(c)]; }), 1e-5,
            1e-6));
  EXPECT_EMBER_ERROR(eps(random({2, 2, 2, 2}, kFloat, 1)),
                     "expected 2D or 3D input (got 4D input)");
}

TEST(NNLayers, LayerNorm) {
  nn::LayerNorm ln(std::vector<int64_t>{2, 3});
  EXPECT_TRUE(close(ln->weight, ember::ones({2, 3}), 0, 0));
  EXPECT_TRUE(close(ln->bias, ember::zeros({2, 3}), 0, 0));
  {
    NoGradGuard g;
    ln->weight.copy_(random({2, 3}, kFloat, 18));
    ln->bias.copy_(random({2, 3}, kFloat, 19));
  }
  auto ref_ln = [](const Tensor &x, int64_t inner, double eps, const Tensor &w,
                   const Tensor &b) {
    auto v = values(x);
    std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
    std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
    return from_fn(shapeOf(x), [&](int64_t i) {
      int64_t r = i / inner;
      double m = 0, q = 0;
      for (int64_t j = 0; j < inner; ++j)
        m += v[size_t(r * inner + j)];
      m /= double(inner);
      for (int64_t j = 0; j < inner; ++j)
        q += (v[size_t(r * inner + j)] - m) * (v[size_t(r * inner + j)] - m);
      q /= double(inner);
      double y = (v[size_t(i)] - m) / std::sqrt(q + eps);
      size_t k = size_t(i % inner);
      return y * (wv.empty() ? 1 : wv[k]) + (bv.empty() ? 0 : bv[k]);
    });
  };
  Tensor x = random({4, 2, 3}, kFloat, 20);
  EXPECT_TRUE(
      close(ln(x), ref_ln(x, 6, 1e-5, ln->weight, ln->bias), 1e-4, 1e-5));
  nn::LayerNorm plain(
      nn::LayerNormOptions({3}).elementwise_affine(false).eps(0.1));
  EXPECT_EQ(plain->parameters().size(), 0u);
  EXPECT_TRUE(
      close(plain(x), ref_ln(x, 3, 0.1, Tensor(), Tensor()), 1e-4, 1e-5));
}

TEST(NNLayers, Embedding) {
  manual_seed(4);
  nn::Embedding emb(nn::EmbeddingOptions(1000, 8).padding_idx(-2));
  EXPECT_EQ(*emb->options.padding_idx(), 998);
  // N(0, 1) init, padding row zero.
  auto w = values(emb->weight);
  double m = 0, q = 0;
  for (double v : w)
    m += v;
  m /= double(w.size());
  for (double v : w)
    q += (v - m) * (v - m);
  EXPECT_NEAR(m, 0, 0.05);
  EXPECT_NEAR(std::sqrt(q / double(w.size())), 1, 0.05);
  EXPECT_TRUE(close(emb->weight[998], ember::zeros({8}), 0, 0));

  Tensor idx = ember::tensor({{1, 998, 3}, {999, 0, 1}});
  Tensor out = emb(idx);
  EXPECT_EQ(vec(out.sizes()), (std::vector<int64_t>{2, 3, 8}));
  auto iv = values(idx);
  EXPECT_TRUE(
      close(out,
            from_fn({2, 3, 8},
                    [&](int64_t i) {
                      return w[size_t(int64_t(iv[size_t(i / 8)]) * 8 + i % 8)];
                    }),
            0, 0));
  nn::Embedding pre(nn::EmbeddingOptions(3, 2)._weight(
      ember::tensor({{1., 2.}, {3., 4.}, {5., 6.}})));
  EXPECT_TRUE(close(pre(ember::tensor({2, 0})),
                    ember::tensor({{5., 6.}, {1., 2.}}), 0, 0));
  EXPECT_EMBER_ERROR(nn::Embedding(nn::EmbeddingOptions(3, 2).padding_idx(3)),
                     "Padding_idx must be within num_embeddings");
  EXPECT_EMBER_ERROR(
      nn::Embedding(nn::EmbeddingOptions(3, 2)._weight(ember::zeros({2, 2}))),
      "Shape of _weight does not match");
}

TEST(NNLayers, Dropout) {
  manual_seed(5);
  nn::Dropout drop(0.5);
  Tensor x = random({4000}, kFloat, 21);
  auto xv = values(x);
  auto yv = values(drop(x));
  int64_t zeros = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0)
      ++zeros;
    else
      EXPECT_NEAR(yv[i], 2 * xv[i], 1e-5 * (1 + std::fabs(xv[i])));
  }
  EXPECT_NEAR(double(zeros) / double(xv.size()), 0.5, 0.05);
  drop->eval();
  EXPECT_TRUE(close(drop(x), x, 0, 0));
  drop->train();
  EXPECT_TRUE(close(nn::Dropout(0.0)(x), x, 0, 0));
  EXPECT_EMBER_ERROR(nn::Dropout(1.5), "dropout probability has to be between");
}

TEST(NNLayers, Activations) {
  Tensor x = noncontiguous(random({3, 5}, kDouble, 22));
  auto xv = values(x);
  auto ref1 = [&](const std::function<double(double)> &f) {
    return from_fn({3, 5}, [&](int64_t i) { return f(xv[size_t(i)]); });
  };
  EXPECT_TRUE(close(nn::ReLU()(x),
                    ref1([](double v) { return std::max(v, 0.0); }), 0, 0));
  EXPECT_TRUE(close(nn::GELU()(x), ref1([](double v) {
                      return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
                    }),
                    1e-12, 1e-12));
  EXPECT_TRUE(close(
      nn::GELU(nn::GELUOptions().approximate("tanh"))(x), ref1([](double v) {
        double k = std::sqrt(2 / M_PI);
        return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v)));
      }),
      1e-12, 1e-12));
  EXPECT_TRUE(close(nn::SiLU()(x),
                    ref1([](double v) { return v / (1 + std::exp(-v)); }),
                    1e-12, 1e-12));
  EXPECT_TRUE(close(nn::Tanh()(x), ref1([](double v) { return std::tanh(v); }),
                    1e-12, 1e-12));
  EXPECT_TRUE(close(nn::Sigmoid()(x),
                    ref1([](double v) { return 1 / (1 + std::exp(-v)); }),
                    1e-12, 1e-12));
  for (int64_t dim : {0, 1, -1}) {
    int64_t d = dim < 0 ? dim + 2 : dim;
    EXPECT_TRUE(close(nn::Softmax(dim)(x),
                      ref({3, 5},
                          [&](const Shape &c) {
                            double s = 0;
                            for (int64_t j = 0; j < (d == 0 ? 3 : 5); ++j) {
                              Shape o = c;
                              o[size_t(d)] = j;
                              s += std::exp(xv[size_t(ravel(o, {3, 5}))]);
                            }
                            return std::exp(xv[size_t(ravel(c, {3, 5}))]) / s;
                          }),
                      1e-12, 1e-12))
        << dim;
  }
  // ReLU(inplace) overwrites its input.
  Tensor y = x.clone();
  nn::ReLU(true)(y);
  EXPECT_TRUE(close(y, nn::ReLU()(x), 0, 0));
  EXPECT_EMBER_ERROR(nn::GELU(nn::GELUOptions().approximate("fast")),
                     "approximate must be 'none' or 'tanh'");
}

TEST(NNLayers, FlattenAndIdentity) {
  Tensor x = random({2, 3, 4, 5}, kFloat, 23);
  EXPECT_EQ(vec(nn::Flatten()(x).sizes()), (std::vector<int64_t>{2, 60}));
  EXPECT_EQ(
      vec(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(x).sizes()),
      (std::vector<int64_t>{6, 4, 5}));
  EXPECT_TRUE(close(nn::Flatten()(x), x.reshape({2, 60}), 0, 0));
  EXPECT_TRUE(nn::Identity()(x).is_same(x));
}

TEST(NNContainers, Sequential) {
  manual_seed(6);
  nn::Sequential seq(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  EXPECT_EQ(seq->size(), 3u);
  Tensor x = random({5, 4}, kFloat, 24);
  auto l0 = seq->ptr<nn::LinearImpl>(0);
  auto &l2 = seq->at<nn::LinearImpl>(2);
  Tensor h = ref_linear(x, l0->weight, l0->bias).clamp_min(0);
  EXPECT_TRUE(
      close(seq->forward(x), ref_linear(h, l2.weight, l2.bias), 1e-5, 1e-5));
  EXPECT_TRUE(close(seq(x), seq->forward(x), 0, 0));
  EXPECT_EQ(seq[1]->name(), "ember::nn::ReLUImpl");
  EXPECT_EQ(
      seq->named_parameters().keys(),
      (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  size_t n = 0;
  for (auto &m : *seq) {
    EXPECT_FALSE(m.is_empty());
    ++n;
  }
  EXPECT_EQ(n, 3u);
  seq->push_back(nn::Sigmoid());
  seq->push_back("out", nn::Functional([](Tensor t) { return t * 2; }));
  EXPECT_EQ(seq->size(), 5u);
  EXPECT_EQ(seq->named_children().keys().back(), "out");
  Tensor y = seq->forward(x);
  for (double v : values(y))
    EXPECT_TRUE(v > 0 && v < 2);
  EXPECT_EMBER_ERROR(seq->ptr(7), "out of range");
  EXPECT_EMBER_ERROR(seq->ptr<nn::Conv2dImpl>(0), "Attempted to cast module");
  EXPECT_EMBER_ERROR(nn::Sequential()->forward(x),
                     "Cannot call forward() on an empty Sequential");
  EXPECT_EMBER_ERROR(seq->forward<int64_t>(x), "but you asked for type long");

  // Named construction.
  nn::Sequential named({{"fc", nn::Linear(2, 2)}, {"act", nn::Tanh()}});
  EXPECT_EQ(named->named_parameters().keys(),
            (std::vector<std::string>{"fc.weight", "fc.bias"}));
  // A module with two inputs can start a Sequential.
  nn::Sequential loss_seq{nn::MSELoss()};
  EXPECT_TRUE(close(loss_seq->forward(x, x), ember::zeros({}), 0, 0));
}

TEST(NNContainers, ModuleList) {
  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU());
  list->push_back(nn::Linear(3, 1));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(
      list->named_parameters().keys(),
      (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = random({4, 2}, kFloat, 25);
  Tensor h = x;
  for (const auto &m : *list) {
    if (auto *lin = m->as<nn::Linear>())
      h = lin->forward(h);
    else
      h = m->as<nn::ReLUImpl>()->forward(h);
  }
  EXPECT_EQ(vec(h.sizes()), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(list->at<nn::LinearImpl>(2).options.in_features(), 3);
  list->insert(1, nn::Tanh());
  EXPECT_EQ(list->size(), 4u);
  EXPECT_EQ(list->named_children().keys(),
            (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ((*list)[1]->name(), "ember::nn::TanhImpl");
  EXPECT_EQ(list->named_modules().keys()[2], "1");
  EXPECT_EQ(list->ptr<nn::LinearImpl>(3)->options.out_features(), 1);
  EXPECT_EMBER_ERROR(list->ptr<nn::LinearImpl>(1), "Unable to cast module[1]");
  EXPECT_EMBER_ERROR(list->ptr(9), "out of range");
}

// =============================================================================
// MultiheadAttention against a naive float64 implementation
// =============================================================================

namespace {

struct MhaRef {
  Tensor out;     // (L, N, E)
  Tensor weights; // (N, H, L, S')
};

/// Naive multi-head attention over (L, N, E) query, (S, N, kdim) key,
/// (S, N, vdim) value, with bool masks (true = masked): attn (L, S) and
/// key padding (N, S). Extra key/value positions come from bias_k/bias_v
/// and add_zero_attn.
MhaRef ref_mha(const nn::MultiheadAttentionImpl &m, const Tensor &q,
               const Tensor &k, const Tensor &v, const Tensor &attn_mask,
               const Tensor &kpm) {
  const int64_t E = m.options.embed_dim(), H = m.options.num_heads();
  const int64_t hd = E / H, L = q.size(0), N = q.size(1), S0 = k.size(0);
  const int64_t kd = k.size(2), vd = v.size(2);
  auto qv = values(q), kv = values(k), vv = values(v);
  std::vector<double> wq, wk, wv, bq(static_cast<size_t>(E)),
      bk(static_cast<size_t>(E)), bv(static_cast<size_t>(E));
  if (m._qkv_same_embed_dim) {
    auto w = values(m.in_proj_weight);
    wq.assign(w.begin(), w.begin() + E * E);
    wk.assign(w.begin() + E * E, w.begin() + 2 * E * E);
    wv.assign(w.begin() + 2 * E * E, w.end());
  } else {
    wq = values(m.q_proj_weight);
    wk = values(m.k_proj_weight);
    wv = values(m.v_proj_weight);
  }
  if (m.in_proj_bias.defined()) {
    auto b = values(m.in_proj_bias);
    for (int64_t e = 0; e < E; ++e) {
      bq[size_t(e)] = b[size_t(e)];
      bk[size_t(e)] = b[size_t(E + e)];
      bv[size_t(e)] = b[size_t(2 * E + e)];
    }
  }
  auto wo = values(m.out_proj->weight);
  std::vector<double> bo = m.out_proj->bias.defined()
                               ? values(m.out_proj->bias)
                               : std::vector<double>(size_t(E), 0);
  std::vector<double> am =
      attn_mask.defined() ? values(attn_mask) : std::vector<double>();
  std::vector<double> pm = kpm.defined() ? values(kpm) : std::vector<double>();
  std::vector<double> bkv =
      m.bias_k.defined() ? values(m.bias_k) : std::vector<double>();
  std::vector<double> bvv =
      m.bias_v.defined() ? values(m.bias_v) : std::vector<double>();
  const int64_t S = S0 + (bkv.empty() ? 0 : 1) + (m.options.add_zero_attn());

  std::vector<double> out(static_cast<size_t>(L * N * E)),
      weights(static_cast<size_t>(N * H * L * S));
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> concat(static_cast<size_t>(L * E));
    for (int64_t h = 0; h < H; ++h) {
      // Projections of this head.
      std::vector<double> Q(static_cast<size_t>(L * hd)),
          K(static_cast<size_t>(S * hd), 0), V(static_cast<size_t>(S * hd), 0);
      for (int64_t l = 0; l < L; ++l)
        for (int64_t d = 0; d < hd; ++d) {
          int64_t r = h * hd + d;
          double s = bq[size_t(r)];
          for (int64_t e = 0; e < E; ++e)
            s += qv[size_t((l * N + n) * E + e)] * wq[size_t(r * E + e)];
          Q[size_t(l * hd + d)] = s;
        }
      for (int64_t j = 0; j < S0; ++j)
        for (int64_t d = 0; d < hd; ++d) {
          int64_t r = h * hd + d;
          double sk = bk[size_t(r)], sv = bv[size_t(r)];
          for (int64_t e = 0; e < kd; ++e)
            sk += kv[size_t((j * N + n) * kd + e)] * wk[size_t(r * kd + e)];
          for (int64_t e = 0; e < vd; ++e)
            sv += vv[size_t((j * N + n) * vd + e)] * wv[size_t(r * vd + e)];
          K[size_t(j * hd + d)] = sk;
          V[size_t(j * hd + d)] = sv;
        }
      if (!bkv.empty())
        for (int64_t d = 0; d < hd; ++d) {
          K[size_t(S0 * hd + d)] = bkv[size_t(h * hd + d)];
          V[size_t(S0 * hd + d)] = bvv[size_t(h * hd + d)];
        }
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> sc(static_cast<size_t>(S));
        double mx = -kInf;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t d = 0; d < hd; ++d)
            s += Q[size_t(l * hd + d)] * K[size_t(j * hd + d)];
          s /= std::sqrt(double(hd));
          bool masked = j < S0 && ((!am.empty() && am[size_t(l * S0 + j)]) ||
                                   (!pm.empty() && pm[size_t(n * S0 + j)]));
          sc[size_t(j)] = masked ? -kInf : s;
          mx = std::max(mx, sc[size_t(j)]);
        }
        double z = 0;
        for (auto &s : sc)
          z += (s = std::exp(s - mx));
        for (int64_t j = 0; j < S; ++j) {
          double p = sc[size_t(j)] / z;
          weights[size_t(((n * H + h) * L + l) * S + j)] = p;
          for (int64_t d = 0; d < hd; ++d)
            concat[size_t(l * E + h * hd + d)] += p * V[size_t(j * hd + d)];
        }
      }
    }
    for (int64_t l = 0; l < L; ++l)
      for (int64_t e = 0; e < E; ++e) {
        double s = bo[size_t(e)];
        for (int64_t j = 0; j < E; ++j)
          s += concat[size_t(l * E + j)] * wo[size_t(e * E + j)];
        out[size_t((l * N + n) * E + e)] = s;
      }
  }
  return {from_fn({L, N, E}, [&](int64_t i) { return out[size_t(i)]; }),
          from_fn({N, H, L, S}, [&](int64_t i) { return weights[size_t(i)]; })};
}

} // namespace

TEST(NNAttention, DefaultInitAndForward) {
  manual_seed(7);
  const int64_t E = 8, H = 2;
  nn::MultiheadAttention mha(E, H);
  EXPECT_EQ(mha->named_parameters().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                      "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(vec(mha->in_proj_weight.sizes()), (std::vector<int64_t>{24, 8}));
  // xavier_uniform_ on (3E, E): bound sqrt(6 / (E + 3E)); zero biases.
  double bound = std::sqrt(6.0 / (4 * E));
  for (double v : values(mha->in_proj_weight))
    EXPECT_LE(std::fabs(v), bound);
  EXPECT_TRUE(close(mha->in_proj_bias, ember::zeros({3 * E}), 0, 0));
  EXPECT_TRUE(close(mha->out_proj->bias, ember::zeros({E}), 0, 0));
  {
    // Random biases so that the reference checks them.
    NoGradGuard g;
    mha->in_proj_bias.copy_(random({3 * E}, kFloat, 30));
    mha->out_proj->bias.copy_(random({E}, kFloat, 31));
  }
  mha->to(kDouble);
  Tensor q = random({3, 2, E}, kDouble, 32), k = random({5, 2, E}, kDouble, 33),
         v = random({5, 2, E}, kDouble, 34);
  auto [out, w] = mha->forward(q, k, v);
  MhaRef r = ref_mha(*mha, q, k, v, Tensor(), Tensor());
  EXPECT_TRUE(close(out, r.out, 1e-10, 1e-10));
  EXPECT_TRUE(close(w, r.weights.mean(std::vector<int64_t>{1}), 1e-10, 1e-10));
  auto [out2, w2] = mha->forward(q, k, v, {}, true, {}, false);
  EXPECT_TRUE(close(w2, r.weights, 1e-10, 1e-10));
  // need_weights = false takes the scaled_dot_product_attention path.
  auto [out3, w3] = mha->forward(q, k, v, {}, false);
  EXPECT_FALSE(w3.defined());
  EXPECT_TRUE(close(out3, r.out, 1e-10, 1e-10));
  // Self-attention of an unbatched sequence.
  Tensor x = random({4, E}, kDouble, 35);
  auto [out4, w4] = mha->forward(x, x, x);
  MhaRef r4 = ref_mha(*mha, x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1),
                      Tensor(), Tensor());
  EXPECT_TRUE(close(out4, r4.out.squeeze(1), 1e-10, 1e-10));
  EXPECT_EQ(vec(w4.sizes()), (std::vector<int64_t>{4, 4}));
}

TEST(NNAttention, MasksBatchFirstAndOptions) {
  manual_seed(8);
  const int64_t E = 6;
  nn::MultiheadAttention mha(
      nn::MultiheadAttentionOptions(E, 3).batch_first(true));
  mha->to(kDouble);
  Tensor q = random({2, 3, E}, kDouble, 40), k = random({2, 4, E}, kDouble, 41);
  Tensor attn_mask = ember::tensor({{false, true, false, false},
                                    {false, false, true, false},
                                    {true, false, false, false}});
  Tensor kpm =
      ember::tensor({{false, false, false, true}, {true, false, false, false}});
  for (bool need_weights : {true, false}) {
    auto [out, w] = mha->forward(q, k, k, kpm, need_weights, attn_mask);
    MhaRef r = ref_mha(*mha, q.transpose(0, 1), k.transpose(0, 1),
                       k.transpose(0, 1), attn_mask, kpm);
    EXPECT_TRUE(close(out, r.out.transpose(0, 1), 1e-10, 1e-10))
        << need_weights;
    if (need_weights) {
      EXPECT_TRUE(
          close(w, r.weights.mean(std::vector<int64_t>{1}), 1e-10, 1e-10));
    }
  }
  // A float mask is added to the scores (-inf is the same as true).
  Tensor float_mask = ember::zeros({3, 4}, TensorOptions(kDouble))
                          .masked_fill(attn_mask, -kInf);
  auto [outf, wf] = mha->forward(q, k, k, {}, true, float_mask);
  MhaRef rf = ref_mha(*mha, q.transpose(0, 1), k.transpose(0, 1),
                      k.transpose(0, 1), attn_mask, Tensor());
  EXPECT_TRUE(close(outf, rf.out.transpose(0, 1), 1e-10, 1e-10));

  // kdim / vdim, add_bias_kv, add_zero_attn, no bias.
  nn::MultiheadAttention kv(nn::MultiheadAttentionOptions(4, 2)
                                .kdim(3)
                                .vdim(5)
                                .add_bias_kv(true)
                                .add_zero_attn(true)
                                .bias(false));
  EXPECT_EQ(kv->named_parameters().keys(),
            (std::vector<std::string>{"q_proj_weight", "k_proj_weight",
                                      "v_proj_weight", "bias_k", "bias_v",
                                      "out_proj.weight"}));
  kv->to(kDouble);
  Tensor q2 = random({2, 2, 4}, kDouble, 42),
         k2 = random({3, 2, 3}, kDouble, 43),
         v2 = random({3, 2, 5}, kDouble, 44);
  Tensor kpm2 = ember::tensor({{false, true, false}, {false, false, false}});
  auto [o2, w2] = kv->forward(q2, k2, v2, kpm2, true, {}, false);
  MhaRef r2 = ref_mha(*kv, q2, k2, v2, Tensor(), kpm2);
  EXPECT_TRUE(close(o2, r2.out, 1e-10, 1e-10));
  EXPECT_TRUE(close(w2, r2.weights, 1e-10, 1e-10));
  auto [o3, w3] = kv->forward(q2, k2, v2, kpm2, false);
  EXPECT_TRUE(close(o3, r2.out, 1e-10, 1e-10));

  EXPECT_EMBER_ERROR(nn::MultiheadAttention(6, 4),
                     "embed_dim must be divisible by num_heads");
  EXPECT_EMBER_ERROR(mha->forward(random({2, 3, 5}, kDouble, 1), k, k),
                     "was expecting embedding dimension of 6, but got 5");
  EXPECT_EMBER_ERROR(mha->forward(q, k, k, {}, true, ember::zeros({2, 2})),
                     "The shape of the 2D attn_mask is [2, 2], but should be "
                     "[3, 4].");
  EXPECT_EMBER_ERROR(
      mha->forward(q, k, k, ember::zeros({2, 3}, TensorOptions(kBool))),
      "expecting key_padding_mask shape of [2, 4]");
  EXPECT_EMBER_ERROR(mha->forward(q, k, k, {}, true,
                                  ember::zeros({3, 4}, TensorOptions(kLong))),
                     "only bool and floating types of attn_mask are supported");
}

// =============================================================================
// Losses
// =============================================================================

namespace {

double reduce_ref(const std::vector<double> &v, const std::string &how,
                  double denom = -1) {
  double s = 0;
  for (double x : v)
    s += x;
  if (how == "sum")
    return s;
  return s / (denom > 0 ? denom : double(v.size()));
}

Tensor scalar(double v) {
  return from_fn({}, [&](int64_t) { return v; });
}

} // namespace

TEST(NNLoss, Regression) {
  Tensor a = random({3, 4}, kDouble, 50), b = random({3, 4}, kDouble, 51);
  auto av = values(a), bv = values(b);
  std::vector<double> sq, ab, sm1, sm05;
  for (size_t i = 0; i < av.size(); ++i) {
    double d = av[i] - bv[i], ad = std::fabs(d);
    sq.push_back(d * d);
    ab.push_back(ad);
    sm1.push_back(ad < 1 ? 0.5 * d * d : ad - 0.5);
    sm05.push_back(ad < 0.5 ? 0.5 * d * d / 0.5 : ad - 0.25);
  }
  EXPECT_TRUE(
      close(nn::MSELoss()(a, b), scalar(reduce_ref(sq, "mean")), 1e-12));
  EXPECT_TRUE(close(nn::MSELoss(nn::MSELossOptions(ember::kSum))(a, b),
                    scalar(reduce_ref(sq, "sum")), 1e-12));
  EXPECT_TRUE(close(nn::MSELoss(nn::MSELossOptions(ember::kNone))(a, b),
                    from_fn({3, 4}, [&](int64_t i) { return sq[size_t(i)]; }),
                    1e-12));
  EXPECT_TRUE(close(nn::L1Loss()(a, b), scalar(reduce_ref(ab, "mean")), 1e-12));
  EXPECT_TRUE(
      close(nn::SmoothL1Loss()(a, b), scalar(reduce_ref(sm1, "mean")), 1e-12));
  EXPECT_TRUE(close(
      nn::SmoothL1Loss(nn::SmoothL1LossOptions(ember::kSum).beta(0.5))(a, b),
      scalar(reduce_ref(sm05, "sum")), 1e-12));
}

TEST(NNLoss, Classification) {
  Tensor logits = random({4, 3}, kDouble, 52);
  Tensor target = ember::tensor({2, 0, 1, 2});
  auto lv = values(logits);
  std::vector<int64_t> t = {2, 0, 1, 2};
  std::vector<double> w = {0.5, 2.0, 1.5};
  std::vector<double> nll, wnll, logp(12);
  double wsum = 0, wsum_ign = 0;
  std::vector<double> wnll_ign;
  for (int64_t n = 0; n < 4; ++n) {
    double mx = -kInf, z = 0;
    for (int64_t c = 0; c < 3; ++c)
      mx = std::max(mx, lv[size_t(n * 3 + c)]);
    for (int64_t c = 0; c < 3; ++c)
      z += std::exp(lv[size_t(n * 3 + c)] - mx);
    for (int64_t c = 0; c < 3; ++c)
      logp[size_t(n * 3 + c)] = lv[size_t(n * 3 + c)] - mx - std::log(z);
    double l = -logp[size_t(n * 3 + t[size_t(n)])];
    nll.push_back(l);
    wnll.push_back(l * w[size_t(t[size_t(n)])]);
    wsum += w[size_t(t[size_t(n)])];
    if (t[size_t(n)] != 0) {
      wnll_ign.push_back(l * w[size_t(t[size_t(n)])]);
      wsum_ign += w[size_t(t[size_t(n)])];
    }
  }
  EXPECT_TRUE(close(nn::CrossEntropyLoss()(logits, target),
                    scalar(reduce_ref(nll, "mean")), 1e-12));
  Tensor wt = ember::tensor({0.5, 2.0, 1.5}, TensorOptions(kDouble));
  nn::CrossEntropyLoss weighted(nn::CrossEntropyLossOptions().weight(wt));
  EXPECT_EQ(weighted->named_buffers().keys(),
            std::vector<std::string>{"weight"});
  EXPECT_TRUE(close(weighted(logits, target),
                    scalar(reduce_ref(wnll, "mean", wsum)), 1e-12));
  nn::CrossEntropyLoss ignoring(
      nn::CrossEntropyLossOptions().weight(wt).ignore_index(0));
  EXPECT_TRUE(close(ignoring(logits, target),
                    scalar(reduce_ref(wnll_ign, "mean", wsum_ign)), 1e-12));
  // Label smoothing eps: (1 - eps) * nll + eps * mean_c(-logp).
  double eps = 0.2;
  std::vector<double> smooth;
  for (int64_t n = 0; n < 4; ++n) {
    double u = 0;
    for (int64_t c = 0; c < 3; ++c)
      u -= logp[size_t(n * 3 + c)];
    smooth.push_back((1 - eps) * nll[size_t(n)] + eps * u / 3);
  }
  EXPECT_TRUE(close(
      nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(eps))(
          logits, target),
      scalar(reduce_ref(smooth, "mean")), 1e-12));
  // NLLLoss on log-probabilities.
  Tensor lp = from_fn({4, 3}, [&](int64_t i) { return logp[size_t(i)]; });
  EXPECT_TRUE(
      close(nn::NLLLoss()(lp, target), scalar(reduce_ref(nll, "mean")), 1e-12));
  EXPECT_TRUE(
      close(nn::NLLLoss(nn::NLLLossOptions(ember::kSum).weight(wt))(lp, target),
            scalar(reduce_ref(wnll, "sum")), 1e-12));
  EXPECT_EMBER_ERROR(
      nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(2)),
      "label_smoothing must be between 0.0 and 1.0");
}

TEST(NNLoss, Binary) {
  Tensor x = random({2, 5}, kDouble, 53);
  Tensor p = x.sigmoid();
  Tensor t = random_positive({2, 5}, kDouble, 0, 1, 54);
  auto xv = values(x), tv = values(t);
  std::vector<double> bce, wbce, pw;
  std::vector<double> w = {1, 2, 3, 4, 5};
  std::vector<double> posw = {0.5, 1, 1.5, 2, 2.5};
  for (size_t i = 0; i < xv.size(); ++i) {
    double s = 1 / (1 + std::exp(-xv[i]));
    double l = -(tv[i] * std::log(s) + (1 - tv[i]) * std::log(1 - s));
    bce.push_back(l);
    wbce.push_back(l * w[i % 5]);
    pw.push_back(
        -(posw[i % 5] * tv[i] * std::log(s) + (1 - tv[i]) * std::log(1 - s)));
  }
  EXPECT_TRUE(
      close(nn::BCELoss()(p, t), scalar(reduce_ref(bce, "mean")), 1e-10));
  Tensor wt = ember::tensor({1., 2., 3., 4., 5.}, TensorOptions(kDouble));
  EXPECT_TRUE(
      close(nn::BCELoss(nn::BCELossOptions(ember::kSum).weight(wt))(p, t),
            scalar(reduce_ref(wbce, "sum")), 1e-10));
  EXPECT_TRUE(close(nn::BCEWithLogitsLoss()(x, t),
                    scalar(reduce_ref(bce, "mean")), 1e-10));
  nn::BCEWithLogitsLoss pos(nn::BCEWithLogitsLossOptions().pos_weight(
      ember::tensor({0.5, 1., 1.5, 2., 2.5}, TensorOptions(kDouble))));
  EXPECT_EQ(pos->named_buffers().keys(),
            std::vector<std::string>{"pos_weight"});
  EXPECT_TRUE(close(pos(x, t), scalar(reduce_ref(pw, "mean")), 1e-10));
}

// =============================================================================
// nn::init
// =============================================================================

namespace {

struct Stats {
  double mean = 0, std = 0, min = kInf, max = -kInf;
};

Stats stats_of(const Tensor &t) {
  auto v = values(t);
  Stats s;
  for (double x : v) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= double(v.size());
  for (double x : v)
    s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / double(v.size()));
  return s;
}

} // namespace

TEST(NNInit, GainAndFans) {
  namespace I = nn::init;
  EXPECT_EQ(I::calculate_gain(ember::kLinear), 1.0);
  EXPECT_EQ(I::calculate_gain(ember::kConv2D), 1.0);
  EXPECT_EQ(I::calculate_gain(ember::kSigmoid), 1.0);
  EXPECT_DOUBLE_EQ(I::calculate_gain(ember::kTanh), 5.0 / 3);
  EXPECT_DOUBLE_EQ(I::calculate_gain(ember::kReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(I::calculate_gain(ember::kLeakyReLU),
                   std::sqrt(2 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(I::calculate_gain(ember::kLeakyReLU, 0.2),
                   std::sqrt(2 / 1.04));
  auto [fi, fo] = I::_calculate_fan_in_and_fan_out(ember::empty({16, 8, 3, 3}));
  EXPECT_EQ(fi, 72);
  EXPECT_EQ(fo, 144);
  auto [fi2, fo2] = I::_calculate_fan_in_and_fan_out(ember::empty({5, 7}));
  EXPECT_EQ(fi2, 7);
  EXPECT_EQ(fo2, 5);
  EXPECT_EMBER_ERROR(I::_calculate_fan_in_and_fan_out(ember::empty({5})),
                     "fewer than 2 dimensions");
  EXPECT_EMBER_ERROR(I::xavier_uniform_(ember::empty({5})),
                     "fewer than 2 dimensions");
}

TEST(NNInit, UniformStaysBelowItsUpperBoundInEveryDtype) {
  // The numbers are drawn with the tensor's own digits: [0, 1) never rounds
  // up to 1 in float16 or bfloat16.
  for (ScalarType dt : {kHalf, kBFloat16, kFloat}) {
    SCOPED_TRACE(toString(dt));
    Tensor t = empty({200000}, TensorOptions(dt));
    nn::init::uniform_(t, 0, 1);
    EXPECT_EQ((t == 1.0).sum().item<int64_t>(), 0);
    EXPECT_GE(t.min().item<double>(), 0.0);
  }
}

TEST(NNInit, Distributions) {
  namespace I = nn::init;
  manual_seed(9);
  // Large tensors: empirical statistics within a few standard errors.
  Tensor w = ember::empty({400, 500});
  w.set_requires_grad(true); // init works on parameters (under NoGradGuard)
  const double fan_in = 500, fan_out = 400;

  I::uniform_(w, -2, 3);
  Stats s = stats_of(w);
  EXPECT_GE(s.min, -2);
  EXPECT_LT(s.max, 3);
  EXPECT_NEAR(s.mean, 0.5, 0.02);
  EXPECT_NEAR(s.std, 5 / std::sqrt(12.0), 0.02);

  I::normal_(w, 1.5, 0.5);
  s = stats_of(w);
  EXPECT_NEAR(s.mean, 1.5, 0.01);
  EXPECT_NEAR(s.std, 0.5, 0.01);

  I::kaiming_uniform_(w, 0, ember::kFanIn, ember::kReLU);
  double bound = std::sqrt(2.0) * std::sqrt(3 / fan_in);
  s = stats_of(w);
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_NEAR(s.max, bound, bound * 0.01);
  EXPECT_NEAR(s.std, bound / std::sqrt(3.0), bound * 0.01);

  I::kaiming_uniform_(w, std::sqrt(5.0)); // Linear's default: 1/sqrt(fan_in)
  s = stats_of(w);
  EXPECT_LE(s.max, 1 / std::sqrt(fan_in));
  EXPECT_NEAR(s.max, 1 / std::sqrt(fan_in), 0.001);

  I::kaiming_normal_(w, 0, ember::kFanOut, ember::kReLU);
  s = stats_of(w);
  EXPECT_NEAR(s.mean, 0, 0.002);
  EXPECT_NEAR(s.std, std::sqrt(2 / fan_out), std::sqrt(2 / fan_out) * 0.01);

  I::kaiming_normal_(w); // leaky_relu(0) = relu gain, fan_in
  EXPECT_NEAR(stats_of(w).std, std::sqrt(2 / fan_in),
              std::sqrt(2 / fan_in) * 0.01);

  I::xavier_uniform_(w, 2.0);
  bound = 2 * std::sqrt(6 / (fan_in + fan_out));
  s = stats_of(w);
  EXPECT_LE(s.max, bound);
  EXPECT_GE(s.min, -bound);
  EXPECT_NEAR(s.std, bound / std::sqrt(3.0), bound * 0.01);

  I::xavier_normal_(w);
  EXPECT_NEAR(stats_of(w).std, std::sqrt(2 / (fan_in + fan_out)),
              std::sqrt(2 / (fan_in + fan_out)) * 0.01);

  I::constant_(w, 0.25);
  s = stats_of(w);
  EXPECT_EQ(s.min, 0.25);
  EXPECT_EQ(s.max, 0.25);
  I::ones_(w);
  EXPECT_EQ(stats_of(w).min, 1);
  I::zeros_(w);
  EXPECT_EQ(stats_of(w).max, 0);
  EXPECT_TRUE(w.requires_grad());

  Tensor e = ember::empty({2, 3}, TensorOptions(kDouble));
  I::eye_(e);
  EXPECT_TRUE(close(e, ember::eye(2, 3, TensorOptions(kDouble)), 0, 0));

  // Returns the tensor; a zero-element tensor is a no-op.
  Tensor z = ember::empty({0, 3});
  EXPECT_TRUE(I::kaiming_uniform_(z).is_same(z));
  EXPECT_EMBER_ERROR(I::uniform_(w, 2, 1), "found from=2 > to=1");
  EXPECT_EMBER_ERROR(I::normal_(w, 0, -1), "expects std >= 0.0");

  // Reproducible with manual_seed.
  manual_seed(123);
  nn::Linear a(6, 4);
  manual_seed(123);
  nn::Linear b(6, 4);
  EXPECT_TRUE(bitwise_equal(a->weight, b->weight));
  EXPECT_TRUE(bitwise_equal(a->bias, b->bias));
}

// =============================================================================
// Serialization
// =============================================================================

TEST(NNSerialize, TensorRoundTrip) {
  std::vector<Tensor> tensors = {
      random({3, 4}, kFloat, 60),
      random({2, 3, 2}, kDouble, 61),
      random({5}, kLong, 62),
      random({4}, kInt, 63),
      random({2, 2}, kBool, 64),
      random({3}, kHalf, 65),
      random({3}, kBFloat16, 66),
      random({6}, kByte, 67),
      ember::scalar_tensor(2.5),
      ember::empty({0, 3}),
      noncontiguous(random({2, 3}, kFloat, 68)),
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string path = temp_path("tensor.bin");
    ember::save(tensors[i], path);
    Tensor loaded;
    ember::load(loaded, path);
    EXPECT_TRUE(bitwise_equal(loaded, tensors[i])) << i;
    std::remove(path.c_str());
  }
  // Loading into a defined tensor replaces its data, keeping its identity.
  std::stringstream ss;
  ember::save(tensors[0], ss);
  Tensor target = ember::zeros({1});
  Tensor alias = target;
  ember::load(target, ss);
  EXPECT_TRUE(alias.is_same(target));
  EXPECT_TRUE(bitwise_equal(alias, tensors[0]));

  // A list of tensors.
  std::stringstream list;
  ember::save(tensors, list);
  std::vector<Tensor> back = {ember::ones({1})};
  ember::load(back, list);
  ASSERT_EQ(back.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    EXPECT_TRUE(bitwise_equal(back[i], tensors[i])) << i;
}

TEST(NNSerialize, ModuleRoundTrip) {
  manual_seed(10);
  struct ModelImpl : nn::Module {
    ModelImpl() {
      conv = register_module("conv", nn::Conv2d(2, 3, 3));
      bn = register_module("bn", nn::BatchNorm2d(3));
      head = register_module("head",
                             nn::Sequential(nn::Flatten(), nn::Linear(12, 2)));
    }
    Tensor forward(const Tensor &x) { return head->forward(bn(conv(x))); }
    nn::Conv2d conv{nullptr};
    nn::BatchNorm2d bn{nullptr};
    nn::Sequential head{nullptr};
  };
  auto a = std::make_shared<ModelImpl>();
  a->forward(random({2, 2, 4, 4}, kFloat, 70)); // moves the running stats
  std::string path = temp_path("model.bin");
  ember::save(a, path);

  auto b = std::make_shared<ModelImpl>();
  Tensor b_weight = b->conv->weight;
  ember::load(b, path);
  auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.keys(), pb.keys());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(bitwise_equal(pa[i].value(), pb[i].value())) << pa[i].key();
  auto ba = a->named_buffers(), bb = b->named_buffers();
  ASSERT_EQ(ba.keys(), bb.keys());
  for (size_t i = 0; i < ba.size(); ++i)
    EXPECT_TRUE(bitwise_equal(ba[i].value(), bb[i].value())) << ba[i].key();
  EXPECT_EQ(b->bn->num_batches_tracked.item<int64_t>(), 1);
  // Loaded in place: the module's tensors keep their identity.
  EXPECT_TRUE(b->conv->weight.is_same(b_weight));
  EXPECT_TRUE(b->conv->weight.requires_grad());
  b->eval();
  a->eval();
  Tensor x = random({1, 2, 4, 4}, kFloat, 71);
  EXPECT_TRUE(close(a->forward(x), b->forward(x), 0, 0));

  // Holders work the same, through a stream; archives can follow each other
  // in one stream.
  nn::Linear la(3, 2), lb(3, 2), lc(3, 2);
  std::stringstream ss;
  ember::save(la, ss);
  ember::save(b->conv, ss);
  ember::save(lc, ss);
  nn::Linear la2(3, 2), lc2(3, 2);
  nn::Conv2d conv2(2, 3, 3);
  ember::load(la2, ss);
  ember::load(conv2, ss);
  ember::load(lc2, ss);
  EXPECT_TRUE(bitwise_equal(la->weight, la2->weight));
  EXPECT_TRUE(bitwise_equal(a->conv->bias, conv2->bias));
  EXPECT_TRUE(bitwise_equal(lc->weight, lc2->weight));
  std::remove(path.c_str());
}

TEST(NNSerialize, LoadErrors) {
  nn::Linear lin(3, 2);
  std::stringstream ss;
  ember::save(lin, ss);
  const std::string bytes = ss.str();

  nn::Linear wrong(4, 2);
  std::stringstream s1(bytes);
  EXPECT_EMBER_ERROR(ember::load(wrong, s1),
                     "Size mismatch when loading 'weight': the archive holds "
                     "a tensor of shape [2, 3] but the destination tensor "
                     "has shape [2, 4]");
  nn::Sequential seq(nn::Linear(3, 2));
  std::stringstream s2(bytes);
  EXPECT_EMBER_ERROR(ember::load(seq, s2), "No such serialized submodule '0'");
  nn::Sequential saved_seq(nn::Linear(3, 2));
  std::stringstream s3;
  ember::save(saved_seq, s3);
  nn::Sequential bigger(nn::Linear(3, 2), nn::BatchNorm1d(2));
  EXPECT_EMBER_ERROR(ember::load(bigger, s3),
                     "No such serialized submodule '1'");
  // A missing tensor inside a nested archive names its full path.
  struct HolderImpl : nn::Module {
    HolderImpl() { register_module("norm", nn::BatchNorm1d(2)); }
  };
  struct OtherImpl : nn::Module {
    OtherImpl() {
      register_module("norm", nn::LayerNorm(std::vector<int64_t>{2}));
    }
  };
  std::stringstream s5;
  ember::save(std::make_shared<OtherImpl>(), s5);
  auto holder = std::make_shared<HolderImpl>();
  EXPECT_EMBER_ERROR(ember::load(holder, s5),
                     "No such serialized buffer 'norm.running_mean'");

  // Truncated at every length: always an ember::Error, never a crash.
  for (size_t n = 0; n < bytes.size(); n += (n < 64 ? 1 : 7)) {
    std::stringstream cut(bytes.substr(0, n));
    nn::Linear l(3, 2);
    EXPECT_THROW(ember::load(l, cut), ember::Error) << n;
  }
  // A truncated file on disk.
  std::string path = temp_path("truncated.bin");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size() / 2));
  }
  EXPECT_EMBER_ERROR(ember::load(lin, path), "Truncated or corrupt archive");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    f.write("xx", 2);
  }
  EXPECT_EMBER_ERROR(ember::load(lin, path), "trailing bytes");
  std::remove(path.c_str());
  // A flipped byte is caught by the checksum.
  std::string corrupt = bytes;
  corrupt[corrupt.size() - 3] ^= 0x40;
  std::stringstream s6(corrupt);
  EXPECT_EMBER_ERROR(ember::load(lin, s6), "checksum mismatch");
  std::stringstream s7("definitely not an archive, but long enough");
  EXPECT_EMBER_ERROR(ember::load(lin, s7), "Not an ember archive");
  EXPECT_EMBER_ERROR(ember::load(lin, temp_path("missing/nothing.bin")),
                     "Cannot open");
}

TEST(NNSerialize, ArchiveValues) {
  serialize::OutputArchive out, nested;
  nested.write("lr", 0.01);
  nested.write("state", random({2, 2}, kFloat, 80));
  out.write("step", int64_t(42));
  out.write("beta", 0.9);
  out.write("amsgrad", true);
  out.write("name", std::string("adam"));
  out.write("sizes", std::vector<int64_t>{1, 2, 3});
  out.write("betas", std::vector<double>{0.9, 0.999});
  out.write("list", std::vector<Tensor>{ember::ones({2}), random({3}, kLong)});
  out.write("dtype", IValue(kHalf));
  out.write("none", IValue());
  out.write("group", nested);
  out.write("running", random({3}, kFloat, 81), /*is_buffer=*/true);
  EXPECT_EMBER_ERROR(out.write("step", int64_t(1)), "'step' already defined");
  std::stringstream ss;
  out.save_to(ss);

  serialize::InputArchive in;
  in.load_from(ss);
  EXPECT_EQ(in.keys().size(), 11u);
  IValue v;
  in.read("step", v);
  EXPECT_EQ(v.toInt(), 42);
  in.read("beta", v);
  EXPECT_EQ(v.toDouble(), 0.9);
  in.read("amsgrad", v);
  EXPECT_TRUE(v.toBool());
  in.read("name", v);
  EXPECT_EQ(v.toStringRef(), "adam");
  in.read("sizes", v);
  EXPECT_EQ(v.toIntList().vec(), (std::vector<int64_t>{1, 2, 3}));
  in.read("betas", v);
  EXPECT_EQ(v.toDoubleList(), (std::vector<double>{0.9, 0.999}));
  in.read("list", v);
  ASSERT_EQ(v.toTensorList().size(), 2u);
  EXPECT_TRUE(bitwise_equal(v.toTensorList()[1], random({3}, kLong)));
  in.read("dtype", v);
  EXPECT_EQ(v.toScalarType(), kHalf);
  in.read("none", v);
  EXPECT_TRUE(v.isNone());
  serialize::InputArchive group;
  in.read("group", group);
  group.read("lr", v);
  EXPECT_EQ(v.toDouble(), 0.01);
  Tensor state;
  group.read("state", state);
  EXPECT_TRUE(bitwise_equal(state, random({2, 2}, kFloat, 80)));
  Tensor running;
  in.read("running", running, /*is_buffer=*/true);
  EXPECT_TRUE(bitwise_equal(running, random({3}, kFloat, 81)));
  EXPECT_FALSE(in.try_read("absent", v));
  EXPECT_EMBER_ERROR(in.read("absent", v), "No such serialized value 'absent'");
  EXPECT_EMBER_ERROR(group.read("missing", state),
                     "No such serialized tensor 'group.missing'");
  Tensor t;
  EXPECT_EMBER_ERROR(in.read("running", t),
                     "to be a parameter, but it was saved as a buffer");
  EXPECT_EMBER_ERROR(in.read("step", t), "is not a tensor but a value");
  EXPECT_EMBER_ERROR(in.read("step", group), "is not a nested archive");
}
