#include "codegen/Kernel.h"

#include "codegen/CpuJit.h"
#include "eager/Factory.h"
#include "eager/TensorImpl.h"
#include "runtime/Error.h"
#include "runtime/ThreadPool.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace ember::codegen {

// --- KernelSpec --------------------------------------------------------------

int KernelSpec::input(ScalarType dtype, std::vector<int64_t> strides) {
  EMBER_CHECK(strides.size() == shape.size(),
              "KernelSpec::input: ", strides.size(), " strides for a ",
              shape.size(), "-d iteration space");
  inputs.push_back({dtype, std::move(strides)});
  values.push_back({Value::Kind::Input, int(inputs.size()) - 1});
  return int(values.size()) - 1;
}

int KernelSpec::constant(ScalarType dtype, Scalar value) {
  constants.push_back({dtype, value});
  values.push_back({Value::Kind::Constant, int(constants.size()) - 1});
  return int(values.size()) - 1;
}

int KernelSpec::step(std::string op, std::vector<int> args,
                     std::vector<Scalar> scalars, ScalarType compute,
                     ScalarType out) {
  for (int a : args)
    EMBER_CHECK(a >= 0 && a < int(values.size()), "KernelSpec::step: ", op,
                " reads value ", a, ", which is not defined yet");
  steps.push_back(
      {std::move(op), std::move(args), std::move(scalars), compute, out});
  values.push_back({Value::Kind::Step, int(steps.size()) - 1});
  return int(values.size()) - 1;
}

int KernelSpec::convert(int v, ScalarType dtype) {
  return step("convert", {v}, {}, dtype, dtype);
}

ScalarType KernelSpec::dtype(int v) const {
  const Value &x = values.at(size_t(v));
  switch (x.kind) {
  case Value::Kind::Input:
    return inputs[size_t(x.index)].dtype;
  case Value::Kind::Constant:
    return constants[size_t(x.index)].dtype;
  case Value::Kind::Step:
    break;
  }
  return steps[size_t(x.index)].out;
}

int64_t KernelSpec::numel() const { return multiply_sizes(shape); }

std::string KernelSpec::str() const {
  std::ostringstream os;
  os.precision(17);
  auto list = [&](const auto &v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i)
      os << (i ? ", " : "") << v[i];
    os << "]";
  };
  os << "kernel over ";
  list(shape);
  os << "\n";
  for (size_t v = 0; v < values.size(); ++v) {
    const Value &x = values[v];
    os << "  %" << v << " : " << dtype_tag(dtype(int(v))) << " = ";
    if (x.kind == Value::Kind::Input) {
      os << "input " << x.index << " strides ";
      list(inputs[size_t(x.index)].strides);
    } else if (x.kind == Value::Kind::Constant) {
      os << "constant " << constants[size_t(x.index)].value;
    } else {
      const Step &s = steps[size_t(x.index)];
      os << s.op << "(";
      for (size_t i = 0; i < s.args.size(); ++i)
        os << (i ? ", " : "") << "%" << s.args[i];
      for (const Scalar &c : s.scalars)
        os << ", " << c;
      os << ") compute " << dtype_tag(s.compute);
    }
    os << "\n";
  }
  os << "  outputs";
  for (int o : outputs)
    os << " %" << o;
  os << "\n";
  return os.str();
}

// --- CompiledKernel
// ------------------------------------------------------------

void CompiledKernel::run(char **ptrs) const {
  if (numel == 0)
    return;
  Fn f = fn;
  parallel_for(0, numel, kGrainSize,
               [&](int64_t b, int64_t e) { f(ptrs, b, e); });
}

// --- code generation
// ------------------------------------------------------------

namespace {

using llvm::IRBuilder;
using LValue = llvm::Value;

/// The iteration space after merging dims that every operand walks
/// contiguously (TensorIterator's coalescing): sizes and, per operand
/// (outputs then inputs), strides in elements; outer dims first.
struct Loops {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides; // [operand][dim]
};

Loops coalesce(const KernelSpec &k) {
  const size_t nops = k.outputs.size() + k.inputs.size();
  std::vector<std::vector<int64_t>> st(nops);
  // Outputs are contiguous (row-major over the shape).
  DimVector contiguous = contiguous_strides(k.shape);
  for (size_t o = 0; o < k.outputs.size(); ++o)
    st[o].assign(contiguous.begin(), contiguous.end());
  for (size_t i = 0; i < k.inputs.size(); ++i)
    st[k.outputs.size() + i] = k.inputs[i].strides;

  Loops l;
  for (size_t d = 0; d < k.shape.size(); ++d) {
    if (k.shape[d] == 1)
      continue; // size-1 dims move nothing
    if (!l.sizes.empty()) {
      // Merge into the previous (outer) dim when every operand's outer
      // stride is its inner stride times the inner size.
      bool merge = true;
      for (size_t op = 0; op < nops && merge; ++op)
        merge = l.strides[op].back() == st[op][d] * k.shape[d];
      if (merge) {
        l.sizes.back() *= k.shape[d];
        for (size_t op = 0; op < nops; ++op)
          l.strides[op].back() = st[op][d];
        continue;
      }
    }
    l.sizes.push_back(k.shape[d]);
    if (l.strides.empty())
      l.strides.resize(nops);
    for (size_t op = 0; op < nops; ++op)
      l.strides[op].push_back(st[op][d]);
  }
  if (l.sizes.empty()) { // a one-point space
    l.sizes.push_back(1);
    l.strides.assign(nops, std::vector<int64_t>{0});
  }
  return l;
}

class Emitter {
public:
  Emitter(const KernelSpec &k, KernelModule &km)
      : k_(k), ctx_(*km.ctx), m_(*km.module), b_(ctx_) {}

