// compile()'s driver: the per-function state, the compile cache and its
// guards, recompiles and the recompile limit, replay mode, explain(), logs
// and the debug directory.
#include "frontend/Capture.h"
#include "frontend/Compile.h"
#include "frontend/CudaGraphs.h"
#include "frontend/Executor.h"
#include "frontend/Lowering.h"

#include "eager/amp/Autocast.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/ThreadLocalState.h"
#include "eager/nn/Module.h"
#include "runtime/Allocator.h"
#include "runtime/Env.h"
#include "runtime/Logging.h"
#include "runtime/Profiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace ember {

namespace detail {

using frontend::OutputRecipe;
using frontend::Program;
using frontend::Session;
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// What a cache entry checks about one graph input.
struct InputGuard {
  std::string name;
  ScalarType dtype;
  Device device;
  std::vector<int64_t> sizes, strides;
  bool requires_grad;
  static InputGuard of(const std::string &name, const Tensor &t) {
    return {name,
            t.dtype(),
            t.device(),
            t.sizes().vec(),
            t.strides().vec(),
            t.requires_grad()};
  }
  bool operator==(const InputGuard &o) const {
    return dtype == o.dtype && device == o.device && sizes == o.sizes &&
           strides == o.strides && requires_grad == o.requires_grad;
  }
  /// Whether `t` has this guard's metadata (operator== with of(t), without
  /// building one: a replay checks every lifted tensor at every call).
  bool matches(const Tensor &t) const {
    return t.dtype() == dtype && t.device() == device &&
           t.sizes() == IntArrayRef(sizes) &&
           t.strides() == IntArrayRef(strides) &&
           t.requires_grad() == requires_grad;
  }
  void hash_into(uint64_t &h) const {
    ir::hash_combine(h, uint64_t(dtype));
    ir::hash_combine(h, std::hash<std::string>()(device.str()));
    ir::hash_combine(h, sizes.size());
    for (int64_t s : sizes)
      ir::hash_combine(h, uint64_t(s));
    for (int64_t s : strides)
      ir::hash_combine(h, uint64_t(s));
    ir::hash_combine(h, requires_grad);
  }
};

/// The first way `now` differs from `was`, in PyTorch's words; "" if none.
std::string compare_input(const InputGuard &was, const InputGuard &now) {
  std::ostringstream os;
  os << "tensor '" << now.name << "' ";
  if (was.dtype != now.dtype)
    os << "dtype mismatch. expected " << toString(was.dtype) << ", actual "
       << toString(now.dtype);
  else if (was.device != now.device)
    os << "device mismatch. expected " << was.device.str() << ", actual "
       << now.device.str();
  else if (was.sizes.size() != now.sizes.size())
    os << "rank mismatch. expected " << was.sizes.size() << ", actual "
       << now.sizes.size();
  else if (was.sizes != now.sizes) {
    size_t i = 0;
    while (was.sizes[i] == now.sizes[i])
      ++i;
    os << "size mismatch at index " << i << ". expected " << was.sizes[i]
       << ", actual " << now.sizes[i];
  } else if (was.strides != now.strides) {
    size_t i = 0;
    while (was.strides[i] == now.strides[i])
      ++i;
    os << "stride mismatch at index " << i << ". expected " << was.strides[i]
       << ", actual " << now.strides[i];
  } else if (was.requires_grad != now.requires_grad)
    os << "requires_grad mismatch. expected " << was.requires_grad
       << ", actual " << now.requires_grad;
  else
    return "";
  return os.str();
}

struct Entry {
  std::string name;
  int position = 0; ///< which graph of the call (0 = the first)
  uint64_t hash = 0;
  ir::Trace captured; ///< the trace as captured: the structure a hit matches
  std::vector<InputGuard> inputs;
  std::vector<std::string> arg_guards;
  bool grad_mode = true;
  /// The autocast state when the graph ended: its casts are ops of the
  /// graph (so the trace itself guards them); kept to explain a miss.
  autocast::AutocastState autocast;
  std::unique_ptr<Program> program;
  /// A joint graph's backward (also held by the autograd nodes it made).
  std::shared_ptr<const Program> backward;
  /// A joint graph's measured peaks (also held by the autograd nodes).
  std::shared_ptr<frontend::StepPeaks> peaks;
  GraphInfo info;
  frontend::LowerOptions lower_options; ///< how `program` was made
  /// Note [Graph texts when asked]: made by the first explain() that needs
  /// them (under the state's lock), kept for the next.
  struct Texts {
    std::string trace, dot, ir, ir_optimized;
  };
  mutable std::optional<Texts> texts;
  std::string cuda_graph; ///< GraphInfo::cuda_graph
};

/// Whether two of `pairs` (sorted here) have one key and two values.
template <class K, class V>
bool one_key_two_values(std::vector<std::pair<K, V>> &pairs) {
  std::sort(pairs.begin(), pairs.end());
  return std::adjacent_find(pairs.begin(), pairs.end(),
                            [](const auto &a, const auto &b) {
                              return a.first == b.first && a.second != b.second;
                            }) != pairs.end();
}

/// Note [Host state in replayed calls] (eager/Capturing.h): what a replay
/// does on the host besides running its program, from what the capture's
/// code declared.
struct HostReplay {
  struct GradRead {
    Tensor owner;
    std::optional<InputGuard> guard; ///< the read's; none: it was undefined
    int input = -1;                  ///< the graph input it is, or -1
  };
  struct Step {
    std::function<void()> effect;
    std::function<Tensor()> remake;
    int input = -1; ///< (remake) the graph input it is, or -1
  };
  std::vector<GradRead> grads;
  std::vector<Session::ReplayGuard> guards;
  std::vector<Step> steps;
  /// Per graph input: whether a remake gives it (not held, made anew).
  std::vector<bool> remade;
  /// The storages of the lifted tensors a replay holds: a .grad read must
  /// share memory with none of them (nor with another one), as at the
  /// capture (Session::finish() keeps no replay where one did).
  std::unordered_set<const void *> held;

