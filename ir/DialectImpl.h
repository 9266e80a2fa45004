#pragma once
// Private helpers shared by the files of the ember dialect (ir/Dialect.cpp,
// ir/Schema.cpp, ir/Verify.cpp, ir/Fold.cpp). Not included outside ir/.

#include "ir/Dialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace ember::ir::detail {

/// The arguments of a table op in schema order, as eager takes them;
/// `tensor(i)` gives operand i's tensor (ir/Schema.cpp).
Stack table_arguments(const OperatorHandle &op, unsigned num_operands,
                      mlir::DictionaryAttr attrs,
                      llvm::function_ref<Tensor(unsigned)> tensor);

} // namespace ember::ir::detail
