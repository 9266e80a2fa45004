#pragma once
/// The op classes of the ember dialect's op table ops (AddTensorOp,
/// SumDimIntListOp, ...), generated from eager/ops/ops.yaml. About 35k lines
/// of declarations: include this only where an op class is used by name
/// (ir/TableOps*.cpp define them). Passes should ask traits instead
/// (ir/Dialect.h, OpTrait::Pointwise, ...).

#include "ir/Dialect.h"

namespace ember::ir {
// Registration of the ops, in two shards (ir/TableOps0.cpp, TableOps1.cpp).
void registerEmberDialectOperations(EmberDialect *dialect);
void registerEmberDialectOperations0(EmberDialect *dialect);
void registerEmberDialectOperations1(EmberDialect *dialect);
} // namespace ember::ir

#define GET_OP_CLASSES
#include "ir/EmberTableOps.h.inc"