  static HostReplay of(const Session &s) {
    const std::vector<ir::Input> &ins = s.last_inputs();
    const std::vector<Tensor> &reals = s.last_input_tensors();
    auto input_of = [&](const Tensor &t) {
      for (size_t i = 0; i < ins.size(); ++i)
        if (t.defined() && ins[i].kind == ir::InputKind::Lifted &&
            reals.at(i).is_same(t))
          return int(i);
      return -1;
    };
    HostReplay h;
    for (const Session::GradRead &g : s.grad_reads())
      h.grads.push_back({g.owner,
                         g.grad.defined() ? std::optional<InputGuard>(
                                                InputGuard::of("", g.grad))
                                          : std::nullopt,
                         input_of(g.grad)});
    h.guards = s.replay_guards();
    // (a remade tensor the graph does not read is not made again)
    h.remade.assign(ins.size(), false);
    for (const Session::ReplayStep &st : s.replay_steps()) {
      int input = input_of(st.made);
      if (input >= 0)
        h.remade[size_t(input)] = true;
      if (st.effect || input >= 0)
        h.steps.push_back({st.effect, st.remake, input});
    }
    for (size_t i = 0; i < ins.size(); ++i)
      if (ins[i].kind == ir::InputKind::Lifted && reals.at(i).nbytes() > 0 &&
          std::none_of(h.grads.begin(), h.grads.end(),
                       [&](const GradRead &g) { return g.input == int(i); }) &&
          !h.remade[i])
        h.held.insert(reals[i].storage().unsafeGetStorageImpl());
    return h;
  }
  /// Why a replay may not run ("" when it may): a guard does not hold, or a
  /// .grad read gives what the capture's did not (defined or not, its
  /// metadata, memory it shares). Changes nothing.
  std::string invalid() const {
    std::vector<std::pair<const void *, int>> read; // (storage, input)
    // One input read twice (the same .grad tensor of two parameters, or
    // read twice) must be one tensor again.
    std::vector<std::pair<int, const TensorImpl *>> inputs;
    for (const GradRead &g : grads) {
      const Tensor &now = g.owner.grad();
      if (now.defined() != g.guard.has_value())
        return ember::detail::str("the .grad of a tensor of shape ",
                                  g.owner.sizes(),
                                  now.defined() ? " appeared" : " went");
      if (g.guard && !g.guard->matches(now))
        return ember::detail::str(
            "the .grad of a tensor of shape ", g.owner.sizes(),
            " changed its dtype, device, shape or strides");
      if (g.input < 0)
        continue;
      inputs.emplace_back(g.input, now.unsafeGetTensorImpl());
      if (now.nbytes() > 0) {
        const void *st = now.storage().unsafeGetStorageImpl();
        if (held.count(st))
          return "a .grad shares memory with another tensor the graph reads";
        read.emplace_back(st, g.input);
      }
    }
    if (one_key_two_values(inputs))
      return "two .grads that were one tensor at the capture are two now";
    if (one_key_two_values(read))
      return "two .grads the graph reads share memory";
    for (const Session::ReplayGuard &g : guards)
      if (!g.holds())
        return g.what;
    return "";
  }
  /// The graph inputs that are .grad reads, from this call's.
  void read_grads(std::vector<Tensor> &lifted) const {
    for (const GradRead &g : grads)
      if (g.input >= 0)
        lifted.at(size_t(g.input)) = g.owner.grad();
  }
  /// Runs the effects and remakes in order (the replay goes ahead); sets
  /// the inputs the remakes give, which must match the capture's `guards`.
  void run(std::vector<Tensor> &lifted,
           const std::vector<std::optional<InputGuard>> &guards) const {
    for (const Step &st : steps) {
      if (st.effect) {
        st.effect();
        continue;
      }
      Tensor t = st.remake();
      if (st.input < 0)
        continue;
      const std::optional<InputGuard> &g = guards.at(size_t(st.input));
      EMBER_CHECK(g && g->matches(t),
                  "internal error: a tensor remade for a replay "
                  "(remake_on_replay) differs from the capture's in dtype, "
                  "device, shape or strides");
      lifted.at(size_t(st.input)) = std::move(t);
    }
  }
};

struct ReplayEntry {
  Entry *entry = nullptr;
  /// Note [CUDA graphs in replay mode]: the program as a CUDA graph once a
  /// replay captured it; `graph_tried` once one tried (or it is a CPU
  /// program).
  std::shared_ptr<frontend::GraphReplay> graph;
  bool graph_tried = false;
  std::vector<ir::Input> inputs; ///< the graph's inputs
  std::vector<Tensor> lifted;    ///< real tensors of lifted inputs (else none)
  std::vector<OutputRecipe> outputs;
  std::vector<int64_t> list_sizes;
  /// Each lifted tensor's guard at the capture (defined ones): a replay
  /// needs the same dtype, device, sizes, strides and requires_grad (a
  /// frozen parameter, or a module moved to another dtype in place, changes
  /// the graph).
  std::vector<std::optional<InputGuard>> lifted_guards;
  /// Lifted inputs that are .grad reads or remade tensors are not held in
  /// `lifted`: a replay takes this call's.
  HostReplay host;
  /// A training graph (Note [Replaying training graphs]): how its outputs
  /// get their node; per grad_reals entry, the argument it is (its edge is
  /// read from this call's argument), or -1 (a lifted tensor, held).
  std::optional<frontend::JointReplay> joint;
  std::vector<int> grad_args;
};

/// What a replayed call must match: the grad mode, the autocast state (the
/// casts are in the graph: Note [Autocast] in eager/amp/Autocast.h), the
/// non-tensor
/// arguments, each tensor argument's guard, where it starts in its storage
/// and how large that is (metadata the function may read, and what a graph
/// that views an argument's storage depends on: Note [Inputs that share
/// memory]), and the arguments' aliasing (which argument shares memory with
/// which).
struct ReplayKey {
  bool grad = true;
  uint32_t autocast = 0;
  std::vector<std::string> guards;
  std::vector<InputGuard> inputs;
  std::vector<int64_t> aliasing;

