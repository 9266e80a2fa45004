#pragma once
/// The executor of compiled programs: a graph's steps in order, each an
/// eager kernel call (the fallback path: every op runs through the
/// dispatcher below Capture) or a fusion (a compiled kernel, or its body's
/// ops run eagerly when no backend compiled it), with the values held in a
/// flat environment and released after their last use.

#include "ir/Trace.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace ember::frontend {

/// A graph ready to run.
class Program {
public:
  /// Prepares `trace` (value liveness, constants). The trace's ops run with
  /// value semantics: an in-place op runs on a copy of `self` unless `self`
  /// is an exclusively owned intermediate at its last use.
  explicit Program(ir::Trace trace);

  /// Runs the graph on `inputs` (one per trace input), applies the trace's
  /// mutations to them, and returns the outputs (one per trace output).
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const;
  /// run(), taking the inputs over: each is released after its last use
  /// (a compiled backward frees the tensors saved for it as it goes, when
  /// the graph is not retained).
  std::vector<Tensor> run_consuming(std::vector<Tensor> inputs) const;

  const ir::Trace &trace() const { return trace_; }

  /// Outputs from `k` on are returned as the graph computed them, even when
  /// they alias an input or each other (Note [Outputs are new tensors] does
  /// not apply): the tensors a joint graph's forward saves for its backward,
  /// which only the backward reads.
  void set_plain_outputs_from(size_t k) { plain_from_ = k; }
  /// Outputs keep the strides the graph gave them (a non-overlapping,
  /// dense tensor that is its whole storage) instead of output_strides or
  /// contiguous ones: a compiled backward's gradients.
  void set_any_layout() { any_layout_ = true; }

private:
  std::vector<Tensor> run_impl(std::vector<Tensor> &inputs, bool consume) const;
  struct Step {
    const ir::Node *node;
    bool inplace = false;        ///< value semantics for an in-place op
    std::vector<int> free_after; ///< values whose last use is this step
    /// Inputs whose last use is this step (run_consuming releases them).
    std::vector<int> free_inputs_after;
    /// A fusion without a kernel: its body, run as a program.
    std::shared_ptr<const Program> body;
    /// A fusion's profiler row: its kernel's name, or "fusion run eagerly".
    std::string kernel_name;
  };
  ir::Trace trace_;
  std::vector<Step> steps_;
  std::vector<Tensor> constants_; ///< by index in trace_.constants
  std::vector<bool> keep_;        ///< values that outlive the steps
  std::vector<int> input_of_;     ///< per value: its input index, or -1
  size_t plain_from_ = SIZE_MAX;
  bool any_layout_ = false;
};

} // namespace ember::frontend
