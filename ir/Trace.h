#pragma once
/// A captured graph as plain C++ data: what capture (frontend/) records and
/// what the ember dialect's builder turns into a `func.func` (ir/Builder.h),
/// and back (ir/Import.h). No MLIR here: the front end's hot path uses it.
///
/// Values are numbered; a value is a graph input (an argument of the compiled
/// function, or a lifted tensor it reached: a module parameter, a captured
/// variable), a constant (a C++ number wrapped as a 0-dim tensor, as in
/// `x + 2`), or a result of a node. Nodes are calls of dispatcher ops with
/// value semantics: an in-place op (`add_`) returns the updated value of
/// `self` as a new value and mutates nothing; writes to inputs are listed in
/// `mutations` and applied after the graph runs.

#include "eager/Dispatcher.h"
#include "eager/Scalar.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ember::ir {

/// Static type of a value: a ranked tensor.
struct ValueType {
  std::vector<int64_t> sizes;
  ScalarType dtype = ScalarType::Float;
  Device device = kCPU;
  bool operator==(const ValueType &o) const = default;
};

/// Mixes `v` into the hash `h` (cache keys: Trace::structure_hash and the
/// front end's guards).
inline void hash_combine(uint64_t &h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 1099511628211ull;
}

/// Where a graph input comes from at each call. ArgumentStorage: the whole
/// storage of argument `index`, as a 1-D tensor (arguments that share memory
/// are views of it). Tangent: in a joint forward/backward graph, the gradient
/// of forward result `index` (`{ember.tangent}`; Note [The joint graph] in
/// frontend/Capture.cpp).
enum class InputKind { Argument, Lifted, ArgumentStorage, Tangent };
/// "argument", "lifted", "storage", "tangent": the prefix of the
/// `ember.input` attribute.
const char *input_kind_name(InputKind k);
/// The kind a prefix names; false when none does.
bool parse_input_kind(std::string_view name, InputKind &k);

struct Input {
  int value = -1;
  InputKind kind = InputKind::Argument;
  /// Argument: position among the compiled function's tensor arguments.
  /// Lifted: its own position among the graph's inputs (the front end keeps
  /// the real tensor there).
  /// ArgumentStorage: the argument whose storage this is.
  /// Tangent: the forward result (an index into outputs) it is the
  /// gradient of.
  int index = 0;
  /// "x", "arg0", "L['weight']"...: a readable name for dumps.
  std::string name;
  /// Lifted: a tensor the call itself made (a factory's result), which
  /// nothing outside the graph holds: saving it for the backward costs its
  /// bytes (`ember.fresh`), where saving an argument or a parameter does
  /// not.
  bool fresh = false;
};

/// A wrapped number: a 0-dim tensor of `type` holding `value`.
struct Constant {
  int value = -1;
  Scalar scalar;
  /// Set instead for a constant tensor that is not a wrapped number (one the
  /// compiler folded: ember.constant without `wrapped_number`, see
  /// ir/Import.h); `scalar` is then unused.
  Tensor tensor;
};

/// One argument of a node, per schema argument.
struct Arg {
  enum class Kind { Value, ValueList, Attr };
  Kind kind = Kind::Attr;
  int value = -1;          ///< Value: the value id; -1 for an absent Tensor?
  std::vector<int> values; ///< ValueList (Tensor[]): value ids; -1 for a
                           ///< None element (index's x[:, i])
  IValue attr;             ///< Attr: any non-tensor argument (None included)

  static Arg of_value(int v) {
    Arg a;
    a.kind = Kind::Value;
    a.value = v;
    return a;
  }
  static Arg of_values(std::vector<int> vs) {
    Arg a;
    a.kind = Kind::ValueList;
    a.values = std::move(vs);
    return a;
  }
  static Arg of_attr(IValue v) {
    Arg a;
    a.attr = std::move(v);
    return a;
  }
};

struct Trace;