  ReplayKey(const std::vector<Tensor> &tensors,
            const std::vector<std::string> &guards_)
      : grad(GradMode::is_enabled()), autocast(autocast_key()),
        guards(guards_) {
    for (const Tensor &t : tensors) {
      inputs.push_back(InputGuard::of("", t));
      aliasing.push_back(t.storage_offset());
      aliasing.push_back(t.storage().defined() ? int64_t(t.storage().nbytes())
                                               : -1);
    }
    std::vector<int> first = frontend::alias_pattern(tensors);
    for (size_t i = 0; i < first.size(); ++i)
      if (first[i] >= 0)
        aliasing.insert(aliasing.end(), {int64_t(i), first[i]});
  }
  bool operator==(const ReplayKey &) const = default;
  /// The autocast state as far as it changes what a graph computes.
  static uint32_t autocast_key() {
    autocast::AutocastState s = autocast::get_state();
    return (s.cpu_enabled ? 1u | uint32_t(s.cpu_dtype) << 8 : 0u) |
           (s.cuda_enabled ? 2u | uint32_t(s.cuda_dtype) << 16 : 0u);
  }
  struct Hash {
    size_t operator()(const ReplayKey &k) const {
      uint64_t h = k.grad;
      ir::hash_combine(h, k.autocast);
      for (const std::string &g : k.guards)
        ir::hash_combine(h, std::hash<std::string>()(g));
      for (const InputGuard &g : k.inputs)
        g.hash_into(h);
      for (int64_t a : k.aliasing)
        ir::hash_combine(h, uint64_t(a));
      return size_t(h);
    }
  };
};

std::atomic<int> g_function_counter{0};

/// EMBER_DEBUG_DIR, when set to a folder: "" is unset (not "/").
std::optional<std::string> debug_dir() {
  std::optional<std::string> d = env::get("EMBER_DEBUG_DIR");
  if (d && d->empty())
    return std::nullopt;
  return d;
}

void write_file(const std::string &path, const std::string &text) {
  std::ofstream f(path);
  EMBER_CHECK(f.good(), "EMBER_DEBUG_DIR: cannot write ", path,
              "; check that the folder exists and is writable");
  f << text;
}
/// A graph's results: its outputs, then (a joint graph's forward) the saved
/// tensors.
frontend::GraphResult split_results(std::vector<Tensor> outs,
                                    const ir::Trace &trace,
                                    std::shared_ptr<const Program> backward) {
  frontend::GraphResult r;
  size_t n = trace.outputs.size();
  r.saved.assign(outs.begin() + long(std::min(n, outs.size())), outs.end());
  outs.resize(std::min(n, outs.size()));
  r.outputs = std::move(outs);
  r.backward = std::move(backward);
  return r;
}
} // namespace

class CompiledState {
public:
  explicit CompiledState(CompileOptions o) : options(std::move(o)) {
    name = options.name().empty() ? "fn" + std::to_string(g_function_counter++)
                                  : options.name();
    EMBER_CHECK_VALUE(options.recompile_limit() >= 1,
                      "compile: recompile_limit must be at least 1, got ",
                      options.recompile_limit());
    EMBER_CHECK_VALUE(options.opt_level() >= 0 && options.opt_level() <= 2,
                      "compile: opt_level must be 0, 1 or 2, got ",
                      options.opt_level());
    EMBER_CHECK_VALUE(options.memory_budget() >= -1,
                      "compile: memory_budget must be a number of bytes (0 "
                      "or more), or -1 for no budget; got ",
                      options.memory_budget());
  }

  CompileOptions options;
  std::string name;
  /// Held by a call for as long as it captures, compiles or replays; explain()
  /// takes it too, unless the calling thread is the holder (explain() called
  /// from inside the compiled function), whose copy cannot race.
  mutable std::mutex mu;
  std::atomic<std::thread::id> holder{};
  std::vector<std::unique_ptr<Entry>> entries;
  std::unordered_multimap<uint64_t, Entry *> by_hash;
  std::unordered_map<ReplayKey, ReplayEntry, ReplayKey::Hash> replays;
  /// nn::Module::mode_changes() when `replays` was last valid.
  uint64_t replay_modes = 0;
  /// Why graphs past the recompile limit run eagerly; "" until it is hit.
  std::string limit_reason;
  /// This call ran a graph uncompiled (a cache miss past the limit).
  bool ran_uncompiled = false;
  ExplainOutput stats;

  /// A replay's program run: as a CUDA graph when it can be (Note [CUDA
  /// graphs in replay mode]), capturing it at the first replay.
  std::vector<Tensor> replay_program(ReplayEntry &r,
                                     const std::vector<Tensor> &inputs) {
    const Program &program = *r.entry->program;
    if (r.graph && !profiler::active())
      if (std::optional<std::vector<Tensor>> outs = r.graph->replay(inputs))
        return std::move(*outs);
    if (r.graph_tried || !options.cuda_graphs() || profiler::active())
      return program.run(inputs);
    r.graph_tried = true;
    std::optional<std::string> why = frontend::graph_blocker(inputs);
    if (!why) // (a CPU program)
      return program.run(inputs);
    if (!why->empty()) {
      r.entry->cuda_graph = "no CUDA graph: " + *why;
      log_graph(r);
      return program.run(inputs);
    }
    try {
      std::vector<Tensor> outs;
      r.graph = frontend::GraphReplay::capture(program, inputs, outs);
      if (!r.graph) { // (another thread captures: a later call tries)
        r.graph_tried = false;
        return program.run(inputs);
      }
      r.entry->cuda_graph = r.graph->summary();
      log_graph(r);
      return outs;
    } catch (const Error &e) {
      r.entry->cuda_graph =
          std::string("no CUDA graph: the capture failed: ") + e.what();
      log_graph(r);
      return program.run(inputs);
    }
  }
  /// Note [Replaying training graphs]
  /// A training graph replays as the capture ran it (end_graph()): its
  /// forward program, which also returns the tensors saved for backward,
  /// then one CompiledFunctionBackward node for the outputs that require
  /// grad, its next edges the gradient edges of this call's arguments and
  /// of the lifted tensors that require grad. So a training step in replay
  /// mode captures nothing: no tracing of the forward, and none of the
  /// backward (the derivative formulas run on capture tensors), which
  /// costs about as much host time as running the ops eagerly. The replay
  /// key checks what the capture's choices depend on (the grad mode, each
  /// argument's requires_grad, each lifted tensor's); a call that returns
  /// a view of an output that requires grad, or whose backward raises, is
  /// captured every time.
  std::vector<Tensor> replay_training(ReplayEntry &r,
                                      const std::vector<Tensor> &inputs,
                                      const std::vector<Tensor> &args) {
    Entry &e = *r.entry;
    std::optional<PeakMemoryScope> scope;
    if (e.peaks)
      scope.emplace();
    frontend::GraphResult g =
        split_results(replay_program(r, inputs), e.captured, e.backward);
    if (e.peaks) {
      e.peaks->forward = scope->peak();
      g.peaks = e.peaks;
    }
    std::vector<Tensor> reals = r.joint->grad_reals;
    for (size_t k = 0; k < reals.size(); ++k)
      if (r.grad_args[k] >= 0)
        reals[k] = args.at(size_t(r.grad_args[k]));
    std::vector<Tensor> outs;
    for (int i : r.joint->tangent_outputs)
      outs.push_back(g.outputs.at(size_t(i)));
    frontend::attach_compiled_backward(outs, g, reals, r.joint->slots);
    return std::move(g.outputs);
  }

  void log_graph(const ReplayEntry &r) const {
    if (logging::enabled(logging::Topic::cudagraphs))
      logging::log(logging::Topic::cudagraphs,
                   r.entry->name + ": " + r.entry->cuda_graph);
  }

  // Per call.
  std::vector<std::string> call_guards;
  int position = 0;
  Entry *last_entry = nullptr;
  double run_seconds = 0;

