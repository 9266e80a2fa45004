#include "frontend/Executor.h"

#include "eager/autograd/GradMode.h"

#include "eager/Factory.h"
#include "eager/Meta.h"
#include "runtime/Profiler.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace ember::frontend {

namespace {
/// Strides that place every element where `want` does (they may differ on
/// dims of size 1, which move nothing).
bool same_layout(const Tensor &t, IntArrayRef want) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) != want[size_t(d)])
      return false;
  return true;
}
} // namespace

Program::Program(ir::Trace trace) : trace_(std::move(trace)) {
  const size_t nvalues = trace_.types.size();
  keep_.assign(nvalues, false);
  for (int v : trace_.outputs)
    keep_[v] = true;
  for (const ir::Mutation &m : trace_.mutations)
    keep_[m.value] = true;
  // Inputs belong to the caller; freeing our handle early is harmless, but
  // an input is never run in place.
  input_of_.assign(nvalues, -1);
  for (size_t i = 0; i < trace_.inputs.size(); ++i) {
    keep_[trace_.inputs[i].value] = true;
    input_of_[size_t(trace_.inputs[i].value)] = int(i);
  }
  for (const ir::Constant &c : trace_.constants) {
    const ir::ValueType &t = trace_.types[c.value];
    if (c.tensor.defined()) {
      constants_.push_back(c.tensor);
    } else {
      Tensor k =
          scalar_tensor(c.scalar, TensorOptions(t.dtype).device(t.device));
      k.unsafeGetTensorImpl()->set_wrapped_number(true);
      constants_.push_back(k);
    }
    keep_[c.value] = true;
  }
  // Last use of every value.
  std::vector<int> last(nvalues, -1);
  for (size_t i = 0; i < trace_.nodes.size(); ++i)
    for (const ir::Arg &a : trace_.nodes[i].args) {
      if (a.kind == ir::Arg::Kind::Value && a.value >= 0)
        last[a.value] = int(i);
      else if (a.kind == ir::Arg::Kind::ValueList)
        for (int v : a.values)
          if (v >= 0)
            last[v] = int(i);
    }
  steps_.resize(trace_.nodes.size());
  for (size_t i = 0; i < trace_.nodes.size(); ++i) {
    Step &s = steps_[i];
    s.node = &trace_.nodes[i];
    if (s.node->op) {
      const auto &args = s.node->op->schema().arguments;
      s.inplace = !args.empty() && args[0].is_write;
    } else if (!s.node->kernel) {
      s.body = std::make_shared<const Program>(*s.node->body);
      s.kernel_name = "fusion run eagerly";
    } else {
      s.kernel_name = s.node->kernel->name();
    }
    // Results nobody reads are freed at once.
    for (int r : s.node->results)
      if (last[r] < 0 && !keep_[r])
        s.free_after.push_back(r);
  }
  for (size_t v = 0; v < nvalues; ++v)
    if (last[v] >= 0 && !keep_[v])
      steps_[last[v]].free_after.push_back(int(v));
  // Inputs that are not also outputs, mutated or read after the steps.
  std::vector<bool> held(nvalues, false);
  for (int v : trace_.outputs)
    held[size_t(v)] = true;
  for (const ir::Mutation &m : trace_.mutations) {
    held[size_t(m.value)] = true;
    held[size_t(trace_.inputs[size_t(m.input)].value)] = true;
  }
  for (const ir::Input &in : trace_.inputs)
    if (last[in.value] >= 0 && !held[size_t(in.value)])
      steps_[last[in.value]].free_inputs_after.push_back(in.value);
}

namespace {
/// The bytes a tensor's elements span, as [first, last) addresses.
std::pair<uintptr_t, uintptr_t> span_of(const Tensor &t) {
  auto first = reinterpret_cast<uintptr_t>(t.data_ptr());
  uintptr_t extent = t.element_size();
  for (int64_t d = 0; d < t.dim(); ++d)
    extent +=
        uintptr_t(t.size(d) - 1) * uintptr_t(t.stride(d)) * t.element_size();
  return {first, first + extent};
}

/// Per input: whether another of `inputs` shares memory with it (their
/// elements' address ranges: conservative for strided tensors); true for
/// an undefined or empty one. Once per call, O(n log n): asked per
/// in-place write with a scan of every input, a compiled step over
/// thousands of parameters was quadratic.
std::vector<char> overlapping(const std::vector<Tensor> &inputs) {
  std::vector<char> out(inputs.size(), 1);
  // One node per tensor (the same tensor passed twice shares with itself
  // only).
  struct Node {
    uintptr_t a0, a1;
    bool overlaps = false;
  };
  std::vector<Node> nodes;
  std::unordered_map<const void *, size_t> node_of;
  std::vector<size_t> which(inputs.size(), SIZE_MAX);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    if (!t.defined() || t.numel() == 0)
      continue;
    auto [it, fresh] =
        node_of.try_emplace(t.unsafeGetTensorImpl(), nodes.size());
    if (fresh) {
      auto [a0, a1] = span_of(t);
      nodes.push_back({a0, a1});
    }
    which[i] = it->second;
  }
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return nodes[a].a0 < nodes[b].a0; });
  uintptr_t reach = 0; // the furthest end of the ranges before
  for (size_t j = 0; j < order.size(); ++j) {
    Node &n = nodes[order[j]];
    n.overlaps = (j > 0 && n.a0 < reach) ||
                 (j + 1 < order.size() && nodes[order[j + 1]].a0 < n.a1);
    reach = std::max(reach, n.a1);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (which[i] != SIZE_MAX)
      out[i] = nodes[which[i]].overlaps;
  return out;
}
} // namespace

