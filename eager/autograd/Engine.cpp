#include "eager/autograd/Engine.h"
#include "eager/Capturing.h"
#include "eager/Factory.h"
#include "eager/amp/Autocast.h"
#include "eager/autograd/BuiltinNodes.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/ThreadLocalState.h"
#include "eager/autograd/Variable.h"
#include "eager/generated/Functions.h"
#include "runtime/Profiler.h"

#include <optional>
#include <queue>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace ember::autograd {

namespace {

bool is_expandable_to(IntArrayRef shape, IntArrayRef desired) {
  if (shape.size() > desired.size())
    return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[shape.size() - 1 - i];
    int64_t d = desired[desired.size() - 1 - i];
    if (s != d && s != 1)
      return false;
  }
  return true;
}

/// Reduces / casts each gradient `fn` returned to what its edge expects.
void validate_outputs(const Node &fn, variable_list &grads) {
  EMBER_CHECK(grads.size() == fn.num_outputs(), "function ", fn.name(),
              " returned an incorrect number of gradients (expected ",
              fn.num_outputs(), ", got ", grads.size(), ")");
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge &e = fn.next_edges()[i];
    Tensor &g = grads[i];
    if (!e.is_valid() || !g.defined())
      continue;
    const InputMetadata &m = e.function->input_metadata(e.input_nr);
    if (g.sizes() != IntArrayRef(m.shape)) {
      EMBER_CHECK(is_expandable_to(m.shape, g.sizes()), "Function ", fn.name(),
                  " returned an invalid gradient at index ", i, " - got ",
                  g.sizes(), " but expected shape compatible with ", m.shape);
      g = sum_to(g, m.shape);
    }
    EMBER_CHECK(g.device() == m.device, "Function ", fn.name(),
                " returned an invalid gradient at index ", i,
                " - expected device ", m.device, " but got ", g.device());
    if (g.dtype() != m.dtype)
      g = g.to(m.dtype);
  }
}