  frontend::GraphResult run_graph(ir::Trace &trace,
                                  const std::vector<Tensor> &inputs);
  /// A recompile of replay mode's (said once).
  void add_recompile(const std::string &why) {
    for (const Recompile &r : stats.recompiles)
      if (r.reason == why)
        return;
    stats.recompiles.push_back({0, why});
  }
  void add_eager_reason(const std::string &why) {
    if (std::find(stats.eager_reasons.begin(), stats.eager_reasons.end(),
                  why) == stats.eager_reasons.end())
      stats.eager_reasons.push_back(why);
  }

private:
  /// The cache key: the graph's position in the call, the grad mode, the
  /// non-tensor arguments, the inputs' guards and the trace's structure.
  uint64_t hash_of(const ir::Trace &trace,
                   const std::vector<InputGuard> &guards, bool grad) const;
  bool matches(const Entry &e, const ir::Trace &trace,
               const std::vector<InputGuard> &guards, bool grad) const;
  std::string miss_reason(const Entry &was, const ir::Trace &trace,
                          const std::vector<InputGuard> &guards,
                          bool grad) const;
  Entry *compile(ir::Trace &trace, std::vector<InputGuard> guards, bool grad,
                 uint64_t hash);
};

uint64_t CompiledState::hash_of(const ir::Trace &trace,
                                const std::vector<InputGuard> &guards,
                                bool grad) const {
  uint64_t h = trace.structure_hash();
  ir::hash_combine(h, uint64_t(position));
  ir::hash_combine(h, grad);
  for (const std::string &g : call_guards)
    ir::hash_combine(h, std::hash<std::string>()(g));
  for (const InputGuard &g : guards)
    g.hash_into(h);
  return h;
}

bool CompiledState::matches(const Entry &e, const ir::Trace &trace,
                            const std::vector<InputGuard> &guards,
                            bool grad) const {
  return e.position == position && e.grad_mode == grad &&
         e.arg_guards == call_guards && e.inputs == guards &&
         e.captured.same_structure(trace);
}

std::string CompiledState::miss_reason(const Entry &was, const ir::Trace &trace,
                                       const std::vector<InputGuard> &guards,
                                       bool grad) const {
  for (size_t i = 0; i < call_guards.size() && i < was.arg_guards.size(); ++i)
    if (call_guards[i] != was.arg_guards[i])
      return "non-tensor argument " + std::to_string(i) +
             " changed. expected " + was.arg_guards[i] + ", actual " +
             call_guards[i];
  if (grad != was.grad_mode)
    return std::string("grad mode changed. expected ") +
           (was.grad_mode ? "enabled" : "disabled") + ", actual " +
           (grad ? "enabled" : "disabled");
  if (guards.size() != was.inputs.size())
    return "the graph has " + std::to_string(guards.size()) +
           " inputs, the entry had " + std::to_string(was.inputs.size());
  for (size_t i = 0; i < guards.size(); ++i) {
    std::string r = compare_input(was.inputs[i], guards[i]);
    if (!r.empty())
      return r;
  }
  autocast::AutocastState now = autocast::get_state();
  if (!now.casts_like(was.autocast))
    return "autocast changed. expected " + was.autocast.str() + ", actual " +
           now.str();
  const auto &a = was.captured.nodes, &b = trace.nodes;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i].op != b[i].op)
      return "the captured ops differ: op " + std::to_string(i) + " is " +
             b[i].op->name() + ", the entry had " + a[i].op->name();
  if (a.size() != b.size())
    return "the captured ops differ: " + std::to_string(b.size()) +
           " ops, the entry had " + std::to_string(a.size());
  return "the captured ops differ in their arguments";
}

