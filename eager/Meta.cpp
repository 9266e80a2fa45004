// Shape and dtype inference (eager/Meta.h): fake tensors, the rule table and
// the generic rules (pointwise ops, views). The rules of the `cpu:` ops are in
// eager/meta/; the table that maps every op of ops.yaml to its rule is
// generated (MetaRules.cpp).
//
// Note [One set of shape rules]
// Eager, capture and the ember dialect must agree on every output's shape,
// strides and dtype, so there is one implementation of each rule:
//  - pointwise ops: meta::pointwise() is the promotion, dtype-group,
//    broadcasting and in-place check of the generated CPU kernels
//    (plan_pointwise calls it) and of their shape rules;
//  - views: the rule runs the view's own kernel on the (fake) arguments,
//    so strides and storage offsets are eager's by construction;
//  - `cpu:` ops: each rule calls the same output-geometry function as its
//    kernel (declared in Meta.h, defined in eager/meta/), which also makes
//    every metadata check the kernel makes, with the kernel's error.
// The checks that need values (an index out of range, an integer division by
// zero) are the kernel's alone: infer() never reads data.

#include "eager/Meta.h"
#include "eager/TensorIterator.h"
#include "eager/generated/Functions.h"
#include "eager/meta/MetaSupport.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ember::meta {

// ---------------------------------------------------------------------------
// Fake tensors
// ---------------------------------------------------------------------------

namespace {
// Note [Fake storage]
// A fake tensor's storage has no data but the size its geometry needs (view
// kernels such as as_strided check bounds against it). Its allocator field
// holds a tag allocator that no real storage uses: that is how is_fake()
// tells a fake tensor (and every view of one) from a real empty tensor,
// whose data pointer may be null too.
struct FakeAllocator final : Allocator {
  DataPtr allocate(size_t) override {
    throw Error("internal error: the fake-tensor allocator never allocates");
  }
};
FakeAllocator &fakeAllocator() {
  static FakeAllocator a;
  return a;
}

} // namespace

Tensor fake(IntArrayRef sizes, ScalarType dtype, Device device,
            OptionalIntArrayRef strides) {
  DimVector st = strides ? DimVector(*strides) : contiguous_strides(sizes);
  EMBER_CHECK_VALUE(st.size() == sizes.size(), "meta::fake: ", sizes.size(),
                    " sizes but ", st.size(), " strides");
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK_VALUE(sizes[i] >= 0, "meta::fake: negative size in ", sizes);
    EMBER_CHECK_VALUE(st[i] >= 0, "meta::fake: negative stride in ",
                      IntArrayRef(st));
  }
  size_t nbytes = storage_nbytes(sizes, st, elementSize(dtype));
  Storage storage(make_intrusive<StorageImpl>(
      DataPtr(nullptr, nullptr, nullptr, device), nbytes, &fakeAllocator()));
  return Tensor(
      make_intrusive<TensorImpl>(std::move(storage), dtype, sizes, st, 0));
}

Tensor fake_like(const Tensor &t) {
  Storage storage(make_intrusive<StorageImpl>(
      DataPtr(nullptr, nullptr, nullptr, t.device()), t.storage().nbytes(),
      &fakeAllocator()));
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), t.dtype(),
                                           t.sizes(), t.strides(),
                                           t.storage_offset()));
}

