#include "codegen/CpuFusion.h"

#include "codegen/Kernel.h"
#include "eager/Factory.h"
#include "eager/Meta.h"
#include "eager/OpTraits.h"
#include "eager/Reduction.h"
#include "eager/WrapDim.h"
#include "ir/Domain.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>

namespace ember::codegen {

namespace {

/// Strides (in elements) of a tensor over the kernel's iteration space, as
/// the kernel indexes it (ir::Domain::dims_of: broadcast right-aligned, or
/// a reduction's result in the kept form along the kept dims), and its
/// extent along each dim. False when the tensor fits neither.
bool domain_strides(const KernelSpec &k, IntArrayRef tsizes,
                    IntArrayRef tstrides, std::vector<int64_t> &out,
                    std::vector<int64_t> *extent = nullptr) {
  ir::Domain d{k.shape, k.reduced};
  std::vector<int> dims = d.dims_of(tsizes);
  out.assign(k.shape.size(), 0);
  if (extent)
    extent->assign(k.shape.size(), 1);
  for (size_t i = 0; i < tsizes.size(); ++i) {
    if (tsizes[i] == 1)
      continue;
    if (dims[i] < 0 || tsizes[i] != k.shape[size_t(dims[i])])
      return false;
    out[size_t(dims[i])] = tstrides[i];
    if (extent)
      (*extent)[size_t(dims[i])] = tsizes[i];
  }
  return true;
}

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
    // contiguous with the result's shape and dtype.
    std::vector<int> in_place(outputs_.size(), -1);
    for (size_t o = 0; o < reuse.size() && o < outputs_.size(); ++o) {
      int k = reuse[o];
      if (k < 0 || size_t(k) >= inputs.size())
        continue;
      const Tensor &t = inputs[size_t(k)];
      // (and the whole of its storage: a result is a new tensor, Note
      // [Outputs are new tensors] in frontend/Executor.cpp)
      if (t.use_count() == 1 && t.storage().use_count() == 1 &&
          t.is_contiguous() && t.storage_offset() == 0 &&
          t.nbytes() == t.storage().nbytes() &&
          t.dtype() == outputs_[o].dtype &&
          t.sizes() == IntArrayRef(outputs_[o].sizes))
        in_place[o] = k;
    }
    // The kernel was compiled for contiguous inputs and separate results;
    // other strides (an input that is a view) and results in place get a
    // variant, compiled once and kept here (no spec copy or cache-key
    // string on the call path).
    Variant want;
    want.strides.resize(inputs.size());
    for (size_t j = 0; j < inputs.size(); ++j)
      domain_strides(spec_, inputs[j].sizes(), inputs[j].strides(),
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

  std::string name() const override { return "cpu " + compiled_.name; }

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

/// The dims a reduce node folds (ReductionInfo::dim of its arguments).
std::vector<bool> folded_dims(const ir::Node &n, const ReductionInfo &info,
                              size_t rank) {
  std::vector<bool> mask(rank, info.dim < 0);
  if (info.dim >= 0) {
    const IValue &dims = n.args[size_t(info.dim)].attr;
    if (dims.isNone() || dims.toIntList().empty())
      mask.assign(rank, true);
    else
      for (int64_t d : dims.toIntList())
        mask[size_t(maybe_wrap_dim(d, int64_t(rank)))] = true;
  }
  return mask;
}

/// Why `body` is not a CPU kernel ("" if it is), and its spec.
std::string build_spec(const ir::Trace &body, KernelSpec &k) {
  if (body.outputs.empty())
    return "the fusion has no results";
  for (const ir::ValueType &t : body.types)
    if (!t.device.is_cpu())
      return "a value is on " + t.device.str() + ", not the CPU";
  // The iteration space: the reduced tensor of the first reduction (Note
  // [Reduction kernels]), or the results' shape.
  for (const ir::Node &n : body.nodes) {
    const ReductionInfo *info = n.op ? find_reduction(*n.op) : nullptr;
    if (!info)
      continue;
    k.shape = body.types[size_t(n.args[0].value)].sizes;
    if (k.shape.empty())
      return n.op->name() + " reduces a 0-dim tensor";
    k.reduced = folded_dims(n, *info, k.shape.size());
    break;
  }
  if (!k.has_reduction()) {
    k.reduced.clear();
    const ir::ValueType &out0 = body.types[size_t(body.outputs[0])];
    for (int o : body.outputs)
      if (body.types[size_t(o)].sizes != out0.sizes)
        return "its results have different shapes";
    k.shape = out0.sizes;
  }
  std::vector<int> id(body.types.size(), -1);
  std::vector<Tensor> fakes(body.types.size());
  for (const ir::Input &in : body.inputs) {
    const ir::ValueType &t = body.types[size_t(in.value)];
    std::vector<int64_t> st, extent;
    if (!domain_strides(k, t.sizes, ember::contiguous_strides(t.sizes), st,
                        &extent))
      return detail::str("an input of shape ", IntArrayRef(t.sizes),
                         " does not fit the iteration space ",
                         IntArrayRef(k.shape));
    id[size_t(in.value)] = k.input(t.dtype, std::move(st), std::move(extent));
    fakes[size_t(in.value)] = meta::fake(t.sizes, t.dtype);
  }
  for (const ir::Constant &c : body.constants) {
    if (c.tensor.defined())
      return "it holds a constant tensor";
    ScalarType dt = body.types[size_t(c.value)].dtype;
    id[size_t(c.value)] = k.constant(dt, c.scalar);
    fakes[size_t(c.value)] = meta::fake_wrapped_number(dt);
  }
  for (const ir::Node &n : body.nodes) {
    if (!n.op)
      return "it holds a fusion";
    if (const ReductionInfo *info = find_reduction(*n.op)) {
      const ir::ValueType &in = body.types[size_t(n.args[0].value)];
      const ir::ValueType &rt = body.types[size_t(n.results.at(0))];
      if (in.sizes != k.shape ||
          folded_dims(n, *info, k.shape.size()) != k.reduced)
        return n.op->name() +
               " folds other dims or another shape than the fusion's first "
               "reduction";
      bool max = info->kind == ReductionInfo::Amax ||
                 info->kind == ReductionInfo::Amin;
      if (max && rt.dtype == kBool)
        return n.op->name() + " of bool";
      if (max && k.reduced_numel() == 0)
        return n.op->name() +
               " of an empty dim raises, which the eager kernel reports";
      static const char *const kNames[] = {"sum", "mean", "amax", "amin"};
      ScalarType acc = isFloatingType(rt.dtype) ? kDouble : kLong;
      id[size_t(n.results[0])] =
          k.reduce(kNames[info->kind], id[size_t(n.args[0].value)], rt.dtype,
                   acc, rt.dtype);
      fakes[size_t(n.results[0])] = meta::fake(rt.sizes, rt.dtype);
      continue;
    }
    if (k.has_reduction()) {
      // Note [Reduction fusion] (ir/Domain.h): each operand read as the
      // kernel indexes it.
      ir::Domain d{k.shape, k.reduced};
      const std::vector<int64_t> &out =
          body.types[size_t(n.results.at(0))].sizes;
      for (const ir::Arg &a : n.args)
        if (a.kind == ir::Arg::Kind::Value && a.value >= 0 &&
            !d.reads_as_indexed(body.types[size_t(a.value)].sizes, out))
          return n.op->name() + " broadcasts an operand of shape " +
                 detail::str(IntArrayRef(body.types[size_t(a.value)].sizes)) +
                 " along other dims than the fusion's kernel indexes it by";
    }
    if (is_conversion(*n.op)) {
      const ir::ValueType &in = body.types[size_t(n.args[0].value)];
      const ir::ValueType &rt = body.types[size_t(n.results.at(0))];
      if (in.device != rt.device)
        return n.op->name() + " moves to another device";
      id[size_t(n.results[0])] =
          k.convert(id[size_t(n.args[0].value)], rt.dtype);
      fakes[size_t(n.results[0])] = meta::fake(rt.sizes, rt.dtype);
      continue;
    }
    const meta::PointwiseSpec *spec = meta::find_pointwise_spec(*n.op);
    if (!spec || n.results.size() != 1)
      return n.op->name() + " is not a pointwise op";
    std::vector<const Tensor *> tensors;
    std::vector<int> args;
    std::vector<Scalar> scalars;
    std::vector<const Scalar *> promoting;
    const auto &schema = n.op->schema().arguments;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const ir::Arg &a = n.args[i];
      if (a.kind == ir::Arg::Kind::Value) {
        if (a.value < 0)
          return n.op->name() + " has an absent tensor argument";
        tensors.push_back(&fakes[size_t(a.value)]);
        args.push_back(id[size_t(a.value)]);
      } else if (a.kind == ir::Arg::Kind::Attr && i < schema.size() &&
                 schema[i].type == "Scalar") {
        scalars.push_back(a.attr.toScalar());
      } else {
        return n.op->name() + " has an argument the CPU backend cannot pass";
      }
    }
    for (size_t i = 0; i < scalars.size(); ++i)
      if ((spec->promote_scalars >> i) & 1u)
        promoting.push_back(&scalars[i]);
    meta::PointwiseMeta pm =
        meta::pointwise(*spec, tensors, promoting, nullptr);
    if (spec->nonzero_divisor >= 0 &&
        !isFloatingType(pm.compute)) // the eager kernel raises on zero
      return n.op->name() +
             " divides integers: division by zero must raise, which only the "
             "eager kernel checks";
    const ir::ValueType &rt = body.types[size_t(n.results[0])];
    id[size_t(n.results[0])] =
        k.step(n.op->name(), args, scalars, pm.compute, rt.dtype);
    fakes[size_t(n.results[0])] = meta::fake(rt.sizes, rt.dtype);
  }
  for (int o : body.outputs) {
    int64_t n = multiply_sizes(body.types[size_t(o)].sizes);
    if (n != (k.is_full(id[size_t(o)]) ? k.numel() : k.output_numel()))
      return detail::str("a result of shape ",
                         IntArrayRef(body.types[size_t(o)].sizes),
                         " is neither the iteration space nor its kept "
                         "points");
    k.outputs.push_back(id[size_t(o)]);
  }
  return "";
}

} // namespace

FusionCompile compile_cpu_fusion(const ir::Trace &body, bool keep_ir) {
  FusionCompile r;
  KernelSpec spec;
  try {
    r.why_not = build_spec(body, spec);
    if (!r.why_not.empty())
      return r;
    CompileKernelOptions o;
    o.keep_ir = keep_ir;
    CompiledKernel c = compile_kernel(spec, o);
    r.llvm_ir = c.llvm_ir;
    r.compile_seconds = c.compile_seconds;
    r.origin = c.origin;
    r.spec = spec.str();
    std::vector<ir::ValueType> outs;
    for (int v : body.outputs)
      outs.push_back(body.types[size_t(v)]);
    r.kernel = std::make_shared<CpuFusionKernel>(std::move(spec),
                                                 std::move(outs), std::move(c));
  } catch (const Error &e) {
    r.kernel = nullptr;
    r.why_not = e.what();
  }
  return r;
}

} // namespace ember::codegen
