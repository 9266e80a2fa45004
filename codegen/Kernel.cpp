#include "codegen/Kernel.h"

#include "codegen/CpuJit.h"
#include "codegen/ScalarLibrary.h"
#include "eager/Factory.h"
#include "eager/Meta.h"
#include "eager/TensorImpl.h"
#include "ir/Domain.h"
#include "runtime/DiskCache.h"
#include "runtime/Error.h"
#include "runtime/ThreadPool.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

namespace ember::codegen {

// --- KernelSpec --------------------------------------------------------------

int KernelSpec::input(ScalarType dtype, std::vector<int64_t> strides,
                      std::vector<int64_t> extent) {
  EMBER_CHECK(strides.size() == shape.size(),
              "KernelSpec::input: ", strides.size(), " strides for a ",
              shape.size(), "-d iteration space");
  if (extent.empty())
    for (size_t d = 0; d < shape.size(); ++d)
      extent.push_back(strides[d] != 0 ? shape[d] : 1);
  EMBER_CHECK(extent.size() == shape.size(),
              "KernelSpec::input: ", extent.size(), " extents for a ",
              shape.size(), "-d iteration space");
  for (size_t d = 0; d < shape.size(); ++d)
    EMBER_CHECK(extent[d] == 1 || extent[d] == shape[d],
                "KernelSpec::input: extent ", extent[d], " of dim ", d,
                " is neither 1 nor the iteration space's ", shape[d]);
  inputs.push_back({dtype, std::move(strides), std::move(extent)});
  values.push_back({Value::Kind::Input, int(inputs.size()) - 1});
  return int(values.size()) - 1;
}

int KernelSpec::constant(ScalarType dtype, Scalar value) {
  constants.push_back({dtype, value});
  values.push_back({Value::Kind::Constant, int(constants.size()) - 1});
  return int(values.size()) - 1;
}

namespace {
int add_step(KernelSpec &k, KernelSpec::Step s) {
  for (int a : s.args)
    EMBER_CHECK(a >= 0 && a < int(k.values.size()), "KernelSpec: ", s.name(),
                " reads value ", a, ", which is not defined yet");
  k.steps.push_back(std::move(s));
  k.values.push_back({KernelSpec::Value::Kind::Step, int(k.steps.size()) - 1});
  return int(k.values.size()) - 1;
}
} // namespace

std::string KernelSpec::Step::name() const {
  static const char *const kFolds[] = {"sum", "mean", "amax", "amin"};
  switch (kind) {
  case Kind::Pointwise:
    return op->name();
  case Kind::Convert:
    return "convert";
  case Kind::Reduce:
    break;
  }
  return kFolds[fold];
}

int KernelSpec::step(const OperatorHandle &op, std::vector<int> args,
                     std::vector<Scalar> scalars, ScalarType compute,
                     ScalarType out) {
  Step s;
  s.kind = Kind::Pointwise;
  s.op = &op;
  s.args = std::move(args);
  s.scalars = std::move(scalars);
  s.compute = compute;
  s.out = out;
  return add_step(*this, std::move(s));
}

int KernelSpec::convert(int v, ScalarType dtype) {
  Step s;
  s.kind = Kind::Convert;
  s.args = {v};
  s.compute = s.out = dtype;
  return add_step(*this, std::move(s));
}

int KernelSpec::reduce(ReductionInfo::Kind fold, int v, ScalarType in,
                       ScalarType acc, ScalarType out) {
  Step s;
  s.kind = Kind::Reduce;
  s.fold = fold;
  s.args = {v};
  s.compute = acc;
  s.out = out;
  s.in = in;
  return add_step(*this, std::move(s));
}

const KernelSpec::Step &KernelSpec::step_of(int v) const {
  const Value &x = values.at(size_t(v));
  EMBER_CHECK(x.kind == Value::Kind::Step, "KernelSpec: value ", v,
              " is not a step");
  return steps[size_t(x.index)];
}

bool KernelSpec::strides_over(IntArrayRef sizes, IntArrayRef strides,
                              std::vector<int64_t> &out,
                              std::vector<int64_t> *extent) const {
  ir::Domain d{shape, reduced};
  std::vector<int> dims = d.dims_of(sizes, /*input=*/true);
  out.assign(shape.size(), 0);
  if (extent)
    extent->assign(shape.size(), 1);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1)
      continue;
    if (dims[i] < 0 || sizes[i] != shape[size_t(dims[i])])
      return false;
    out[size_t(dims[i])] = strides[i];
    if (extent)
      (*extent)[size_t(dims[i])] = sizes[i];
  }
  return true;
}

bool KernelSpec::is_reduce(int v) const {
  const Value &x = values.at(size_t(v));
  return x.kind == Value::Kind::Step &&
         steps[size_t(x.index)].kind == Kind::Reduce;
}

bool KernelSpec::has_reduction() const {
  return std::find(reduced.begin(), reduced.end(), true) != reduced.end();
}

bool KernelSpec::is_full(int v) const {
  if (!has_reduction())
    return true;
  const Value &x = values.at(size_t(v));
  switch (x.kind) {
  case Value::Kind::Input: {
    const Input &in = inputs[size_t(x.index)];
    for (size_t d = 0; d < shape.size(); ++d)
      if (reduced[d] && in.extent[d] != 1)
        return true;
    return false;
  }
  case Value::Kind::Constant:
    return false;
  case Value::Kind::Step:
    break;
  }
  if (is_reduce(v))
    return false;
  for (int a : steps[size_t(x.index)].args)
    if (is_full(a))
      return true;
  return false;
}

int64_t KernelSpec::output_numel() const {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!has_reduction() || !reduced[d])
      n *= shape[d];
  return n;
}

int64_t KernelSpec::reduced_numel() const {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (has_reduction() && reduced[d])
      n *= shape[d];
  return n;
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
  if (has_reduction()) {
    os << " reducing dims";
    for (size_t d = 0; d < shape.size(); ++d)
      if (reduced[d])
        os << " " << d;
  }
  os << "\n";
  for (size_t v = 0; v < values.size(); ++v) {
    const Value &x = values[v];
    os << "  %" << v << " : " << dtype_tag(dtype(int(v))) << " = ";
    if (x.kind == Value::Kind::Input) {
      os << "input " << x.index << " strides ";
      list(inputs[size_t(x.index)].strides);
      os << " extent ";
      list(inputs[size_t(x.index)].extent);
    } else if (x.kind == Value::Kind::Constant) {
      os << "constant " << constants[size_t(x.index)].value;
    } else {
      const Step &s = steps[size_t(x.index)];
      os << s.name() << "(";
      for (size_t i = 0; i < s.args.size(); ++i)
        os << (i ? ", " : "") << "%" << s.args[i];
      for (const Scalar &c : s.scalars)
        os << ", " << c;
      bool fold = s.kind == Kind::Reduce;
      os << ") " << (fold ? "acc " : "compute ") << dtype_tag(s.compute);
      if (fold)
        os << " in " << dtype_tag(s.in);
      if (fold && s.count)
        os << " count " << s.count;
    }
    os << "\n";
  }
  os << "  outputs";
  for (size_t o = 0; o < outputs.size(); ++o) {
    os << " %" << outputs[o];
    if (o < output_inputs.size() && output_inputs[o] >= 0)
      os << " (in place of input " << output_inputs[o] << ")";
  }
  os << "\n";
  return os.str();
}

// --- CompiledKernel
// ------------------------------------------------------------

namespace {
void run_points(CompiledKernel::Fn f, int64_t numel, int64_t point_work,
                char **ptrs) {
  if (numel == 0)
    return;
  if (point_work == 1) {
    // Pointwise: threads take runs of whole 64-byte blocks of a float
    // output, so each thread's vector stores stay aligned (Note [Streaming
    // stores] in CpuJit.cpp).
    constexpr int64_t kBlock = 16;
    parallel_for(0, (numel + kBlock - 1) / kBlock, kGrainSize / kBlock,
                 [&](int64_t b, int64_t e) {
                   f(ptrs, b * kBlock, std::min(e * kBlock, numel));
                 });
    return;
  }
  parallel_for(
      0, numel,
      std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, point_work)),
      [&](int64_t b, int64_t e) { f(ptrs, b, e); });
}
} // namespace

