#pragma once
/// The gradcheck samples of every op with a derivative formula (Note [One
/// gradcheck case per differentiable op] in test/unit/test_gradcheck.cpp):
/// the OpInfo table's and the hand-written ones of the other ops, by C++ op
/// name. test_gradcheck checks them against finite differences;
/// test_cuda_ops runs them on CUDA against the CPU.

#include "Samples.h"

#include <map>
#include <string>
#include <vector>

namespace ember::test {

/// The hand-written samples (the ops the OpInfo table does not cover).
const std::map<std::string, std::vector<samples::GradSample>> &
local_grad_cases();
/// Every differentiable op's samples: the OpInfo table's, then the
/// hand-written ones.
const std::map<std::string, const std::vector<samples::GradSample> *> &
grad_cases();

} // namespace ember::test
