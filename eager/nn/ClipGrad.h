#pragma once
/// Gradient clipping (libtorch's torch::nn::utils::clip_grad_norm_ and
/// clip_grad_value_, torch/nn/utils/clip_grad.h).

#include "eager/Tensor.h"

#include <initializer_list>
#include <limits>
#include <vector>

namespace ember::nn::utils {

/// Scales the gradients of `parameters` in place so that their total norm
/// (the `norm_type` norm of the per-gradient norms; infinity: the largest
/// magnitude) is at most `max_norm`. Returns the total norm before
/// clipping. A non-finite total norm raises when `error_if_nonfinite`,
/// else the gradients are scaled by it (as PyTorch: they become NaN).
double clip_grad_norm_(const std::vector<Tensor> &parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
double clip_grad_norm_(std::initializer_list<Tensor> parameters,
                       double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor &parameter, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);

/// Clamps every gradient of `parameters` to [-clip_value, clip_value] in
/// place.
void clip_grad_value_(const std::vector<Tensor> &parameters, double clip_value);
void clip_grad_value_(std::initializer_list<Tensor> parameters,
                      double clip_value);
void clip_grad_value_(const Tensor &parameter, double clip_value);

} // namespace ember::nn::utils
