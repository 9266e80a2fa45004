#pragma once
/// Note [The OpInfo table]
/// One table of per-op test data, after PyTorch's OpInfo
/// (torch/testing/_internal/common_methods_invocations.py): for each op it
/// covers (every pointwise op of ops.yaml, their in-place and `.Scalar`
/// forms, the pow ops and the reductions) one entry holds
/// - the op, by its dispatcher schema name ("ember::add.Tensor"), and how to
///   call it (functional, in-place and `.Scalar` forms);
/// - for pointwise ops, the float64 reference, the input domain, the dtypes
///   the reference checks run on, the result dtype rule and the shapes every
///   pointwise op is checked on (pointwise_shapes: same shape,
///   non-contiguous, broadcast, 0-dim, empty);
/// - the gradient flags (the differentiable tensor arguments) and the
///   gradcheck samples, each saying whether second derivatives are checked;
/// - the boxed samples of the shape-rule test (test_meta), run on the op and
///   on its in-place form.
/// test_pointwise, test_gradcheck, test_meta and e2e_pointwise iterate it;
/// none of them restates an op of the table. Coverage tests compare it with
/// the op table (EMBER_FORALL_POINTWISE_OPS, EMBER_FORALL_DIFFERENTIABLE_OPS,
/// the dispatcher's in-place forms and ops.yaml's own entries, read by
/// op_table_entries()), so an op added to ops.yaml without an entry here
/// fails a test.

#include "Samples.h"

#include <optional>
#include <string>
#include <vector>

namespace ember::test {

using samples::GradSample;
using samples::MetaSample;

/// Where a pointwise op's inputs are drawn (sample_input).
enum class Domain {
  Any,      ///< normal values (spread x2 for floats)
  Positive, ///< [0.1, 4) for floats, 1..8 for integers
  Unit,     ///< (-0.9, 0.9)
  NonZero,  ///< magnitudes [0.3, 3) (integers 1..5) with random signs
};

/// The dtype of a pointwise op's result for inputs of dtype dt.
enum class Result {
  Same,  ///< dt
  Bool,  ///< comparisons and logical ops
  Float, ///< dt for floats, the default float dtype for integers
};

enum class Kind { Pointwise, Reduction, Other };

inline const std::vector<ScalarType> kFloatDtypes = {kFloat, kDouble, kHalf,
                                                     kBFloat16};
inline const std::vector<ScalarType> kIntDtypes = {kLong, kInt, kShort, kChar};
inline const std::vector<ScalarType> kFloatAndIntDtypes = {
    kFloat, kDouble, kHalf, kBFloat16, kLong, kInt, kShort, kChar};

using TensorFn = std::function<Tensor(const std::vector<Tensor> &)>;
using ScalarFormFn = std::function<Tensor(const Tensor &, const Scalar &)>;
using RefFn = std::function<double(const std::vector<double> &)>;

struct OpInfo {
  std::string name;    ///< dispatcher schema name: "ember::add.Tensor"
  std::string inplace; ///< its in-place form's, "ember::add_.Tensor", or ""
  Kind kind = Kind::Other;

  // How to call it (pointwise ops): `arity` tensors in, fixed scalars.
  int arity = 0;
  TensorFn op;          ///< the functional form
  TensorFn op_;         ///< the in-place form, on in[0]; returns in[0]
  ScalarFormFn scalar;  ///< `.Scalar` form: op(in[0], other as a Scalar)
  ScalarFormFn scalar_; ///< `_.Scalar` form, in place on its tensor

  // The float64 reference and where it holds (pointwise ops).
  RefFn ref;
  Domain domain = Domain::Any;
  std::vector<ScalarType> dtypes = kFloatAndIntDtypes; ///< checked on these
  Result result = Result::Same;
  double tol32 = 1e-5; ///< float32 tolerance against the reference

  // Gradients.
  std::vector<int> grad_args;   ///< differentiable arguments of `op`
  std::vector<GradSample> grad; ///< empty: no derivative formula

  // Shape rules: boxed calls of the op (and of its in-place form).
  std::vector<MetaSample> meta;

  /// The C++ name of the op (ops::<cname>, the X-macros): "add_Tensor".
  std::string cname() const;
  /// The schema name without the namespace: "add.Tensor".
  std::string short_name() const;
  /// The dtype of the result on inputs of dtype dt.
  ScalarType result_dtype(ScalarType dt) const;
  bool differentiable() const { return !grad.empty(); }
};

/// The table.
const std::vector<OpInfo> &op_db();
/// The pointwise entries of the table.
std::vector<const OpInfo *> pointwise_op_infos();
/// An entry by schema name ("ember::add.Tensor", "add.Tensor") or C++ name
/// ("add_Tensor"); nullptr when the table has none.
const OpInfo *find_op_info(const std::string &name);

/// Random inputs of dtype dt drawn in domain d (never all zeros).
Tensor sample_input(IntArrayRef shape, ScalarType dt, Domain d, uint64_t seed);

/// The shapes of the inputs of a pointwise op with `arity` tensor inputs.
struct ShapeSample {
  std::string label;
  std::vector<std::vector<int64_t>> shapes; ///< one per input
  bool noncontig = false;                   ///< inputs made non-contiguous
};
/// "same shape", "non-contiguous", and "broadcast", "0-dim with (2,3)" (two
/// or more inputs), "0-dim", "empty".
std::vector<ShapeSample> pointwise_shapes(int arity);
/// A sample's inputs for `info`, of dtype dt, seeded.
std::vector<Tensor> make_inputs(const OpInfo &info, const ShapeSample &s,
                                ScalarType dt, uint64_t seed);

/// info.ref on broadcast float64 copies of the inputs.
Tensor reference(const OpInfo &info, const std::vector<Tensor> &in);
/// info.ref against a result `out` computed from inputs of dtype dt: the
/// result's dtype and its values within the dtype's tolerance.
::testing::AssertionResult matches_reference(const OpInfo &info,
                                             const Tensor &out,
                                             const std::vector<Tensor> &in,
                                             ScalarType dt);

/// An entry of ops.yaml (eager/ops/ops.yaml, read at run time): what the
/// coverage tests compare the table with.
struct OpTableEntry {
  std::string name; ///< "add.Tensor"
  bool pointwise = false, inplace = false, scalar_overload = false;
  bool reduction = false;  ///< has a `reduction:` field
  bool dispatched = false; ///< not `composite:`
};
const std::vector<OpTableEntry> &op_table_entries();

} // namespace ember::test