  llvm::Function *emit(const std::string &name) {
    auto *ptr = llvm::PointerType::get(ctx_, 0);
    auto *i64 = b_.getInt64Ty();
    auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64}, false);
    fn_ = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, name,
                                 m_);
    CpuJit::get().set_host_attributes(*fn_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::Argument *ptrs = fn_->getArg(0), *begin = fn_->getArg(1),
                   *end = fn_->getArg(2);
    ptrs->setName("ptrs");
    begin->setName("begin");
    end->setName("end");

    auto *entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    loops_ = coalesce(k_);
    const size_t nops = k_.outputs.size() + k_.inputs.size();
    for (size_t op = 0; op < nops; ++op) {
      LValue *slot = b_.CreateConstInBoundsGEP1_64(ptr, ptrs, op);
      base_.push_back(b_.CreateLoad(ptr, slot, "base" + std::to_string(op)));
    }
    prepare_constants();

    // for (i = begin; i < end; i += n): one run of the innermost dim.
    auto *head = llvm::BasicBlock::Create(ctx_, "outer", fn_);
    auto *body = llvm::BasicBlock::Create(ctx_, "outer.body", fn_);
    auto *exit = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode *i = b_.CreatePHI(i64, 2, "i");
    i->addIncoming(begin, entry);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), body, exit);
    b_.SetInsertPoint(body);
    const int64_t inner = loops_.sizes.back();
    LValue *in_start = b_.CreateSRem(i, b_.getInt64(inner), "inner.start");
    LValue *rest = b_.CreateSDiv(i, b_.getInt64(inner));
    // Offset (in elements) of each operand at point i.
    std::vector<LValue *> off(nops, b_.getInt64(0));
    for (size_t op = 0; op < nops; ++op)
      off[op] = b_.CreateMul(in_start, b_.getInt64(loops_.strides[op].back()));
    for (size_t d = loops_.sizes.size() - 1; d-- > 0;) {
      LValue *idx = b_.CreateSRem(rest, b_.getInt64(loops_.sizes[d]));
      rest = b_.CreateSDiv(rest, b_.getInt64(loops_.sizes[d]));
      for (size_t op = 0; op < nops; ++op)
        if (loops_.strides[op][d] != 0)
          off[op] = b_.CreateAdd(
              off[op], b_.CreateMul(idx, b_.getInt64(loops_.strides[op][d])));
    }
    LValue *avail = b_.CreateSub(b_.getInt64(inner), in_start);
    LValue *left = b_.CreateSub(end, i);
    LValue *n =
        b_.CreateSelect(b_.CreateICmpSLT(avail, left), avail, left, "n");
    emit_inner_loop(n, off);
    i->addIncoming(b_.CreateAdd(i, n), b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    b_.CreateRetVoid();
    return fn_;
  }

