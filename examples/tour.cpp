// A tour of ember's internals, following the seeds' walk-through of PyTorch:
// the tensor data structure, storage and views, type promotion and the
// dispatcher (an op-logging mode and a custom op). The README's demo.
#include <ember/ember.h>

#include <iostream>

using namespace ember;
using ember::indexing::Slice;

namespace {

void section(const char *title) { std::cout << "\n== " << title << " ==\n"; }

/// Logs every op that reaches the dispatcher, with its input shapes
/// (PyTorch's TorchDispatchMode example).
struct OperationLogger : TorchDispatchMode {
  void dispatch(const OperatorHandle &op, Stack &stack) override {
    std::cout << "  " << op.name() << "(";
    const char *sep = "";
    for (const IValue &v : stack) {
      std::cout << sep;
      if (v.isTensor())
        std::cout << v.toTensor().sizes();
      else
        std::cout << v;
      sep = ", ";
    }
    std::cout << ")\n";
    op.callBoxed(stack);
  }
};

Tensor scale_kernel(const Tensor &x, double a) { return x * a; }

} // namespace

int main() {
  std::cout << std::boolalpha;
  section("1. The tensor data structure (TensorImpl)");
  Tensor x = tensor({{1, 2, 3}, {4, 5, 6}});
  std::cout << x << "\n";
  std::cout << "shape " << x.sizes() << ", strides " << x.strides()
            << ", storage offset " << x.storage_offset() << ", numel "
            << x.numel() << ", contiguous " << x.is_contiguous() << ", dtype "
            << x.dtype() << ", device " << x.device() << "\n";
  int64_t i = 1, j = 2;
  int64_t off = x.storage_offset() + i * x.stride(0) + j * x.stride(1);
  std::cout << "x[1, 2] = " << x.index({i, j}).item<int64_t>() << " = storage["
            << off << "] = " << x.data_ptr<int64_t>()[off] << "\n";

  section("2. Storage and views");
  Tensor y = x.index({1, Slice()});
  std::cout << "y = x[1, :] = " << y << ", storage offset "
            << y.storage_offset() << ", same storage: " << y.is_alias_of(x)
            << "\n";
  y.index_put_({0}, 100);
  std::cout << "after y[0] = 100, x =\n" << x << "\n";
  Tensor xt = x.t();
  std::cout << "x.t(): shape " << xt.sizes() << ", strides " << xt.strides()
            << ", contiguous " << xt.is_contiguous() << ", same storage "
            << xt.is_alias_of(x) << "\n";
  Tensor xc = xt.contiguous();
  std::cout << "x.t().contiguous(): strides " << xc.strides()
            << ", same storage " << xc.is_alias_of(x) << "\n";
  try {
    xt.view({6});
  } catch (const Error &e) {
    std::cout << "x.t().view({6}) raises: " << e.what() << "\n";
  }

  section("3. dtypes and type promotion");
  Tensor ints = arange(3);
  std::cout << "int64 + 2.5 -> " << (ints + 2.5) << "\n";
  std::cout << "int32 + 2 -> " << (ints.to(kInt) + 2) << "\n";
  std::cout << "float16 + float32 -> " << (ints.to(kHalf) + ones({3})) << "\n";
  std::cout << "int64 / 2 -> " << ints / 2 << "\n";

  section("4. The dispatcher: a mode that logs every op");
  manual_seed(0);
  Tensor w1 = randn({20, 10}), b1 = randn({20});
  Tensor w2 = randn({5, 20}), b2 = randn({5});
  Tensor input = randn({4, 10});
  OperationLogger logger;
  Tensor out;
  {
    TorchDispatchModeGuard guard(logger);
    out = linear(relu(linear(input, w1, b1)), w2, b2);
  }
  std::cout << "output " << out.sizes() << ":\n" << out << "\n";

  section("5. A custom op (torch.library)");
  Library lib("demo");
  lib.def("scale(Tensor x, float a) -> Tensor", &scale_kernel);
  auto scale = find_op<Tensor(const Tensor &, double)>("demo::scale");
  {
    TorchDispatchModeGuard guard(logger);
    std::cout << scale.call(arange(4, kFloat), 0.5) << "\n";
  }
  return 0;
}
