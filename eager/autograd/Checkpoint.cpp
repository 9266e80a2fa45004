#include "eager/autograd/Checkpoint.h"
#include "eager/Capturing.h"
#include "eager/amp/Autocast.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/SavedVariable.h"
#include "runtime/Generator.h"

#include <any>
#include <optional>

namespace ember {

using autograd::variable_list;

namespace {
thread_local int tls_checkpoint_depth = 0;
/// The outermost region running on this thread (0: none), numbered in the
/// order regions start.
thread_local uint64_t tls_checkpoint_region = 0, tls_checkpoint_regions = 0;
} // namespace

uint64_t detail::checkpoint_region() { return tls_checkpoint_region; }

namespace {

// Note [Non-reentrant checkpoint]
// The forward runs fn under saved-tensor hooks whose pack returns only a
// counter, so no activation outlives the forward. The first unpack in
// backward runs fn again (same inputs, same RNG state) under hooks that
// collect every saved tensor in order; each unpack then returns the tensor
// with its counter and drops it from the frame. Recomputation is repeated
// if a retained graph is backpropagated again. Only the default
// generator's state is restored for the recomputation (as PyTorch's
// checkpoint, which restores the default devices' generators): fn drawing
// from a Generator object of its own gets other numbers when recomputed.
// Inside ember::compile every generator replays (Note [Checkpoint regions
// in a compiled function]).
struct Frame {
  std::function<variable_list(const variable_list &)> fn;
  variable_list inputs;
  bool preserve_rng = true;
  std::optional<GeneratorState> rng; // the default generator at forward
  autocast::AutocastState autocast;  // the autocast state at forward
  size_t count = 0;
  /// What the forward saved, to check the recomputation against.
  struct Meta {
    std::vector<int64_t> sizes;
    ScalarType dtype;
    Device device;
    bool defined;
  };
  std::vector<Meta> saved;
  std::vector<Tensor> recomputed;
  std::vector<bool> consumed;

  void recompute() {
    variable_list detached;
    for (const Tensor &t : inputs) {
      Tensor d = t.defined() ? t.detach() : t;
      if (t.defined() && t.requires_grad())
        d.requires_grad_(true);
      detached.push_back(d);
    }
    recomputed.clear();
    recomputed.reserve(count);
    {
      autograd::graph::saved_tensors_hooks hooks(
          [this](const Tensor &t) -> std::any {
            recomputed.push_back(t);
            return std::any();
          },
          [](const std::any &) -> Tensor { return Tensor(); });
      AutoGradMode grad_on(true);
      // Recomputed in the dtypes the forward ran in (as PyTorch's
      // checkpoint restores the autocast state).
      autocast::StateGuard autocast_as_forward(autocast);
      std::optional<GeneratorState> saved;
      if (rng) {
        saved = default_generator().get_state();
        default_generator().set_state(*rng);
      }
      fn(detached);
      if (saved)
        default_generator().set_state(*saved);
    }
    const char *advice =
        "The checkpointed function must do the same operations on tensors of "
        "the same shapes each time it runs (no data-dependent or stateful "
        "changes; keep preserve_rng_state=true when it draws random numbers).";
    if (recomputed.size() != count)
      throw CheckpointError(detail::str(
          "checkpoint: the recomputation saved ", recomputed.size(),
          " tensors for backward but the forward saved ", count, ". ", advice));
    std::string diffs;
    for (size_t i = 0; i < count; ++i) {
      Meta now = meta_of(recomputed[i]);
      const Meta &was = saved[i];
      if (now.defined != was.defined || now.sizes != was.sizes ||
          now.dtype != was.dtype || now.device != was.device)
        diffs += detail::str("tensor at position ", i,
                             ":\n  saved metadata: ", describe(was),
                             "\n  recomputed metadata: ", describe(now), "\n");
    }
    if (!diffs.empty())
      throw CheckpointError(
          "checkpoint: recomputed values for the following tensors have "
          "different metadata than during the forward pass.\n" +
          diffs + advice);
    consumed.assign(count, false);
  }

  static Meta meta_of(const Tensor &t) {
    if (!t.defined())
      return {{}, ScalarType::Float, Device(kCPU), false};
    return {t.sizes().vec(), t.dtype(), t.device(), true};
  }
  static std::string describe(const Meta &m) {
    if (!m.defined)
      return "undefined tensor";
    return detail::str("{shape: ", IntArrayRef(m.sizes),
                       ", dtype: ", toString(m.dtype), ", device: ", m.device,
                       "}");
  }

  Tensor get(size_t i) {
    if (recomputed.size() != count || consumed[i])
      recompute();
    consumed[i] = true;
    Tensor t = std::move(recomputed[i]);
    recomputed[i] = Tensor();
    return t;
  }
};

} // namespace

variable_list
checkpoint(const std::function<variable_list(const variable_list &)> &fn,
           const variable_list &inputs, bool preserve_rng_state) {
  if (!GradMode::is_enabled()) // nothing is saved: just run it
    return fn(inputs);
  // Note [Checkpoint regions in a compiled function]
  // Inside ember::compile the region is recorded as it is, its ops marked
  // with the region's number in the graph (`ember.recompute = N`): ember-
  // remat never saves the values inside a region for the backward but
  // recomputes them there, as checkpoint() would, whatever they cost. The
  // region's outputs (what the forward reads after it, or returns) may be
  // saved, as eager checkpoint keeps its output like any tensor: in a chain
  // of regions they are the boundaries the backward recomputes each region
  // from, one at a time. ember's random ops are pure ops of their generator
  // state (Note [Random ops in a compiled function] in eager/Factory.cpp), so a
  // recomputed dropout draws the forward's mask; ops with effects (a custom
  // op with a Generator, an eager_call) are the exception: their results
  // are saved, as recomputing them would draw new numbers.
  if (is_capturing()) {
    if (tls_checkpoint_depth++ == 0)
      tls_checkpoint_region = ++tls_checkpoint_regions;
    struct Leave {
      ~Leave() {
        if (--tls_checkpoint_depth == 0)
          tls_checkpoint_region = 0;
      }
    } leave;
    return fn(inputs);
  }
  auto frame = std::make_shared<Frame>();
  frame->fn = fn;
  frame->inputs = inputs;
  frame->autocast = autocast::get_state();
  if (preserve_rng_state)
    frame->rng = default_generator().get_state();
  autograd::graph::saved_tensors_hooks hooks(
      [frame](const Tensor &t) -> std::any {
        frame->saved.push_back(Frame::meta_of(t));
        return frame->count++;
      },
      [frame](const std::any &a) -> Tensor {
        return frame->get(std::any_cast<size_t>(a));
      });
  return fn(inputs);
}

Tensor checkpoint(const std::function<Tensor(const Tensor &)> &fn,
                  const Tensor &input, bool preserve_rng_state) {
  return checkpoint(
             [fn](const variable_list &xs) { return variable_list{fn(xs[0])}; },
             {input}, preserve_rng_state)
      .at(0);
}

} // namespace ember