struct CompareSeq {
  bool operator()(Node *a, Node *b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

struct GraphTask {
  bool keep_graph = false;
  /// Non-empty: run only these nodes (the ones on a path to a target).
  std::unordered_set<Node *> needed;
  bool filter = false;
  /// grad(): gradients captured at (node, input_nr) into results[idx].
  struct Capture {
    uint32_t input_nr;
    size_t idx;
  };
  std::unordered_map<Node *, std::vector<Capture>> captures;
  variable_list captured;
  /// grad_at_edges(): nodes that never run (nor anything behind them).
  std::unordered_set<Node *> cut;
};

/// Counts, for every node reachable from root (not through a node of
/// `cut`), how many edges lead to it.
std::unordered_map<Node *, int>
compute_dependencies(Node *root, const std::unordered_set<Node *> &cut) {
  std::unordered_map<Node *, int> deps;
  std::unordered_set<Node *> seen{root};
  std::vector<Node *> stack{root};
  while (!stack.empty()) {
    Node *n = stack.back();
    stack.pop_back();
    if (cut.count(n))
      continue;
    for (const Edge &e : n->next_edges()) {
      Node *m = e.function.get();
      if (!m)
        continue;
      ++deps[m];
      if (seen.insert(m).second)
        stack.push_back(m);
    }
  }
  return deps;
}

/// Marks the nodes from which some target is reachable (iterative DFS).
std::unordered_set<Node *>
nodes_leading_to(Node *root, const std::unordered_set<Node *> &targets) {
  std::unordered_set<Node *> needed;
  std::unordered_set<Node *> visited;
  // Post-order: (node, next child index).
  std::vector<std::pair<Node *, size_t>> stack{{root, 0}};
  visited.insert(root);
  while (!stack.empty()) {
    auto &[n, i] = stack.back();
    if (i < n->next_edges().size()) {
      Node *m = n->next_edges()[i++].function.get();
      if (m && visited.insert(m).second)
        stack.push_back({m, 0});
      continue;
    }
    bool need = targets.count(n) > 0;
    for (const Edge &e : n->next_edges())
      need = need || (e.function && needed.count(e.function.get()));
    if (need)
      needed.insert(n);
    stack.pop_back();
  }
  return needed;
}

thread_local bool tls_keep_graph = false;

void execute(const std::shared_ptr<Node> &root, GraphTask &task) {
  struct KeepGraph { // (nested backward calls restore the outer one's)
    bool was = tls_keep_graph;
    ~KeepGraph() { tls_keep_graph = was; }
  } restore;
  tls_keep_graph = task.keep_graph;
  auto deps = compute_dependencies(root.get(), task.cut);
  std::unordered_map<Node *, variable_list> buffers;
  std::priority_queue<Node *, std::vector<Node *>, CompareSeq> ready;
  ready.push(root.get());
  while (!ready.empty()) {
    Node *fn = ready.top();
    ready.pop();
    variable_list inputs;
    if (auto it = buffers.find(fn); it != buffers.end()) {
      inputs = std::move(it->second);
      buffers.erase(it);
    }
    inputs.resize(fn->num_inputs());
    // (a node at the cut of grad_at_edges runs its hooks when it runs)
    if (fn->has_grad_hooks() && !task.cut.count(fn))
      fn->run_grad_hooks(inputs);
    if (auto it = task.captures.find(fn); it != task.captures.end())
      for (const auto &c : it->second) {
        Tensor &slot = task.captured[c.idx];
        const Tensor &g = inputs[c.input_nr];
        if (g.defined())
          slot = slot.defined() ? slot + g : g;
      }
    if ((task.filter && !task.needed.count(fn)) || task.cut.count(fn))
      continue;
    variable_list outputs;
    {
      std::optional<profiler::record_function> rf;
      if (profiler::active())
        rf.emplace(fn->name(), profiler::RecordScope::BACKWARD_FUNCTION);
      outputs = (*fn)(std::move(inputs));
    }
    if (!task.keep_graph)
      fn->release_variables();
    validate_outputs(*fn, outputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Edge &e = fn->next_edges()[i];
      if (!e.is_valid())
        continue;
      Node *next = e.function.get();
      variable_list &buf = buffers[next];
      if (buf.size() < next->num_inputs())
        buf.resize(next->num_inputs());
      Tensor &slot = buf[e.input_nr];
      Tensor &g = outputs[i];
      if (g.defined())
        slot = slot.defined() ? slot + g : std::move(g);
      if (--deps[next] == 0)
        ready.push(next);
    }
  }
}

/// The roots' edges and gradients, checked as PyTorch does.
void make_roots(const variable_list &tensors, const variable_list &grads,
                edge_list &edges, variable_list &root_grads) {
  EMBER_CHECK(grads.empty() || grads.size() == tensors.size(), "got ",
              grads.size(), " gradients for ", tensors.size(),
              " tensors; pass one gradient per tensor (or none)");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &t = tensors[i];
    EMBER_CHECK(t.defined(), "element ", i, " of tensors is undefined");
    Edge e = gradient_edge(t);
    EMBER_CHECK(e.is_valid(), "element ", i,
                " of tensors does not require grad and does not have a "
                "grad_fn");
    Tensor g = i < grads.size() ? grads[i] : Tensor();
    if (!g.defined()) {
      EMBER_CHECK(t.numel() == 1,
                  "grad can be implicitly created only for scalar outputs "
                  "(this tensor has shape ",
                  t.sizes(), "): pass a gradient of the same shape");
      g = ones_like(t);
    } else {
      EMBER_CHECK(g.sizes() == t.sizes(), "Mismatch in shape: grad_output[", i,
                  "] has a shape of ", g.sizes(), " and output[", i,
                  "] has a shape of ", t.sizes(), ".");
      EMBER_CHECK(g.device() == t.device(), "invalid gradient at index ", i,
                  " - expected device ", t.device(), " but got ", g.device());
    }
    edges.push_back(std::move(e));
    root_grads.push_back(std::move(g));
  }
}

/// The GraphRoot of a backward from `tensors` with `grads`.
std::shared_ptr<GraphRoot> make_root(const variable_list &tensors,
                                     const variable_list &grads) {
  edge_list roots;
  variable_list root_grads;
  make_roots(tensors, grads, roots, root_grads);
  return std::make_shared<GraphRoot>(std::move(roots), std::move(root_grads));
}

} // namespace

namespace {

// Note [Deep re-entrant backward]
// backward() called from a hook or a custom Function's backward runs a
// whole engine inside the outer one, on the same stack: 10,000 levels
// overflow it. As libtorch, a backward started deeper than
// kMaxReentrantDepth moves to a new thread, with the caller's thread-local
// state (grad mode, dispatch keys, modes, saved-tensor hooks), and the
// caller waits for it; that thread counts its depth from 0 again. Errors
// reach the caller as they would on its own thread.
constexpr int kMaxReentrantDepth = 32;
thread_local int tls_backward_depth = 0;

variable_list run_backward_here(const variable_list &tensors,
                                const variable_list &grad_tensors,
                                bool keep_graph, bool create_graph,
                                const variable_list &inputs, bool accumulate,
                                bool allow_unused);

} // namespace