private:
  /// The innermost loop: t in [0, n), operand op at off[op] + t * stride.
  void emit_inner_loop(LValue *n, const std::vector<LValue *> &off) {
    auto *i64 = b_.getInt64Ty();
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *loop = llvm::BasicBlock::Create(ctx_, "inner", fn_);
    auto *done = llvm::BasicBlock::Create(ctx_, "inner.done", fn_);
    b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), loop, done);
    b_.SetInsertPoint(loop);
    llvm::PHINode *t = b_.CreatePHI(i64, 2, "t");
    t->addIncoming(b_.getInt64(0), pre);

    const size_t nout = k_.outputs.size();
    auto addr = [&](size_t op, ScalarType dt) {
      int64_t stride = loops_.strides[op].back();
      LValue *e = stride == 0
                      ? off[op]
                      : b_.CreateAdd(
                            off[op],
                            stride == 1 ? static_cast<LValue *>(t)
                                        : b_.CreateMul(t, b_.getInt64(stride)));
      return b_.CreateInBoundsGEP(memory_type(dt), base_[op], e);
    };
    std::vector<LValue *> vals(k_.values.size(), nullptr);
    for (size_t v = 0; v < k_.values.size(); ++v) {
      const KernelSpec::Value &x = k_.values[v];
      switch (x.kind) {
      case KernelSpec::Value::Kind::Input: {
        ScalarType dt = k_.inputs[size_t(x.index)].dtype;
        LValue *p = addr(nout + size_t(x.index), dt);
        vals[v] = load(dt, p);
        break;
      }
      case KernelSpec::Value::Kind::Constant:
        vals[v] = constants_[size_t(x.index)];
        break;
      case KernelSpec::Value::Kind::Step:
        vals[v] = step(k_.steps[size_t(x.index)], vals);
        break;
      }
    }
    for (size_t o = 0; o < nout; ++o) {
      ScalarType dt = k_.dtype(k_.outputs[o]);
      store(dt, vals[size_t(k_.outputs[o])], addr(o, dt));
    }
    LValue *next = b_.CreateAdd(t, b_.getInt64(1), "t.next", /*NUW=*/true,
                                /*NSW=*/true);
    t->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, n), loop, done);
    b_.SetInsertPoint(done);
  }

  llvm::Type *memory_type(ScalarType t) {
    switch (t) {
    case ScalarType::Bool:
    case ScalarType::Byte:
    case ScalarType::Char:
      return b_.getInt8Ty();
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16:
      return b_.getInt16Ty();
    case ScalarType::Int:
      return b_.getInt32Ty();
    case ScalarType::Long:
      return b_.getInt64Ty();
    case ScalarType::Float:
      return b_.getFloatTy();
    case ScalarType::Double:
      return b_.getDoubleTy();
    default:
      break;
    }
    EMBER_CHECK(false, "codegen: unsupported dtype");
    return nullptr;
  }

  llvm::Function *library(const std::string &name) {
    llvm::Function *f = m_.getFunction(name);
    EMBER_CHECK(f && !f->isDeclaration(), "codegen: the scalar library has no ",
                name, " (an op or dtype the CPU backend does not cover)");
    return f;
  }

  LValue *load(ScalarType dt, LValue *p) {
    LValue *raw = b_.CreateLoad(memory_type(dt), p);
    switch (dt) {
    case ScalarType::Bool:
      return b_.CreateICmpNE(raw, b_.getInt8(0));
    case ScalarType::Half:
      return b_.CreateCall(library("ember_load_f16"), {raw});
    case ScalarType::BFloat16:
      return b_.CreateCall(library("ember_load_bf16"), {raw});
    default:
      return raw;
    }
  }

  void store(ScalarType dt, LValue *v, LValue *p) {
    switch (dt) {
    case ScalarType::Bool:
      v = b_.CreateZExt(v, b_.getInt8Ty());
      break;
    case ScalarType::Half:
      v = b_.CreateCall(library("ember_store_f16"), {v});
      break;
    case ScalarType::BFloat16:
      v = b_.CreateCall(library("ember_store_bf16"), {v});
      break;
    default:
      break;
    }
    b_.CreateStore(v, p);
  }

  /// Eager's conversion of a register value from dtype `from` to `to`.
  LValue *cast(LValue *v, ScalarType from, ScalarType to) {
    if (from == to)
      return v;
    return b_.CreateCall(library(std::string("ember_cast_") + dtype_tag(from) +
                                 "_" + dtype_tag(to)),
                         {v});
  }

  /// The register constant a value of dtype `dt` holds after eager turns
  /// `s` into it (a one-element tensor filled with s, read back).
  llvm::Constant *register_constant(ScalarType dt, const Scalar &s) {
    Tensor t = scalar_tensor(s, TensorOptions(dt));
    const void *p = t.data_ptr();
    switch (dt) {
    case ScalarType::Bool:
      return b_.getInt1(*static_cast<const bool *>(p));
    case ScalarType::Byte:
      return b_.getInt8(*static_cast<const uint8_t *>(p));
    case ScalarType::Char:
      return b_.getInt8(uint8_t(*static_cast<const int8_t *>(p)));
    case ScalarType::Short:
      return b_.getInt16(uint16_t(*static_cast<const int16_t *>(p)));
    case ScalarType::Int:
      return b_.getInt32(uint32_t(*static_cast<const int32_t *>(p)));
    case ScalarType::Long:
      return b_.getInt64(uint64_t(*static_cast<const int64_t *>(p)));
    case ScalarType::Half:
      return llvm::ConstantFP::get(b_.getFloatTy(),
                                   float(*static_cast<const Half *>(p)));
    case ScalarType::BFloat16:
      return llvm::ConstantFP::get(b_.getFloatTy(),
                                   float(*static_cast<const BFloat16 *>(p)));
    case ScalarType::Float:
      return llvm::ConstantFP::get(b_.getFloatTy(),
                                   *static_cast<const float *>(p));
    case ScalarType::Double:
      return llvm::ConstantFP::get(b_.getDoubleTy(),
                                   *static_cast<const double *>(p));
    default:
      break;
    }
    EMBER_CHECK(false, "codegen: unsupported dtype");
    return nullptr;
  }

  void prepare_constants() {
    for (const KernelSpec::Constant &c : k_.constants)
      constants_.push_back(register_constant(c.dtype, c.value));
  }

  /// The register type's dtype for a library function's result type (the
  /// functor may return bool, its compute type, or a promoted int).
  ScalarType result_dtype(llvm::Type *t, ScalarType compute) {
    ScalarType c = compute_dtype(compute);
    if (t == memory_type(c) || (c == ScalarType::Bool && t->isIntegerTy(1)))
      return c;
    if (t->isIntegerTy(1))
      return ScalarType::Bool;
    if (t->isIntegerTy(32))
      return ScalarType::Int;
    if (t->isIntegerTy(64))
      return ScalarType::Long;
    if (t->isFloatTy())
      return ScalarType::Float;
    if (t->isDoubleTy())
      return ScalarType::Double;
    EMBER_CHECK(false, "codegen: unexpected scalar library result type");
    return c;
  }

  LValue *step(const KernelSpec::Step &s, const std::vector<LValue *> &vals) {
    if (s.op == "convert")
      return cast(vals[size_t(s.args.at(0))], k_.dtype(s.args[0]), s.out);
    llvm::Function *f = library(pointwise_function(s.op, s.compute));
    llvm::FunctionType *fty = f->getFunctionType();
    EMBER_CHECK(fty->getNumParams() == s.args.size() + s.scalars.size(),
                "codegen: ", s.op, " takes ",
                fty->getNumParams() - s.scalars.size(), " tensors and ",
                s.scalars.size(), " scalars? got ", s.args.size(),
                " tensor arguments");
    std::vector<LValue *> args;
    ScalarType c = compute_dtype(s.compute);
    for (size_t a = 0; a < s.args.size(); ++a) {
      // A bool parameter where the op does not compute in bool: a mask or
      // condition argument (read as bool, as the eager kernel reads it).
      bool as_bool = fty->getParamType(unsigned(a))->isIntegerTy(1) &&
                     c != ScalarType::Bool;
      ScalarType from = k_.dtype(s.args[a]);
      LValue *v = vals[size_t(s.args[a])];
      if (as_bool) {
        v = cast(v, from, ScalarType::Bool);
      } else {
        // Eager converts the input to the op's dtype, then reads it in its
        // compute type: a 16-bit float's register already is that float.
        v = cast(v, from, s.compute);
      }
      args.push_back(v);
    }
    for (const Scalar &x : s.scalars)
      args.push_back(register_constant(c, x));
    LValue *r = b_.CreateCall(f, args);
    return cast(r, result_dtype(fty->getReturnType(), s.compute), s.out);
  }

  const KernelSpec &k_;
  llvm::LLVMContext &ctx_;
  llvm::Module &m_;
  IRBuilder<> b_;
  llvm::Function *fn_ = nullptr;
  Loops loops_;
  std::vector<LValue *> base_;
  std::vector<llvm::Constant *> constants_;
};

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

} // namespace