/// What runs a fusion node: a kernel a code generator compiled (codegen/).
/// ir/ only carries it.
class Kernel {
public:
  virtual ~Kernel() = default;
  /// The node's results for its inputs (real tensors, in argument order).
  virtual std::vector<Tensor> run(const std::vector<Tensor> &inputs) const = 0;
  /// run(), with result i written into the buffer of inputs[reuse[i]]
  /// where reuse[i] >= 0 and that input can take it (Node::reuse); a kernel
  /// that cannot reuse buffers allocates as run() does.
  virtual std::vector<Tensor> run_reusing(const std::vector<Tensor> &inputs,
                                          const std::vector<int> &reuse) const {
    (void)reuse;
    return run(inputs);
  }
  /// A name for listings: "cpu kernel ember_kernel_1f2e...".
  virtual std::string name() const = 0;
};

struct Node {
  /// The op; null for a fusion (`body` set).
  const OperatorHandle *op = nullptr;
  std::vector<Arg> args;    ///< one per schema argument
  std::vector<int> results; ///< one per tensor returned (lists flattened)
  /// The user's source location ("file.cpp:12:7"), or empty.
  std::string loc;
  /// Recorded inside a checkpoint() region (its number in the graph, from
  /// 1; 0 outside any): the backward recomputes the results the region
  /// uses itself rather than saving them (`ember.recompute = N`).
  int64_t recompute = 0;
  /// A fusion (ember.fusion): the trace of its body, whose inputs are the
  /// node's arguments and whose outputs are its results; and the kernel
  /// that runs it, when a backend compiled it (else its ops run eagerly).
  std::shared_ptr<const Trace> body;
  std::shared_ptr<const Kernel> kernel;
  /// Why no kernel runs this fusion ("" when one does).
  std::string fallback_reason;
  /// A fusion's buffer plan (ember-plan-memory, the `ember.reuse`
  /// attribute): per result, the input whose buffer it may be written into
  /// (that input dies here), or -1; empty when none.
  std::vector<int> reuse;

  /// The op's name, or for a fusion "fusion" with its kernel's name.
  std::string label() const;
};

/// After the graph: copy `value` into graph input `input` (an index into
/// Trace::inputs), as the in-place op in the user's code would have.
struct Mutation {
  int input = -1;
  int value = -1;
};

struct Trace {
  std::string name;             ///< "graph0", unique within a compiled function
  std::vector<ValueType> types; ///< by value id
  std::vector<Input> inputs;
  std::vector<Constant> constants;
  std::vector<Node> nodes;
  std::vector<int> outputs;
  /// Per output, the strides eager gives it (capture reads them from the
  /// shape rules); empty: contiguous. Note [Outputs are new tensors] in
  /// frontend/Executor.cpp.
  std::vector<std::vector<int64_t>> output_strides;
  std::vector<Mutation> mutations;
  /// A joint graph (it has Tangent inputs, last): the gradients it returns
  /// after the outputs and the mutations, one per differentiated input.
  std::vector<int> gradients;

  /// Whether this is a joint forward/backward graph.
  bool is_joint() const {
    return !inputs.empty() && inputs.back().kind == InputKind::Tangent;
  }

  int add_value(ValueType t) {
    types.push_back(std::move(t));
    return int(types.size()) - 1;
  }
  /// Structural identity, the compile cache's key: everything but `name`
  /// and the nodes' source locations (attributes and constants compared
  /// exactly, doubles by value). structure_hash() agrees with it.
  bool same_structure(const Trace &o) const;
  uint64_t structure_hash() const;

  /// A readable listing, one line a node:
  ///   %2 : f32[4, 8] = ember::add.Tensor(%0, %1, alpha=1)
  std::string str() const;
};

/// The graph in Graphviz DOT: inputs, constants, one node per op (named by
/// the op, with its result types), edges along the values, the outputs and
/// the mutations.
std::string to_dot(const Trace &trace);

} // namespace ember::ir