Entry *CompiledState::compile(ir::Trace &trace, std::vector<InputGuard> guards,
                              bool grad, uint64_t hash) {
  auto t0 = Clock::now();
  // The passes run ops on fake tensors (decompositions, folding): as the
  // graph already holds autocast's casts, they run without it.
  ExcludeDispatchKeyGuard no_autocast(DispatchKey::Autocast);
  int version = 0;
  for (auto &e : entries)
    if (e->position == position)
      ++version;
  trace.name = name + "_graph" + std::to_string(position) +
               (version ? "_v" + std::to_string(version) : "");

  auto e = std::make_unique<Entry>();
  e->name = trace.name;
  e->position = position;
  e->hash = hash;
  e->captured = trace;
  e->inputs = std::move(guards);
  e->arg_guards = call_guards;
  e->grad_mode = grad;
  e->autocast = autocast::get_state();

  frontend::LowerOptions lo;
  lo.opt_level = int(options.opt_level());
  lo.inplace_buffers = options.inplace_buffers();
  lo.combo_kernels = options.combo_kernels();
  lo.keep_kernel_ir = debug_dir().has_value();
  lo.keep_pass_ir = lo.keep_kernel_ir;
  lo.memory_budget = options.memory_budget();
  using logging::Topic;
  // Note [Graph texts when asked]
  // The printed forms of a graph (its trace, DOT, module before and after
  // the passes) cost much of a large graph's compile time: they are made
  // now only for the logs and the debug directory, else by explain().
  bool texts_now = lo.keep_kernel_ir || logging::enabled(Topic::graph) ||
                   logging::enabled(Topic::ir) ||
                   logging::enabled(Topic::passes);
  lo.keep_module_text = texts_now;
  e->lower_options = lo;
  // Logged before it compiles: its kernels' logs follow.
  if (logging::enabled(Topic::graph))
    logging::log(Topic::graph, "captured " + e->name + ":\n" + trace.str());
  frontend::Lowered lowered = frontend::lower(trace, lo);
  e->program = std::make_unique<Program>(std::move(lowered.program));
  e->backward = lowered.backward;
  if (e->backward)
    e->peaks = std::make_shared<frontend::StepPeaks>();

  GraphInfo &info = e->info;
  info.name = e->name;
  info.ops = int64_t(trace.nodes.size());
  if (e->backward) {
    info.training = true;
    for (const frontend::SavedTensor &s : lowered.saved) {
      int64_t n = 1;
      for (int64_t d : s.sizes)
        n *= d;
      info.saved.push_back(
          {s.what, s.sizes, s.dtype, n * int64_t(elementSize(s.dtype))});
    }
    info.saved_bytes = lowered.saved_bytes;
    info.recomputed = lowered.recomputed;
    info.recompute_flops = lowered.recompute_flops;
    info.over_budget = lowered.over_budget;
    for (const ir::Node &n : e->backward->trace().nodes)
      (n.kernel ? info.backward_kernels : info.backward_fallbacks) +=
          n.kernel ? 1 : (n.body ? int64_t(n.body->nodes.size()) : 1);
  }
  // Eager steps: ops outside fusions, and the ops of fusions no kernel runs.
  std::map<std::string, int64_t> reasons; // "op: why" -> count
  for (const ir::Node &n : e->program->trace().nodes) {
    if (n.kernel) {
      ++info.kernels;
    } else if (n.body) {
      info.fallbacks += int64_t(n.body->nodes.size());
      for (const ir::Node &op : n.body->nodes)
        ++reasons[op.label() +
                  ": in a fusion no kernel was made for: " + n.fallback_reason];
    } else {
      ++info.fallbacks;
      ++reasons[n.label() +
                (options.opt_level() < 2
                     ? ": opt_level " + std::to_string(options.opt_level()) +
                           " runs every op eagerly"
                     : ": " +
                           (n.fallback_reason.empty()
                                ? "no code generator takes this op"
                                : n.fallback_reason) +
                           " (its eager kernel runs)")];
    }
  }
  for (const frontend::KernelInfo &k : lowered.kernels)
    if (!k.name.empty())
      info.kernel_list.push_back(
          {k.name, k.ops, k.origin, k.compile_seconds, k.program});
  for (const frontend::PassRun &p : lowered.pass_runs)
    info.pass_times.push_back({p.name, p.seconds});
  for (const auto &[why, count] : reasons)
    info.fallback_reasons.push_back(
        why + (count > 1 ? " (x" + std::to_string(count) + ")" : ""));
  info.guards =
      int64_t(e->inputs.size()) * 5 + 1 + int64_t(e->arg_guards.size());
  info.inputs = int64_t(trace.inputs.size());
  info.outputs = int64_t(trace.outputs.size());
  info.mutations = int64_t(trace.mutations.size());
  if (texts_now) {
    info.trace = trace.str();
    info.ir = lowered.ir;
    info.ir_optimized = lowered.ir_optimized;
    info.dot = ir::to_dot(trace);
  }
  stats.passes_seconds += lowered.passes_seconds;
  stats.codegen_seconds += lowered.codegen_seconds;

  if (logging::enabled(Topic::ir))
    logging::log(Topic::ir, info.name + ":\n" + info.ir);
  if (logging::enabled(Topic::passes)) {
    std::ostringstream os;
    os << info.name << " after the passes (opt_level " << options.opt_level()
       << ", " << lowered.passes_seconds * 1e3 << " ms:";
    for (const frontend::PassRun &p : lowered.pass_runs)
      os << " " << p.name << " " << p.seconds * 1e3 << " ms";
    os << "):\n" << info.ir_optimized;
    logging::log(Topic::passes, os.str());
  }
  for (const frontend::KernelInfo &k : lowered.kernels) {
    std::ostringstream os;
    os << info.name << ": fusion of";
    for (const std::string &op : k.ops)
      os << "\n  " << op;
    os << "\n  -> " << (k.name.empty() ? "runs eagerly: " + k.why_not : k.name);
    logging::log(Topic::fusion, os.str());
    if (!k.name.empty() && logging::enabled(Topic::kernels)) {
      std::ostringstream ks;
      ks << k.name << " (" << k.origin << ", " << k.compile_seconds * 1e3
         << " ms):\n"
         << k.spec;
      logging::log(Topic::kernels, ks.str());
    }
  }
  if (logging::enabled(Topic::guards)) {
    std::ostringstream os;
    os << "guards of " << info.name << ":\n";
    os << "  grad mode " << (grad ? "enabled" : "disabled") << "\n";
    os << "  " << e->autocast.str()
       << " (its casts are ops of the graph, matched with them)\n";
    for (size_t i = 0; i < e->arg_guards.size(); ++i)
      os << "  non-tensor argument " << i << " == " << e->arg_guards[i] << "\n";
    for (const InputGuard &g : e->inputs)
      os << "  tensor '" << g.name << "': " << toString(g.dtype) << " "
         << g.device.str() << " size " << IntArrayRef(g.sizes) << " stride "
         << IntArrayRef(g.strides) << " requires_grad=" << g.requires_grad
         << "\n";
    logging::log(Topic::guards, os.str());
  }
  if (auto dir = debug_dir()) {
    // Made when missing, as TORCH_COMPILE_DEBUG_DIR is; a folder that
    // cannot be made is reported by the first write.
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    std::string base = *dir + "/" + info.name;
    write_file(base + ".trace", info.trace);
    write_file(base + ".mlir", lowered.ir_with_locations);
    write_file(base + ".dot", info.dot);
    write_file(base + ".fused.mlir", lowered.ir_optimized);
    // The IR after every pass: NAME.pass<N>.<pass>.mlir, in order.
    for (size_t i = 0; i < lowered.pass_runs.size(); ++i)
      write_file(base + ".pass" + std::to_string(i + 1) + "." +
                     lowered.pass_runs[i].name + ".mlir",
                 lowered.pass_runs[i].ir_after);
    // Each kernel: its LLVM IR, and what it computes from which source ops.
    std::ostringstream map;
    for (size_t i = 0; i < lowered.kernels.size(); ++i) {
      const frontend::KernelInfo &k = lowered.kernels[i];
      map << "fusion " << i << ": "
          << (k.name.empty() ? "runs eagerly: " + k.why_not : k.name) << "\n";
      for (const std::string &op : k.ops)
        map << "  " << op << "\n";
      if (!k.name.empty()) {
        std::string ll = base + ".kernel" + std::to_string(i) + ".ll";
        write_file(ll, k.llvm_ir);
        map << "  LLVM IR: " << ll << "\n" << k.spec;
      }
    }
    write_file(base + ".kernels.txt", map.str());
  }

  stats.compile_seconds += seconds_since(t0);
  stats.graphs.push_back(info); // stats.graphs[i] is entries[i]'s
  Entry *raw = e.get();
  by_hash.emplace(raw->hash, raw);
  entries.push_back(std::move(e));
  return raw;
}

