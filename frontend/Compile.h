#pragma once
/// ember::compile: capture a function's ops into graphs, compile them once
/// per guard set, run the compiled program (DESIGN.md, "Compiler").
///
///   auto f = ember::compile([&](const ember::Tensor &x) {
///     return ember::relu(model->forward(x)).sum(1);
///   });
///   ember::Tensor y = f(x);          // captures, compiles, runs
///   std::cout << f.explain();        // graphs, breaks, recompiles, guards
///
/// Each call runs the function with *capture tensors* in place of its tensor
/// arguments: ops are recorded, not run. Tensors it reaches that are not
/// arguments (module parameters, captured variables) are lifted to graph
/// inputs and read at every call. A value the C++ code needs now (item(),
/// printing, data_ptr(), an op whose output shape depends on data) ends the
/// graph: it runs, and capture goes on in a new graph (a graph break).

#include "eager/Tensor.h"
#include "eager/nn/Options.h"

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember {

/// Note [What compile() may change]
/// A compiled function computes what the function computes eagerly: the
/// same values, dtypes, shapes and strides, outputs that alias arguments
/// and each other as eagerly, arguments and captured tensors written as
/// eagerly. Signed integer arithmetic wraps as eagerly (Note [Integer
/// overflow wraps]). Three things differ, by design, as in torch.compile:
/// - Errors that compiled graphs raise when they run. A graph is all or
///   nothing: when one of its ops raises at run time (an integer division by
///   zero; running out of memory aside), none of its writes to arguments or
///   captured tensors has happened
///   (eagerly, the writes before the failing op have). Graphs that finished
///   before a graph break keep their effects, and an error raised while the
///   function is captured (a shape check, the user's own exception) first
///   runs the graph captured so far, as eager would have (Note [A raising
///   call keeps what ran before] in frontend/Frontend.cpp).
/// - Dead code. At opt_level 1 and 2, ops whose results nothing uses are
///   removed, so an error only such an op would raise (an integer division
///   by zero whose quotient is dropped) is not raised; at opt_level 0 every
///   op runs.
/// - Order. When several ops of a graph would raise, the compiled program
///   may report another one of them first (fusion and CSE reorder work).
/// Training (Note [The joint graph] in frontend/Capture.cpp) differs as
/// torch.compile's does:
/// - The outputs of one graph share one backward node
///   (CompiledFunctionBackward): a backward through one of them frees it for
///   all, so a second backward through another needs retain_graph=true on
///   the first (eagerly, independent outputs have independent graphs).
/// - create_graph=true through a compiled graph raises.
/// - A returned view of a graph output gets an AsStridedBackward0 grad_fn.
/// - The outputs of one graph are siblings: a gradient with respect to one
///   of them does not see what flows through another output computed from
///   it in the same graph. For `h = x.exp(); return {h, (h * h).sum()}`,
///   autograd::grad({loss}, {h}) raises that h was not used and
///   h.retain_grad() leaves h.grad() undefined (x's gradient is right).
///   Compute the loss outside the compiled function to differentiate with
///   respect to h.
/// And one thing compile() refuses: requires_grad_() on a tensor argument
/// inside the function raises (the function sees a stand-in for the
/// caller's tensor, whose autograd identity it cannot take over); call it
/// before the compiled function.
/// Floating-point results may differ in the last bits where a fused kernel
/// contracts a multiply and an add, or sums in another order (in double).

/// Options of compile() (torch.compile's, and torch._dynamo.config's
/// cache_size_limit as recompile_limit).
struct CompileOptions {
  /// Compiled entries per function. Past it (with one warning), a call
  /// whose graphs the entries match still runs them, and a graph no entry
  /// matches runs eagerly, uncached (torch.compile's behaviour past its
  /// cache_size_limit).
  EMBER_ARG(int64_t, recompile_limit) = 8;
  /// The caller declares the function pure in its tensors (its ops depend
  /// only on its arguments' metadata and its non-tensor arguments): after the
  /// first capture of a guard set, calls run the cached program without
  /// running the function (the lowest overhead, like CUDA graphs). The
  /// tensors it reads from outside its arguments (captured tensors,
  /// parameters) are then the same tensors: a write into them is seen, a
  /// captured variable reassigned to another tensor is not (make a new
  /// compiled function then); a call that reads a tensor it made itself
  /// from host values (a factory's result) is captured every time. A module
  /// switched between train() and eval() makes every call capture again.
  /// Training graphs replay too (Note [Replaying training graphs] in
  /// frontend/Frontend.cpp): a replay's outputs get their
  /// CompiledFunctionBackward node as the capture's did; a parameter frozen,
  /// unfrozen or converted makes the next call capture again. A replay
  /// reads each call's .grad where the capture read one (a .grad that
  /// appeared, went or changed shape captures again), and optimizers'
  /// steps replay from their second call with each call's step counts and
  /// learning rates (Note [Host state in replayed calls] in
  /// eager/Capturing.h). explain() says why a call is not replayed.
  EMBER_ARG(bool, replay) = false;
  /// In replay mode on CUDA, replays launch the program as one CUDA graph
  /// (torch.compile's mode="reduce-overhead"), captured at the first
  /// replay, with each call's input and output addresses patched in (Note
  /// [CUDA graphs in replay mode] in frontend/CudaGraphs.cpp); explain()
  /// says on each graph's line whether it is used, and if not, why.
  EMBER_ARG(bool, cuda_graphs) = true;
  /// A graph break raises instead of splitting the graph. As any error
  /// raised while the function is captured, the graph captured before the
  /// break runs first (its writes to arguments happen, as eagerly the ops
  /// before the break would have run: Note [A raising call keeps what ran
  /// before] in frontend/Frontend.cpp), unlike torch.compile, which raises
  /// before running anything.
  EMBER_ARG(bool, fullgraph) = false;
  /// The name used in logs, dumps and explain(); default "fn<N>".
  EMBER_ARG(std::string, name) = "";
  /// The optimisation level: 0 runs every op by its eager kernel; 1 also
  /// canonicalizes and eliminates common subexpressions; 2 (the default)
  /// also fuses pointwise ops into CPU kernels (LLVM, JIT-compiled).
  EMBER_ARG(int64_t, opt_level) = 2;
  /// At level 2, write fusion results into the buffers of inputs that die
  /// there (ember-plan-memory; torch._inductor.config.inplace_buffers).
  EMBER_ARG(bool, inplace_buffers) = true;
  /// At level 2, run independent pointwise kernels of the arguments (an
  /// optimizer step's per-parameter updates) as one launch
  /// (ember-fuse-horizontal; torch._inductor.config.combo_kernels).
  EMBER_ARG(bool, combo_kernels) = true;
  /// Compiled training: the bytes of activations a graph's forward may save
  /// for its backward (inputs not counted); ember-remat recomputes the rest
  /// in the backward, choosing the least recompute (estimated FLOPs) that
  /// fits. -1 (the default): no budget, a minimum cut that recomputes only
  /// cheap pointwise chains (Note [Partitioning the joint graph] in
  /// passes/Remat.cpp).
  EMBER_ARG(int64_t, memory_budget) = -1;
};

/// A graph break: why and where in the user's code.
struct GraphBreak {
  /// The graph it ended: its index among the graphs of its call (when
  /// nothing was captured before the break no graph ran, and the graph after
  /// the break gets this index).
  int graph = 0;
  std::string reason; ///< "Tensor::item()", "ember::nonzero: output shape ..."
  std::string where;  ///< "model.cpp:42:10", or "" when unknown
};

/// A recompile: which guard failed against which earlier entry.
struct Recompile {
  int graph = 0;
  std::string reason;
};

/// One kernel of a compiled graph.
/// One compiler pass as it ran on a graph (explain().graphs[i].pass_times).
struct PassTime {
  std::string name; ///< "ember-fuse-elementwise", "canonicalize", ...
  double seconds = 0;
};

struct KernelSummary {
  std::string name;             ///< "cpu ember_kernel_<hash>"
  std::vector<std::string> ops; ///< the ops it computes, in order
  std::string origin;           ///< "compiled", "disk cache", ...
  double compile_seconds = 0;   ///< LLVM IR + O3 + object + JIT (or load)
  /// Compiled training: "forward" or "backward" (the program that runs it).
  std::string program;
};

/// One compiled graph (a cache entry).
struct GraphInfo {
  std::string name;    ///< "fn0_graph1"
  int64_t ops = 0;     ///< ops in the graph, as captured
  int64_t kernels = 0; ///< compiled kernels (fusions) that run it
  std::vector<KernelSummary> kernel_list;
  std::vector<PassTime> pass_times; ///< each pass, in the order it ran
  int64_t fallbacks = 0;            ///< ops run by their eager kernel
  /// Why ops run eagerly: "ember::mm: no CPU kernel for this op", one line
  /// per kind of op and reason.
  std::vector<std::string> fallback_reasons;
  int64_t guards = 0; ///< checks a call makes before it reuses the graph
  int64_t inputs = 0, outputs = 0, mutations = 0;
  std::string trace;        ///< the captured trace (ir::Trace::str())
  std::string ir;           ///< the ember dialect module, as captured
  std::string ir_optimized; ///< after the passes (fusions)
  std::string dot;          ///< the graph in Graphviz DOT
  /// Compiled training (Note [The joint graph] in frontend/Capture.cpp):
  /// the graph's backward program and what its forward saves for it.
  bool training = false;
  int64_t backward_kernels = 0, backward_fallbacks = 0;
  struct Saved {
    std::string what; ///< the op that made it, or "argument N" (an input)
    std::vector<int64_t> sizes;
    ScalarType dtype = ScalarType::Float;
    int64_t bytes = 0;
  };
  std::vector<Saved> saved;            ///< the tensors saved for backward
  int64_t saved_bytes = 0;             ///< of those not inputs
  std::vector<std::string> recomputed; ///< ops the backward recomputes
  int64_t recompute_flops = 0;         ///< their estimated cost
  bool over_budget = false;            ///< no saved set met memory_budget
  /// Measured over the last call: the most bytes allocated at once
  /// (memory_allocated, all tensors of the process) while the forward
  /// program ran, and while the backward program ran; -1 until one ran.
  int64_t forward_peak = -1, backward_peak = -1;
  /// Replay mode on CUDA: "a CUDA graph of 3 nodes, 2 patched at each
  /// call", or "not used: <why>"; empty until a replay ran on CUDA.
  std::string cuda_graph;
};

/// What explain() reports (torch._dynamo.explain's ExplainOutput, plus the
/// cache's history). Printable; every field is data too.
struct ExplainOutput {
  std::string name;
  int64_t calls = 0;
  int64_t graph_count = 0; ///< graphs run by the last call
  int64_t op_count = 0;    ///< ops in the graphs of the last call
  /// Breaks over every captured call (break_reasons.size()).
  int64_t graph_break_count = 0;
  int64_t cache_hits = 0, cache_misses = 0;
  std::vector<GraphInfo> graphs;         ///< every cache entry
  std::vector<GraphBreak> break_reasons; ///< every captured call's breaks
  std::vector<Recompile> recompiles;
  /// Why calls or parts of them ran eagerly instead (the recompile limit,
  /// a graph whose backward runs eagerly).
  std::vector<std::string> eager_reasons;
  int64_t eager_calls = 0;
  /// compile_seconds = building and verifying the module (the rest) +
  /// passes_seconds + codegen_seconds (kernels: LLVM O3 and JIT).
  double capture_seconds = 0, compile_seconds = 0;
  double passes_seconds = 0, codegen_seconds = 0;
  std::string str() const;
};
std::ostream &operator<<(std::ostream &os, const ExplainOutput &e);

namespace detail {

class CompiledState; // frontend/Frontend.cpp

std::shared_ptr<CompiledState> make_compiled_state(CompileOptions options);

/// What the user's function gave back, flattened.
struct FlatOutputs {
  std::vector<Tensor> tensors;
  std::vector<int64_t> list_sizes; ///< lengths of vector<Tensor> returns
};

/// Runs one call of a compiled function. `tensors` are its tensor arguments,
/// `guards` its other arguments rendered as text (guarded on their values).
/// `body(args)` runs the user's function with `args` in place of `tensors`
/// and returns its flattened outputs. Returns the call's outputs: body's own
/// (real tensors by then; an argument returned as is is the caller's
/// tensor), or, in replay mode, rebuilt from the cached program's results
/// without running `body`.
FlatOutputs run_compiled(
    CompiledState &state, const std::vector<Tensor> &tensors,
    const std::vector<std::string> &guards,
    const std::function<FlatOutputs(const std::vector<Tensor> &)> &body);

ExplainOutput explain_of(const CompiledState &state);

// --- flattening of arguments and results ----------------------------------

template <class T> struct is_tuple_like : std::false_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};

template <class T> using plain_t = std::remove_cvref_t<T>;

/// `v` as Python prints a float: with a ".0" when it prints as an integer.
inline void print_float(std::ostream &os, double v) {
  std::ostringstream t;
  t.precision(17);
  t << v;
  std::string s = t.str();
  os << s;
  if (s.find_first_of(".eEn") == std::string::npos) // n: inf, nan
    os << ".0";
}

/// Tensor arguments go to `tensors`, vectors of tensors element by element;
/// anything else is guarded on its printed value.
template <class T>
void collect_arg(const T &a, std::vector<Tensor> &tensors,
                 std::vector<std::string> &guards) {
  using P = plain_t<T>;
  if constexpr (std::is_same_v<P, Tensor>) {
    tensors.push_back(a);
  } else if constexpr (std::is_same_v<P, std::vector<Tensor>>) {
    guards.push_back("list of " + std::to_string(a.size()) + " tensors");
    for (const Tensor &t : a)
      tensors.push_back(t);
  } else {
    // Guarded on its printed value, floating-point values as Python prints
    // them (2.0, not 2): 2 and 2.0 promote differently (an int64 tensor
    // times 2 stays int64).
    std::ostringstream os;
    os.precision(17); // doubles guarded by their exact value
    if constexpr (std::is_same_v<P, Scalar>) {
      if (a.isFloatingPoint())
        print_float(os, a.toDouble());
      else if (a.isBoolean())
        os << (a.toBool() ? "true" : "false");
      else
        os << a;
    } else if constexpr (std::is_same_v<P, bool>) {
      os << (a ? "true" : "false");
    } else if constexpr (std::is_floating_point_v<P>) {
      print_float(os, double(a));
    } else if constexpr (requires(std::ostream & o, const P &v) { o << v; }) {
      os << a;
    } else {
      static_assert(sizeof(P) == 0,
                    "ember::compile: a non-tensor argument is guarded on its "
                    "printed value, so its type needs an operator<<(std::"
                    "ostream &, const T &); define one, or capture the value "
                    "in the function instead of passing it");
    }
    guards.push_back(os.str());
  }
}

/// The argument passed to the user's function: tensors replaced by the
/// capture tensors in `tensors` (consumed from `pos`).
template <class T>
plain_t<T> rebuild_arg(const T &a, const std::vector<Tensor> &tensors,
                       size_t &pos) {
  using P = plain_t<T>;
  if constexpr (std::is_same_v<P, Tensor>) {
    return tensors[pos++];
  } else if constexpr (std::is_same_v<P, std::vector<Tensor>>) {
    std::vector<Tensor> v(tensors.begin() + pos,
                          tensors.begin() + pos + a.size());
    pos += a.size();
    return v;
  } else {
    return a;
  }
}

template <class R> void flatten_result(const R &r, FlatOutputs &out) {
  if constexpr (std::is_same_v<R, Tensor>) {
    out.tensors.push_back(r);
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    out.list_sizes.push_back(int64_t(r.size()));
    for (const Tensor &t : r)
      out.tensors.push_back(t);
  } else if constexpr (is_tuple_like<R>::value) {
    std::apply([&](const auto &...e) { (flatten_result(e, out), ...); }, r);
  } else {
    static_assert(sizeof(R) == 0,
                  "ember::compile: the function must return a Tensor, a "
                  "vector of Tensors, a tuple or pair of those, or nothing");
  }
}

template <class R>
R unflatten_result(const FlatOutputs &f, size_t &pos, size_t &lpos) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return f.tensors[pos++];
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    size_t n = size_t(f.list_sizes[lpos++]);
    std::vector<Tensor> v(f.tensors.begin() + pos, f.tensors.begin() + pos + n);
    pos += n;
    return v;
  } else {
    return unflatten_tuple<R>(f, pos, lpos,
                              std::make_index_sequence<std::tuple_size_v<R>>{});
  }
}
template <class R, size_t... I>
R unflatten_tuple(const FlatOutputs &f, size_t &pos, size_t &lpos,
                  std::index_sequence<I...>) {
  // Braced initialisation evaluates the elements in order.
  return R{unflatten_result<std::tuple_element_t<I, R>>(f, pos, lpos)...};
}

} // namespace detail

