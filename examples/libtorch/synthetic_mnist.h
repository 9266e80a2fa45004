#pragma once
// A stand-in for libtorch's MNIST data pipeline in the ported MNIST examples
// (mnist.cpp, mnist_mlp.cpp): ember has no torch::data (datasets, transforms,
// make_data_loader), so the examples iterate this instead, a list of batches
// built by hand. Each batch has libtorch's `data` (N, 1, 28, 28) and
// `target` (N) fields, so the training loops run unchanged.
//
// The images are synthetic: each of the 10 classes has a fixed random
// sparse 28x28 stroke pattern, and a sample is its class's pattern with a
// random shift of up to 2 pixels and Gaussian noise, clamped to [0, 1] and
// then, unless `normalize` is false, normalized with MNIST's mean and
// standard deviation (0.1307, 0.3081) as mnist.cpp's Normalize transform
// does. The patterns come from a fixed
// seed, so a training set and a test set (other seeds) share them.
#include <ember/ember.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace synthetic_mnist {

/// One batch: images and their labels (libtorch's Example<> after Stack<>).
struct Batch {
  ember::Tensor data;
  ember::Tensor target;
};

/// `size` samples in batches of `batch_size` (the last may be smaller),
/// drawn from `seed`; iterable as a data loader.
class Dataset {
public:
  Dataset(int64_t size, int64_t batch_size, uint64_t seed,
          bool normalize = true)
      : size_(size) {
    ember::Generator pattern_gen(12345);
    // Sparse strokes: ~15% of the pixels of each class's pattern are lit.
    ember::Tensor patterns =
        (ember::rand({10, 1, 28, 28}, pattern_gen) > 0.85).to(ember::kFloat);
    ember::Generator gen(seed);
    for (int64_t start = 0; start < size; start += batch_size) {
      int64_t n = std::min(batch_size, size - start);
      ember::Tensor labels = ember::randint(0, 10, {n}, gen);
      ember::Tensor images = patterns.index_select(0, labels);
      // A shift of up to 2 pixels per batch, one for each axis.
      int64_t dy = ember::randint(-2, 3, {1}, gen).item<int64_t>();
      int64_t dx = ember::randint(-2, 3, {1}, gen).item<int64_t>();
      images = images.roll({dy, dx}, {2, 3});
      images = (images + ember::randn({n, 1, 28, 28}, gen) * 0.3).clamp(0, 1);
      batches_.push_back(
          {normalize ? (images - 0.1307) / 0.3081 : images, labels});
    }
  }

  /// The number of samples (libtorch's dataset.size().value()).
  size_t size() const { return size_t(size_); }
  std::vector<Batch>::iterator begin() { return batches_.begin(); }
  std::vector<Batch>::iterator end() { return batches_.end(); }

private:
  int64_t size_;
  std::vector<Batch> batches_;
};

/// The fraction of `dataset` that `model` classifies right (evaluation
/// mode, no gradients): the check the examples' tests rely on.
template <class Model> double accuracy(Model &model, Dataset &dataset) {
  ember::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0;
  for (auto &batch : dataset)
    correct += model.forward(batch.data)
                   .argmax(1)
                   .eq(batch.target)
                   .sum()
                   .template item<int64_t>();
  return double(correct) / double(dataset.size());
}

} // namespace synthetic_mnist