Tensor fake_wrapped_number(ScalarType dtype) {
  Tensor t = fake({}, dtype);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

bool is_fake(const Tensor &t) {
  if (!t.defined())
    return false;
  // A capture tensor may sit on a fake storage; it is not a fake tensor.
  const TensorImpl *impl = t.unsafeGetTensorImpl();
  const Storage &s = impl->storage();
  return s.defined() &&
         s.unsafeGetStorageImpl()->allocator == &fakeAllocator() &&
         !impl->key_set().has(DispatchKey::Capture);
}

// ---------------------------------------------------------------------------
// Shared rules
// ---------------------------------------------------------------------------

// Note [Internal overlap]
// A layout overlaps itself when two indices reach one offset. PyTorch raises
// only for the obvious case (a stride 0) and lets others ("too hard") write
// in iteration order, so `as_strided({2, 2}, {1, 1}).add_(1)` adds twice to
// one element eagerly and once in a compiled kernel that reads before it
// writes. ember answers exactly instead: dims sorted by stride, each stride
// past the reach of the smaller ones proves there is no overlap (every
// dense or permuted or sliced layout, at once); a layout that fails the
// proof has its offsets listed and compared. Past kMaxListed elements, such
// a layout is taken as overlapping (an error, never a silent difference).
bool has_internal_overlap(const Tensor &t) {
  if (t.numel() <= 1) // no element is written twice when there is not two
    return false;
  struct Dim {
    int64_t stride, size;
    bool operator<(const Dim &o) const { return stride < o.stride; }
  };
  SmallVector<Dim, 8> dims;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 1)
      continue;
    if (t.stride(d) == 0)
      return true;
    dims.push_back({t.stride(d), t.size(d)});
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0; // the largest offset the smaller dims reach
  bool proven = true;
  for (auto [stride, size] : dims) {
    int64_t span;
    if (stride <= reach || __builtin_mul_overflow(size - 1, stride, &span) ||
        __builtin_add_overflow(reach, span, &reach)) {
      proven = false;
      break;
    }
  }
  if (proven)
    return false;
  constexpr int64_t kMaxListed = int64_t(1) << 22;
  if (t.numel() > kMaxListed)
    return true;
  std::vector<int64_t> offsets{0};
  offsets.reserve(size_t(t.numel()));
  for (auto [stride, size] : dims) {
    size_t n = offsets.size();
    for (int64_t i = 1; i < size; ++i)
      for (size_t k = 0; k < n; ++k)
        offsets.push_back(offsets[k] + i * stride); // <= the storage span
  }
  std::sort(offsets.begin(), offsets.end());
  return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

void check_no_internal_overlap(const Tensor &t) {
  EMBER_CHECK(!has_internal_overlap(t),
              "unsupported operation: more than one element of the written-to "
              "tensor refers to a single memory location. Please clone() the "
              "tensor before performing the operation.");
}

void check_integral_scalar(const char *op, const char *name,
                           const Scalar &alpha, ScalarType dtype) {
  EMBER_CHECK_VALUE(!alpha.isBoolean() || dtype == kBool, op, ": boolean ",
                    name, " only supported for boolean results");
  EMBER_CHECK_VALUE(isFloatingType(dtype) || alpha.isIntegral(true), op,
                    ": for integral input tensors, argument ", name,
                    " must not be a floating point number (got ", alpha,
                    "); convert the tensors to a floating dtype first");
}

PointwiseMeta pointwise(const PointwiseSpec &spec,
                        ArrayRef<const Tensor *> inputs,
                        ArrayRef<const Scalar *> scalars,
                        const Tensor *self_out) {
  SmallVector<const Scalar *, 4> promoting;
  for (size_t i = 0; i < scalars.size(); ++i)
    if ((spec.promote_scalars >> i) & 1u)
      promoting.push_back(scalars[i]);
  if (spec.bool_error[0]) {
    size_t bools = 0;
    for (const Tensor *t : inputs)
      bools += t->defined() && t->dtype() == kBool;
    if (bools)
      throw TypeError(bools == inputs.size() && spec.bool_error[1]
                          ? spec.bool_error[1]
                          : spec.bool_error[0]);
  }
  // Dtypes: bool arguments do not take part in promotion.
  SmallVector<const Tensor *, 4> promoted;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i]->defined(), spec.name, ": argument ", i,
                " is an undefined tensor");
    if (!((spec.bool_args >> i) & 1u)) {
      promoted.push_back(inputs[i]);
      continue;
    }
    // As PyTorch: masks and conditions must be bool, not numbers.
    EMBER_CHECK(inputs[i]->dtype() == kBool, spec.name,
                " expected a boolean tensor as argument ", i,
                " (the mask or condition), but got a tensor with dtype ",
                toTypeName(inputs[i]->dtype()),
                "; compare it (x != 0) or convert it with .to(ember::kBool)");
  }
  // As PyTorch's lerp: no promotion between the tensor arguments.
  for (size_t i = 1; i < inputs.size(); ++i)
    if (((spec.same_dtype >> i) & 1u) &&
        !(((spec.same_dtype >> (8 + i)) & 1u) && inputs[i]->dim() == 0))
      EMBER_CHECK_TYPE(inputs[i]->dtype() == inputs[0]->dtype(), spec.name,
                       ": expected dtype ", toTypeName(inputs[0]->dtype()),
                       " for `", spec.tensor_names[i], "` but got dtype ",
                       toTypeName(inputs[i]->dtype()), "; convert it with .to(",
                       "self.scalar_type())");
  ScalarType result;
  if (spec.promote == Promote::Bool) {
    result = inputs[0]->dtype();
  } else {
    result = result_type(
        ArrayRef<const Tensor *>(promoted.data(), promoted.size()),
        ArrayRef<const Scalar *>(promoting.data(), promoting.size()));
    // `dtypes` of an op that computes in float restricts its inputs: silu
    // or softplus of an integer tensor raises, as PyTorch's (sigmoid, whose
    // group is all, promotes it).
    if (spec.promote == Promote::Float && !in_group(result, spec.dtypes))
      throw_unsupported_dtype(spec.name, result);
    if (spec.promote == Promote::Float && !isFloatingType(result))
      result = get_default_dtype();
  }
  if (!in_group(result, spec.dtypes)) {
    if (result == kBool && spec.dtypes == DtypeGroup::NoBool)
      throw TypeError(std::string("\"") + spec.name +
                      "\" is not supported on bool tensors; convert them with "
                      ".to(ember::kInt) or use the logical_* ops");
    throw_unsupported_dtype(spec.name, result);
  }
  // The kernel reads each Scalar argument in the compute dtype.
  for (size_t i = 0; i < scalars.size(); ++i) {
    const char *name =
        i < 4 && spec.scalar_names[i] ? spec.scalar_names[i] : "scalar";
    if ((spec.integral_scalars >> i) & 1u)
      check_integral_scalar(spec.name, name, *scalars[i], result);
    if (((spec.bound_scalars >> i) & 1u) && isIntegralType(result, false) &&
        scalars[i]->isIntegral(false))
      dispatch_dtype(result, spec.name, [&]<class T>() {
        if constexpr (std::is_integral_v<T>) {
          int64_t v = scalars[i]->toLong(),
                  lo = std::numeric_limits<T>::lowest(),
                  hi = int64_t(std::numeric_limits<T>::max());
          EMBER_CHECK_VALUE(
              v >= lo && v <= hi, spec.name, ": ", name, " value ", v,
              " is outside the range of ", toString(result), " [", lo, ", ", hi,
              "]; clamp a wider dtype (.to(ember::kLong)) or pass "
              "a bound inside the range");
        }
      });
    if (result != kBool)
      dispatch_dtype(result, spec.name, [&]<class T>() {
        try {
          (void)scalars[i]->checked_to<T>();
        } catch (const Error &e) {
          throw ValueError(ember::detail::str(spec.name, ": argument ", name,
                                              ": ", e.what()));
        }
      });
  }
  PointwiseMeta m{
      result,
      (spec.promote == Promote::Compare || spec.promote == Promote::Bool)
          ? kBool
          : result,
      DimVector(inputs[0]->sizes()), inputs[0]->device()};

  // Shapes and devices: the op runs on the first non-CPU device among the
  // inputs; a CPU 0-dim tensor may join its tensors (PyTorch reads it as a
  // scalar), other CPU tensors may not.
  // In place, the result is self, on self's device.
  for (const Tensor *t : inputs)
    if (!t->is_cpu()) {
      m.device = t->device();
      break;
    }
  if (self_out)
    m.device = self_out->device();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = *inputs[i];
    if (i)
      m.shape = infer_size(m.shape, t.sizes());
    EMBER_CHECK(t.device() == m.device || (t.is_cpu() && t.dim() == 0),
                "Expected all tensors to be on the same device, but found at "
                "least two devices, ",
                m.device, " and ", t.device(), "! (in ", spec.name, ")");
  }

  // In place: the result must fit self (Note [In-place overlap] in
  // eager/cpu/Pointwise.cpp).
  if (self_out) {
    const Tensor &self = *self_out;
    EMBER_CHECK(IntArrayRef(m.shape) == self.sizes(), "output with shape ",
                self.sizes(), " doesn't match the broadcast shape ",
                IntArrayRef(m.shape));
    EMBER_CHECK(can_cast(m.out, self.dtype()), "result type ",
                toTypeName(m.out), " can't be cast to the desired output type ",
                toTypeName(self.dtype()));
    check_no_internal_overlap(self);
  }
  return m;
}

