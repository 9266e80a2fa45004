#pragma once
/// Capture (DESIGN.md, "Compiler"): one call of a compiled function runs the
/// user's code with *capture tensors*; the Capture dispatch key's fallback
/// records each op into an ir::Trace with the output metadata from
/// ember::meta, instead of running it.
///
/// Note [Functionalization in capture]
/// Traces have value semantics. A capture tensor names a value of the graph;
/// an in-place op records its functional form and rebinds the tensor to the
/// new value. A view remembers its root base, the view ops that made it from
/// the base, and its geometry relative to the base's row-major layout. An
/// in-place op on a view writes the new view value back into the base with
/// as_strided_scatter; other views of that base see the base's generation
/// change and are recomputed from it (by replaying their view ops) the next
/// time they are used. Roots that stand for real tensors (the function's
/// arguments and lifted tensors) whose value changed become the graph's
/// mutations, written back after it runs.
///
/// Note [Inputs that share memory]
/// Value semantics hold only if no two inputs of a graph share memory: a
/// write to one would not be seen by the other. Inputs that share memory
/// are therefore one input, their whole storage (a 1-D tensor, a *storage
/// root*), and each of them an as_strided view of it, so that a write
/// through any of them is a write into the storage root that the others'
/// views are recomputed from. This covers arguments passed aliased (or one
/// argument that overlaps itself, an expanded tensor: writing one row of
/// it is fine), and lifted tensors that share memory with each other or
/// with an argument (a buffer and a view of it, an intermediate and its
/// view after a graph break): the root found first becomes a view of a new
/// storage root when the second is lifted (Session::rebase_on_storage), its
/// writes so far scattered into it. as_strided, whose offset and strides
/// are positions in the storage, is recorded on a storage root too (unless
/// the tensor it applies to is its whole storage, contiguous), and so is a
/// view that the real tensor's layout allows but the row-major layout of
/// its root does not express (view() of a transposed argument that is
/// contiguous in memory).
///
/// Note [The joint graph]
/// Compiled training is AOTAutograd's method. Autograd sits above capture in
/// the dispatch order, so an op on capture tensors that require grad builds
/// its autograd node as eagerly (on capture tensors) and is then recorded.
/// The capture tensor of a real input that requires grad is a non-leaf
/// whose grad_fn (CaptureInput) passes its gradient on to the real tensor's
/// edge, so any node built on it leads to the caller's autograd graph.
/// Saved tensors are stand-ins (same value and storage, no history; see
/// detail::capture_save_fn), so a capture tensor stays alive only while the
/// user's code holds it. When a graph ends, its live outputs that require
/// grad get one tangent input each, and the eager engine runs the nodes
/// built during the graph (autograd::grad_at_edges, cut at the inputs'
/// edges) on capture tensors with grad mode off: the derivative formulas,
/// ember ops, are recorded after the forward's, one joint graph whose
/// gradients (Trace::gradients) follow the forward's results. ember-remat
/// splits it into a forward, which also returns the tensors saved for
/// backward, and a backward. The outputs then get one autograd node,
/// CompiledFunctionBackward, whose backward runs the backward program; the
/// nodes built during capture are dropped. When the backward cannot be
/// traced (an op needed data inside an autograd kernel, a hook on a graph
/// tensor, a tensor made inside that requires grad, an input that requires
/// grad written in place, a formula that needs data) the graph's backward
/// runs those nodes eagerly instead, after the graph's tensors are made
/// real, as eagerly; explain() says why. When tracing it raises what the
/// backward raises eagerly (a saved tensor written in place after), the
/// outputs' node raises that at backward. An in-place write with autograd
/// into a capture tensor whose real tensor is a view breaks the graph and
/// runs eagerly (its base gets CopySlices, as eagerly).
///
/// Note [Materialization]
/// A graph ends at a sync point (item(), printing, data_ptr(), an op that
/// needs data) and at the function's return. Every capture tensor still
/// alive then is made real in place, keeping its identity: roots that stand
/// for a real tensor alias it (after the mutations are written back), other
/// roots become graph outputs, and views are made by replaying their view
/// ops eagerly on their (real) base, so aliasing is as in eager.

#include "eager/Meta.h"
#include "eager/TensorImpl.h"
#include "ir/Trace.h"

#include <atomic>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember::frontend {

class Session;
} // namespace ember::frontend

namespace ember::autograd {
struct AutogradMeta;
struct Node;
} // namespace ember::autograd

