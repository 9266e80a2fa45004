#include "codegen/CpuFusion.h"

#include "codegen/Kernel.h"
#include "codegen/Lower.h"
#include "eager/Factory.h"
#include "ir/Dialect.h"
#include "ir/Types.h"

#include "mlir/IR/Operation.h"

#include <algorithm>
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

  std::vector<Tensor>
  run_reusing(const std::vector<Tensor> &inputs,
              const std::vector<int> &reuse) const override {
    EMBER_CHECK(inputs.size() == spec_.inputs.size(), "kernel ", name(),
                " takes ", spec_.inputs.size(), " inputs, got ", inputs.size());
    // Results written in place: the planned input, when nothing but the
    // caller's list holds it (no view of it, no other reference) and it is
    // contiguous with the result's shape and dtype. An entry -(k + 2) is an
    // input the graph overwrites with the result (ir::Node::reuse): other
    // references do not matter, only its layout.
    std::vector<int> in_place(outputs_.size(), -1);
    for (size_t o = 0; o < reuse.size() && o < outputs_.size(); ++o) {
      bool overwrite = reuse[o] <= -2;
      int k = overwrite ? -reuse[o] - 2 : reuse[o];
      if (k < 0 || size_t(k) >= inputs.size())
        continue;
      const Tensor &t = inputs[size_t(k)];
      bool layout = t.is_contiguous() && t.dtype() == outputs_[o].dtype &&
                    t.sizes() == IntArrayRef(outputs_[o].sizes);
      // (and the whole of its storage: a result is a new tensor, Note
      // [Outputs are new tensors] in frontend/Executor.cpp)
      if (layout &&
          (overwrite ||
           (t.use_count() == 1 && t.storage().use_count() == 1 &&
            t.storage_offset() == 0 && t.nbytes() == t.storage().nbytes())))
        in_place[o] = k;
    }
    // The kernel was compiled for contiguous inputs and separate results;
    // other strides (an input that is a view) and results in place get a
    // variant, compiled once and kept here (no spec copy or cache-key
    // string on the call path).
    Variant want;
    want.strides.resize(inputs.size());
    for (size_t j = 0; j < inputs.size(); ++j)
      spec_.strides_over(inputs[j].sizes(), inputs[j].strides(),
                         want.strides[j]);
    if (std::count(in_place.begin(), in_place.end(), -1) !=
        std::ptrdiff_t(in_place.size()))
      want.output_inputs = in_place;
    const CompiledKernel *k = &variant(want);
    std::vector<Tensor> outs;
    std::vector<char *> ptrs;
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const ir::ValueType &t = outputs_[o];
      outs.push_back(
          in_place[o] >= 0
              ? inputs[size_t(in_place[o])]
              : empty(t.sizes, TensorOptions(t.dtype).device(t.device)));
      ptrs.push_back(static_cast<char *>(outs.back().data_ptr()));
    }
    for (const Tensor &t : inputs)
      ptrs.push_back(static_cast<char *>(t.data_ptr()));
    k->run(ptrs.data());
    return outs;
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

} // namespace

FusionCompile compile_cpu_fusion(mlir::Operation *fusion, bool keep_ir) {
  FusionCompile r;
  KernelSpec spec;
  try {
    r.why_not = lower_fusion(fusion, spec);
    if (!r.why_not.empty())
      return r;
    // The buffer plan (ember-plan-memory): results written into the inputs
    // it names are what a call almost always does, so that is the kernel
    // compiled now; the variant for a buffer that cannot be reused at run
    // time (something else holds it) is compiled when first needed.
    if (auto reuse =
            fusion->getAttrOfType<mlir::DenseI64ArrayAttr>(ir::kReuseAttr)) {
      std::vector<int> plan(reuse.asArrayRef().begin(),
                            reuse.asArrayRef().end());
      if (std::count(plan.begin(), plan.end(), -1) !=
          std::ptrdiff_t(plan.size()))
        spec.output_inputs = std::move(plan);
    }
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
    r.kernel = std::make_shared<CpuFusionKernel>(std::move(spec),
                                                 std::move(outs), std::move(c));
  } catch (const Error &e) {
    r.kernel = nullptr;
    r.why_not = e.what();
  }
  return r;
}

} // namespace ember::codegen
