#pragma once
/// Shape and dtype inference ("meta functions", PyTorch's fake tensors):
/// what an op returns, computed from its arguments' metadata without running
/// it. One implementation of eager's rules (broadcasting, type promotion,
/// reduction shapes, view geometry), used by the eager kernels where they
/// size their outputs, by capture (frontend/: ops are recorded, not run) and
/// by the ember dialect's result-type inference (ir/).
///
/// A *fake* tensor has sizes, strides, dtype and device but no data: rules
/// read only metadata. Rules take and return fake tensors (capture tensors and
/// real tensors are accepted as arguments too: only metadata is read).

#include "eager/Dispatcher.h"
#include "eager/Dtype.h"
#include "eager/Tensor.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::meta {

/// A tensor without data (contiguous unless `strides` is given).
Tensor fake(IntArrayRef sizes, ScalarType dtype, Device device = kCPU,
            OptionalIntArrayRef strides = std::nullopt);
/// A fake tensor with the geometry of `t` (sizes, strides, storage offset)
/// on a fake storage of t's storage's size: what capture gives a real
/// tensor it stands for, so that `storage_offset()` and as_strided see what
/// they see eagerly.
Tensor fake_like(const Tensor &t);
/// A fake 0-dim tensor standing for a C++ number in an op (`x + 2`): it takes
/// part in type promotion as a wrapped number.
Tensor fake_wrapped_number(ScalarType dtype);
/// True for tensors made by fake() (no storage data).
bool is_fake(const Tensor &t);

/// What an op returns.
struct Result {
  /// One fake tensor per schema return (a Tensor[] return is flattened, its
  /// length is `list_size`). Views have the exact strides and storage offset
  /// that eager gives them and share their input's storage.
  std::vector<Tensor> outputs;
  /// Not empty when the outputs cannot be known without the data: the op's
  /// output shape depends on values (nonzero, masked_select, indexing with a
  /// boolean mask) or it returns a non-tensor (equal -> bool). Says why, e.g.
  /// "ember::nonzero: output shape depends on the input's values".
  std::string needs_data;
};

/// Infers `op` applied to `args` (one IValue per schema argument; tensors as
/// fake, capture or real tensors). Throws the same ember::Error as eager when
/// eager would reject the arguments (shape mismatch, bad dim, bad dtype).
/// In-place ops (`add_`) return `self`'s metadata after checking that eager
/// accepts the call. Throws NotImplementedError naming the op when it has no
/// rule (see has_rule and register_fake).
Result infer(const OperatorHandle &op, const Stack &args);

/// True when infer() covers `op` (every op of the op table, and custom ops
/// with a registered fake implementation).
bool has_rule(const OperatorHandle &op);

/// A shape rule for a custom op: gets fake tensors and IValues, returns fake
/// tensors (one per schema return).
using FakeFn = std::function<std::vector<Tensor>(const Stack &args)>;

/// Registers the fake (meta) implementation of a custom op, as PyTorch's
/// torch.library.register_fake: compile() can then capture the op into a
/// graph (without it, a call is a graph break). `name` is "ns::op[.overload]".
void register_fake(const std::string &name, FakeFn fn);

// ---------------------------------------------------------------------------
// Shared rules: the one implementation of eager's shape and dtype rules. The
// eager kernels call these where they size their outputs; infer() calls the
// same functions on fake tensors (Note [One set of shape rules] in Meta.cpp).
// ---------------------------------------------------------------------------

/// True when two elements of `t` share memory (a stride 0 over a dim of
/// size > 1, as an expanded tensor, or strides that meet, as
/// as_strided({2, 2}, {1, 1})): such a tensor cannot be written
/// (Note [Internal overlap] in Meta.cpp).
bool has_internal_overlap(const Tensor &t);
/// Raises PyTorch's error for writing into a tensor with internal overlap.
void check_no_internal_overlap(const Tensor &t);

/// How a pointwise op's result dtype follows from its inputs (ops.yaml's
/// `promote`).
enum class Promote : int8_t {
  Default, ///< result_type of the inputs
  Float,   ///< result_type, with integral results made the default float
  Compare, ///< computed in result_type, output bool
  Bool,    ///< computed in the input's dtype, output bool
};

/// A pointwise op's entry in ops.yaml, as the kernels and rules read it.
struct PointwiseSpec {
  const char *name;
  Promote promote;
  DtypeGroup dtypes;
  unsigned bool_args;  ///< bit i: tensor input i is read as bool
  int nonzero_divisor; ///< input that must hold no zero for integer dtypes
  /// Bit i: Scalar argument i (in schema order among the Scalars) takes part
  /// in type promotion (clamp_min's min).
  unsigned promote_scalars = 0;
  /// Bit i: Scalar argument i must be an integer when the op computes in an
  /// integral dtype, and a bool only for bool results (PyTorch's alpha_check:
  /// a float alpha on integers would be truncated).
  unsigned integral_scalars = 0;
  /// Bit i: Scalar argument i is a bound (clamp_min's min) that an integral
  /// compute dtype must hold without wrapping around.
  unsigned bound_scalars = 0;
  /// A wrapped-number operand keeps float precision where the op computes
  /// in float16/bfloat16 (Note [Numbers in reduced precision]).
  bool float_numbers = false;
  /// The Scalar arguments' names, for messages.
  const char *scalar_names[4] = {};
  /// Bit i: tensor argument i must have self's dtype (PyTorch's lerp: no
  /// promotion between them); bit 8 + i: unless it is 0-dim.
  unsigned same_dtype = 0;
  /// The tensor arguments' names, for messages.
  const char *tensor_names[4] = {};
  /// PyTorch's message for a bool tensor argument, and for every tensor
  /// argument bool (sub's); null where the dtype group decides.
  const char *bool_error[2] = {};
};

/// The spec of a pointwise op (or its in-place form); null for other ops.
const PointwiseSpec *find_pointwise_spec(const OperatorHandle &op);

/// What a pointwise op computes in and produces.
struct PointwiseMeta {
  ScalarType compute; ///< dtype of the (non-bool) inputs in the loop
  ScalarType out;     ///< dtype of the result
  DimVector shape;    ///< broadcast shape of the inputs
  Device device;
};

/// Type promotion, dtype-group check, broadcasting and device check of a
/// pointwise op; for an in-place op (`self_out`), also the checks that the
/// result fits `self` (shape, castability, no internal overlap). Reads only
/// metadata. The one rule behind the generated pointwise kernels.
/// `scalars` are the op's Scalar arguments in schema order (those of
/// spec.promote_scalars take part in promotion); each must convert to the
/// compute dtype without overflow (c10's checked_convert, as Scalar::to<T>
/// in PyTorch's kernels).
PointwiseMeta pointwise(const PointwiseSpec &spec,
                        ArrayRef<const Tensor *> inputs,
                        ArrayRef<const Scalar *> scalars,
                        const Tensor *self_out);

/// PyTorch's alpha_check: on integral dtypes `alpha` must be an integer, and
/// a bool alpha needs a bool result. `op` and `name` are for the message.
void check_integral_scalar(const char *op, const char *name,
                           const Scalar &alpha, ScalarType dtype);

} // namespace ember::meta