namespace ember::frontend {

/// One view op in a view's recipe: `op` applied to the previous tensor
/// (argument 0, left None here) and the other arguments.
struct ViewStep {
  const OperatorHandle *op;
  Stack args;
};

/// What a capture tensor carries (TensorImpl::capture_meta()).
struct CaptureMeta final : CaptureMetaInterface {
  Session *session = nullptr;
  TensorImpl *self = nullptr;
  int value = -1; ///< current value id in the session's graph
  // Roots.
  uint64_t gen = 0; ///< bumped when an in-place op rebinds the root
  Tensor real;      ///< the real tensor this root stands for, if any
  int input = -1;   ///< its graph input index
  int input_value = -1;
  bool storage_root = false; ///< the whole storage of its real tensor(s)
  bool saved = false;        ///< a stand-in autograd saved (capture_save_fn)
  bool tangent = false;      ///< a joint graph's tangent input
  /// Lifted while the backward was traced: a factory's result (a scratch
  /// buffer of a derivative formula), whose writes are not written back.
  bool scratch = false;
  // Views.
  intrusive_ptr<TensorImpl> base; ///< the root base (a capture tensor)
  uint64_t base_gen = 0;          ///< base->gen when `value` was computed
  std::vector<ViewStep> chain;    ///< from the root base to this view
  Tensor geom; ///< fake view of a fake row-major root: the geometry

  bool is_view() const { return bool(base); }
  /// The root base's record (this one for a root).
  CaptureMeta *root() const {
    return base ? static_cast<CaptureMeta *>(base->capture_meta())
                : const_cast<CaptureMeta *>(this);
  }
  ~CaptureMeta() override;
};

/// Applies a view recipe to `base` with the eager kernels (materializing a
/// view, or rebuilding a returned view in replay mode).
Tensor replay_views(Tensor base, const std::vector<ViewStep> &chain);
/// Records `view` (made by replay_views, whose boxed view ops do not) as a
/// view of `base`'s root base, as eager's views are, so that autograd's
/// checks see it (an in-place write to a view of a leaf that requires grad
/// raises; one to a view of a non-leaf rebases its base's history). Does
/// nothing to a tensor already recorded as a view.
void mark_view_of(const Tensor &view, intrusive_ptr<TensorImpl> base);

/// For each tensor argument, the first earlier one sharing its memory (-1
/// when none, or when either is empty): the arguments' aliasing, which the
/// capture keeps and the cache keys on.
std::vector<int> alias_pattern(const std::vector<Tensor> &tensors);

/// The whole storage of `t` as a 1-D tensor of t's dtype (the graph input
/// that arguments sharing memory are views of: InputKind::ArgumentStorage).
Tensor storage_view(const Tensor &t);

/// What a graph break reports.
struct BreakInfo {
  std::string reason;
  std::string where;
};

/// How a returned tensor is rebuilt from a graph's results (replay mode).
struct OutputRecipe {
  enum class Kind { GraphOutput, Input, Argument, Fixed };
  Kind kind = Kind::Fixed;
  int index = -1; ///< graph output / graph input / tensor argument index
  Tensor fixed;   ///< Fixed: a real tensor returned as is
  std::vector<ViewStep> chain; ///< view ops applied after
  /// Whether the output required grad when captured: a replay rebuilds a
  /// view without autograd when it did not (a view made under NoGradGuard,
  /// or a detach(), of an argument that requires grad).
  bool requires_grad = true;
};

class Program; // frontend/Executor.h

/// What running a graph gives back.
/// Measured while a joint graph's programs run (explain()'s last step): the
/// most bytes allocated at once during the last forward and the last
/// backward of the graph, -1 until one ran.
struct StepPeaks {
  std::atomic<int64_t> forward{-1}, backward{-1};
};

struct GraphResult {
  std::vector<Tensor> outputs; ///< one per trace output
  /// A joint graph: the tensors its forward saved for the backward, and the
  /// backward program (Lowered::backward).
  std::vector<Tensor> saved;
  std::shared_ptr<const Program> backward;
  std::shared_ptr<StepPeaks> peaks; ///< where its backward records its peak
};

/// What replay mode needs to give a replayed training graph's outputs their
/// autograd node as the capture did (Note [Replaying training graphs] in
/// frontend/Frontend.cpp).
struct JointReplay {
  /// The graph outputs that get the node, in the node's input order (the
  /// backward program's tangents): their index among the graph's outputs.
  std::vector<int> tangent_outputs;
  /// The real tensors whose gradient edges are the node's next edges (an
  /// argument of the call or a lifted tensor), and per one: its gradient's
  /// index among the backward program's outputs, or -1.
  std::vector<Tensor> grad_reals;
  std::vector<int> slots;
};

/// Gives `outputs` (a graph's outputs that require grad, in the backward's
/// tangent order) one CompiledFunctionBackward node that runs `r.backward`
/// on `r.saved` and their gradients, its next edges the gradient edges of
/// `grad_reals` (per `slots`, as JointReplay's).
void attach_compiled_backward(const std::vector<Tensor> &outputs,
                              const GraphResult &r,
                              const std::vector<Tensor> &grad_reals,
                              const std::vector<int> &slots);

/// Runs a finished graph: gets the trace and the real tensors of its inputs
/// (a joint graph's tangents, its last inputs, have none), returns the real
/// outputs (mutations already applied to the inputs).
using GraphRunner = std::function<GraphResult(
    ir::Trace &trace, const std::vector<Tensor> &inputs)>;
/// Told of every graph break (before the graph it ends runs, if any).
using BreakHook = std::function<void(const BreakInfo &)>;

/// One call of a compiled function (thread-local while it runs).
class Session {
public:
  Session(std::string name, GraphRunner runner, BreakHook on_break,
          bool fullgraph);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// The session capturing on this thread, or null.
  static Session *current();
  /// After a backward pass inside the function: a grad it made for an
  /// argument whose capture tensor's grad the function has not replaced
  /// becomes that capture tensor's too.
  void take_real_grads();