// ---------------------------------------------------------------------------
// Generic rules
// ---------------------------------------------------------------------------

namespace detail {

void check_arity(const OperatorHandle &op, const Stack &s, size_t n) {
  if (__builtin_expect(s.size() != n, 0))
    throw TypeError(ember::detail::str(
        "meta::infer(", op.name(), "): expected ", n,
        " arguments (one per schema argument: ", op.schema().str(), "), got ",
        s.size()));
}

Result pointwise_rule(const PointwiseSpec &spec, const Stack &s,
                      ArrayRef<int> tensors, ArrayRef<int> scalars,
                      bool inplace) {
  const Tensor *ts[8];
  Scalar sv[4];
  const Scalar *ss[4];
  EMBER_INTERNAL_ASSERT(tensors.size() <= 8 && scalars.size() <= 4);
  for (size_t i = 0; i < tensors.size(); ++i)
    ts[i] = &s[size_t(tensors[i])].toTensor();
  for (size_t i = 0; i < scalars.size(); ++i) {
    sv[i] = s[size_t(scalars[i])].toScalar();
    ss[i] = &sv[i];
  }
  PointwiseMeta m = pointwise(
      spec, ArrayRef<const Tensor *>(ts, tensors.size()),
      ArrayRef<const Scalar *>(ss, scalars.size()), inplace ? ts[0] : nullptr);
  if (inplace)
    return one(*ts[0]);
  return one(fake(m.shape, m.out, m.device));
}

Result returns_value(const OperatorHandle &op, Result checked) {
  if (checked.needs_data.empty())
    checked.needs_data = op.name() + ": returns a " +
                         op.schema().returns[0].type +
                         " computed from the tensors' values";
  checked.outputs.clear();
  return checked;
}

// Note [View rules]
// A view's rule is its kernel: view kernels only compute metadata over the
// input's storage, so running them on a fake (or capture) tensor gives the
// exact sizes, strides and storage offset eager gives, sharing the input's
// storage. The call goes straight to the backend kernel (never through
// capture or autograd, which would record or track it, nor a user mode).
Result view_rule(const OperatorHandle &op, const Stack &s) {
  check_arity(op, s, op.schema().arguments.size());
  const Tensor &self = s[0].toTensor();
  EMBER_CHECK(self.defined(), op.name(), ": self is an undefined tensor");
  Stack stack(s);
  // Nor through a user mode or autocast: the kernel is a detail of shape
  // inference.
  ExcludeDispatchKeyGuard noMode{DispatchKeySet(DispatchKey::Mode) |
                                 DispatchKey::Autocast};
  op.redispatchBoxed(DispatchKeySet(self.device().is_cuda() ? DispatchKey::CUDA
                                                            : DispatchKey::CPU),
                     stack);
  Result r;
  for (IValue &v : stack) {
    if (v.isTensorList()) {
      for (const Tensor &t : v.toTensorList())
        r.outputs.push_back(t);
    } else {
      r.outputs.push_back(std::move(v.toTensor()));
    }
  }
  return r;
}

} // namespace detail