void CompiledKernel::run(char **ptrs) const {
  if (!combine) {
    run_points(fn, numel, point_work, ptrs);
    return;
  }
  // Partials into scratch buffers (8-byte aligned), then the combine reads
  // them (Note [Split reductions]).
  const size_t nout = partial_bytes.size();
  std::vector<std::unique_ptr<int64_t[]>> scratch;
  std::vector<char *> inner(nout + size_t(inputs)), outer(nout * 2);
  for (size_t o = 0; o < nout; ++o) {
    scratch.emplace_back(new int64_t[size_t(partial_bytes[o] + 7) / 8]);
    inner[o] = reinterpret_cast<char *>(scratch.back().get());
    outer[o] = ptrs[o];
    outer[nout + o] = inner[o];
  }
  std::copy(ptrs + nout, ptrs + nout + inputs, inner.begin() + long(nout));
  run_points(fn, numel, point_work, inner.data());
  combine->run(outer.data());
}

void run_combined(const std::vector<const CompiledKernel *> &kernels,
                  const std::vector<char **> &ptrs) {
  EMBER_INTERNAL_ASSERT(kernels.size() == ptrs.size());
  // Note [Combined launches]
  // The parts' points go in chunks of about kGrainSize adds of work each
  // (by point_cost). Each thread owns a contiguous run of the chunks, cut
  // so that the runs weigh about the same, and goes through it in order; a
  // thread done with its own run takes the next chunks of the others'. The
  // parts may cost very differently per point (one of exps beside one of
  // adds, or memory-bound updates of several tensors beside one of a single
  // tensor), so the estimate alone left one thread with most of the work;
  // chunks dealt in turn from one shared counter balanced it, but then
  // neighbouring chunks ran on both cores at once and each thread hopped
  // through memory: an SGD step over an MLP's parameters (22 MB updated in
  // place) took 0.28 ms as one launch against 0.10 ms as separate kernels
  // (Zen 5 VM). Each point is computed once, whoever takes it, so results
  // do not depend on the schedule.
  struct Chunk {
    size_t kernel;
    int64_t begin, end;
    int64_t work;
  };
  constexpr int64_t kMinChunk = 4096;
  std::vector<Chunk> chunks;
  int64_t work = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const CompiledKernel &k = *kernels[i];
    if (k.combine || k.numel == 0)
      continue;
    int64_t cost = std::clamp<int64_t>(k.point_cost, 1, kGrainSize);
    // (at least kMinChunk points, or the whole part: a chunk costs an
    // atomic increment and a call)
    int64_t step =
        std::max<int64_t>(kMinChunk / k.point_work + 1, kGrainSize / cost);
    for (int64_t b = 0; b < k.numel; b += step) {
      int64_t e = std::min(k.numel, b + step);
      chunks.push_back({i, b, e, (e - b) * cost});
    }
    work += std::min<int64_t>(k.numel, INT64_MAX / cost) * cost;
  }
  auto run = [&](size_t c) {
    kernels[chunks[c].kernel]->fn(ptrs[chunks[c].kernel], chunks[c].begin,
                                  chunks[c].end);
  };
  const int64_t threads =
      std::min<int64_t>(get_num_threads(), int64_t(chunks.size()));
  if (work <= kGrainSize || threads <= 1) {
    for (size_t c = 0; c < chunks.size(); ++c)
      run(c);
  } else {
    // Run t is chunks [first[t], first[t + 1]); next[t] its next chunk.
    std::vector<size_t> first(size_t(threads) + 1, chunks.size());
    first[0] = 0;
    int64_t done = 0;
    size_t t = 1;
    for (size_t c = 0; c < chunks.size() && t < size_t(threads); ++c) {
      done += chunks[c].work;
      // (run t starts after the chunk that brings the work done to t /
      // threads of the whole)
      while (t < size_t(threads) &&
             double(done) >= double(work) * double(t) / double(threads))
        first[t++] = c + 1;
    }
    struct alignas(64) Next {
      std::atomic<size_t> c;
    };
    std::vector<Next> next(static_cast<size_t>(threads));
    for (size_t r = 0; r < next.size(); ++r)
      next[r].c.store(first[r]);
    parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t own = b; own < e; ++own)
        for (int64_t k = 0; k < threads; ++k) {
          size_t r = size_t((own + k) % threads);
          for (size_t c = next[r].c++; c < first[r + 1]; c = next[r].c++)
            run(c);
        }
    });
  }
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i]->combine)
      kernels[i]->run(ptrs[i]);
}

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

// --- code generation
// ------------------------------------------------------------

namespace {

using llvm::IRBuilder;
using LValue = llvm::Value;

class Emitter {
public:
  Emitter(const KernelSpec &k, KernelModule &km)
      : k_(k), ctx_(*km.ctx), m_(*km.module), b_(ctx_) {}

  /// Starts `void name(char **ptrs, int64 begin, int64 end)`: the entry
  /// block with each operand's base pointer and the constants.
  llvm::BasicBlock *begin_function(const std::string &name) {
    auto *ptr = llvm::PointerType::get(ctx_, 0);
    auto *i64 = b_.getInt64Ty();
    auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64}, false);
    fn_ = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, name,
                                 m_);
    CpuJit::get().set_host_attributes(*fn_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::Argument *ptrs = fn_->getArg(0);
    ptrs->setName("ptrs");
    fn_->getArg(1)->setName("begin");
    fn_->getArg(2)->setName("end");
    auto *entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    const size_t nops = k_.outputs.size() + k_.inputs.size();
    for (size_t op = 0; op < nops; ++op) {
      LValue *slot = b_.CreateConstInBoundsGEP1_64(ptr, ptrs, op);
      base_.push_back(b_.CreateLoad(ptr, slot, "base" + std::to_string(op)));
    }
    // A result in place of an input: addressed through the input's pointer.
    for (size_t o = 0; o < k_.output_inputs.size(); ++o)
      if (k_.output_inputs[o] >= 0)
        base_[o] = base_[k_.outputs.size() + size_t(k_.output_inputs[o])];
    prepare_constants();
    return entry;
  }

  /// The outputs (their `ptrs` slots) worth streaming stores (Note
  /// [Streaming stores] in CpuJit.cpp): full, written once, not in place of
  /// an input, of at least kStreamBytes.
  std::vector<int> streamed() const {
    std::vector<int> out;
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      int v = k_.outputs[o];
      if (k_.is_full(v) && !in_place(o) && !holds_row_cache(o) &&
          k_.numel() * int64_t(elementSize(k_.dtype(v))) >= kStreamBytes)
        out.push_back(int(o));
    }
    return out;
  }

  llvm::Function *emit(const std::string &name) {
    llvm::BasicBlock *entry = begin_function(name);
    LValue *end = fn_->getArg(2);
    loops_ = coalesce(k_);
    const size_t nops = k_.outputs.size() + k_.inputs.size();

    // for (i = begin; i < end; i += n): one run of the innermost dim.
    llvm::PHINode *i = open_outer_loop(entry, "outer");
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
    close_outer_loop(i, n);
    return fn_;
  }

