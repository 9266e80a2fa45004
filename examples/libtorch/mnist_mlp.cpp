// The MNIST MLP of libtorch's C++ frontend documentation (docs/cpp: the
// end-to-end example of "Installing C++ Distributions of PyTorch": three
// Linear layers with relu, dropout and log_softmax, trained with SGD and
// nll_loss, checkpointed with torch::save), ported by renaming only
// (torch:: -> ember::, <torch/torch.h> -> <ember/ember.h>) except where a
// comment says what ember lacks: the MNIST files and torch::data are
// replaced by a synthetic dataset, and the program ends by checking the
// accuracy on held-out samples.
#include <ember/ember.h>

#include "synthetic_mnist.h"

// Define a new Module.
struct Net : ember::nn::Module {
  Net() {
    // Construct and register two Linear submodules.
    fc1 = register_module("fc1", ember::nn::Linear(784, 64));
    fc2 = register_module("fc2", ember::nn::Linear(64, 32));
    fc3 = register_module("fc3", ember::nn::Linear(32, 10));
  }

  // Implement the Net's algorithm.
  ember::Tensor forward(ember::Tensor x) {
    // Use one of many tensor manipulation functions.
    x = ember::relu(fc1->forward(x.reshape({x.size(0), 784})));
    x = ember::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = ember::relu(fc2->forward(x));
    x = ember::log_softmax(fc3->forward(x), /*dim=*/1);
    return x;
  }

  // Use one of many "standard library" modules.
  ember::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

int main() {
  // Create a new Net.
  auto net = std::make_shared<Net>();

  // ember has no torch::data (MNIST dataset, Stack transform,
  // make_data_loader): a synthetic MNIST-like dataset instead of the files
  // in ./data, its batches listed by hand (synthetic_mnist.h), of pixels in
  // [0, 1] as the unnormalized MNIST.
  auto data_loader = std::make_unique<synthetic_mnist::Dataset>(
      25600, /*batch_size=*/64, /*seed=*/1, /*normalize=*/false);

  // Instantiate an SGD optimization algorithm to update our Net's parameters.
  ember::optim::SGD optimizer(net->parameters(), /*lr=*/0.01);

  for (size_t epoch = 1; epoch <= 10; ++epoch) {
    size_t batch_index = 0;
    // Iterate the data loader to yield batches from the dataset.
    for (auto &batch : *data_loader) {
      // Reset gradients.
      optimizer.zero_grad();
      // Execute the model on the input data.
      ember::Tensor prediction = net->forward(batch.data);
      // Compute a loss value to judge the prediction of our model.
      ember::Tensor loss = ember::nll_loss(prediction, batch.target);
      // Compute gradients of the loss w.r.t. the parameters of our model.
      loss.backward();
      // Update the parameters based on the calculated gradients.
      optimizer.step();
      // Output the loss and checkpoint every 100 batches.
      if (++batch_index % 100 == 0) {
        std::cout << "Epoch: " << epoch << " | Batch: " << batch_index
                  << " | Loss: " << loss.item<float>() << std::endl;
        // Serialize your model periodically as a checkpoint.
        ember::save(net, "net.pt");
      }
    }
  }

  // Not in libtorch's example: the check ctest relies on.
  synthetic_mnist::Dataset test_set(1000, 1000, /*seed=*/2,
                                    /*normalize=*/false);
  double accuracy = synthetic_mnist::accuracy(*net, test_set);
  std::cout << "Test accuracy: " << accuracy << " (expected >= 0.9)"
            << std::endl;
  return accuracy >= 0.9 ? 0 : 1;
}
