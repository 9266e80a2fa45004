#pragma once
/// What passes and code generators ask of an op of the ember dialect, in
/// one place: its dispatcher op, the value of a non-tensor argument, the
/// dims a reduction folds. Answers come from the op's attributes and the
/// op table (eager's schemas and ReductionInfo), never from op names.

#include "eager/Reduction.h"
#include "ir/Dialect.h"
#include "ir/Domain.h"

#include <optional>
#include <string>
#include <vector>

namespace ember::ir {

/// The value of schema argument `index` of a table op: its attribute, or its
/// schema default (None when it has neither). Throws ember::Error for an
/// argument that is a tensor, or an attribute that does not fit its type.
IValue attr_arg(mlir::Operation *op, const OperatorHandle &h, size_t index);

/// A reduction the code generators compute (ops.yaml `reduction:`): its
/// fold, and the dims of its operand it folds.
struct ReductionOp {
  const ReductionInfo *info = nullptr;
  std::vector<bool> folded; ///< per dim of the operand (none for 0-dim)
};
/// The reduction `op` is, or nullopt for any other op (an op of another
/// kind, a reduction without a fold kind: argmax, var...).
std::optional<ReductionOp> reduction_of(mlir::Operation *op);

/// The static shape of a value of a ranked tensor type.
std::vector<int64_t> shape_of(mlir::Value v);

/// The iteration domain of an op of a kind that fuses, on its own: a
/// pointwise op, a conversion on one device, a reduction the generators
/// fold (not of a 0-dim tensor: that is a copy); none for any other op.
/// Whether a code generator computes it is its own question (Note [Per-op
/// capability] in passes/FusionTarget.h).
std::optional<Domain> fusion_domain(mlir::Operation *op);

/// A fusion of fusions (ember-fuse-horizontal: a combined kernel whose
/// inner fusions run side by side, Note [Combined kernels] in
/// codegen/CpuFusion.cpp): its inner fusions in order, or none for a plain
/// fusion. A body that mixes fusions with other ops, an inner fusion that
/// reads another's result, or a yield that is not each inner result once
/// is malformed: `why` (when given) says how, and none are returned.
std::vector<FusionOp> inner_fusions(FusionOp f, std::string *why = nullptr);

/// In a fusion of fusions, whether only the inner fusion that yields result
/// `r` reads input `k`: then a combined kernel may write that result into
/// that input's buffer (its parts run side by side). True for a plain
/// fusion (its kernel reads each point before writing it).
bool part_may_write_into(FusionOp f, unsigned r, unsigned k);

/// Whether `op` can never raise: a constant, a view, or an ember.fusion
/// (inner fusions included) without an integer value anywhere -- its
/// operands, results and every value inside (an integer division raises on
/// zero; bool values cannot). Note [What compile() may change] in
/// frontend/Compile.h: what may run after a graph has written an argument.
bool never_raises(mlir::Operation *op);

} // namespace ember::ir