frontend::GraphResult
CompiledState::run_graph(ir::Trace &trace, const std::vector<Tensor> &inputs) {
  bool grad = GradMode::is_enabled();
  std::vector<InputGuard> guards;
  guards.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    guards.push_back(InputGuard::of(trace.inputs[i].name, inputs[i]));
  uint64_t hash = hash_of(trace, guards, grad);
  ++stats.graph_count;
  stats.op_count += int64_t(trace.nodes.size());

  Entry *e = nullptr;
  auto [lo, hi] = by_hash.equal_range(hash);
  for (auto it = lo; it != hi && !e; ++it)
    if (matches(*it->second, trace, guards, grad))
      e = it->second;
  if (e) {
    ++stats.cache_hits;
  } else {
    ++stats.cache_misses;
    const Entry *prev = nullptr;
    for (auto &x : entries)
      if (x->position == position)
        prev = x.get();
    const bool past_limit =
        int64_t(entries.size()) >= options.recompile_limit();
    std::string reason;
    if (prev) {
      reason = prev->name + ": " + miss_reason(*prev, trace, guards, grad);
      // (past the limit nothing is recompiled: explain() lists the
      // recompiles that happened, not every miss of a long loop)
      if (!past_limit) {
        stats.recompiles.push_back({position, reason});
        logging::log(logging::Topic::recompiles,
                     "recompiling " + name + " graph " +
                         std::to_string(position) +
                         ", triggered by the guard failure: " + reason);
      }
    } else {
      // (a probe found "Last recompile: " with nothing after it)
      reason = "graph " + std::to_string(position) +
               " of the call is new (no entry was compiled at its position)";
    }
    if (past_limit) {
      // Past the limit: a graph that matches no entry runs uncompiled; the
      // entries keep running the graphs they match (torch.compile's
      // RUN_ONLY once its recompile limit is hit).
      if (limit_reason.empty()) {
        logging::warn(name + " hit the recompile limit (" +
                      std::to_string(options.recompile_limit()) +
                      "); graphs its compiled entries do not match now run "
                      "eagerly. Last recompile: " +
                      reason);
        limit_reason = "the recompile limit (" +
                       std::to_string(options.recompile_limit()) +
                       ") was reached; last recompile: " + reason;
      }
      add_eager_reason(limit_reason);
      if (!ran_uncompiled)
        ++stats.eager_calls;
      ran_uncompiled = true;
      ++position;
      last_entry = nullptr;
      auto t0 = Clock::now();
      frontend::GraphResult out;
      if (trace.is_joint()) {
        // Partitioned, its ops run eagerly (opt_level 0), not cached.
        frontend::LowerOptions lo;
        lo.opt_level = 0;
        lo.memory_budget = options.memory_budget();
        frontend::Lowered l = frontend::lower(trace, lo);
        out = split_results(l.program.run(inputs), trace, l.backward);
      } else {
        out.outputs = Program(trace).run(inputs);
      }
      run_seconds += seconds_since(t0);
      return out;
    }
    e = compile(trace, std::move(guards), grad, hash);
  }
  ++position;
  last_entry = e;
  auto t0 = Clock::now();
  std::optional<PeakMemoryScope> scope; // (a training graph's peak)
  if (e->peaks)
    scope.emplace();
  frontend::GraphResult out =
      split_results(e->program->run(inputs), trace, e->backward);
  if (e->peaks) {
    e->peaks->forward = scope->peak();
    out.peaks = e->peaks;
  }
  run_seconds += seconds_since(t0);
  return out;
}

std::shared_ptr<CompiledState> make_compiled_state(CompileOptions options) {
  return std::make_shared<CompiledState>(std::move(options));
}

namespace {
/// The real tensor a graph input reads at this call.
Tensor input_of(const ir::Input &in, const std::vector<Tensor> &args,
                const Tensor &lifted) {
  switch (in.kind) {
  case ir::InputKind::Argument:
    return args.at(size_t(in.index));
  case ir::InputKind::ArgumentStorage: {
    const Tensor &a = args.at(size_t(in.index));
    return a.as_strided({int64_t(a.storage().nbytes() / a.itemsize())}, {1}, 0);
  }
  case ir::InputKind::Lifted:
  case ir::InputKind::Tangent: // (never: the backward program's inputs)
    break;
  }
  return lifted;
}

std::vector<Tensor> apply_recipes(const std::vector<OutputRecipe> &recipes,
                                  const std::vector<Tensor> &graph_outputs,
                                  const std::vector<Tensor> &graph_inputs,
                                  const std::vector<Tensor> &args) {
  std::vector<Tensor> out;
  for (const OutputRecipe &r : recipes) {
    Tensor t;
    switch (r.kind) {
    case OutputRecipe::Kind::Fixed:
      t = r.fixed;
      break;
    case OutputRecipe::Kind::Input:
      t = graph_inputs.at(r.index);
      break;
    case OutputRecipe::Kind::Argument:
      t = args.at(r.index);
      break;
    case OutputRecipe::Kind::GraphOutput:
      t = graph_outputs.at(r.index);
      break;
    }
    if (r.requires_grad) {
      out.push_back(frontend::replay_views(t, r.chain));
    } else {
      // (made under no_grad or by detach() when captured: no history)
      NoGradGuard no_grad;
      out.push_back(frontend::replay_views(t, r.chain));
    }
    // A view of what its chain starts from, as the capture made it (a
    // probe found replayed views of arguments that were not views).
    if (!r.chain.empty() && t.defined())
      frontend::mark_view_of(
          out.back(), intrusive_ptr<TensorImpl>(t.unsafeGetTensorImpl()));
  }
  return out;
}
} // namespace

namespace {
/// Whether replay `r`'s lifted tensors (`lifted`: the held ones and this
/// call's .grad reads) still have the metadata they were captured with.
/// Remade tensors (undefined here) are checked when made.
bool lifted_still_match(const ReplayEntry &r,
                        const std::vector<Tensor> &lifted) {
  for (size_t i = 0; i < lifted.size(); ++i) {
    const std::optional<InputGuard> &g = r.lifted_guards.at(i);
    if (!lifted[i].defined() && r.host.remade.at(i))
      continue;
    if (lifted[i].defined() != g.has_value() || (g && !g->matches(lifted[i])))
      return false;
  }
  return true;
}

/// Whether an argument of this call shares memory with a lifted tensor of
/// the replay (a capture that saw it would not have been replayed:
/// Session's "a captured tensor shares memory with an argument").
bool lifted_is_argument(const std::vector<Tensor> &lifted,
                        const std::vector<Tensor> &args) {
  for (const Tensor &a : args)
    if (a.defined() && a.storage().defined())
      for (const Tensor &l : lifted)
        if (l.defined() && l.storage().defined() &&
            l.storage().unsafeGetStorageImpl() ==
                a.storage().unsafeGetStorageImpl())
          return true;
  return false;
}
} // namespace

