#pragma once
/// Activation checkpointing (torch.utils.checkpoint.checkpoint with
/// use_reentrant=False): the forward keeps only the inputs of `fn`; the
/// tensors fn's ops save for backward are recomputed, by running fn again,
/// when backward first needs them. Gradients are the same as without
/// checkpointing; peak memory drops to one segment's activations.

#include "eager/autograd/Node.h"

#include <functional>

namespace ember {

/// The recomputation of a checkpointed function differed from its forward
/// (torch.utils.checkpoint.CheckpointError): it saved another number of
/// tensors, or a saved tensor of another shape, dtype or device.
class CheckpointError : public Error {
public:
  using Error::Error;
};

/// Runs fn(inputs) with checkpointing. preserve_rng_state: the recompute
/// sees the same random numbers as the forward (dropout masks match).
autograd::variable_list checkpoint(const std::function<autograd::variable_list(
                                       const autograd::variable_list &)> &fn,
                                   const autograd::variable_list &inputs,
                                   bool preserve_rng_state = true);

/// One tensor in, one out.
Tensor checkpoint(const std::function<Tensor(const Tensor &)> &fn,
                  const Tensor &input, bool preserve_rng_state = true);

namespace detail {
/// The outermost checkpoint() region enclosing the running code inside
/// ember::compile on this thread: a number distinct per region entered
/// (regions nested in it are part of it), or 0 outside any. ember::compile
/// marks the ops it records inside one (Note [Checkpoint regions in a
/// compiled function] in eager/autograd/Checkpoint.cpp).
uint64_t checkpoint_region();
} // namespace detail

} // namespace ember
