#pragma once
/// Note [Per-op capability]
/// ~~~~~~~~~~~~~~~~~~~~~~~~
/// A code generator answers, per op, whether it computes that op inside a
/// fusion (ggml's `supports_op`): ember-fuse-elementwise asks it while
/// groups form, so an op the generator does not take (an integer remainder,
/// which must raise on a zero divisor) stays outside every group and runs
/// eagerly, while the ops around it still fuse. Deciding it afterwards, for
/// a whole fusion, would send the entire chain to eager for one op.
///
/// Targets live in codegen/ (a layer above passes/), so they register here
/// by name; the pass's `target` option picks one. "any" is built in: every
/// op with a domain fuses (the dialect's view, for tests of the pass alone).

#include "mlir/IR/Operation.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember::passes {

class FusionTarget {
public:
  virtual ~FusionTarget() = default;
  /// Its name, as the pass option spells it: "cpu".
  virtual std::string name() const = 0;
  /// "" when the generator computes `op` (with its operand and result
  /// types) inside a fusion; otherwise why not, in words explain() shows.
  virtual std::string unsupported(mlir::Operation *op) const = 0;
  /// The op's share of a kernel's size, in simple ops (an add is 1): a
  /// fusion holds ops of at most kMaxFusionOps in all (Note [Fusion size]).
  /// Asked only of ops the target computes.
  virtual int64_t weight(mlir::Operation *) const { return 1; }
};

/// Adds a target (replacing one of the same name). Thread-safe.
void register_fusion_target(std::shared_ptr<const FusionTarget> target);
/// The target of that name; null when none is registered.
std::shared_ptr<const FusionTarget> find_fusion_target(const std::string &name);
/// The registered names, "any" included.
std::vector<std::string> fusion_target_names();

} // namespace ember::passes