FlatOutputs run_compiled(
    CompiledState &st, const std::vector<Tensor> &tensors,
    const std::vector<std::string> &guards,
    const std::function<FlatOutputs(const std::vector<Tensor> &)> &body) {
  // A compiled function called while another one captures is inlined into
  // the enclosing graph.
  if (Session::current())
    return body(tensors);
  std::unique_lock<std::mutex> lock(st.mu);
  st.holder = std::this_thread::get_id();
  struct Release { // clears the holder before `lock` unlocks
    CompiledState *st;
    ~Release() {
      if (st)
        st->holder = std::thread::id();
    }
  } held{&st};
  auto t_call = Clock::now();
  ++st.stats.calls;

  auto run_eagerly = [&](const std::string &why) {
    st.add_eager_reason(why);
    ++st.stats.eager_calls;
    st.holder = std::thread::id();
    held.st = nullptr;
    lock.unlock();
    return body(tensors);
  };
  // An undefined Tensor argument (libtorch's "no bias"): guards and inputs
  // describe defined tensors, so the call runs as written (a probe found it
  // raising instead).
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!tensors[i].defined())
      return run_eagerly(
          "tensor argument " + std::to_string(i) +
          " is undefined (a default-constructed Tensor): the call runs "
          "eagerly; pass a std::optional<Tensor> (std::nullopt) for an "
          "absent tensor to compile it");
  {
    // Saved-tensor hooks would see the capture's stand-ins (Note [The
    // joint graph]); with them the call runs as the user wrote it.
    detail::SavedHooksState hooks = detail::get_saved_hooks();
    if (GradMode::is_enabled() && hooks.hooks.size() > hooks.disabled_below)
      return run_eagerly("saved-tensor hooks are active "
                         "(saved_tensors_hooks): the call runs eagerly");
  }

  std::optional<ReplayKey> rkey;
  if (st.options.replay()) {
    // A module switched between train() and eval() since the calls were
    // captured: what they read (dropout, batch statistics) changed, so none
    // is replayed (a probe found eval calls replaying the training graph).
    if (uint64_t modes = nn::Module::mode_changes(); modes != st.replay_modes) {
      st.replays.clear();
      st.replay_modes = modes;
    }
    rkey.emplace(tensors, guards);
    auto it = st.replays.find(*rkey);
    if (it != st.replays.end()) {
      ReplayEntry &r = it->second;
      std::vector<Tensor> lifted;
      std::string invalid = r.host.invalid();
      if (invalid.empty()) {
        lifted = r.lifted;
        r.host.read_grads(lifted);
      }
      if (!invalid.empty() || !lifted_still_match(r, lifted)) {
        // A lifted tensor was frozen, unfrozen or converted, a .grad
        // appeared, went or changed, or host state the graph depends on
        // changed (Note [Host state in replayed calls]): captured anew.
        if (!invalid.empty())
          st.add_recompile("replay: captured again: " + invalid);
        st.replays.erase(it);
      } else if (lifted_is_argument(lifted, tensors)) {
        // Captured with other arguments: this call's reads and writes
        // through the shared memory are not the graph's (captured, without
        // replacing the entry).
      } else {
        r.host.run(lifted, r.lifted_guards);
        std::vector<Tensor> inputs;
        for (size_t i = 0; i < r.inputs.size(); ++i)
          if (r.inputs[i].kind != ir::InputKind::Tangent) // (the backward's)
            inputs.push_back(input_of(r.inputs[i], tensors, lifted.at(i)));
        ++st.stats.cache_hits;
        // (the last call's: graph_count and op_count describe one call)
        st.stats.graph_count = r.entry ? 1 : 0;
        st.stats.op_count = r.entry ? r.entry->info.ops : 0;
        std::vector<Tensor> outs;
        if (r.entry && r.joint)
          outs = st.replay_training(r, inputs, tensors);
        else if (r.entry)
          outs = st.replay_program(r, inputs);
        FlatOutputs f;
        f.tensors = apply_recipes(r.outputs, outs, inputs, tensors);
        f.list_sizes = r.list_sizes;
        return f;
      }
    }
  }

  st.call_guards = guards;
  st.position = 0;
  st.ran_uncompiled = false;
  st.last_entry = nullptr;
  st.run_seconds = 0;
  int64_t misses_before = st.stats.cache_misses;
  double compile_before = st.stats.compile_seconds;
  st.stats.graph_count = 0;
  st.stats.op_count = 0;

  Session s(
      st.name,
      [&](ir::Trace &trace, const std::vector<Tensor> &inputs) {
        return st.run_graph(trace, inputs);
      },
      [&](const frontend::BreakInfo &b) {
        st.stats.break_reasons.push_back({st.position, b.reason, b.where});
        ++st.stats.graph_break_count;
      },
      st.options.fullgraph());
  std::vector<Tensor> wrapped = s.wrap_arguments(tensors);
  FlatOutputs out;
  try {
    out = body(wrapped);
  } catch (...) {
    // Note [A raising call keeps what ran before]
    // When the function raises while it is captured (an op's shape check,
    // or the user's own code throwing), eager has already run every op
    // before that point, writes to arguments and captured tensors
    // included. So the graph captured so far runs, as at a graph break,
    // then the exception goes on to the caller. (If that graph raises,
    // its error comes first, as the earlier op's would eagerly.)
    std::exception_ptr raised = std::current_exception();
    s.finish_raised();
    std::rethrow_exception(raised);
  }
  std::vector<OutputRecipe> recipes = s.finish(out.tensors);
  // An argument returned as is is the caller's own tensor, as eagerly (not
  // the capture tensor that stood for it, now an alias of it).
  for (size_t k = 0; k < out.tensors.size(); ++k)
    for (size_t i = 0; i < wrapped.size(); ++i)
      if (out.tensors[k].is_same(wrapped[i]) &&
          out.tensors[k].sizes() == tensors[i].sizes() &&
          out.tensors[k].strides() == tensors[i].strides() &&
          out.tensors[k].storage_offset() == tensors[i].storage_offset()) {
        out.tensors[k] = tensors[i];
        recipes[k] = OutputRecipe{OutputRecipe::Kind::Argument, int(i), {}, {}};
        break;
      }
  for (const std::string &why : s.eager_backward())
    st.add_eager_reason("the backward of " + why + " runs eagerly");
  st.stats.capture_seconds += seconds_since(t_call) - st.run_seconds -
                              (st.stats.compile_seconds - compile_before);

  if (st.options.replay() && s.breaks().empty() && s.eager_backward().empty() &&
      s.graphs_run() <= 1 && !st.ran_uncompiled && s.replay_blocker().empty()) {
    ReplayEntry r;
    r.entry = s.graphs_run() ? st.last_entry : nullptr;
    r.inputs = s.last_inputs();
    r.lifted = s.last_input_tensors();
    // (an argument's tensor is read from each call: this one's is not held)
    for (size_t i = 0; i < r.lifted.size(); ++i)
      if (r.inputs.at(i).kind != ir::InputKind::Lifted)
        r.lifted[i] = Tensor();
    for (const Tensor &t : r.lifted)
      r.lifted_guards.push_back(
          t.defined() ? std::optional<InputGuard>(InputGuard::of("", t))
                      : std::nullopt);
    // (.grad reads and remade tensors: each replay's own, not held)
    r.host = HostReplay::of(s);
    for (const HostReplay::GradRead &g : r.host.grads)
      if (g.input >= 0)
        r.lifted.at(size_t(g.input)) = Tensor();
    for (size_t i = 0; i < r.lifted.size(); ++i)
      if (r.host.remade.at(i))
        r.lifted[i] = Tensor();
    r.outputs = std::move(recipes);
    r.list_sizes = out.list_sizes;
    if (const auto &j = s.last_joint()) {
      r.joint = *j;
      for (Tensor &real : r.joint->grad_reals) {
        int arg = -1;
        for (size_t i = 0; i < tensors.size() && arg < 0; ++i)
          if (tensors[i].is_same(real))
            arg = int(i);
        r.grad_args.push_back(arg);
        if (arg >= 0) // (read from each call's arguments, not held)
          real = Tensor();
      }
    }
    if (!s.graphs_run() || r.entry)
      st.replays.emplace(std::move(*rkey), std::move(r));
  } else if (st.options.replay() && !s.replay_blocker().empty()) {
    st.add_eager_reason("replay: a call was captured, not kept for replays: " +
                        s.replay_blocker());
  } else if (st.options.replay() && st.stats.cache_misses > misses_before) {
    st.add_eager_reason(
        "replay needs a single graph without breaks or eager parts; this "
        "call is captured every time");
  }
  return out;
}

