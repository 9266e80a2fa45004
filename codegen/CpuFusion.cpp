#include "codegen/CpuFusion.h"

#include "codegen/Kernel.h"
#include "eager/Factory.h"
#include "eager/Meta.h"

#include <mutex>
#include <sstream>

namespace ember::codegen {

namespace {

/// Strides (in elements) of `t` read over `shape` with broadcasting: 0 on
/// the dims `t` lacks or has as 1.
std::vector<int64_t> strides_over(IntArrayRef tsizes, IntArrayRef tstrides,
                                  IntArrayRef shape) {
  std::vector<int64_t> st(shape.size(), 0);
  int64_t lead = int64_t(shape.size()) - int64_t(tsizes.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t td = int64_t(d) - lead;
    if (td >= 0 && tsizes[size_t(td)] != 1)
      st[d] = tstrides[size_t(td)];
  }
  return st;
}

class CpuFusionKernel final : public ir::Kernel {
public:
  CpuFusionKernel(KernelSpec spec, std::vector<ir::ValueType> outputs,
                  CompiledKernel compiled)
      : spec_(std::move(spec)), outputs_(std::move(outputs)),
        compiled_(std::move(compiled)) {}

  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const override {
    EMBER_CHECK(inputs.size() == spec_.inputs.size(), "kernel ", name(),
                " takes ", spec_.inputs.size(), " inputs, got ", inputs.size());
    // The kernel was compiled for contiguous inputs; other strides (an
    // input that is a view) get a variant, compiled once and cached.
    const CompiledKernel *k = &compiled_;
    CompiledKernel variant;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (strides_over(inputs[i].sizes(), inputs[i].strides(), spec_.shape) ==
          spec_.inputs[i].strides)
        continue;
      KernelSpec s = spec_;
      for (size_t j = 0; j < inputs.size(); ++j)
        s.inputs[j].strides =
            strides_over(inputs[j].sizes(), inputs[j].strides(), s.shape);
      variant = compile_kernel(s);
      k = &variant;
      break;
    }
    std::vector<Tensor> outs;
    std::vector<char *> ptrs;
    for (const ir::ValueType &t : outputs_) {
      outs.push_back(empty(t.sizes, TensorOptions(t.dtype).device(t.device)));
      ptrs.push_back(static_cast<char *>(outs.back().data_ptr()));
    }
    for (const Tensor &t : inputs)
      ptrs.push_back(static_cast<char *>(t.data_ptr()));
    k->run(ptrs.data());
    return outs;
  }

  std::string name() const override { return "cpu " + compiled_.name; }

private:
  KernelSpec spec_;
  std::vector<ir::ValueType> outputs_;
  CompiledKernel compiled_;
};

/// Why `body` is not a CPU kernel ("" if it is), and its spec.
std::string build_spec(const ir::Trace &body, KernelSpec &k) {
  if (body.outputs.empty())
    return "the fusion has no results";
  const ir::ValueType &out0 = body.types[size_t(body.outputs[0])];
  for (int o : body.outputs)
    if (body.types[size_t(o)].sizes != out0.sizes)
      return "its results have different shapes";
  for (const ir::ValueType &t : body.types)
    if (!t.device.is_cpu())
      return "a value is on " + t.device.str() + ", not the CPU";
  k.shape = out0.sizes;
  std::vector<int> id(body.types.size(), -1);
  std::vector<Tensor> fakes(body.types.size());
  for (const ir::Input &in : body.inputs) {
    const ir::ValueType &t = body.types[size_t(in.value)];
    id[size_t(in.value)] = k.input(
        t.dtype,
        strides_over(t.sizes, ember::contiguous_strides(t.sizes), k.shape));
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
  for (int o : body.outputs)
    k.outputs.push_back(id[size_t(o)]);
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
