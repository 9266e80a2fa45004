#include "codegen/Lower.h"

#include "codegen/CudaFusion.h"
#include "codegen/CudaRender.h"
#include "codegen/ScalarLibrary.h"
#include "eager/Dtype.h"
#include "eager/Meta.h"
#include "eager/cuda/Pointwise.h"
#include "ir/Domain.h"
#include "ir/Queries.h"
#include "ir/Types.h"
#include "passes/FusionTarget.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <mutex>

namespace ember::codegen {

namespace {

using mlir::Operation;
using mlir::Value;

ir::ValueType type_of(Value v) { return ir::value_type(v.getType()); }

const char *generator_name(Generator g) {
  return g == Generator::Cpu ? "the CPU generator" : "the CUDA generator";
}

/// A fake tensor of a value (meta functions read only its metadata): a
/// wrapped number stays one, so type promotion sees it as eager does.
Tensor fake_of(Value v) {
  ir::ValueType t = type_of(v);
  auto c = llvm::dyn_cast_or_null<ir::ConstantOp>(v.getDefiningOp());
  if (c && c.getWrappedNumber())
    return meta::fake_wrapped_number(t.dtype);
  return meta::fake(t.sizes, t.dtype);
}

/// A pointwise op of the table, read from the IR: its tensor operands and
/// Scalar arguments in schema order, and the dtype it computes in.
struct PointwiseCall {
  const OperatorHandle *op = nullptr;
  std::vector<Value> tensors;
  std::vector<Scalar> scalars;
  ScalarType compute = ScalarType::Undefined;
};

/// Reads a pointwise op; why not, or "".
std::string read_pointwise(Operation *op, PointwiseCall &call, Generator g) {
  const OperatorHandle *h = ir::table_op(op);
  const meta::PointwiseSpec *spec = h ? meta::find_pointwise_spec(*h) : nullptr;
  std::string name = op->getName().getStringRef().str();
  if (!spec || op->getNumResults() != 1)
    return name + " is not an op " + generator_name(g) +
           " fuses (a pointwise op, a conversion, a sum, mean, amax or amin)";
  call.op = h;
  const FunctionSchema &s = h->schema();
  std::vector<ir::OperandGroup> groups =
      ir::operand_groups(s, op->getNumOperands(), op->getAttrDictionary());
  for (size_t i = 0; i < s.arguments.size(); ++i) {
    const Argument &a = s.arguments[i];
    switch (ir::arg_kind(a)) {
    case ir::ArgKind::Tensor:
      call.tensors.push_back(op->getOperand(groups[i].begin));
      break;
    case ir::ArgKind::Attribute:
      if (a.type == "Scalar") {
        call.scalars.push_back(ir::attr_arg(op, *h, i).toScalar());
        break;
      }
      [[fallthrough]];
    default:
      return name + " has an argument '" + a.name + "' " + generator_name(g) +
             " cannot pass";
    }
  }
  std::vector<Tensor> fakes;
  for (Value v : call.tensors)
    fakes.push_back(fake_of(v));
  std::vector<const Tensor *> tensors;
  for (const Tensor &t : fakes)
    tensors.push_back(&t);
  std::vector<const Scalar *> scalars;
  for (const Scalar &s : call.scalars)
    scalars.push_back(&s);
  call.compute = meta::pointwise(*spec, tensors, scalars, nullptr).compute;
  if (spec->nonzero_divisor >= 0 && !isFloatingType(call.compute))
    return name + " divides integers: a zero divisor must raise, which only "
                  "the eager kernel checks";
  if (g == Generator::Cuda) {
    const cuda::Functor *f = cuda_functor(*h);
    if (!f)
      return name + " has no device functor";
    if (!in_group(call.compute, f->group))
      return name + " does not compute in " +
             std::string(toString(call.compute));
    return "";
  }
  if (!has_pointwise_function(*h, call.compute))
    return name + " has no scalar library function for compute dtype " +
           std::string(toString(call.compute));
  return "";
}

/// Whether a value is where generator `g` runs: the CPU, or the CUDA device
/// of the op's first operand (or result).
std::string misplaced(Operation *op, Generator g) {
  std::string name = op->getName().getStringRef().str();
  std::optional<Device> cuda;
  auto check = [&](Value v, const char *verb) -> std::string {
    Device d = type_of(v).device;
    if (g == Generator::Cpu) {
      if (!d.is_cpu())
        return name + " " + verb + " a value on " + d.str() + ", not the CPU";
      return "";
    }
    if (!d.is_cuda())
      return name + " " + verb + " a value on " + d.str() +
             ", not a CUDA device";
    if (!cuda)
      cuda = d;
    if (*cuda != d)
      return name + " " + verb + " values on " + cuda->str() + " and " +
             d.str();
    return "";
  };
  for (Value v : op->getOperands()) {
    // A wrapped number is a CPU 0-dim value beside CUDA ones, as in eager
    // (a literal of the kernel).
    auto c = llvm::dyn_cast_or_null<ir::ConstantOp>(v.getDefiningOp());
    if (g == Generator::Cuda && c && c.getWrappedNumber())
      continue;
    if (std::string why = check(v, "reads"); !why.empty())
      return why;
  }
  for (Value v : op->getResults())
    if (std::string why = check(v, "gives"); !why.empty())
      return why;
  return "";
}

/// Why the CPU generator does not compute `op`, or ""; a pointwise op is
/// read into `call` on the way.
std::string unsupported(Operation *op, PointwiseCall &call, Generator g) {
  std::string name = op->getName().getStringRef().str();
  // The CPU generator's dtypes are the scalar library's; the CUDA one's
  // every dtype the device prelude declares (all of ember's).
  auto covered = [&](ScalarType dt) {
    return g == Generator::Cuda || find_dtype_tag(dt) != nullptr;
  };
  auto lacks = [&](ScalarType dt) {
    return name + " has dtype " + std::string(toString(dt)) +
           ", which the scalar library does not cover";
  };
  if (std::string why = misplaced(op, g); !why.empty())
    return why;
  if (std::optional<ir::ReductionOp> r = ir::reduction_of(op)) {
    bool max = r->info->kind == ReductionInfo::Amax ||
               r->info->kind == ReductionInfo::Amin;
    if (max && type_of(op->getResult(0)).dtype == kBool)
      return name + " of bool";
    ir::ValueType in = type_of(op->getOperand(0));
    int64_t folded = 1;
    for (size_t d = 0; d < in.sizes.size(); ++d)
      if (r->folded[d])
        folded *= in.sizes[d];
    if (max && folded == 0)
      return name + " of an empty dim raises, which the eager kernel reports";
    return covered(compute_dtype(in.dtype)) ? "" : lacks(in.dtype);
  }
  if (op->hasTrait<ir::OpTrait::Conversion>()) {
    for (Value v : {op->getOperand(0), Value(op->getResult(0))})
      if (!covered(type_of(v).dtype))
        return lacks(type_of(v).dtype);
    return "";
  }
  return read_pointwise(op, call, g);
}

/// unsupported(), with an Error raised on the way (a malformed attribute)
/// as the reason.
std::string checked(Operation *op, PointwiseCall &call, Generator g) {
  try {
    return unsupported(op, call, g);
  } catch (const Error &e) {
    return op->getName().getStringRef().str() + ": " + e.what();
  }
}

/// A code generator as a fusion target (Note [Per-op capability]); with no
/// generator ("auto"), the one of each op's device: CUDA for an op of CUDA
/// values, else the CPU's.
class GeneratorTarget final : public passes::FusionTarget {
public:
  explicit GeneratorTarget(std::optional<Generator> g) : g_(g) {}
  std::string name() const override {
    return !g_ ? "auto" : *g_ == Generator::Cpu ? "cpu" : "cuda";
  }
  std::string unsupported(Operation *op) const override {
    PointwiseCall call;
    std::string why = checked(op, call, generator(op));
    // The fusion pass asks the weight of the op it just asked about: kept
    // from this reading (the op's shape rule need not run again).
    last_op_ = why.empty() ? op : nullptr;
    last_weight_ = weight_of(call);
    return why;
  }
  int64_t weight(Operation *op) const override {
    if (op == last_op_)
      return last_weight_;
    PointwiseCall call;
    if (!checked(op, call, generator(op)).empty())
      return 1;
    return weight_of(call);
  }

private:
  Generator generator(Operation *op) const {
    if (g_)
      return *g_;
    return on_cuda(op) ? Generator::Cuda : Generator::Cpu;
  }

