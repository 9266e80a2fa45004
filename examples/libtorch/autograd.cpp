// libtorch's autograd tutorial (pytorch/examples cpp/autograd/autograd.cpp),
// ported by renaming only: torch -> ember (namespaces, and the comments
// that name them), <torch/torch.h> -> <ember/ember.h>. ctest checks the
// gradients it prints (examples/CMakeLists.txt).
#include <ember/ember.h>
#include <iostream>

using namespace ember::autograd;

void basic_autograd_operations_example() {
  std::cout << "====== Running: \"Basic autograd operations\" ======"
            << std::endl;

  // Create a tensor and set ``ember::requires_grad()`` to track computation
  // with it
  auto x = ember::ones({2, 2}, ember::requires_grad());
  std::cout << x << std::endl;

  // Do a tensor operation:
  auto y = x + 2;
  std::cout << y << std::endl;

  // ``y`` was created as a result of an operation, so it has a ``grad_fn``.
  std::cout << y.grad_fn()->name() << std::endl;

  // Do more operations on ``y``
  auto z = y * y * 3;
  auto out = z.mean();

  std::cout << z << std::endl;
  std::cout << z.grad_fn()->name() << std::endl;
  std::cout << out << std::endl;
  std::cout << out.grad_fn()->name() << std::endl;

  // ``.requires_grad_( ... )`` changes an existing tensor's ``requires_grad``
  // flag in-place.
  auto a = ember::randn({2, 2});
  a = ((a * 3) / (a - 1));
  std::cout << a.requires_grad() << std::endl;

  a.requires_grad_(true);
  std::cout << a.requires_grad() << std::endl;

  auto b = (a * a).sum();
  std::cout << b.grad_fn()->name() << std::endl;

  // Let's backprop now. Because ``out`` contains a single scalar,
  // ``out.backward()`` is equivalent to ``out.backward(ember::tensor(1.))``.
  out.backward();

  // Print gradients d(out)/dx
  std::cout << x.grad() << std::endl;

  // Now let's take a look at an example of vector-Jacobian product:
  x = ember::randn(3, ember::requires_grad());

  y = x * 2;
  while (y.norm().item<double>() < 1000) {
    y = y * 2;
  }

  std::cout << y << std::endl;
  std::cout << y.grad_fn()->name() << std::endl;

  // If we want the vector-Jacobian product, pass the vector to ``backward`` as
  // argument:
  auto v = ember::tensor({0.1, 1.0, 0.0001}, ember::kFloat);
  y.backward(v);

  std::cout << x.grad() << std::endl;

  // You can also stop autograd from tracking history on tensors that require
  // gradients either by putting ``ember::NoGradGuard`` in a code block
  std::cout << x.requires_grad() << std::endl;
  std::cout << x.pow(2).requires_grad() << std::endl;

  {
    ember::NoGradGuard no_grad;
    std::cout << x.pow(2).requires_grad() << std::endl;
  }

  // Or by using ``.detach()`` to get a new tensor with the same content but
  // that does not require gradients:
  std::cout << x.requires_grad() << std::endl;
  y = x.detach();
  std::cout << y.requires_grad() << std::endl;
  std::cout << x.eq(y).all().item<bool>() << std::endl;
}

void compute_higher_order_gradients_example() {
  std::cout
      << "====== Running \"Computing higher-order gradients in C++\" ======"
      << std::endl;

  // One of the applications of higher-order gradients is calculating gradient
  // penalty. Let's see an example of it using ``ember::autograd::grad``:

  auto model = ember::nn::Linear(4, 3);

  auto input = ember::randn({3, 4}).requires_grad_(true);
  auto output = model(input);

  // Calculate loss
  auto target = ember::randn({3, 3});
  auto loss = ember::nn::MSELoss()(output, target);

  // Use norm of gradients as penalty
  auto grad_output = ember::ones_like(output);
  auto gradient =
      ember::autograd::grad({output}, {input}, /*grad_outputs=*/{grad_output},
                            /*create_graph=*/true)[0];
  auto gradient_penalty =
      ember::pow((gradient.norm(2, /*dim=*/1) - 1), 2).mean();

  // Add gradient penalty to loss
  auto combined_loss = loss + gradient_penalty;
  combined_loss.backward();

  std::cout << input.grad() << std::endl;
}

// Inherit from Function
class LinearFunction : public Function<LinearFunction> {
public:
  // Note that both forward and backward are static functions

  // bias is an optional argument
  static ember::Tensor forward(AutogradContext *ctx, ember::Tensor input,
                               ember::Tensor weight,
                               ember::Tensor bias = ember::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) {
      output += bias.unsqueeze(0).expand_as(output);
    }
    return output;
  }

  static tensor_list backward(AutogradContext *ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];

    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.mm(weight);
    auto grad_weight = grad_output.t().mm(input);
    auto grad_bias = ember::Tensor();
    if (bias.defined()) {
      grad_bias = grad_output.sum(0);
    }

    return {grad_input, grad_weight, grad_bias};
  }
};

class MulConstant : public Function<MulConstant> {
public:
  static ember::Tensor forward(AutogradContext *ctx, ember::Tensor tensor,
                               double constant) {
    // ctx is a context object that can be used to stash information
    // for backward computation
    ctx->saved_data["constant"] = constant;
    return tensor * constant;
  }

  static tensor_list backward(AutogradContext *ctx, tensor_list grad_outputs) {
    // We return as many input gradients as there were arguments.
    // Gradients of non-tensor arguments to forward must be `ember::Tensor()`.
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(),
            ember::Tensor()};
  }
};

void custom_autograd_function_example() {
  std::cout << "====== Running \"Using custom autograd function in C++\" ======"
            << std::endl;
  {
    auto x = ember::randn({2, 3}).requires_grad_();
    auto weight = ember::randn({4, 3}).requires_grad_();
    auto y = LinearFunction::apply(x, weight);
    y.sum().backward();

    std::cout << x.grad() << std::endl;
    std::cout << weight.grad() << std::endl;
  }
  {
    auto x = ember::randn({2}).requires_grad_();
    auto y = MulConstant::apply(x, 5.5);
    y.sum().backward();

    std::cout << x.grad() << std::endl;
  }
}

int main() {
  std::cout << std::boolalpha;

  basic_autograd_operations_example();

  std::cout << "\n";

  compute_higher_order_gradients_example();

  std::cout << "\n";

  custom_autograd_function_example();
}
