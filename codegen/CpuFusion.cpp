#include "codegen/CpuFusion.h"

#include "codegen/Kernel.h"
#include "codegen/Lower.h"
#include "eager/Factory.h"
#include "ir/Dialect.h"
#include "ir/Queries.h"
#include "ir/Types.h"
#include "runtime/DiskCache.h"

#include "mlir/IR/Operation.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>

namespace ember::codegen {

namespace {

class CpuFusionKernel final : public ir::Kernel {
public:
  CpuFusionKernel(KernelSpec spec, std::vector<ir::ValueType> outputs,
                  CompiledKernel compiled)
      : spec_(std::move(spec)), outputs_(std::move(outputs)),
        compiled_(std::move(compiled)) {}

  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const override {
    return run_reusing(inputs, {});
  }

  /// Output points.
  int64_t numel() const { return compiled_.numel; }

  std::vector<Tensor>
  run_reusing(const std::vector<Tensor> &inputs,
              const std::vector<int> &reuse) const override {
    Launch l = prepare(inputs, {}, reuse);
    l.kernel->run(l.ptrs.data());
    return std::move(l.outs);
  }

  /// One call's kernel (the variant its inputs need), results and
  /// pointers (the results', then the inputs').
  struct Launch {
    const CompiledKernel *kernel = nullptr;
    std::vector<Tensor> outs;
    std::vector<char *> ptrs;
  };
  /// The launch for the kernel's inputs `all[which[j]]` (`which` empty:
  /// `all` itself), with `reuse` as run_reusing's (in the kernel's own
  /// input numbers).
  Launch prepare(const std::vector<Tensor> &all, const std::vector<int> &which,
                 const std::vector<int> &reuse) const {
    auto input = [&](size_t j) -> const Tensor & {
      return which.empty() ? all[j] : all[size_t(which[j])];
    };
    const size_t n_in = which.empty() ? all.size() : which.size();
    EMBER_CHECK(n_in == spec_.inputs.size(), "kernel ", name(), " takes ",
                spec_.inputs.size(), " inputs, got ", n_in);
    std::vector<const Tensor *> ins(n_in);
    for (size_t j = 0; j < n_in; ++j)
      ins[j] = &input(j);
    std::vector<int> in_place = results_in_place(ins, outputs_, reuse);
    // The kernel was compiled for contiguous inputs and separate results;
    // other strides (an input that is a view) and results in place get a
    // variant, compiled once and kept here (no spec copy or cache-key
    // string on the call path).
    Variant want;
    want.strides.resize(n_in);
    for (size_t j = 0; j < n_in; ++j)
      spec_.strides_over(input(j).sizes(), input(j).strides(), want.strides[j]);
    if (std::count(in_place.begin(), in_place.end(), -1) !=
        std::ptrdiff_t(in_place.size()))
      want.output_inputs = in_place;
    Launch l;
    l.kernel = &variant(want);
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const ir::ValueType &t = outputs_[o];
      l.outs.push_back(
          in_place[o] >= 0
              ? input(size_t(in_place[o]))
              : empty(t.sizes, TensorOptions(t.dtype).device(t.device)));
      l.ptrs.push_back(static_cast<char *>(l.outs.back().data_ptr()));
    }
    for (size_t j = 0; j < n_in; ++j)
      l.ptrs.push_back(static_cast<char *>(input(j).data_ptr()));
    return l;
  }

  /// A split reduction's two kernels are both named (Note [Split
  /// reductions]): "cpu <partial> + <combine>".
  std::string name() const override {
    return "cpu " + compiled_.name +
           (compiled_.combine ? " + " + compiled_.combine->name : "");
  }

private:
  /// What a variant changes: each input's strides over the iteration
  /// space, and the results written in place (KernelSpec::output_inputs).
  struct Variant {
    std::vector<std::vector<int64_t>> strides;
    std::vector<int> output_inputs;
    bool operator==(const Variant &) const = default;
  };

  /// The kernel compiled for `v`: the one built with the fusion, or a
  /// variant compiled on first use.
  const CompiledKernel &variant(const Variant &v) const {
    bool base = v.output_inputs == spec_.output_inputs;
    for (size_t j = 0; base && j < v.strides.size(); ++j)
      base = v.strides[j] == spec_.inputs[j].strides;
    if (base)
      return compiled_;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &[key, kernel] : variants_)
      if (key == v)
        return *kernel;
    KernelSpec s = spec_;
    for (size_t j = 0; j < v.strides.size(); ++j)
      s.inputs[j].strides = v.strides[j];
    s.output_inputs = v.output_inputs;
    variants_.emplace_back(v,
                           std::make_unique<CompiledKernel>(compile_kernel(s)));
    return *variants_.back().second;
  }