protected:
  /// Outputs smaller than this are stored as usual: the next kernel may
  /// find them in the caches (2 MiB of L2 per core on the VM).
  static constexpr int64_t kStreamBytes = int64_t(16) << 20;
  bool in_place(size_t o) const {
    return o < k_.output_inputs.size() && k_.output_inputs[o] >= 0;
  }
  /// Whether output o also holds a row cache (Note [Row cache]): written
  /// twice, read between.
  virtual bool holds_row_cache(size_t) const { return false; }

  /// The lanes every kernel loop asks the loop vectorizer for: 16 floats,
  /// one AVX-512 register or two AVX2 ones. Left to itself, the cost model
  /// (which targets 256-bit vectors on this host) takes 8, or 4 for a fold
  /// of floats into a double, and runs the math feeding it at half width.
  /// Measured single-threaded on 4096x4096 float32 (2-core VM): exp+sum
  /// 36 ms (default) -> 31 ms (8 lanes) -> 17 ms (16); gelu(x*w+b) 33 ->
  /// 25 ms; the 8-op chain 28.6 -> 24.5 ms.
  static constexpr unsigned kLanes = 16;

  /// Opens the kernel's outer loop, `for (i = begin; i < end; i += step)`:
  /// returns i, with the insertion point in the body; close_outer_loop
  /// steps it and ends the function.
  llvm::PHINode *open_outer_loop(llvm::BasicBlock *entry,
                                 const std::string &name) {
    auto *head = llvm::BasicBlock::Create(ctx_, name, fn_);
    auto *body = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
    outer_head_ = head;
    outer_exit_ = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(fn_->getArg(1), entry);
    b_.CreateCondBr(b_.CreateICmpSLT(i, fn_->getArg(2)), body, outer_exit_);
    b_.SetInsertPoint(body);
    return i;
  }
  void close_outer_loop(llvm::PHINode *i, LValue *step) {
    i->addIncoming(b_.CreateAdd(i, step), b_.GetInsertBlock());
    b_.CreateBr(outer_head_);
    b_.SetInsertPoint(outer_exit_);
    b_.CreateRetVoid();
  }

  /// The innermost loop: t in [0, n), operand op at off[op] + t * stride.
  void emit_inner_loop(LValue *n, const std::vector<LValue *> &off) {
    const size_t nout = k_.outputs.size();
    loop(
        n,
        [&](LValue *t) {
          auto addr = [&](size_t op, ScalarType dt) {
            int64_t stride = loops_.strides[op].back();
            LValue *e =
                stride == 0
                    ? off[op]
                    : b_.CreateAdd(off[op],
                                   stride == 1
                                       ? t
                                       : b_.CreateMul(t, b_.getInt64(stride)));
            return b_.CreateInBoundsGEP(memory_type(dt), base_[op], e);
          };
          std::vector<LValue *> vals(k_.values.size(), nullptr);
          for (size_t v = 0; v < k_.values.size(); ++v) {
            const KernelSpec::Value &x = k_.values[v];
            switch (x.kind) {
            case KernelSpec::Value::Kind::Input: {
              ScalarType dt = k_.inputs[size_t(x.index)].dtype;
              vals[v] = load(dt, addr(nout + size_t(x.index), dt));
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
        },
        kLanes, "inner");
  }

  /// A counted loop, iv in [0, count), around `body` (which may add
  /// blocks). `vectorize_width`: ask the loop vectorizer for that many lanes (a
  /// fold of floats into a double: its cost model would take 4, the
  /// double's lanes, and run the float math feeding it at half width).
  /// `unroll` false keeps the loop a loop.
  void loop(LValue *count, const std::function<void(LValue *)> &body,
            unsigned vectorize_width = 0, const std::string &name = "loop",
            bool unroll = true, unsigned interleave = 0) {
    auto *i64 = b_.getInt64Ty();
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *l = llvm::BasicBlock::Create(ctx_, name, fn_);
    auto *done = llvm::BasicBlock::Create(ctx_, name + ".done", fn_);
    b_.CreateCondBr(b_.CreateICmpSGT(count, b_.getInt64(0)), l, done);
    b_.SetInsertPoint(l);
    llvm::PHINode *iv = b_.CreatePHI(i64, 2, "iv");
    iv->addIncoming(b_.getInt64(0), pre);
    body(iv);
    LValue *next = b_.CreateAdd(iv, b_.getInt64(1), "", true, true);
    iv->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst *br =
        b_.CreateCondBr(b_.CreateICmpSLT(next, count), l, done);
    std::vector<llvm::Metadata *> ops = {nullptr};
    if (vectorize_width) {
      llvm::Metadata *width[] = {
          llvm::MDString::get(ctx_, "llvm.loop.vectorize.width"),
          llvm::ConstantAsMetadata::get(b_.getInt32(vectorize_width))};
      ops.push_back(llvm::MDNode::get(ctx_, width));
    }
    if (!unroll)
      ops.push_back(llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
    if (interleave) {
      llvm::Metadata *count[] = {
          llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
          llvm::ConstantAsMetadata::get(b_.getInt32(interleave))};
      ops.push_back(llvm::MDNode::get(ctx_, count));
    }
    if (ops.size() > 1) {
      llvm::MDNode *md = llvm::MDNode::getDistinct(ctx_, ops);
      md->replaceOperandWith(0, md);
      br->setMetadata(llvm::LLVMContext::MD_loop, md);
    }
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
    if (s.kind == KernelSpec::Kind::Convert)
      return cast(vals[size_t(s.args.at(0))], k_.dtype(s.args[0]), s.out);
    llvm::Function *f = library(pointwise_function(*s.op, s.compute));
    llvm::FunctionType *fty = f->getFunctionType();
    EMBER_CHECK(fty->getNumParams() == s.args.size() + s.scalars.size(),
                "codegen: ", s.name(), " takes ",
                fty->getNumParams() - s.scalars.size(), " tensors and ",
                s.scalars.size(), " scalars? got ", s.args.size(),
                " tensor arguments");
    std::vector<LValue *> args;
    ScalarType c = compute_dtype(s.compute);
    const meta::PointwiseSpec *spec = meta::find_pointwise_spec(*s.op);
    bool float_numbers = spec && spec->float_numbers;
    for (size_t a = 0; a < s.args.size(); ++a) {
      // A bool parameter where the op does not compute in bool: a mask or
      // condition argument (read as bool, as the eager kernel reads it).
      bool as_bool = fty->getParamType(unsigned(a))->isIntegerTy(1) &&
                     c != ScalarType::Bool;
      ScalarType from = k_.dtype(s.args[a]);
      LValue *v = vals[size_t(s.args[a])];
      if (as_bool) {
        v = cast(v, from, ScalarType::Bool);
      } else if (c != s.compute && float_numbers && a == 1 &&
                 k_.values[size_t(s.args[a])].kind ==
                     KernelSpec::Value::Kind::Constant) {
        // A number keeps the compute type's precision in mul and div (Note
        // [Numbers in reduced precision] in eager/cpu/Pointwise.cpp):
        // x * 0.1 in float16 multiplies by 0.1f.
        v = cast(v, from, c);
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
  llvm::BasicBlock *outer_head_ = nullptr, *outer_exit_ = nullptr;
};

/// Note [Reduction kernels] (Kernel.h): the loops of a kernel with reduce
/// steps.
class ReductionEmitter : public Emitter {
public:
  using Emitter::Emitter;

  llvm::Function *emit(const std::string &name) {
    layout();
    llvm::BasicBlock *entry = begin_function(name);
    LValue *end = fn_->getArg(2);
    allocate_arrays();
    plan_row_cache();

    llvm::PHINode *i = open_outer_loop(entry, "block");

    // The block's first kept point: its offset in every operand.
    koff_.assign(nops_, b_.getInt64(0));
    LValue *rest = i, *last_idx = nullptr;
    for (size_t k = kept_.size(); k-- > 0;) {
      int64_t size = size_[size_t(kept_[k])];
      LValue *idx = b_.CreateSRem(rest, b_.getInt64(size));
      rest = b_.CreateSDiv(rest, b_.getInt64(size));
      if (k + 1 == kept_.size())
        last_idx = idx;
      for (size_t op = 0; op < nops_; ++op)
        if (int64_t st = stride_[op][size_t(kept_[k])])
          koff_[op] =
              b_.CreateAdd(koff_[op], b_.CreateMul(idx, b_.getInt64(st)));
    }
    if (run_) { // a run along the innermost (kept) dim
      int64_t size = size_[size_.size() - 1];
      LValue *avail = b_.CreateSub(b_.getInt64(size), last_idx);
      LValue *left = b_.CreateSub(end, i);
      n_ = b_.CreateSelect(b_.CreateICmpSLT(avail, left), avail, left);
      n_ = b_.CreateSelect(b_.CreateICmpSLT(n_, b_.getInt64(kRun)), n_,
                           b_.getInt64(kRun), "n");
    } else {
      n_ = b_.getInt64(1);
    }

    compute_reduced(0);
    for (size_t j = 0; j < reduces_.size(); ++j) {
      phase_ = int(j);
      fold(reduces_[j]);
      compute_reduced(int(j) + 1);
    }
    phase_ = int(reduces_.size());
    std::vector<size_t> full_outputs;
    for (size_t o = 0; o < k_.outputs.size(); ++o)
      if (k_.is_full(k_.outputs[o]))
        full_outputs.push_back(o);
    if (!full_outputs.empty())
      points(
          [&](const std::vector<LValue *> &off, LValue *t) {
            // Every result is computed before any is stored: a result written
            // in place of an input must not be read back as that input.
            std::vector<LValue *> vals(k_.values.size(), nullptr);
            std::vector<LValue *> results;
            for (size_t o : full_outputs)
              results.push_back(eval(k_.outputs[o], vals, off, t));
            for (size_t i = 0; i < full_outputs.size(); ++i) {
              size_t o = full_outputs[i];
              ScalarType dt = k_.dtype(k_.outputs[o]);
              store(dt, results[i],
                    b_.CreateInBoundsGEP(memory_type(dt), base_[o], off[o]));
            }
          },
          kLanes);
    for_each_t([&](LValue *t) {
      for (size_t o = 0; o < k_.outputs.size(); ++o) {
        int v = k_.outputs[o];
        if (k_.is_full(v))
          continue;
        ScalarType dt = k_.dtype(v);
        LValue *off =
            b_.CreateAdd(koff_[o], b_.CreateMul(t, b_.getInt64(tstride_[o])));
        store(dt, load_array(v, t),
              b_.CreateInBoundsGEP(memory_type(dt), base_[o], off));
      }
    });
    close_outer_loop(i, n_);
    return fn_;
  }

private:
  static constexpr int64_t kRun = 256; ///< kept points a block holds at most

  /// Drops size-1 dims, merges adjacent reduced dims that every operand
  /// walks contiguously, and picks the block shape.
  void layout() {
    nops_ = k_.outputs.size() + k_.inputs.size();
    std::vector<std::vector<int64_t>> st(nops_);
    // Outputs: full ones contiguous over the shape, reduced ones over the
    // kept dims (0 along the reduced dims).
    std::vector<int64_t> kept_shape;
    for (size_t d = 0; d < k_.shape.size(); ++d)
      if (!k_.reduced[d])
        kept_shape.push_back(k_.shape[d]);
    DimVector full_st = contiguous_strides(k_.shape);
    DimVector kept_st = contiguous_strides(kept_shape);
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      bool full = k_.is_full(k_.outputs[o]);
      size_t kd = 0;
      for (size_t d = 0; d < k_.shape.size(); ++d) {
        if (full)
          st[o].push_back(full_st[d]);
        else
          st[o].push_back(k_.reduced[d] ? 0 : kept_st[kd++]);
      }
    }
    for (size_t i = 0; i < k_.inputs.size(); ++i)
      st[k_.outputs.size() + i] = k_.inputs[i].strides;
    stride_.assign(nops_, {});
    for (size_t d = 0; d < k_.shape.size(); ++d) {
      if (k_.shape[d] == 1)
        continue;
      bool red = k_.reduced[d];
      if (red && !red_.empty() && red_.back() + 1 == int(size_.size())) {
        int p = red_.back();
        bool merge = true;
        for (size_t op = 0; op < nops_ && merge; ++op)
          merge = stride_[op][size_t(p)] == st[op][d] * k_.shape[d];
        if (merge) {
          size_[size_t(p)] *= k_.shape[d];
          for (size_t op = 0; op < nops_; ++op)
            stride_[op][size_t(p)] = st[op][d];
          continue;
        }
      }
      (red ? red_ : kept_).push_back(int(size_.size()));
      size_.push_back(k_.shape[d]);
      for (size_t op = 0; op < nops_; ++op)
        stride_[op].push_back(st[op][d]);
    }
    run_ = !kept_.empty() && kept_.back() == int(size_.size()) - 1;
    tstride_.assign(nops_, 0);
    if (run_)
      for (size_t op = 0; op < nops_; ++op)
        tstride_[op] = stride_[op][size_.size() - 1];
    for (size_t v = 0; v < k_.values.size(); ++v)
      if (k_.is_reduce(int(v)))
        reduces_.push_back(int(v));
    // The stage of a reduced value: after how many folds it is known.
    stage_.assign(k_.values.size(), 0);
    for (size_t v = 0; v < k_.values.size(); ++v) {
      const KernelSpec::Value &x = k_.values[v];
      if (x.kind != KernelSpec::Value::Kind::Step)
        continue;
      if (k_.is_reduce(int(v))) {
        stage_[v] = int(std::find(reduces_.begin(), reduces_.end(), int(v)) -
                        reduces_.begin()) +
                    1;
        continue;
      }
      for (int a : k_.steps[size_t(x.index)].args)
        stage_[v] = std::max(stage_[v], stage_[size_t(a)]);
    }
  }

  llvm::Type *register_type(ScalarType dt) {
    if (dt == ScalarType::Bool)
      return b_.getInt1Ty();
    if (dt == ScalarType::Half || dt == ScalarType::BFloat16)
      return b_.getFloatTy();
    return memory_type(dt);
  }

  /// One array of kRun registers per reduced value that is not a constant,
  /// and one accumulator array per fold, in the entry block.
  void allocate_arrays() {
    arrays_.assign(k_.values.size(), nullptr);
    accs_.assign(k_.values.size(), nullptr);
    partials_.assign(k_.values.size(), nullptr);
    for (size_t v = 0; v < k_.values.size(); ++v) {
      if (k_.is_full(int(v)) ||
          k_.values[v].kind == KernelSpec::Value::Kind::Constant)
        continue;
      arrays_[v] = b_.CreateAlloca(register_type(k_.dtype(int(v))),
                                   b_.getInt64(kRun), "r" + std::to_string(v));
      if (k_.is_reduce(int(v))) {
        accs_[v] = b_.CreateAlloca(acc_type(step_of(int(v))), b_.getInt64(kRun),
                                   "acc" + std::to_string(v));
        partials_[v] = b_.CreateAlloca(b_.getFloatTy(), nullptr,
                                       "part" + std::to_string(v));
      }
    }
  }

  const KernelSpec::Step &step_of(int v) { return k_.step_of(v); }

  llvm::Type *acc_type(const KernelSpec::Step &s) {
    return register_type(s.acc_dtype());
  }

  LValue *load_array(int v, LValue *t) {
    llvm::Type *ty = register_type(k_.dtype(v));
    return b_.CreateLoad(ty, b_.CreateInBoundsGEP(ty, arrays_[size_t(v)], t));
  }

  /// A counted loop t in [0, n_) around `body`.
  void for_each_t(const std::function<void(LValue *)> &body) {
    if (!run_) {
      body(b_.getInt64(0));
      return;
    }
    loop(n_, [&](LValue *t) { body(t); });
  }

  using PointBody =
      std::function<void(const std::vector<LValue *> &, LValue *)>;
  /// A float sum folded in float over runs of a row (Note [Blocked float
  /// sums]): `fbody` adds a point to the float partial, `take` returns the
  /// partial and resets it, `add` adds a finite partial to the double
  /// accumulator. points()'s own body adds a point in double.
  struct Blocked {
    PointBody fbody;
    std::function<LValue *()> take;
    std::function<void(LValue *)> add;
  };

  /// Every point of the block: loops over the reduced dims, then (a run)
  /// over the block's kept points, innermost. With `blocked` (a row block
  /// with a reduced dim), the innermost reduced loop runs as Note [Blocked
  /// float sums] says.
  void points(const PointBody &body, unsigned vectorize_width = 0,
              const Blocked *blocked = nullptr) {
    const PointBody *active = &body;
    std::function<void(size_t, std::vector<LValue *>)> level =
        [&](size_t r, std::vector<LValue *> off) {
          if (r == red_.size()) {
            if (!run_)
              return (*active)(off, b_.getInt64(0));
            loop(
                n_,
                [&](LValue *t) {
                  std::vector<LValue *> o = off;
                  for (size_t op = 0; op < nops_; ++op)
                    if (tstride_[op])
                      o[op] = b_.CreateAdd(
                          off[op], b_.CreateMul(t, b_.getInt64(tstride_[op])));
                  (*active)(o, t);
                },
                vectorize_width);
            return;
          }
          size_t d = size_t(red_[r]);
          LValue *outer = ridx_;
          LValue *first = nullptr; // the first point of a run
          auto point = [&](LValue *x) {
            if (first)
              x = b_.CreateAdd(first, x, "", true, true);
            // The point's linear index over the reduced dims (the row
            // cache's index).
            ridx_ = outer ? b_.CreateAdd(
                                b_.CreateMul(outer, b_.getInt64(size_[d])), x)
                          : x;
            std::vector<LValue *> o = off;
            for (size_t op = 0; op < nops_; ++op)
              if (int64_t st = stride_[op][d])
                o[op] = b_.CreateAdd(off[op], b_.CreateMul(x, b_.getInt64(st)));
            level(r + 1, o);
          };
          const bool last = !run_ && r + 1 == red_.size();
          unsigned width = last ? vectorize_width : 0;
          // A short vectorized loop stays a loop: fully unrolled before the
          // vectorizer saw it (rows of 32 to 64 floats), its fold became one
          // serial chain of scalar adds. Longer ones gain from the unroller
          // (layer_norm over rows of 4096: 1.55x -> 1.75x eager's speed),
          // and loops shorter than two vectors may unroll as before (a
          // handful of adds, in eager's order).
          auto run = [&](LValue *from, LValue *count, const PointBody *with,
                         unsigned w, const char *name,
                         unsigned interleave = 0) {
            first = from;
            active = with;
            auto *c = llvm::dyn_cast<llvm::ConstantInt>(count);
            bool unroll = w == 0 || !c || c->getSExtValue() > kShortRow ||
                          c->getSExtValue() < 2 * int64_t(w);
            loop(count, point, w, name, unroll && interleave != 1, interleave);
            first = nullptr;
            active = &body;
          };
          if (!blocked || !last) {
            run(nullptr, b_.getInt64(size_[d]), &body, width, "loop");
            ridx_ = outer;
            return;
          }
          // Note [Blocked float sums]: per chunk, its whole kFloatRun-point
          // runs in float, then its whole vectors (one vector a step), then
          // the partial into double (or, when it is not finite, those
          // points again in double), then the rest in double.
          EMBER_INTERNAL_ASSERT(width > 0 && (width & (width - 1)) == 0);
          auto chunk = [&](LValue *base, LValue *n) {
            LValue *runs = b_.CreateAnd(n, b_.getInt64(~(kFloatRun - 1)));
            LValue *nv = b_.CreateAnd(n, b_.getInt64(~int64_t(width - 1)));
            run(base, runs, &blocked->fbody, width, "floats");
            LValue *part = blocked->take();
            // (a partial of its own: the vectors' lanes do not add into the
            // runs' large sum)
            run(b_.CreateAdd(base, runs), b_.CreateSub(nv, runs),
                &blocked->fbody, width, "vectors", /*interleave=*/1);
            LValue *rest = blocked->take();
            auto finite = [&](LValue *x) {
              return b_.CreateFCmpONE(
                  b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                  llvm::ConstantFP::getInfinity(x->getType()));
            };
            auto *add = llvm::BasicBlock::Create(ctx_, "partial", fn_);
            auto *redo = llvm::BasicBlock::Create(ctx_, "redo", fn_);
            auto *join = llvm::BasicBlock::Create(ctx_, "partial.done", fn_);
            b_.CreateCondBr(b_.CreateAnd(finite(part), finite(rest)), add,
                            redo);
            b_.SetInsertPoint(add);
            blocked->add(part);
            blocked->add(rest);
            b_.CreateBr(join);
            b_.SetInsertPoint(redo);
            run(base, nv, &body, 0, "redo");
            b_.CreateBr(join);
            b_.SetInsertPoint(join);
            run(b_.CreateAdd(base, nv), b_.CreateSub(n, nv), &body, 0, "tail");
          };
          if (size_[d] <= kChunk) {
            chunk(b_.getInt64(0), b_.getInt64(size_[d]));
          } else {
            int64_t chunks = (size_[d] + kChunk - 1) / kChunk;
            loop(
                b_.getInt64(chunks),
                [&](LValue *c) {
                  LValue *base =
                      b_.CreateMul(c, b_.getInt64(kChunk), "", true, true);
                  LValue *n = b_.CreateSub(b_.getInt64(size_[d]), base);
                  n = b_.CreateSelect(b_.CreateICmpSLT(n, b_.getInt64(kChunk)),
                                      n, b_.getInt64(kChunk));
                  chunk(base, n);
                },
                0, "chunks", /*unroll=*/false);
          }
          ridx_ = outer;
        };
    ridx_ = nullptr;
    level(0, koff_);
  }

  /// Value v at a point (off: each operand's offset; t: the point's place
  /// in the block), computing the full values it needs.
  LValue *eval(int v, std::vector<LValue *> &vals,
               const std::vector<LValue *> &off, LValue *t) {
    if (vals[size_t(v)])
      return vals[size_t(v)];
    const KernelSpec::Value &x = k_.values[size_t(v)];
    LValue *r = nullptr;
    if (x.kind == KernelSpec::Value::Kind::Constant) {
      r = constants_[size_t(x.index)];
    } else if (!k_.is_full(v)) {
      r = load_array(v, t);
    } else if (x.kind == KernelSpec::Value::Kind::Input) {
      ScalarType dt = k_.inputs[size_t(x.index)].dtype;
      size_t op = k_.outputs.size() + size_t(x.index);
      r = load(dt, b_.CreateInBoundsGEP(memory_type(dt), base_[op], off[op]));
    } else if (cached(v) && phase_ > first_phase_[size_t(v)]) {
      r = b_.CreateLoad(register_type(k_.dtype(v)), row_slot(v, off));
    } else {
      for (int a : step_of(v).args)
        eval(a, vals, off, t);
      r = step(step_of(v), vals);
      if (cached(v))
        b_.CreateStore(r, row_slot(v, off));
    }
    return vals[size_t(v)] = r;
  }

  // Note [Row cache]
  // A full value that more than one loop of a block needs (softmax's exp:
  // the sum's loop and the division's) is computed again in each, which is
  // cheaper than memory for a subtraction but not for an exp. When the
  // block is one row (the innermost dim is reduced) of at most kRowCache
  // elements, a value whose own computation is expensive -- its scalar
  // library function has at least kExpensive instructions, a measure of
  // the code rather than a list of op names -- is stored by the first loop
  // that computes it and loaded by the later ones. It is stored in the row
  // of a full output when one can hold it: an output of its register type
  // (float or double), not written in place of an input, whose elements
  // the last loop writes only after reading the cached value at the same
  // point (every result is computed before any is stored). Eager's softmax
  // does the same (the exps go to the output, then are scaled there). Else
  // it goes to a row buffer on the stack: another row's worth of L1, which
  // cost the softmax forward over 4096-element rows 25% (one thread, 2-core
  // Intel VM: 22.5 ms against 17.1 ms with the exps in the output).
  static constexpr int64_t kRowCache = 8192;
  static constexpr unsigned kExpensive = 24;

  bool holds_row_cache(size_t o) const override {
    return std::find(row_output_.begin(), row_output_.end(), int(o)) !=
           row_output_.end();
  }
  /// Whether value v has a row cache (Note [Row cache]).
  bool cached(int v) const {
    return rows_[size_t(v)] || row_output_[size_t(v)] >= 0;
  }
  /// Where value v is cached at the current point: its output's element
  /// (offsets `off`), or its row buffer's (ridx_).
  LValue *row_slot(int v, const std::vector<LValue *> &off) {
    llvm::Type *ty = register_type(k_.dtype(v));
    if (int o = row_output_[size_t(v)]; o >= 0)
      return b_.CreateInBoundsGEP(ty, base_[size_t(o)], off[size_t(o)]);
    return b_.CreateInBoundsGEP(ty, rows_[size_t(v)], ridx_);
  }
  /// A full output of dtype dt free to hold a row cache, or -1.
  int free_output_row(ScalarType dt, const std::vector<bool> &taken) const {
    if (dt != ScalarType::Float && dt != ScalarType::Double)
      return -1;
    for (size_t o = 0; o < k_.outputs.size(); ++o)
      if (!taken[o] && k_.is_full(k_.outputs[o]) &&
          k_.dtype(k_.outputs[o]) == dt && !in_place(o))
        return int(o);
    return -1;
  }

  /// The full values each loop computes (folds in order, then the store
  /// of the full results), and the row buffers of those worth caching.
  void plan_row_cache() {
    rows_.assign(k_.values.size(), nullptr);
    row_output_.assign(k_.values.size(), -1);
    first_phase_.assign(k_.values.size(), -1);
    if (run_ || red_.empty() || k_.reduced_numel() > kRowCache)
      return;
    std::vector<std::vector<int>> targets;
    for (int v : reduces_)
      targets.push_back({step_of(v).args[0]});
    targets.emplace_back();
    for (int o : k_.outputs)
      if (k_.is_full(o))
        targets.back().push_back(o);
    std::vector<int> uses(k_.values.size(), 0);
    for (size_t p = 0; p < targets.size(); ++p) {
      std::vector<bool> seen(k_.values.size(), false);
      std::function<void(int)> visit = [&](int v) {
        if (seen[size_t(v)] || !k_.is_full(v) ||
            k_.values[size_t(v)].kind != KernelSpec::Value::Kind::Step)
          return;
        seen[size_t(v)] = true;
        if (first_phase_[size_t(v)] < 0)
          first_phase_[size_t(v)] = int(p);
        ++uses[size_t(v)];
        for (int a : step_of(v).args)
          visit(a);
      };
      for (int v : targets[p])
        visit(v);
    }
    int64_t bytes = 0;
    std::vector<bool> taken(k_.outputs.size(), false);
    for (size_t v = 0; v < k_.values.size(); ++v) {
      if (uses[v] < 2 || k_.values[v].kind != KernelSpec::Value::Kind::Step ||
          step_of(int(v)).kind != KernelSpec::Kind::Pointwise)
        continue;
      const KernelSpec::Step &st = step_of(int(v));
      llvm::Function *f =
          m_.getFunction(pointwise_function(*st.op, st.compute));
      if (!f || f->getInstructionCount() < kExpensive)
        continue;
      if (int o = free_output_row(k_.dtype(int(v)), taken); o >= 0) {
        taken[size_t(o)] = true;
        row_output_[v] = o;
        continue;
      }
      int64_t size = k_.reduced_numel() * 8;
      if (bytes + size > kRowCache * 8)
        break;
      bytes += size;
      rows_[v] = b_.CreateAlloca(register_type(k_.dtype(int(v))),
                                 b_.getInt64(k_.reduced_numel()),
                                 "row" + std::to_string(v));
    }
  }

  /// The reduced values of `stage` (known once `stage` folds are done), for
  /// each point of the block: inputs read at the kept point, steps
  /// computed, reduce steps finished.
  void compute_reduced(int stage) {
    bool any = false;
    for (size_t v = 0; v < k_.values.size(); ++v)
      any = any || (arrays_[v] && stage_[v] == stage);
    if (!any)
      return;
    for_each_t([&](LValue *t) {
      std::vector<LValue *> off(nops_);
      for (size_t op = 0; op < nops_; ++op)
        off[op] =
            b_.CreateAdd(koff_[op], b_.CreateMul(t, b_.getInt64(tstride_[op])));
      std::vector<LValue *> vals(k_.values.size(), nullptr);
      for (size_t v = 0; v < k_.values.size(); ++v) {
        if (!arrays_[v] || stage_[v] != stage)
          continue;
        const KernelSpec::Value &x = k_.values[v];
        LValue *r;
        if (k_.is_reduce(int(v))) {
          r = finish(
              step_of(int(v)),
              b_.CreateLoad(acc_type(step_of(int(v))),
                            b_.CreateInBoundsGEP(acc_type(step_of(int(v))),
                                                 accs_[v], t)));
        } else if (x.kind == KernelSpec::Value::Kind::Input) {
          ScalarType dt = k_.inputs[size_t(x.index)].dtype;
          size_t op = k_.outputs.size() + size_t(x.index);
          r = load(dt,
                   b_.CreateInBoundsGEP(memory_type(dt), base_[op], off[op]));
        } else {
          for (int a : step_of(int(v)).args)
            eval(a, vals, off, t);
          r = step(step_of(int(v)), vals);
        }
        llvm::Type *ty = register_type(k_.dtype(int(v)));
        b_.CreateStore(r, b_.CreateInBoundsGEP(ty, arrays_[v], t));
        vals[v] = r;
      }
    });
  }

  bool is_float(ScalarType dt) {
    return dt == ScalarType::Float || dt == ScalarType::Double ||
           dt == ScalarType::Half || dt == ScalarType::BFloat16;
  }

  LValue *init(const KernelSpec::Step &s) {
    ScalarType dt = s.acc_dtype();
    llvm::Type *ty = acc_type(s);
    if (s.sums())
      return is_float(dt) ? llvm::ConstantFP::get(ty, 0.0)
                          : llvm::ConstantInt::get(ty, 0);
    bool max = s.fold == ReductionInfo::Amax;
    if (is_float(dt))
      return llvm::ConstantFP::getInfinity(ty, /*Negative=*/max);
    unsigned bits = ty->getIntegerBitWidth();
    if (dt == ScalarType::Byte)
      return b_.getInt(max ? llvm::APInt::getMinValue(bits)
                           : llvm::APInt::getMaxValue(bits));
    return b_.getInt(max ? llvm::APInt::getSignedMinValue(bits)
                         : llvm::APInt::getSignedMaxValue(bits));
  }

  LValue *combine(const KernelSpec::Step &s, LValue *a, LValue *x) {
    ScalarType dt = s.acc_dtype();
    if (s.sums()) {
      if (!is_float(dt))
        return b_.CreateAdd(a, x);
      // Reassociation lets the loop vectorizer keep partial sums per lane
      // (the order differs from eager's; both accumulate in double).
      LValue *r = b_.CreateFAdd(a, x);
      llvm::FastMathFlags f;
      f.setAllowReassoc();
      llvm::cast<llvm::Instruction>(r)->setFastMathFlags(f);
      return r;
    }
    bool max = s.fold == ReductionInfo::Amax;
    llvm::Intrinsic::ID id =
        is_float(dt)
            ? (max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum)
        : dt == ScalarType::Byte
            ? (max ? llvm::Intrinsic::umax : llvm::Intrinsic::umin)
            : (max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin);
    return b_.CreateBinaryIntrinsic(id, a, x);
  }

  LValue *finish(const KernelSpec::Step &s, LValue *a) {
    if (s.fold == ReductionInfo::Mean)
      a = b_.CreateFDiv(
          a, llvm::ConstantFP::get(
                 a->getType(), double(s.count ? s.count : k_.reduced_numel())));
    return cast(a, s.acc_dtype(), s.out);
  }

  // Note [Blocked float sums]
  // A sum of float, float16 or bfloat16 values accumulates in double, as
  // eager's sum does; but widening every element costs the vectorized row
  // loop more than its memory traffic (layer_norm's forward over rows of
  // 4096 floats, one thread on the 2-core VM: 20 ms against eager's 15 ms).
  // So in a row block (the innermost dim reduced) the innermost reduced
  // loop runs in chunks of kChunk points. Each chunk sums its whole runs of
  // kFloatRun points (one iteration of the vectorized loop: 16 lanes, 4
  // interleaved) in float, with a partial sum per lane, reassociated as the
  // double loop is, then its remaining whole vectors of 16 (one a step, so
  // that rows of 16 to 63 points are vectorized too); the chunk's float sum
  // is then added to the double accumulator, and its last points (fewer
  // than 16) are added in double one by one. The work per element is float's;
  // each lane adds at most kChunk / kFloatRun = 16 points in float, so the
  // rounding error is float's over 16 additions and a tree of 64, relative to
  // the sum of the magnitudes of a chunk, wherever the row ends (a probe found
  // up to 26 ulps when a row's last points were added in float to a large
  // partial, now 1). A float partial that overflows (values near FLT_MAX, whose
  // double sum is finite) or is NaN sends its chunk again through the
  // double loop, so results that are finite eagerly stay finite, and inf
  // and NaN come out as eagerly. What float cannot keep is an exact
  // cancellation within a chunk (1e8 + 1 - 1e8 adds to 1 in double, to 0 in
  // float): there the compiled sum is float's, as PyTorch's is. A run block
  // (a column of kept points) keeps one double per point.
  static constexpr int64_t kChunk = 1024;
  static constexpr int64_t kFloatRun = 64; ///< 16 lanes, 4 interleaved
  static constexpr int64_t kShortRow = 256;

  /// Folds reduce step v over the block: its accumulators start at the
  /// fold's identity, then one loop over the block's points.
  void fold(int v) {
    const KernelSpec::Step &s = step_of(v);
    llvm::Type *aty = acc_type(s);
    for_each_t([&](LValue *t) {
      b_.CreateStore(init(s), b_.CreateInBoundsGEP(aty, accs_[size_t(v)], t));
    });
    const int arg = s.args[0];
    PointBody body = [&](const std::vector<LValue *> &off, LValue *t) {
      std::vector<LValue *> vals(k_.values.size(), nullptr);
      LValue *x = cast(eval(arg, vals, off, t), k_.dtype(arg), s.in);
      x = cast(x, s.in, s.acc_dtype());
      LValue *p = b_.CreateInBoundsGEP(aty, accs_[size_t(v)], t);
      b_.CreateStore(combine(s, b_.CreateLoad(aty, p), x), p);
    };
    if (run_ || red_.empty() || !s.sums() ||
        s.acc_dtype() != ScalarType::Double ||
        register_type(s.in) != b_.getFloatTy())
      return points(body, kLanes);
    // Note [Blocked float sums]: a float partial, taken per chunk.
    llvm::Type *fty = b_.getFloatTy();
    llvm::AllocaInst *part = partials_[size_t(v)];
    LValue *zero = llvm::ConstantFP::get(fty, 0.0);
    LValue *acc = accs_[size_t(v)]; // t is 0 in a row block
    b_.CreateStore(zero, part);
    Blocked blocked;
    blocked.fbody = [&](const std::vector<LValue *> &off, LValue *t) {
      std::vector<LValue *> vals(k_.values.size(), nullptr);
      LValue *x = cast(eval(arg, vals, off, t), k_.dtype(arg), s.in);
      b_.CreateStore(combine(s, b_.CreateLoad(fty, part), x), part);
    };
    blocked.take = [&] {
      LValue *p = b_.CreateLoad(fty, part);
      b_.CreateStore(zero, part);
      return p;
    };
    blocked.add = [&](LValue *p) {
      b_.CreateStore(
          combine(s, b_.CreateLoad(aty, acc), b_.CreateFPExt(p, aty)), acc);
    };
    points(body, kLanes, &blocked);
  }

  size_t nops_ = 0;
  std::vector<int64_t> size_;                // dims after dropping 1s
  std::vector<std::vector<int64_t>> stride_; // [operand][dim]
  std::vector<int> kept_, red_;              // dims of size_
  bool run_ = false;
  std::vector<int64_t> tstride_;
  std::vector<LValue *> koff_;
  LValue *n_ = nullptr;
  std::vector<int> reduces_;
  std::vector<int> stage_;
  std::vector<llvm::AllocaInst *> arrays_, accs_;
  std::vector<llvm::AllocaInst *> partials_; // Note [Blocked float sums]
  std::vector<llvm::AllocaInst *> rows_;     // Note [Row cache]
  std::vector<int> row_output_;              // the output holding it, or -1
  std::vector<int> first_phase_;
  int phase_ = 0;
  LValue *ridx_ = nullptr;
};

} // namespace

namespace {
std::mutex &cache_mutex() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<std::string, CompiledKernel> &memory_cache() {
  static std::unordered_map<std::string, CompiledKernel> cache;
  return cache;
}
} // namespace

void clear_kernel_cache() {
  std::lock_guard<std::mutex> lock(cache_mutex());
  memory_cache().clear();
}

/// Note [Split reductions]
/// A reduction kernel runs in parallel over its output points, so a kernel
/// with few of them and many points folded into each (x.sum(), a mean over
/// all but a small dim) would run on one thread. compile_kernel splits it,
/// as Inductor's split reductions do: the outermost reduced dim (size S) is
/// cut into P parts (P divides S, chosen from the shape alone, so results do
/// not depend on the thread count); a *partial* kernel over [P, kept...]
/// folds each part into a partial accumulator (in the fold's accumulator
/// dtype: double for float sums, as eager accumulates; a mean folds a sum),
/// in parallel over parts, and a *combine* kernel folds the P partials of
/// each output point in order and converts to the output's dtype (a mean
/// divides by the whole count: Step::count). Only kernels whose outputs are
/// exactly their folds, none of which reads another fold, and not written in
/// place, are split; the others (softmax of one row: a fold feeding
/// pointwise steps) run as one kernel.
///
/// When to split is each generator's SplitPolicy. The CPU's: at most 64
/// output points (more already fill two threads), parts of at least 16384
/// points, at most 64 parts; and a large column layout (the innermost dim
/// kept, 2^20 points or more: layer_norm's weight gradient, a bias
/// gradient over a batch) into parts of at least 64 rows. Its threads then
/// take a few rows each, whose pages stay in the TLB while a thread's runs
/// of kept points sweep across them, instead of every run walking all the
/// rows (the weight and bias gradients of layer_norm over 4096x4096: 17.8
/// ms -> 12.2 ms on the 2-core VM). The partial sums are at most 2^22
/// accumulators. The GPU has thousands of threads to fill:
/// kernels of at most 8192 output points and 2^18 points folded in all
/// split, into parts of at least 256 points, at most 256 parts, and at
/// most 65536 parts times output points (a column sum over a batch, [8192,
/// 1024] to [1024], runs as 32768 threads folding 256 points each, then
/// 1024 folding 32, instead of 1024 threads folding 8192).
namespace {
/// `k` with its outermost reduced dim merged with the reduced dims after it
/// while that dim is shorter than `want` and every input steps through the
/// two as through one (or is broadcast along both): the same points in the
/// same order, so the parts of a split can be cut from more than the
/// outermost dim alone (a mean over [8, 512, 1024] into 8 parts ran as 8
/// blocks on the GPU).
KernelSpec merge_leading_reduced(KernelSpec k, int64_t want) {
  size_t d = size_t(std::find(k.reduced.begin(), k.reduced.end(), true) -
                    k.reduced.begin());
  while (d + 1 < k.shape.size() && k.reduced[d + 1] && k.shape[d] < want) {
    const int64_t outer = k.shape[d], inner = k.shape[d + 1];
    bool ok = true;
    for (const KernelSpec::Input &in : k.inputs) {
      int64_t step = 0; // (an overflow: not one dim)
      bool fits = !__builtin_mul_overflow(in.strides[d + 1], inner, &step);
      bool both = in.extent[d] == outer && in.extent[d + 1] == inner &&
                  (outer == 1 || (fits && in.strides[d] == step));
      bool neither = in.extent[d] == 1 && in.extent[d + 1] == 1;
      ok = ok && (both || neither);
    }
    if (!ok)
      break;
    k.shape[d] = outer * inner;
    k.shape.erase(k.shape.begin() + long(d) + 1);
    k.reduced.erase(k.reduced.begin() + long(d) + 1);
    for (KernelSpec::Input &in : k.inputs) {
      bool spans = !(in.extent[d] == 1 && in.extent[d + 1] == 1);
      in.extent[d] = spans ? k.shape[d] : 1;
      in.strides[d] = in.strides[d + 1];
      in.strides.erase(in.strides.begin() + long(d) + 1);
      in.extent.erase(in.extent.begin() + long(d) + 1);
    }
  }
  return k;
}
} // namespace

std::optional<SplitSpecs> split_reduction(const KernelSpec &spec,
                                          SplitPolicy policy) {
  if (!spec.has_reduction())
    return std::nullopt;
  const KernelSpec k = merge_leading_reduced(spec, policy.max_parts);
  // A column layout (the innermost dim that moves is kept).
  bool column = false;
  for (size_t d = k.shape.size(); d-- > 0;)
    if (k.shape[d] > 1) {
      column = !k.reduced[d];
      break;
    }
  if (column && policy.column_outputs > policy.max_outputs &&
      k.numel() >= policy.column_total) {
    policy.max_outputs = policy.column_outputs;
    policy.min_part = policy.column_part;
  }
  if (k.output_numel() > policy.max_outputs ||
      k.reduced_numel() < 2 * policy.min_part ||
      k.reduced_numel() * k.output_numel() < policy.min_total)
    return std::nullopt;
  for (int oi : k.output_inputs)
    if (oi >= 0)
      return std::nullopt;
  // Outputs: exactly the folds, each once; no fold reads another.
  std::vector<char> out(k.values.size(), 0), reads_fold(k.values.size(), 0);
  for (int o : k.outputs) {
    if (!k.is_reduce(o) || out[size_t(o)])
      return std::nullopt;
    out[size_t(o)] = 1;
  }
  for (size_t v = 0; v < k.values.size(); ++v) {
    if (k.values[v].kind != KernelSpec::Value::Kind::Step)
      continue;
    const KernelSpec::Step &s = k.step_of(int(v));
    for (int a : s.args)
      reads_fold[v] |= reads_fold[size_t(a)] | char(k.is_reduce(a));
    if (s.kind == KernelSpec::Kind::Reduce && (!out[v] || reads_fold[v]))
      return std::nullopt;
  }
  size_t d = size_t(std::find(k.reduced.begin(), k.reduced.end(), true) -
                    k.reduced.begin());
  const int64_t size = k.shape[d];
  int64_t parts =
      std::min({policy.max_parts, size, k.reduced_numel() / policy.min_part,
                policy.max_items / std::max<int64_t>(1, k.output_numel())});
  while (parts >= 2 && size % parts != 0)
    --parts;
  if (parts < 2)
    return std::nullopt;

  SplitSpecs r;
  r.parts = parts;
  KernelSpec &p = r.partial;
  p = k;
  // A part's stride is stride * (S / P), within stride * (S - 1): the
  // offsets the input already spans, so no overflow.
  p.shape.insert(p.shape.begin(), parts);
  p.shape[d + 1] = size / parts;
  p.reduced.insert(p.reduced.begin(), false);
  for (KernelSpec::Input &in : p.inputs) {
    in.strides.insert(in.strides.begin(), in.strides[d] * (size / parts));
    bool spans = in.extent[d] != 1;
    in.extent.insert(in.extent.begin(), spans ? parts : 1);
    in.extent[d + 1] = spans ? size / parts : 1;
  }
  for (KernelSpec::Step &s : p.steps)
    if (s.kind == KernelSpec::Kind::Reduce) {
      s.out = s.acc_dtype();
      if (s.fold == ReductionInfo::Mean)
        s.fold = ReductionInfo::Sum;
    }
  p.output_inputs.clear();

  // The combine: [P, kept...], folding dim 0.
  KernelSpec &c = r.combine;
  c.shape = {parts};
  for (size_t i = 0; i < k.shape.size(); ++i)
    if (!k.reduced[i])
      c.shape.push_back(k.shape[i]);
  c.reduced.assign(c.shape.size(), false);
  c.reduced[0] = true;
  DimVector strides = contiguous_strides(c.shape);
  std::vector<int64_t> contiguous(strides.begin(), strides.end());
  for (int o : k.outputs) {
    const KernelSpec::Step &s = k.step_of(o);
    ScalarType acc = s.acc_dtype();
    int in = c.input(acc, contiguous);
    int v = c.reduce(s.fold, in, acc, s.compute, s.out);
    if (s.fold == ReductionInfo::Mean)
      c.steps.back().count = k.reduced_numel();
    c.outputs.push_back(v);
  }
  return r;
}

namespace {

/// Note [Codegen version]
/// Part of every kernel's cache key, beside what the kernel computes (the
/// spec), the target and the scalar library's hash: bump it whenever the
/// code emitted for a given spec changes, so that a disk cache written by an
/// older ember is not loaded. 3: a number as the second operand of float16
/// and bfloat16 mul and div keeps float precision. 5: split reductions
/// cut their parts from the leading reduced dims merged. 6: float sums
/// of a row block sum chunks in float (Note [Blocked float sums]); large
/// outputs are written with streaming stores (Note [Streaming stores]).
constexpr const char *kCodegenVersion = "codegen 6";

/// The kernel of `spec` from the in-process cache, else made by `make` (and
/// timed) and cached under `key`.
template <class Make> CompiledKernel cached(const std::string &key, Make make) {
  auto &mu = cache_mutex();
  auto &cache = memory_cache();
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      // Compiled before in this process: explain() says so, and does not
      // count its compile time again.
      CompiledKernel k = it->second;
      k.origin = "memory cache";
      k.compile_seconds = 0;
      return k;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  CompiledKernel k = make();
  k.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::lock_guard<std::mutex> lock(mu);
  return cache.insert_or_assign(key, k).first->second;
}

/// One kernel: from the disk cache, or emitted and JIT-compiled.
CompiledKernel compile_single(const KernelSpec &spec, const std::string &key,
                              const std::string &disk_key,
                              const CompileKernelOptions &options) {
  CpuJit &jit = CpuJit::get();
  CompiledKernel k;
  k.numel = spec.output_numel();
  k.point_work = spec.reduced_numel();
  int64_t steps = 0;
  for (const KernelSpec::Step &st : spec.steps)
    steps += st.kind == KernelSpec::Kind::Pointwise && st.op
                 ? pointwise_weight(*st.op, st.compute)
                 : 1;
  k.point_cost = std::max<int64_t>(1, steps) * k.point_work;
  k.name = "ember_kernel_" + disk_cache::hex(std::hash<std::string>()(key));
  std::string why;
  void *fn =
      options.keep_ir ? nullptr : jit.load_cached(disk_key, k.name, &why);
  if (fn) {
    k.origin = "disk cache";
  } else {
    k.origin = why.find("disk cache entry") == 0 ? "compiled (" + why + ")"
                                                 : "compiled";
    KernelModule km = jit.new_module(k.name);
    auto emit = [&](auto &&emitter) {
      emitter.emit(k.name);
      km.streamed = emitter.streamed();
    };
    if (spec.has_reduction())
      emit(ReductionEmitter(spec, km));
    else
      emit(Emitter(spec, km));
    fn = jit.compile(std::move(km), k.name, disk_key,
                     options.keep_ir ? &k.llvm_ir : nullptr);
  }
  k.fn = reinterpret_cast<CompiledKernel::Fn>(fn);
  return k;
}

/// `spec`'s kernel; a split reduction (Note [Split reductions]) is its
/// partial kernel with the combine kernel attached, both unsplit.
CompiledKernel compile_one(const KernelSpec &spec,
                           const CompileKernelOptions &options, bool split) {
  EMBER_CHECK(!spec.outputs.empty(),
              "compile_kernel: the kernel has no outputs");
  const std::string disk_key =
      spec.str() + CpuJit::get().target() + " " + kCodegenVersion;
  // (a kernel kept with its IR is a separate entry under its own symbol)
  const std::string key = disk_key + (options.keep_ir ? " ir" : "");
  return cached(key, [&] {
    std::optional<SplitSpecs> parts;
    if (!split || !(parts = split_reduction(spec, kCpuSplit)))
      return compile_single(spec, key, disk_key, options);
    CompiledKernel k = compile_one(parts->partial, options, false);
    CompiledKernel c = compile_one(parts->combine, options, false);
    for (int o : spec.outputs)
      k.partial_bytes.push_back(
          parts->parts * spec.output_numel() *
          int64_t(elementSize(spec.step_of(o).acc_dtype())));
    k.inputs = int(spec.inputs.size());
    if (options.keep_ir)
      k.llvm_ir += "\n; combine kernel (Note [Split reductions])\n" + c.llvm_ir;
    k.combine = std::make_shared<const CompiledKernel>(std::move(c));
    return k;
  });
}

} // namespace

CompiledKernel compile_kernel(const KernelSpec &spec,
                              const CompileKernelOptions &options) {
  return compile_one(spec, options, /*split=*/true);
}

} // namespace ember::codegen
