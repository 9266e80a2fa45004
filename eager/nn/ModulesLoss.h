#pragma once
/// Loss modules (libtorch's torch/nn/modules/loss.h): MSELoss, L1Loss,
/// SmoothL1Loss, CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss.
/// Their options are the functional options (as in libtorch, where
/// F::MSELossFuncOptions is MSELossOptions):
///   ember::nn::CrossEntropyLoss loss(
///       ember::nn::CrossEntropyLossOptions().label_smoothing(0.1));
///   ember::Tensor l = loss(logits, targets);
/// Class weights given in the options are registered as buffers ("weight",
/// "pos_weight"), so they move with Module::to and are saved.

#include "eager/nn/Cloneable.h"
#include "eager/nn/Functional.h"
#include "eager/nn/Options.h"

namespace ember::nn {

using MSELossOptions = functional::MSELossFuncOptions;
using L1LossOptions = functional::L1LossFuncOptions;
using SmoothL1LossOptions = functional::SmoothL1LossFuncOptions;
using NLLLossOptions = functional::NLLLossFuncOptions;
using CrossEntropyLossOptions = functional::CrossEntropyFuncOptions;
using BCELossOptions = functional::BinaryCrossEntropyFuncOptions;
using BCEWithLogitsLossOptions =
    functional::BinaryCrossEntropyWithLogitsFuncOptions;

/// Mean squared error (torch::nn::MSELoss).
class MSELossImpl : public Cloneable<MSELossImpl> {
public:
  explicit MSELossImpl(MSELossOptions options = {});
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input, const Tensor &target);

  MSELossOptions options;
};
EMBER_MODULE(MSELoss);

/// Mean absolute error (torch::nn::L1Loss).
class L1LossImpl : public Cloneable<L1LossImpl> {
public:
  explicit L1LossImpl(L1LossOptions options = {});
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input, const Tensor &target);

  L1LossOptions options;
};
EMBER_MODULE(L1Loss);

/// Quadratic below beta, linear above (torch::nn::SmoothL1Loss).
class SmoothL1LossImpl : public Cloneable<SmoothL1LossImpl> {
public:
  explicit SmoothL1LossImpl(SmoothL1LossOptions options = {});
  void reset() override;
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input, const Tensor &target);

  SmoothL1LossOptions options;
};
EMBER_MODULE(SmoothL1Loss);

/// Negative log-likelihood of log-probabilities (torch::nn::NLLLoss).
class NLLLossImpl : public Cloneable<NLLLossImpl> {
public:
  explicit NLLLossImpl(NLLLossOptions options = {});
  void reset() override;
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input, const Tensor &target);

  NLLLossOptions options;
  /// The class weights (buffer; undefined when not given).
  Tensor weight;
};
EMBER_MODULE(NLLLoss);

/// log_softmax + NLL over class logits (torch::nn::CrossEntropyLoss).
class CrossEntropyLossImpl : public Cloneable<CrossEntropyLossImpl> {
public:
  explicit CrossEntropyLossImpl(CrossEntropyLossOptions options = {});
  void reset() override;
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input, const Tensor &target);

  CrossEntropyLossOptions options;
  Tensor weight;
};
EMBER_MODULE(CrossEntropyLoss);

/// Binary cross-entropy of probabilities (torch::nn::BCELoss).
class BCELossImpl : public Cloneable<BCELossImpl> {
public:
  explicit BCELossImpl(BCELossOptions options = {});
  void reset() override;
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input, const Tensor &target);

  BCELossOptions options;
  Tensor weight;
};
EMBER_MODULE(BCELoss);

/// Binary cross-entropy of logits, computed stably
/// (torch::nn::BCEWithLogitsLoss).
class BCEWithLogitsLossImpl : public Cloneable<BCEWithLogitsLossImpl> {
public:
  explicit BCEWithLogitsLossImpl(BCEWithLogitsLossOptions options = {});
  void reset() override;
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input, const Tensor &target);

  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;
};
EMBER_MODULE(BCEWithLogitsLoss);

} // namespace ember::nn