std::vector<Tensor> Program::run(const std::vector<Tensor> &inputs) const {
  std::vector<Tensor> in = inputs;
  return run_impl(in, false);
}

std::vector<Tensor> Program::run_consuming(std::vector<Tensor> inputs) const {
  return run_impl(inputs, true);
}

std::vector<Tensor> Program::run_impl(std::vector<Tensor> &inputs,
                                      bool consume) const {
  EMBER_CHECK(inputs.size() == trace_.inputs.size(), "graph ", trace_.name,
              " expects ", trace_.inputs.size(), " inputs, got ",
              inputs.size());
  // Steps run the eager kernels, never the capture of an enclosing call,
  // nor autocast: the graph holds the casts autocast made when it was
  // captured (Note [Autocast] in eager/amp/Autocast.h).
  ExcludeDispatchKeyGuard no_capture(DispatchKeySet(DispatchKey::Capture) |
                                     DispatchKey::Autocast);
  // (computed at the first in-place write of an argument)
  std::vector<char> overlap;
  auto overlaps_another = [&](size_t i) {
    if (overlap.empty())
      overlap = overlapping(inputs);
    return overlap[i] != 0;
  };
  // Note [Graphs run without autograd]
  // A graph's ops record no autograd history when it runs: the history of
  // a compiled graph's results is one CompiledFunctionBackward node, made
  // by capture (Note [The joint graph] in frontend/Capture.cpp), whose
  // backward is another program. The graph runs after the function's own
  // NoGradGuard (if any) has ended, so it runs under one itself: writing a
  // mutation back into a leaf that requires grad (an optimizer step under
  // NoGradGuard) is as legal as it was eagerly.
  NoGradGuard no_grad;
  std::vector<Tensor> env(trace_.types.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    env[trace_.inputs[i].value] = inputs[i];
  if (consume) // the environment holds them alone (mutated ones stay)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (std::none_of(
              trace_.mutations.begin(), trace_.mutations.end(),
              [&](const ir::Mutation &m) { return m.input == int(i); }))
        inputs[i] = Tensor();
  for (size_t i = 0; i < constants_.size(); ++i)
    env[trace_.constants[i].value] = constants_[i];

  Stack stack;
  for (const Step &s : steps_) {
    const ir::Node &n = *s.node;
    stack.clear();
    stack.reserve(n.args.size());
    for (size_t i = 0; i < n.args.size(); ++i) {
      const ir::Arg &a = n.args[i];
      switch (a.kind) {
      case ir::Arg::Kind::Value:
        if (a.value < 0) {
          stack.emplace_back();
        } else if (i == 0 && s.inplace) {
          // Value semantics: write into a copy unless this is the value's
          // last use and nothing else can see its buffer.
          Tensor &self = env[a.value];
          bool exclusive = !keep_[a.value] &&
                           std::find(s.free_after.begin(), s.free_after.end(),
                                     a.value) != s.free_after.end() &&
                           self.use_count() == 1 &&
                           self.storage().use_count() == 1;
          stack.emplace_back(exclusive ? self : self.clone());
        } else {
          stack.emplace_back(env[a.value]);
        }
        break;
      case ir::Arg::Kind::ValueList: {
        std::vector<Tensor> l;
        l.reserve(a.values.size());
        for (int v : a.values)
          l.push_back(v >= 0 ? env[v] : Tensor());
        stack.emplace_back(std::move(l));
        break;
      }
      case ir::Arg::Kind::Attr:
        stack.push_back(a.attr);
        break;
      }
    }
    if (!n.op) {
      // A fusion: its arguments are values, its results the kernel's (or
      // the body's) outputs.
      std::vector<Tensor> in;
      in.reserve(stack.size());
      for (IValue &v : stack)
        in.push_back(std::move(v.toTensor()));
      stack.clear();
      std::vector<Tensor> outs;
      // (a compiled kernel is a row of the profiler's, as Inductor's are
      // in PyTorch's; a fusion run eagerly is one too, around its ops')
      profiler::record_function row(s.kernel_name,
                                    profiler::RecordScope::FUNCTION);
      if (s.body) {
        outs = s.body->run(in);
      } else if (n.reuse.empty()) {
        outs = n.kernel->run(in);
      } else {
        // The buffer plan: an input planned for reuse that dies here is
        // handed over (the environment lets go of it), so that the kernel
        // sees it held only by `in` and may write into it.
        // A graph input planned for reuse is one the graph overwrites with
        // that result (ember-plan-memory): the kernel writes into it
        // whoever else holds it (CpuFusion's -(k + 2) entries).
        std::vector<int> reuse = n.reuse;
        for (int &k : reuse) {
          if (k < 0)
            continue;
          int v = n.args[size_t(k)].value;
          if (int i = input_of_[size_t(v)]; i >= 0)
            // (only when no other input shares its memory this call: a
            // replayed graph, or tensors over one buffer from from_blob)
            k = overlaps_another(size_t(i)) ? -1 : -k - 2;
          else if (!keep_[v] &&
                   std::find(s.free_after.begin(), s.free_after.end(), v) !=
                       s.free_after.end())
            env[v] = Tensor();
        }
        outs = n.kernel->run_reusing(in, reuse);
      }
      for (Tensor &t : outs)
        stack.emplace_back(std::move(t));
    } else {
      n.op->callBoxed(stack);
    }
    EMBER_INTERNAL_ASSERT(stack.size() >= n.results.size());
    size_t r = 0;
    for (IValue &v : stack) {
      if (v.isTensor()) {
        if (r < n.results.size())
          env[n.results[r++]] = v.toTensor();
      } else if (v.isTensorList()) {
        for (const Tensor &t : v.toTensorList())
          if (r < n.results.size())
            env[n.results[r++]] = t;
      }
    }
    EMBER_INTERNAL_ASSERT(r == n.results.size());
    for (int v : s.free_after)
      env[v] = Tensor();
    if (consume)
      for (int v : s.free_inputs_after)
        env[v] = Tensor();
  }

  for (const ir::Mutation &m : trace_.mutations) {
    const Tensor &dst = inputs[m.input];
    if (!dst.is_same(env[m.value]))
      dst.copy_(env[m.value]);
    else if (m.value != trace_.inputs[size_t(m.input)].value)
      dst.unsafeGetTensorImpl()->bump_version(); // written in place
  }
  // Note [Outputs are new tensors]
  // Capture makes every output a root: a tensor the user's code created,
  // sharing memory with nothing else the call returns or received, laid out
  // as eager lays it out, the whole of its own storage (views of outputs
  // are rebuilt from them: as_strided reads storage offsets). After folding
  // (x * 1 -> x), CSE or a view step an output can be an input, a constant,
  // another output, or a view of one of those, and a fused kernel lays out
  // its results as it likes; such an output is copied into a new tensor
  // with eager's strides, so that writing one never writes another and
  // `.view()` and as_strided work as they do eagerly.
  std::vector<Tensor> out;
  out.reserve(trace_.outputs.size());
  // The storages an output must not share (a set: an optimizer step over
  // thousands of parameters has thousands of inputs and outputs).
  std::unordered_set<const StorageImpl *> held;
  auto hold = [&](const Tensor &t) {
    if (t.defined())
      held.insert(t.storage().unsafeGetStorageImpl());
  };
  for (const ir::Input &in : trace_.inputs)
    hold(env[in.value]);
  for (const Tensor &c : constants_)
    hold(c);
  for (size_t k = 0; k < trace_.outputs.size(); ++k) {
    Tensor t = env[trace_.outputs[k]];
    if (k >= plain_from_) {
      out.push_back(std::move(t));
      continue;
    }
    DimVector want = k < trace_.output_strides.size()
                         ? DimVector(trace_.output_strides[k])
                         : (any_layout_ && !meta::has_internal_overlap(t)
                                ? DimVector(t.strides())
                                : contiguous_strides(t.sizes()));
    bool fresh = !held.count(t.storage().unsafeGetStorageImpl()) &&
                 t.storage_offset() == 0 &&
                 (!t.storage().defined() ||
                  t.storage().nbytes() == size_t(t.numel()) * t.itemsize());
    if (!fresh || !same_layout(t, want)) {
      Tensor copy = empty_strided(t.sizes(), want, t.options());
      copy.copy_(t);
      t = std::move(copy);
    } else if (t.strides() != IntArrayRef(want)) {
      // The same layout (strides differ on size-1 dims only): eager's.
      t = t.as_strided(t.sizes(), want, t.storage_offset());
    }
    hold(t);
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace ember::frontend