  KernelSpec spec_;
  std::vector<ir::ValueType> outputs_;
  CompiledKernel compiled_;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<Variant, std::unique_ptr<CompiledKernel>>>
      variants_;
};

// Note [Combined kernels]
// ember-fuse-horizontal puts independent pointwise fusions (an optimizer's
// update of each parameter) into one fusion of fusions. Its kernel is the
// inner fusions' kernels, each compiled as any fusion (so a part shared by
// two graphs is compiled once), run as one launch: one parallel loop over
// their points laid end to end (run_combined in Kernel.cpp), where a
// launch each would start and join the thread pool once per parameter.
// This is Inductor's combo kernel and PyTorch's multi-tensor apply, which
// the CUDA generator will do with blocks. The parts run in no particular
// order, side by side: ember-plan-memory writes a part's result into an
// input only that part reads.
class CpuComboKernel final : public ir::Kernel {
public:
  struct Part {
    std::shared_ptr<const CpuFusionKernel> kernel;
    std::vector<int> inputs;  ///< per input of the part: the combo's input
    std::vector<int> results; ///< per result of the part: the combo's

    /// A plan of the combined fusion's results (input k, -(k + 2) for an
    /// argument the graph overwrites, or -1: ir::Node::reuse) as the part's
    /// own: its results, its input numbers (an input of another part is
    /// never planned: ember-plan-memory).
    std::vector<int> plan_of(const std::vector<int> &plan) const {
      std::vector<int> mine(results.size(), -1);
      for (size_t i = 0; i < results.size(); ++i) {
        int e =
            size_t(results[i]) < plan.size() ? plan[size_t(results[i])] : -1;
        bool overwrite = e <= -2;
        int k = overwrite ? -e - 2 : e;
        auto it = std::find(inputs.begin(), inputs.end(), k);
        if (k >= 0 && it != inputs.end()) {
          int j = int(it - inputs.begin());
          mine[i] = overwrite ? -j - 2 : j;
        }
      }
      return mine;
    }
  };
  CpuComboKernel(std::vector<Part> parts, size_t results)
      : parts_(std::move(parts)), results_(results) {
    // "cpu combined 4 kernels <hash>": its parts' names hashed (explain()
    // lists what each computes).
    std::string names;
    for (const Part &p : parts_)
      names += p.kernel->name();
    std::string hash = disk_cache::hex(std::hash<std::string>()(names));
    size_t nonempty = 0;
    for (const Part &p : parts_)
      nonempty += p.kernel->numel() > 0;
    name_ = detail::str("cpu combined ", nonempty, " kernels ", hash);
  }

  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const override {
    return run_reusing(inputs, {});
  }

  std::vector<Tensor>
  run_reusing(const std::vector<Tensor> &inputs,
              const std::vector<int> &reuse) const override {
    std::vector<CpuFusionKernel::Launch> launches;
    launches.reserve(parts_.size());
    for (const Part &p : parts_)
      launches.push_back(p.kernel->prepare(inputs, p.inputs, p.plan_of(reuse)));
    std::vector<const CompiledKernel *> kernels;
    std::vector<char **> ptrs;
    for (CpuFusionKernel::Launch &l : launches) {
      kernels.push_back(l.kernel);
      ptrs.push_back(l.ptrs.data());
    }
    run_combined(kernels, ptrs);
    std::vector<Tensor> outs(results_);
    for (size_t i = 0; i < parts_.size(); ++i)
      for (size_t r = 0; r < parts_[i].results.size(); ++r)
        outs[size_t(parts_[i].results[r])] = std::move(launches[i].outs[r]);
    return outs;
  }

  std::string name() const override { return name_; }

private:
  std::vector<Part> parts_;
  size_t results_;
  std::string name_;
};

} // namespace

std::vector<int> results_in_place(const std::vector<const Tensor *> &inputs,
                                  const std::vector<ir::ValueType> &results,
                                  const std::vector<int> &reuse) {
  std::vector<int> in_place(results.size(), -1);
  for (size_t o = 0; o < reuse.size() && o < results.size(); ++o) {
    bool overwrite = reuse[o] <= -2;
    int k = overwrite ? -reuse[o] - 2 : reuse[o];
    if (k < 0 || size_t(k) >= inputs.size())
      continue;
    const Tensor &t = *inputs[size_t(k)];
    bool layout = t.is_contiguous() && t.dtype() == results[o].dtype &&
                  t.sizes() == IntArrayRef(results[o].sizes);
    // (and the whole of its storage: a result is a new tensor, Note
    // [Outputs are new tensors] in frontend/Executor.cpp)
    if (layout &&
        (overwrite ||
         (t.use_count() == 1 && t.storage().use_count() == 1 &&
          t.storage_offset() == 0 && t.nbytes() == t.storage().nbytes())))
      in_place[o] = k;
  }
  return in_place;
}