// ---------------------------------------------------------------------------
// The rule table and custom ops
// ---------------------------------------------------------------------------

namespace {

const detail::RuleMap &builtinRules() {
  static const detail::RuleMap *m = [] {
    auto *r = new detail::RuleMap();
    detail::add_builtin_rules(*r);
    return r;
  }();
  return *m;
}

struct CustomRules {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<FakeFn>> byName;
  std::unordered_map<const OperatorHandle *, std::shared_ptr<FakeFn>> byOp;
};
CustomRules &customRules() {
  static CustomRules *c = new CustomRules();
  return *c;
}

std::shared_ptr<FakeFn> findCustom(const OperatorHandle &op) {
  CustomRules &c = customRules();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.byOp.find(&op);
  if (it != c.byOp.end())
    return it->second;
  auto jt = c.byName.find(op.name());
  if (jt == c.byName.end())
    return nullptr;
  c.byOp.emplace(&op, jt->second);
  return jt->second;
}

/// A fake tensor with t's metadata (t itself when already fake).
Tensor asFake(const Tensor &t) {
  if (!t.defined() || is_fake(t))
    return t;
  Tensor f = fake(t.sizes(), t.dtype(), t.device(), t.strides());
  f.unsafeGetTensorImpl()->set_wrapped_number(
      t.unsafeGetTensorImpl()->is_wrapped_number());
  return f;
}

// Note [Fake mode for custom rules]
// A custom op's fake function gets fake tensors and may call ember ops on
// them (x.t(), a + b, ember::mm(a, b)): while it runs, this mode answers
// every dispatched op with its shape rule instead of its kernel, as
// PyTorch's FakeTensorMode, so the function computes shapes, never data.
class FakeMode final : public TorchDispatchMode {
public:
  void dispatch(const OperatorHandle &op, Stack &stack) override {
    Result r = infer(op, stack);
    if (!r.needs_data.empty())
      throw NotImplementedError(
          ember::detail::str("a fake (meta) function called ", op.name(),
                             ", whose result needs data: ", r.needs_data));
    stack.clear();
    const auto &rets = op.schema().returns;
    if (rets.size() == 1 && rets[0].type.starts_with("Tensor") &&
        rets[0].type.find("[]") != std::string::npos) {
      stack.emplace_back(std::move(r.outputs));
      return;
    }
    for (Tensor &t : r.outputs)
      stack.emplace_back(std::move(t));
  }
};

Result runCustom(const OperatorHandle &op, const FakeFn &fn,
                 const Stack &args) {
  Stack fakes;
  fakes.reserve(args.size());
  for (const IValue &v : args) {
    if (v.isTensor()) {
      fakes.emplace_back(asFake(v.toTensor()));
    } else if (v.isTensorList()) {
      std::vector<Tensor> l;
      for (const Tensor &t : v.toTensorList())
        l.push_back(asFake(t));
      fakes.emplace_back(std::move(l));
    } else {
      fakes.push_back(v);
    }
  }
  FakeMode mode;
  std::vector<Tensor> outs;
  {
    TorchDispatchModeGuard g(mode);
    outs = fn(fakes);
  }
  const auto &rets = op.schema().returns;
  bool list = rets.size() == 1 && rets[0].type.find("[]") != std::string::npos;
  EMBER_CHECK(list || outs.size() == rets.size(), "the fake function of ",
              op.name(), " returned ", outs.size(), " tensors, but the op has ",
              rets.size(), " returns (", op.schema().str(), ")");
  for (const Tensor &t : outs)
    EMBER_CHECK(t.defined(), "the fake function of ", op.name(),
                " returned an undefined tensor");
  Result r;
  r.outputs = std::move(outs);
  return r;
}

} // namespace