variable_list run_backward(const variable_list &tensors,
                           const variable_list &grad_tensors, bool keep_graph,
                           bool create_graph, const variable_list &inputs,
                           bool accumulate, bool allow_unused) {
  // compile() records a backward pass run inside the function as ops of its
  // graph, whose own gradients the joint graph does not take: a second
  // derivative through them would be silently wrong. torch.compile does not
  // support double backward either.
  EMBER_CHECK_TYPED(
      NotImplementedError, !(create_graph && is_capturing()),
      "backward or autograd::grad with create_graph=true inside a compiled "
      "function is not supported (compile() does not differentiate the "
      "backward it records, as torch.compile does not support double "
      "backward): take higher-order gradients outside the compiled function, "
      "or run this function without compile()");
  if (tls_backward_depth < kMaxReentrantDepth) {
    ++tls_backward_depth;
    struct Leave {
      ~Leave() { --tls_backward_depth; }
    } leave;
    variable_list r =
        run_backward_here(tensors, grad_tensors, keep_graph, create_graph,
                          inputs, accumulate, allow_unused);
    if (accumulate && is_capturing() && detail::capture_after_backward_fn)
      detail::capture_after_backward_fn();
    return r;
  }
  ThreadLocalState state;
  variable_list result;
  std::exception_ptr error;
  std::thread worker;
  try {
    worker = std::thread([&] {
      ThreadLocalState::set(state);
      try {
        result = run_backward(tensors, grad_tensors, keep_graph, create_graph,
                              inputs, accumulate, allow_unused);
      } catch (...) {
        error = std::current_exception();
      }
    });
  } catch (const std::system_error &e) {
    throw Error(detail::str(
        "backward: a re-entrant backward (called from a hook or a custom "
        "Function) nested this deep runs on a new thread, and none could be "
        "started (",
        e.what(), "); nest backward calls less deeply"));
  }
  worker.join();
  if (error)
    std::rethrow_exception(error);
  return result;
}

namespace {

variable_list run_backward_here(const variable_list &tensors,
                                const variable_list &grad_tensors,
                                bool keep_graph, bool create_graph,
                                const variable_list &inputs, bool accumulate,
                                bool allow_unused) {
  auto root = make_root(tensors, grad_tensors);
  GraphTask task;
  task.keep_graph = keep_graph;
  std::vector<Tensor> nonleaf_inputs; // backward(inputs=) on non-leaves
  edge_list input_edges;
  if (!inputs.empty()) {
    std::unordered_set<Node *> targets;
    task.captured.resize(inputs.size());
    input_edges.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor &t = inputs[i];
      EMBER_CHECK(t.defined() && t.requires_grad(),
                  "One of the differentiated Tensors does not require grad");
      // Kept alive for the whole backward: an input the graph does not
      // use gets a fresh accumulator that nothing else owns.
      const Edge &e = input_edges.emplace_back(gradient_edge(t));
      if (accumulate && t.is_leaf()) {
        targets.insert(e.function.get()); // run its AccumulateGrad
        continue;
      }
      task.captures[e.function.get()].push_back({e.input_nr, i});
      targets.insert(e.function.get());
      if (accumulate)
        nonleaf_inputs.push_back(t);
    }
    task.filter = true;
    task.needed = nodes_leading_to(root.get(), targets);
    // A node where a gradient is only captured need not run, unless it
    // leads on to another target.
    const std::unordered_set<Node *> all_needed = task.needed;
    for (const auto &[n, c] : task.captures) {
      bool leads_on = false;
      for (const Edge &e : n->next_edges())
        leads_on =
            leads_on || (e.function && all_needed.count(e.function.get()));
      if (!leads_on)
        task.needed.erase(n);
    }
  }
  {
    AutoGradMode mode(create_graph);
    // Note [Autocast]: backward ops run in the dtypes the forward chose.
    autocast::StateGuard no_autocast(autocast::disabled_state());
    execute(root, task);
  }
  if (!accumulate) {
    if (!allow_unused)
      for (const Tensor &g : task.captured)
        EMBER_CHECK(g.defined(),
                    "One of the differentiated Tensors appears to not have "
                    "been used in the graph. Set allow_unused=True if this "
                    "is the desired behavior.");
    return task.captured;
  }
  for (size_t i = 0, j = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_leaf())
      continue;
    const Tensor &g = task.captured[i];
    Tensor &dst = nonleaf_inputs[j++].mutable_grad();
    if (g.defined())
      dst = dst.defined() ? dst + g : g.clone();
  }
  return {};
}

} // namespace

void backward(const variable_list &tensors, const variable_list &grad_tensors,
              std::optional<bool> retain_graph, bool create_graph,
              const variable_list &inputs) {
  run_backward(tensors, grad_tensors, retain_graph.value_or(create_graph),
               create_graph, inputs, /*accumulate=*/true, false);
}

bool current_graph_task_keep_graph() { return tls_keep_graph; }

variable_list grad_at_edges(const variable_list &outputs,
                            const variable_list &grad_outputs,
                            const edge_list &cut) {
  auto root = make_root(outputs, grad_outputs);
  GraphTask task;
  task.keep_graph = true;
  task.captured.resize(cut.size());
  for (size_t i = 0; i < cut.size(); ++i) {
    if (!cut[i].is_valid())
      continue;
    task.captures[cut[i].function.get()].push_back({cut[i].input_nr, i});
    task.cut.insert(cut[i].function.get());
  }
  AutoGradMode mode(false);
  execute(root, task);
  return task.captured;
}

variable_list grad(const variable_list &outputs, const variable_list &inputs,
                   const variable_list &grad_outputs,
                   std::optional<bool> retain_graph, bool create_graph,
                   bool allow_unused) {
  EMBER_CHECK(!inputs.empty(), "grad requires at least one input");
  return run_backward(outputs, grad_outputs,
                      retain_graph.value_or(create_graph), create_graph, inputs,
                      /*accumulate=*/false, allow_unused);
}

} // namespace ember::autograd