CompiledKernel compile_kernel(const KernelSpec &spec,
                              const CompileKernelOptions &options) {
  EMBER_CHECK(!spec.outputs.empty(),
              "compile_kernel: the kernel has no outputs");
  CpuJit &jit = CpuJit::get();
  const std::string disk_key = spec.str() + jit.target();
  // (a kernel kept with its IR is a separate entry under its own symbol)
  std::string key = disk_key + (options.keep_ir ? " ir" : "");
  static std::mutex mu;
  static std::unordered_map<std::string, CompiledKernel> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
  }
  auto t0 = std::chrono::steady_clock::now();
  CompiledKernel k;
  k.numel = spec.numel();
  k.name = "ember_kernel_" + hex(std::hash<std::string>()(key));
  std::string why;
  void *fn =
      options.keep_ir ? nullptr : jit.load_cached(disk_key, k.name, &why);
  if (fn) {
    k.origin = "disk cache";
  } else {
    k.origin = why.find("disk cache entry") == 0 ? "compiled (" + why + ")"
                                                 : "compiled";
    KernelModule km = jit.new_module(k.name);
    Emitter(spec, km).emit(k.name);
    fn = jit.compile(std::move(km), k.name, disk_key,
                     options.keep_ir ? &k.llvm_ir : nullptr);
  }
  k.fn = reinterpret_cast<CompiledKernel::Fn>(fn);
  k.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::lock_guard<std::mutex> lock(mu);
  return cache.insert_or_assign(key, k).first->second;
}

} // namespace ember::codegen