ExplainOutput explain_of(const CompiledState &st) {
  std::unique_lock<std::mutex> lock(st.mu, std::defer_lock);
  if (st.holder.load() != std::this_thread::get_id())
    lock.lock();
  ExplainOutput e = st.stats;
  e.name = st.name;
  for (size_t i = 0; i < e.graphs.size() && i < st.entries.size(); ++i) {
    GraphInfo &g = e.graphs[i];
    const Entry &entry = *st.entries[i];
    g.cuda_graph = entry.cuda_graph;
    if (entry.peaks) {
      g.forward_peak = entry.peaks->forward;
      g.backward_peak = entry.peaks->backward;
    }
    // Note [Graph texts when asked]: made here when compile() did not.
    if (!g.trace.empty())
      continue;
    if (!entry.texts) {
      frontend::ModuleText text =
          frontend::module_text(entry.captured, entry.lower_options);
      entry.texts =
          Entry::Texts{entry.captured.str(), ir::to_dot(entry.captured),
                       std::move(text.ir), std::move(text.ir_optimized)};
    }
    g.trace = entry.texts->trace;
    g.dot = entry.texts->dot;
    g.ir = entry.texts->ir;
    g.ir_optimized = entry.texts->ir_optimized;
  }
  return e;
}

} // namespace detail

std::string ExplainOutput::str() const {
  std::ostringstream os;
  os << "ember.compile explain: " << name << "\n";
  os << "Calls: " << calls << " (" << eager_calls << " eager)\n";
  os << "Graph Count: " << graph_count << "\n";
  os << "Graph Break Count: " << graph_break_count << "\n";
  os << "Op Count: " << op_count << "\n";
  os << "Cache: " << cache_hits << " hits, " << cache_misses << " misses\n";
  if (!break_reasons.empty()) {
    os << "Break Reasons:\n";
    for (size_t i = 0; i < break_reasons.size(); ++i) {
      const GraphBreak &b = break_reasons[i];
      os << "  Break Reason " << i + 1 << " (ends graph " << b.graph
         << "):\n    Reason: " << b.reason << "\n";
      if (!b.where.empty())
        os << "    User Stack: " << b.where << "\n";
    }
  }
  if (!recompiles.empty()) {
    os << "Recompiles:\n";
    for (const Recompile &r : recompiles)
      os << "  graph " << r.graph << ": " << r.reason << "\n";
  }
  if (!eager_reasons.empty()) {
    os << "Ran Eagerly:\n";
    for (const std::string &r : eager_reasons)
      os << "  " << r << "\n";
  }
  os << "Compiled Graphs:\n";
  for (const GraphInfo &g : graphs) {
    os << "  " << g.name << ": " << g.ops << " ops, " << g.kernels
       << " kernels, " << g.fallbacks << " eager fallbacks, " << g.inputs
       << " inputs, " << g.outputs << " outputs, " << g.mutations
       << " mutations, " << g.guards << " guards\n";
    for (const KernelSummary &k : g.kernel_list) {
      os << "    kernel " << k.name << " ("
         << (k.program.empty() ? "" : k.program + ", ") << k.origin << ", "
         << k.compile_seconds * 1e3 << " ms):";
      for (const std::string &op : k.ops)
        os << " " << op;
      os << "\n";
    }
    for (const std::string &why : g.fallback_reasons)
      os << "    eager: " << why << "\n";
    if (g.training) {
      os << "    backward: " << g.backward_kernels << " kernels, "
         << g.backward_fallbacks << " eager ops\n";
      os << "    saved for backward: " << g.saved.size() << " tensors, "
         << g.saved_bytes << " bytes of activations"
         << (g.over_budget ? " (over memory_budget: the least that works)" : "")
         << "\n";
      for (const GraphInfo::Saved &s : g.saved)
        os << "      " << s.what << ": " << toString(s.dtype)
           << IntArrayRef(s.sizes) << ", " << s.bytes << " bytes\n";
      if (!g.recomputed.empty()) {
        os << "    recomputed in backward (" << g.recompute_flops << " FLOPs):";
        for (const std::string &op : g.recomputed)
          os << " " << op;
        os << "\n";
      }
      auto peak = [](int64_t b) {
        return b < 0 ? std::string("not run") : std::to_string(b) + " bytes";
      };
      os << "    last step, most bytes allocated at once: forward "
         << peak(g.forward_peak) << ", backward " << peak(g.backward_peak)
         << "\n";
    }
    if (!g.cuda_graph.empty())
      os << "    replays: " << g.cuda_graph << "\n";
    if (!g.pass_times.empty()) {
      os << "    passes:";
      for (const PassTime &p : g.pass_times)
        os << " " << p.name << " " << p.seconds * 1e3 << " ms";
      os << "\n";
    }
    std::istringstream lines(g.trace);
    for (std::string line; std::getline(lines, line);)
      os << "    " << line << "\n";
  }
  os << "Compile Times: capture " << capture_seconds << " s, compile "
     << compile_seconds << " s (passes " << passes_seconds << " s, kernels "
     << codegen_seconds << " s)\n";
  return os.str();
}

std::ostream &operator<<(std::ostream &os, const ExplainOutput &e) {
  return os << e.str();
}

} // namespace ember