  /// The capture tensors standing for the function's tensor arguments.
  /// Arguments that share memory stay aliased: the same tensor passed twice
  /// gets one capture tensor; arguments that view one storage become views
  /// of a graph input holding that whole storage (InputKind::ArgumentStorage).
  std::vector<Tensor> wrap_arguments(const std::vector<Tensor> &reals);

  /// Records `op` (the Capture key's fallback).
  void record(const OperatorHandle &op, Stack &stack);

  /// Ends the current graph (a sync point): runs it and materializes every
  /// live capture tensor.
  void graph_break(const std::string &reason, const std::string &where);
  /// The end of the function: the last graph. Returns how each of `outs`
  /// (the function's flattened results) comes from that graph.
  std::vector<OutputRecipe> finish(const std::vector<Tensor> &outs);
  /// The function raised: runs the graph captured so far (its writes), as
  /// eagerly the ops before the raise have run (Note [A raising call keeps
  /// what ran before] in frontend/Frontend.cpp).
  void finish_raised() {
    end_graph();
    give_back_grads();
  }
  /// The inputs of the last graph run (replay mode keeps them).
  const std::vector<ir::Input> &last_inputs() const { return last_inputs_; }
  const std::vector<Tensor> &last_input_tensors() const {
    return last_input_tensors_;
  }
  /// After an exception: capture tensors still alive become unusable.
  void abandon();

  /// Why replay mode cannot reuse this call's graph for later calls ("" if
  /// it can): a captured tensor shares memory with an argument (the graph
  /// holds for this argument only), or the function returns or writes a
  /// tensor it created outside the graph (a factory's result: replaying
  /// would hand out or change the same tensor again), or it draws random
  /// numbers. Set by finish().
  const std::string &replay_blocker() const { return replay_blocker_; }
  /// no_replay()'s hook (eager/Capturing.h): this call is not replayed,
  /// for `why`.
  void set_no_replay(const char *why) { no_replay_ = why; }

  /// Note [Host state in replayed calls] (eager/Capturing.h): what this
  /// call declared, in the order it did.
  struct GradRead {
    Tensor owner; ///< the leaf whose .grad was read
    Tensor grad;  ///< what the read gave (undefined when it had none)
  };
  struct ReplayStep {
    std::function<void()> effect;   ///< an effect, or
    std::function<Tensor()> remake; ///< a tensor made again at each replay
    Tensor made;                    ///< (remake) this call's tensor
  };
  /// A .grad access (Note [Host state in replayed calls]); `replaceable`:
  /// through mutable_grad().
  void add_grad_read(const Tensor &owner, const Tensor &grad, bool replaceable);
  /// replay_clear_grad(owner): the call clears owner's .grad, and so does a
  /// replay.
  void add_clear_grad(const Tensor &owner);
  struct ReplayGuard {
    std::string what;
    std::function<bool()> holds;
  };
  void add_replay_guard(ReplayGuard g) {
    replay_guards_.push_back(std::move(g));
  }
  void add_replay_step(ReplayStep s) { replay_steps_.push_back(std::move(s)); }
  /// Whether the graph's backward is being traced (its derivative
  /// formulas run on capture tensors: Note [The joint graph]).
  bool tracing_backward() const { return in_backward_; }
  const std::vector<GradRead> &grad_reads() const { return grad_reads_; }
  const std::vector<ReplayGuard> &replay_guards() const {
    return replay_guards_;
  }
  const std::vector<ReplayStep> &replay_steps() const { return replay_steps_; }
  /// The last graph's JointReplay when it made a CompiledFunctionBackward
  /// node (a training graph), else none.
  const std::optional<JointReplay> &last_joint() const { return last_joint_; }

