#pragma once
/// Note [Op cases]
/// Boxed calls of every dispatched op of the op table on small random
/// inputs: the OpInfo table's meta samples (each on the op and on its
/// in-place form), then cases written for the ops the table does not cover
/// (copies, views, linear algebra, shapes, indexing, normalization). A case
/// may be flagged kThrows (the call raises: misuse) or kNeedsData (its
/// result's shape depends on the input's values). test_meta runs every
/// case against the shape rules; test_cuda_ops runs them on CUDA tensors
/// against the CPU (a GPU machine's OpInfo-style harness).

#include "Samples.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace ember::test {

struct OpCase {
  std::string op; ///< "ember::add.Tensor"
  std::function<Stack()> args;
  unsigned flags = samples::kNone;
};

/// Every case (built on first use).
const std::vector<OpCase> &op_cases();
/// The ops whose cases are written in OpCases.cpp (not in the OpInfo
/// table).
const std::set<std::string> &op_case_local_ops();

/// A case's arguments with every tensor (alone or in a list) replaced by
/// f(tensor): the same call on twins (fake, captured or device tensors).
Stack map_tensors(const Stack &args,
                  const std::function<Tensor(const Tensor &)> &f);
/// The tensors of a stack after a call, lists flattened, in order.
std::vector<Tensor> tensors_of(const Stack &s);

} // namespace ember::test