  /// The scalar library's size of the op's function: the CPU kernel's
  /// measure, and the CUDA one's proxy (the same expression). Conversions
  /// and folds: about an add each.
  static int64_t weight_of(const PointwiseCall &call) {
    if (!call.op || !has_pointwise_function(*call.op, call.compute))
      return 1;
    return pointwise_weight(*call.op, call.compute);
  }

  std::optional<Generator> g_;
  // Per thread: the pass may run on several functions at once.
  static thread_local Operation *last_op_;
  static thread_local int64_t last_weight_;
};
thread_local Operation *GeneratorTarget::last_op_ = nullptr;
thread_local int64_t GeneratorTarget::last_weight_ = 1;

} // namespace

std::string cpu_unsupported(Operation *op) {
  PointwiseCall call;
  return checked(op, call, Generator::Cpu);
}

std::string cuda_unsupported(Operation *op) {
  PointwiseCall call;
  return checked(op, call, Generator::Cuda);
}

std::string lower_fusion(Operation *fusion_op, KernelSpec &k, Generator g) {
  auto fusion = llvm::dyn_cast<ir::FusionOp>(fusion_op);
  EMBER_CHECK(fusion,
              "lower_fusion: ", fusion_op->getName().getStringRef().str(),
              " is not an ember.fusion");
  mlir::Block &body = fusion.getBody().front();
  auto yield = llvm::cast<ir::YieldOp>(body.getTerminator());
  if (yield.getValues().empty())
    return "the fusion has no results";
  if (llvm::any_of(body,
                   [](Operation &op) { return llvm::isa<ir::FusionOp>(op); }))
    return "it is a fusion of fusions, whose inner fusions are kernels of "
           "their own (Note [Combined kernels] in codegen/CpuFusion.cpp)";
  // The iteration space: the operand of the first fold (Note [Reduction
  // kernels] in codegen/Kernel.h), or the results' shape.
  for (Operation &op : body.without_terminator())
    if (std::optional<ir::ReductionOp> r = ir::reduction_of(&op)) {
      k.shape = type_of(op.getOperand(0)).sizes;
      if (k.shape.empty())
        return op.getName().getStringRef().str() + " reduces a 0-dim tensor";
      k.reduced = r->folded;
      break;
    }
  if (!k.has_reduction()) {
    // The results' one shape. Shapes that differ only in size-1 dims ([]
    // and [1, 1, 1]) lay their elements out alike: the space is the one
    // of most dims.
    k.reduced.clear();
    auto squeezed = [](std::vector<int64_t> s) {
      s.erase(std::remove(s.begin(), s.end(), int64_t(1)), s.end());
      return s;
    };
    k.shape = type_of(yield.getValues()[0]).sizes;
    for (Value v : yield.getValues()) {
      const std::vector<int64_t> &s = type_of(v).sizes;
      if (squeezed(s) != squeezed(k.shape))
        return "its results have different shapes";
      if (s.size() > k.shape.size())
        k.shape = s;
    }
  }
  ir::Domain domain{k.shape, k.reduced};
  llvm::DenseMap<Value, int> id;
  for (mlir::BlockArgument a : body.getArguments()) {
    ir::ValueType t = type_of(a);
    std::vector<int64_t> strides, extent;
    if (!k.strides_over(t.sizes, contiguous_strides(t.sizes), strides, &extent))
      return detail::str("an input of shape ", IntArrayRef(t.sizes),
                         " does not fit the iteration space ",
                         IntArrayRef(k.shape));
    id[a] = k.input(t.dtype, std::move(strides), std::move(extent));
  }
  for (Operation &op : body.without_terminator()) {
    std::string name = op.getName().getStringRef().str();
    if (auto c = llvm::dyn_cast<ir::ConstantOp>(op)) {
      if (!c.getWrappedNumber())
        return "it holds a constant tensor";
      auto dense = llvm::cast<mlir::DenseElementsAttr>(c.getValue());
      id[c.getResult()] =
          k.constant(type_of(c.getResult()).dtype,
                     ir::scalar_of(dense.getSplatValue<mlir::Attribute>()));
      continue;
    }
    PointwiseCall call; // filled for a pointwise op
    if (std::string why = checked(&op, call, g); !why.empty())
      return why;
    ir::ValueType rt = type_of(op.getResult(0));
    if (std::optional<ir::ReductionOp> r = ir::reduction_of(&op)) {
      if (type_of(op.getOperand(0)).sizes != k.shape || r->folded != k.reduced)
        return name + " folds other dims or another shape than the fusion's "
                      "first reduction";
      // Sums accumulate in double or int64, max and min in the compute
      // type of the dtype (Note [Reduction kernels] in codegen/Kernel.h).
      bool sums = r->info->kind == ReductionInfo::Sum ||
                  r->info->kind == ReductionInfo::Mean;
      ScalarType acc = !sums                      ? compute_dtype(rt.dtype)
                       : isFloatingType(rt.dtype) ? kDouble
                                                  : kLong;
      id[op.getResult(0)] = k.reduce(r->info->kind, id.lookup(op.getOperand(0)),
                                     rt.dtype, acc, rt.dtype);
      continue;
    }
    if (k.has_reduction())
      // Note [Reduction fusion] (ir/Domain.h): each operand read as the
      // kernel indexes it.
      for (Value v : op.getOperands())
        if (!domain.reads_as_indexed(type_of(v).sizes, rt.sizes,
                                     llvm::isa<mlir::BlockArgument>(v)))
          return name + " broadcasts an operand of shape " +
                 detail::str(IntArrayRef(type_of(v).sizes)) +
                 " along other dims than the fusion's kernel indexes it by";
    if (op.hasTrait<ir::OpTrait::Conversion>()) {
      id[op.getResult(0)] = k.convert(id.lookup(op.getOperand(0)), rt.dtype);
      continue;
    }
    std::vector<int> args;
    for (Value v : call.tensors)
      args.push_back(id.lookup(v));
    id[op.getResult(0)] =
        k.step(*call.op, std::move(args), call.scalars, call.compute, rt.dtype);
  }
  if (g == Generator::Cuda) {
    // One device for the whole kernel (the fusion pass never mixes them;
    // a hand-written fusion may), and its pointers within CUDA's 4 KB of
    // kernel parameters.
    std::vector<Value> values(body.getArguments().begin(),
                              body.getArguments().end());
    values.insert(values.end(), yield.getValues().begin(),
                  yield.getValues().end());
    for (Value v : values) {
      Device d = type_of(v).device;
      if (d != type_of(values[0]).device)
        return "its values are on " + type_of(values[0]).device.str() +
               " and " + d.str() + "; a kernel runs on one device";
    }
    size_t pointers = body.getNumArguments() + yield.getValues().size();
    if (pointers > kMaxCudaKernelPointers)
      return detail::str(
          "the kernel would take ", pointers, " pointers; CUDA passes at most ",
          kMaxCudaKernelPointers, " (4 KB of kernel parameters)");
  }
  for (Value v : yield.getValues()) {
    int value = id.lookup(v);
    int64_t n = multiply_sizes(type_of(v).sizes);
    if (n != (k.is_full(value) ? k.numel() : k.output_numel()))
      return detail::str("a result of shape ", IntArrayRef(type_of(v).sizes),
                         " is neither the iteration space nor its kept "
                         "points");
    k.outputs.push_back(value);
  }
  return "";
}

void register_fusion_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    passes::register_fusion_target(
        std::make_shared<GeneratorTarget>(Generator::Cpu));
    passes::register_fusion_target(
        std::make_shared<GeneratorTarget>(Generator::Cuda));
    passes::register_fusion_target(
        std::make_shared<GeneratorTarget>(std::nullopt));
  });
}

} // namespace ember::codegen