  /// Why graphs of this call keep an eager backward (Note [The joint
  /// graph]): "graph N: reason", one per such graph.
  const std::vector<std::string> &eager_backward() const {
    return eager_backward_;
  }

  /// What autograd saves for capture tensor `t` (detail::capture_save_fn).
  Tensor stand_in(const Tensor &t);

  int graphs_run() const { return graphs_run_; }
  const std::vector<BreakInfo> &breaks() const { return breaks_; }

  // Used by CaptureMeta's destructor.
  void forget(CaptureMeta *m);

private:
  friend struct CaptureMeta;
  CaptureMeta *meta_of(const Tensor &t) const;
  /// The value id of a tensor argument (lifting real tensors, recomputing
  /// stale views); sets *m to its capture meta when it has one.
  int value_of(const Tensor &t, CaptureMeta **m);
  Tensor make_capture(const Tensor &like, int value);
  Tensor lift(const Tensor &real);
  /// A graph input for `real` and the root capture tensor standing for it.
  Tensor add_input(const Tensor &real, ir::InputKind kind, int index,
                   std::string name);
  int add_node(const OperatorHandle &op, std::vector<ir::Arg> args,
               const Tensor &result_like);
  void push_node(const OperatorHandle &op, std::vector<ir::Arg> args,
                 std::vector<int> results);
  /// Note [Inputs that share memory]: a storage root for the memory of
  /// `real` (a graph input), and `real` as a view of one.
  Tensor add_storage_root(const Tensor &real, ir::InputKind kind, int index,
                          std::string name);
  /// A new storage root for the memory of `real`: the storage of argument
  /// `argument`, or (-1) of a lifted tensor.
  Tensor storage_root_for(const Tensor &real, int argument);
  Tensor view_of_storage(const Tensor &root, const Tensor &real);
  /// The storage root of an input sharing real's memory, making one (and
  /// the input found a view of it) when needed; undefined when none does.
  Tensor shared_storage_root(const Tensor &real);
  /// Makes `root` (standing for a real tensor) a view of a new storage root
  /// of its memory; returns that root.
  Tensor rebase_on_storage(CaptureMeta *root);
  void refresh_view(CaptureMeta *m);
  void write_through_view(CaptureMeta *m, int new_value);
  void end_graph();
  void reset_graph();
  /// Gives `real` (and the caller's argument it stands for, after a break)
  /// the history in `from`: a write's, as eagerly.
  void take_history(const Tensor &real, const autograd::AutogradMeta *from);
  /// Why `op` must run eagerly: it writes in place, with autograd, into a
  /// capture tensor whose real tensor is a view ("" otherwise).
  std::string inplace_on_view_reason(const OperatorHandle &op,
                                     const Stack &stack);
  /// Note [Reading a tensor the graph writes].
  void mark_written(const Tensor &real);
  void unmark_written();
  std::unordered_map<TensorImpl *, Tensor> written_;
  /// Whether the real tensor root `m` stands for got a history from an
  /// in-place op of this graph (its autograd kernel ran on the real tensor,
  /// or on a view made from it).
  bool got_history(CaptureMeta *m) const;
  /// Note [The joint graph]: traces the backward of the graph's live
  /// outputs that require grad into trace_ (their tangents last among the
  /// inputs, the gradients in trace_.gradients); returns the outputs in
  /// tangent order, or none when the graph keeps an eager backward.
  std::vector<CaptureMeta *> trace_backward();
  /// Calls `visit` on each autograd node built during this graph that the
  /// grad_fns of `roots` reach, up to the real tensors' edges (the cut)
  /// and the CaptureInput nodes (visited, not passed); stops when `visit`
  /// returns false.
  void
  visit_graph_nodes(const std::vector<Tensor> &roots,
                    const std::function<bool(autograd::Node *)> &visit) const;
  /// Why the graph's backward cannot be traced ("" if it can).
  std::string joint_blocker(const std::vector<CaptureMeta *> &outs);