/// The callable that compile() returns.
template <class F> class CompiledFunction {
public:
  CompiledFunction(F fn, CompileOptions options)
      : fn_(std::move(fn)),
        state_(detail::make_compiled_state(std::move(options))) {}

  template <class... Args> auto operator()(Args &&...args) {
    // The function receives copies of the arguments (tensors replaced by
    // capture tensors): a parameter taken by non-const reference would be
    // written into a copy and the caller would never see it.
    static_assert(std::is_invocable_v<F &, detail::plain_t<Args>...>,
                  "ember::compile: the function cannot be called with "
                  "copies of these arguments: a parameter taken by non-const "
                  "reference (T&) would be written into a copy the caller "
                  "never sees; take it by value or const reference and "
                  "return what it computes");
    using R = std::invoke_result_t<F &, Args...>;
    std::vector<Tensor> tensors;
    std::vector<std::string> guards;
    (detail::collect_arg(args, tensors, guards), ...);
    auto body = [&](const std::vector<Tensor> &in) {
      [[maybe_unused]] size_t pos = 0; // (unused without arguments)
      // Braced initialisation keeps the arguments' order.
      std::tuple<detail::plain_t<Args>...> rebuilt{
          detail::rebuild_arg(args, in, pos)...};
      detail::FlatOutputs out;
      if constexpr (std::is_void_v<R>)
        std::apply(fn_, std::move(rebuilt));
      else
        detail::flatten_result(std::apply(fn_, std::move(rebuilt)), out);
      return out;
    };
    detail::FlatOutputs out =
        detail::run_compiled(*state_, tensors, guards, body);
    if constexpr (!std::is_void_v<R>) {
      size_t pos = 0, lpos = 0;
      return detail::unflatten_result<R>(out, pos, lpos);
    }
  }

  /// Graphs, breaks, recompiles and timings of every call so far: a
  /// snapshot, returned by value. Keep it in a variable before taking
  /// references into it (`auto e = f.explain(); const auto &g =
  /// e.graphs[0];`): a reference into `f.explain().graphs[0]` dangles.
  ExplainOutput explain() const { return detail::explain_of(*state_); }

private:
  F fn_;
  std::shared_ptr<detail::CompiledState> state_;
};

/// Wraps `fn` (any callable of tensors, vectors of tensors and printable
/// non-tensor values, returning a Tensor, a vector of Tensors, a tuple of
/// those, or nothing) in a compiled callable.
template <class F>
CompiledFunction<std::decay_t<F>> compile(F &&fn, CompileOptions options = {}) {
  return CompiledFunction<std::decay_t<F>>(std::forward<F>(fn),
                                           std::move(options));
}

/// The passes compile() runs at `opt_level` (with `inplace_buffers` and
/// `combo_kernels`, as CompileOptions), in order, by their ember-opt names
/// ("canonicalize", "ember-decompose"...): the pipeline explain() times, as
/// `ember-opt --ember-pipeline` runs it.
std::vector<std::string> pipeline_passes(int64_t opt_level = 2,
                                         bool inplace_buffers = true,
                                         bool combo_kernels = true);

/// Compiles `fn`, calls it once with `args` and reports what happened
/// (torch._dynamo.explain(fn)(*args)).
template <class F, class... Args>
ExplainOutput explain(F &&fn, Args &&...args) {
  auto compiled = compile(std::forward<F>(fn));
  compiled(std::forward<Args>(args)...);
  return compiled.explain();
}

} // namespace ember