namespace {

/// A fusion of one kernel (`plan`: its ember.reuse, or none).
std::shared_ptr<const CpuFusionKernel>
compile_single_fusion(mlir::Operation *fusion, std::vector<int> plan,
                      bool keep_ir, FusionCompile &r) {
  KernelSpec spec;
  r.why_not = lower_fusion(fusion, spec);
  if (!r.why_not.empty())
    return nullptr;
  // The buffer plan (ember-plan-memory): results written into the inputs
  // it names are what a call almost always does, so that is the kernel
  // compiled now; the variant for a buffer that cannot be reused at run
  // time (something else holds it) is compiled when first needed.
  if (std::count(plan.begin(), plan.end(), -1) != std::ptrdiff_t(plan.size()))
    spec.output_inputs = std::move(plan);
  CompileKernelOptions o;
  o.keep_ir = keep_ir;
  CompiledKernel c = compile_kernel(spec, o);
  r.llvm_ir = c.llvm_ir;
  r.compile_seconds = c.compile_seconds;
  r.origin = c.origin;
  r.spec = spec.str();
  std::vector<ir::ValueType> outs;
  for (mlir::Value v : fusion->getResults())
    outs.push_back(ir::value_type(v.getType()));
  return std::make_shared<CpuFusionKernel>(std::move(spec), std::move(outs),
                                           std::move(c));
}

/// A fusion of fusions (Note [Combined kernels]): each inner fusion
/// compiled on its own, run as one launch.
std::shared_ptr<const ir::Kernel>
compile_combined(ir::FusionOp fusion, const std::vector<ir::FusionOp> &inner,
                 const std::vector<int> &plan, bool keep_ir, FusionCompile &r) {
  auto yield =
      llvm::cast<ir::YieldOp>(fusion.getBody().front().getTerminator());
  std::vector<CpuComboKernel::Part> parts;
  llvm::DenseMap<mlir::Operation *, size_t> part_of;
  for (ir::FusionOp g : inner) {
    CpuComboKernel::Part p;
    for (mlir::Value in : g.getInputs())
      p.inputs.push_back(
          int(llvm::cast<mlir::BlockArgument>(in).getArgNumber()));
    p.results.assign(g.getNumResults(), -1);
    part_of[g] = parts.size();
    parts.push_back(std::move(p));
  }
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    auto res = llvm::cast<mlir::OpResult>(v);
    parts[part_of.at(res.getOwner())].results[res.getResultNumber()] = int(i);
  }
  size_t i = 0;
  std::vector<std::string> origins;
  for (ir::FusionOp g : inner) {
    CpuComboKernel::Part &p = parts[i++];
    FusionCompile one;
    p.kernel = compile_single_fusion(g, p.plan_of(plan), keep_ir, one);
    if (!p.kernel) {
      r.why_not = "an inner fusion: " + one.why_not;
      return nullptr;
    }
    r.llvm_ir += one.llvm_ir;
    r.compile_seconds += one.compile_seconds;
    r.spec += detail::str("-- part ", i, " of ", parts.size(), "\n", one.spec);
    if (!llvm::is_contained(origins, one.origin))
      origins.push_back(one.origin);
  }
  for (const std::string &o : origins)
    r.origin += (r.origin.empty() ? "" : ", ") + o;
  return std::make_shared<CpuComboKernel>(std::move(parts),
                                          fusion.getNumResults());
}

} // namespace

FusionCompile compile_cpu_fusion(mlir::Operation *fusion, bool keep_ir) {
  FusionCompile r;
  try {
    std::vector<int> plan;
    if (auto reuse =
            fusion->getAttrOfType<mlir::DenseI64ArrayAttr>(ir::kReuseAttr))
      plan.assign(reuse.asArrayRef().begin(), reuse.asArrayRef().end());
    // (a malformed fusion of fusions: inner_fusions says why, and it runs
    // eagerly)
    auto f = llvm::dyn_cast<ir::FusionOp>(fusion);
    std::vector<ir::FusionOp> inner =
        f ? ir::inner_fusions(f, &r.why_not) : std::vector<ir::FusionOp>();
    if (!inner.empty())
      r.kernel = compile_combined(f, inner, plan, keep_ir, r);
    else if (r.why_not.empty())
      r.kernel = compile_single_fusion(fusion, plan, keep_ir, r);
  } catch (const Error &e) {
    r.kernel = nullptr;
    r.why_not = e.what();
  }
  if (!r.kernel && r.why_not.empty())
    r.why_not = "no kernel"; // (every path above says why)
  return r;
}

} // namespace ember::codegen