  std::string name_;
  GraphRunner runner_;
  BreakHook on_break_;
  bool fullgraph_;
  Session *prev_;
  LocalDispatchKeySet saved_tls_;

  ir::Trace trace_;
  std::vector<Tensor> inputs_; ///< real tensors of trace_.inputs
  std::unordered_map<TensorImpl *, Tensor> lifted_; ///< real -> wrapper
  /// Arguments (real impl -> capture tensor) of the first graph: a tensor
  /// the function reaches that is also an argument is that argument.
  std::unordered_map<TensorImpl *, Tensor> args_;
  /// The capture tensors given to the function -> argument index: after a
  /// break they are real, and a later graph that reads one names it so.
  std::unordered_map<TensorImpl *, int> arg_wrappers_;
  /// Each argument's capture tensor and real tensor.
  std::vector<std::pair<Tensor, Tensor>> arg_pairs_;
  /// Note [An argument's grad]: each argument's `.grad` when the call began
  /// (its capture tensor's too); give_back_grads() hands a grad the function
  /// replaced (or cleared) on to the real tensor.
  std::vector<TensorImpl *> arg_grads_;
  void give_back_grads();
  /// Raises when requires_grad_() was called on an argument's capture
  /// tensor (Note [What compile() may change]).
  void check_requires_grad();
  std::unordered_set<CaptureMeta *> live_;
  /// This graph's storage roots, and its inputs standing for a real tensor
  /// (not storage roots), by storage (Note [Inputs that share memory]).
  std::unordered_map<const void *, Tensor> storage_roots_;
  std::unordered_map<const void *, CaptureMeta *> input_roots_;
  bool lifted_aliases_argument_ = false;
  std::string replay_blocker_;
  bool draws_random_ = false; ///< a random op was recorded (replay_blocker)
  /// checkpoint() regions of this graph: detail::checkpoint_region() ->
  /// number in the graph (ir::Node::recompute).
  std::unordered_map<uint64_t, int64_t> region_ids_;
  /// Note [Creation epochs]: this call's, and the thread's before it.
  uint32_t epoch_ = 0, prev_epoch_ = 0;
  /// Memory the function allocated during this call.
  bool fresh(const Tensor &t) const;
  std::vector<ir::Mutation> last_mutations_;
  int graph_index_ = 0;
  int graphs_run_ = 0;
  std::vector<BreakInfo> breaks_;
  /// The first node number of this graph (autograd::peek_sequence_nr).
  uint64_t graph_seq_ = 0;
  /// Set when an op inside an autograd kernel broke the graph: the node
  /// being built holds the graph's nodes (Note [The joint graph]).
  std::string joint_blocked_;
  bool in_backward_ = false; ///< tracing the backward (trace_backward)
  /// What the graph's backward raises (a saved tensor written in place),
  /// "" when it does not.
  std::string backward_error_;
  std::optional<JointReplay> last_joint_; ///< last_joint()
  /// Why this call must not be replayed (no_replay() in eager/Capturing.h).
  std::string no_replay_;
  std::vector<GradRead> grad_reads_;
  /// The owners whose .grad the call cleared with replay_clear_grad().
  std::unordered_set<const TensorImpl *> cleared_grads_;
  /// Set while the capture reads .grads itself (Note [An argument's grad]):
  /// those are not the function's reads.
  bool own_grad_reads_ = false;
  struct OwnGradReads {
    Session *s;
    bool was;
    explicit OwnGradReads(Session *s) : s(s), was(s->own_grad_reads_) {
      s->own_grad_reads_ = true;
    }
    ~OwnGradReads() { s->own_grad_reads_ = was; }
  };
  std::vector<ReplayGuard> replay_guards_;
  std::vector<ReplayStep> replay_steps_;
  /// The real tensors that capture tensors of this graph stand for and
  /// that require grad (each capture tensor's CaptureInput leads to one):
  /// where the backward trace is cut, and the node's next edges.
  std::vector<Tensor> grad_reals_;
  /// Per grad_reals_ entry: its gradient's index in Trace::gradients, or
  /// -1 (none reaches it).
  std::vector<int> grad_slots_;
  /// Gives capture tensor `t` standing for `real` (which requires grad) a
  /// CaptureInput grad_fn leading to real's edge.
  void attach_input(const Tensor &t, const Tensor &real);
  std::vector<std::string> eager_backward_;
  std::vector<int> last_outputs_;
  std::vector<ir::Input> last_inputs_;
  std::vector<Tensor> last_input_tensors_;
};

/// Installs the Capture fallback and the sync hook (once).
void install_capture();

} // namespace ember::frontend