Result infer(const OperatorHandle &op, const Stack &args) {
  // Rules never record (capture) or track (autograd) what they run.
  ExcludeDispatchKeyGuard guard(DispatchKeySet(DispatchKey::Capture) |
                                DispatchKey::Autograd);
  const auto &rules = builtinRules().rules;
  auto it = rules.find(&op);
  if (__builtin_expect(it != rules.end(), 1)) {
    // As the dispatcher: a call needs a tensor to choose a device from.
    if (__builtin_expect(ember::detail::keysOfStack(args).empty(), 0))
      throw Error("'" + op.name() +
                  "' was called without a defined tensor argument to choose "
                  "a device from (an undefined Tensor, or an empty list of "
                  "tensors); pass at least one defined tensor.");
    return it->second(op, args);
  }
  if (std::shared_ptr<FakeFn> fn = findCustom(op))
    return runCustom(op, *fn, args);
  throw NotImplementedError(ember::detail::str(
      op.name(),
      " has no shape rule (fake implementation), so compile() cannot capture "
      "it without running it; register one with ember::meta::register_fake(\"",
      op.name(), "\", fn)"));
}

bool has_rule(const OperatorHandle &op) {
  if (builtinRules().rules.count(&op))
    return true;
  return findCustom(op) != nullptr;
}

void register_fake(const std::string &name, FakeFn fn) {
  EMBER_CHECK_VALUE(bool(fn), "register_fake(", name,
                    "): the fake function is empty");
  OperatorHandle *op = Dispatcher::singleton().findOp(name);
  EMBER_CHECK_VALUE(!op || !builtinRules().rules.count(op), "register_fake(",
                    name,
                    "): the op is in ember's op table, whose shape rules are "
                    "built in; register fake functions for custom ops only");
  auto p = std::make_shared<FakeFn>(std::move(fn));
  CustomRules &c = customRules();
  std::lock_guard<std::mutex> g(c.mu);
  c.byName[op ? op->name() : name] = p;
  if (op)
    c.byOp[op] = p;
}

} // namespace ember::meta
