#pragma once
/// The dispatcher: every op is an OperatorHandle with a schema and a kernel
/// per dispatch key. A call computes the key set of its arguments (plus the
/// thread-local keys) and runs the kernel of the highest key; that kernel may
/// redispatch below itself. Kernels are registered unboxed (a typed function
/// pointer, the fast path) or boxed (operating on a Stack of IValues, the one
/// interface through which modes, custom ops and capture see every op).

#include "eager/IValue.h"
#include "runtime/Profiler.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember {

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

struct Argument {
  std::string name;
  std::string type; // "Tensor", "Tensor?", "int[]", "Scalar", ...
  std::optional<std::string> default_value;
  bool kwarg_only = false;
  bool is_write = false; // Tensor(a!): written in place
};

/// A parsed schema, in PyTorch's syntax:
/// "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
struct FunctionSchema {
  std::string ns;       // "ember", or a custom library's namespace
  std::string name;     // "add"
  std::string overload; // "Tensor", or ""
  std::vector<Argument> arguments;
  std::vector<Argument> returns;
  /// "ns::name.overload"
  std::string qualified_name() const;
  /// The schema as written, qualified.
  std::string str() const;
  bool is_inplace() const;

  /// Parses a schema; `default_ns` applies when the name is unqualified.
  static FunctionSchema parse(const std::string &s,
                              const std::string &default_ns = "ember");
};

// ---------------------------------------------------------------------------
// Boxing: C++ values <-> IValues
// ---------------------------------------------------------------------------

namespace detail {
template <class T> struct Unbox;
#define EMBER_UNBOX(T, expr)                                                   \
  template <> struct Unbox<T> {                                                \
    static T get(IValue &v) { return expr; }                                   \
  };
EMBER_UNBOX(Tensor, v.toTensor())
EMBER_UNBOX(int64_t, v.toInt())
EMBER_UNBOX(double, v.toDouble())
EMBER_UNBOX(bool, v.toBool())
EMBER_UNBOX(Scalar, v.toScalar())
EMBER_UNBOX(IntArrayRef, v.toIntList())
EMBER_UNBOX(TensorList, TensorList(v.toTensorList()))
EMBER_UNBOX(std::vector<Tensor>, v.toTensorList())
EMBER_UNBOX(std::string_view, std::string_view(v.toStringRef()))
EMBER_UNBOX(std::string, v.toStringRef())
EMBER_UNBOX(ScalarType, v.toScalarType())
EMBER_UNBOX(Device, v.toDevice())
EMBER_UNBOX(Generator, v.toGenerator())
#undef EMBER_UNBOX
template <class T> struct Unbox<std::optional<T>> {
  static std::optional<T> get(IValue &v) {
    if (v.isNone())
      return std::nullopt;
    return Unbox<T>::get(v);
  }
};

template <> struct Unbox<OptionalIntArrayRef> {
  static OptionalIntArrayRef get(IValue &v) {
    if (v.isNone())
      return std::nullopt;
    return v.toIntList();
  }
};

template <class T> using bare_t = std::remove_cv_t<std::remove_reference_t<T>>;

/// Pushes a result (tuples flatten into several stack entries).
template <class T> void pushResult(Stack &s, T &&v) {
  using B = bare_t<T>;
  if constexpr (std::is_same_v<B, void>) {
  } else
    s.emplace_back(std::forward<T>(v));
}
template <class... Ts> void pushResult(Stack &s, std::tuple<Ts...> &&t) {
  std::apply([&](auto &&...e) { (s.emplace_back(std::move(e)), ...); },
             std::move(t));
}
template <class R> struct PopResult {
  static R get(Stack &s) {
    EMBER_CHECK(s.size() == 1, "a boxed kernel returned ", s.size(),
                " values where 1 was expected");
    return Unbox<bare_t<R>>::get(s[0]);
  }
};
template <> struct PopResult<void> {
  static void get(Stack &) {}
};
template <class... Ts> struct PopResult<std::tuple<Ts...>> {
  static std::tuple<Ts...> get(Stack &s) {
    EMBER_CHECK(s.size() == sizeof...(Ts), "a boxed kernel returned ", s.size(),
                " values where ", sizeof...(Ts), " were expected");
    return get(s, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> get(Stack &s, std::index_sequence<I...>) {
    return std::tuple<Ts...>(Unbox<bare_t<Ts>>::get(s[I])...);
  }
};

/// Key set of the tensor arguments of a call.
inline void addKeys(DispatchKeySet &, ...) {}
inline void addKeys(DispatchKeySet &ks, const Tensor &t) {
  if (t.defined())
    ks |= t.unsafeGetTensorImpl()->key_set();
}
inline void addKeys(DispatchKeySet &ks, const std::optional<Tensor> &t) {
  if (t)
    addKeys(ks, *t);
}
inline void addKeys(DispatchKeySet &ks, TensorList l) {
  for (const Tensor &t : l)
    addKeys(ks, t);
}
inline void addKeys(DispatchKeySet &ks, const std::vector<Tensor> &l) {
  addKeys(ks, TensorList(l));
}
DispatchKeySet keysOfStack(const Stack &s);
/// Key set of the tensor arguments of a typed call.
template <class... Args> DispatchKeySet keysOf(const Args &...args) {
  DispatchKeySet ks;
  (addKeys(ks, args), ...);
  return ks;
}

/// Records one argument's shape and type on a profiler event
/// (record_shapes): tensors give their sizes and dtype, other arguments an
/// empty shape and their kind, as PyTorch's "Input Dims" / "Input type".
inline void recordInput(profiler::record_function &rf, const Tensor &t) {
  if (t.defined())
    rf.record_input({t.sizes().data(), t.sizes().size()}, toString(t.dtype()));
  else
    rf.record_input({}, "");
}
inline void recordInput(profiler::record_function &rf,
                        const std::optional<Tensor> &t) {
  if (t)
    recordInput(rf, *t);
  else
    rf.record_input({}, "");
}
template <class T> void recordInput(profiler::record_function &rf, const T &) {
  using B = bare_t<T>;
  if constexpr (std::is_same_v<B, TensorList> ||
                std::is_same_v<B, std::vector<Tensor>>)
    rf.record_input({}, "TensorList");
  else if constexpr (std::is_same_v<B, IntArrayRef> ||
                     std::is_same_v<B, OptionalIntArrayRef>)
    rf.record_input({}, "ScalarList");
  else if constexpr (std::is_arithmetic_v<B> || std::is_same_v<B, Scalar>)
    rf.record_input({}, "Scalar");
  else
    rf.record_input({}, "");
}
void recordInputs(profiler::record_function &rf, const Stack &s);
} // namespace detail

class OperatorHandle;
using BoxedKernelFn =
    std::function<void(const OperatorHandle &, DispatchKeySet, Stack &)>;

/// A kernel: unboxed (typed function pointer) and/or boxed.
struct KernelFunction {
  void *unboxed = nullptr;
  BoxedKernelFn boxed;
  bool valid() const { return unboxed || boxed; }

  /// Wraps a typed function pointer; its boxed form unboxes the stack.
  template <class Ret, class... Args>
  static KernelFunction makeFromUnboxed(Ret (*fn)(Args...)) {
    KernelFunction k;
    k.unboxed = reinterpret_cast<void *>(fn);
    k.boxed = [fn](const OperatorHandle &, DispatchKeySet, Stack &s) {
      callUnboxedOnStack(fn, s, std::index_sequence_for<Args...>{});
    };
    return k;
  }
  static KernelFunction makeFromBoxed(BoxedKernelFn fn) {
    KernelFunction k;
    k.boxed = std::move(fn);
    return k;
  }

private:
  template <class Ret, class... Args, size_t... I>
  static void callUnboxedOnStack(Ret (*fn)(Args...), Stack &s,
                                 std::index_sequence<I...>) {
    EMBER_CHECK(s.size() == sizeof...(Args), "boxed call with ", s.size(),
                " arguments to a kernel that takes ", sizeof...(Args));
    // Unbox every argument first: IntArrayRef / TensorList views point into
    // the stack, which must stay alive until the kernel returns. (Braces:
    // with parentheses clang reads a function declaration.)
    std::tuple<detail::bare_t<Args>...> args{
        detail::Unbox<detail::bare_t<Args>>::get(s[I])...};
    if constexpr (std::is_void_v<Ret>) {
      std::apply(fn, args);
      s.clear();
    } else {
      Ret r = std::apply(fn, args);
      s.clear();
      detail::pushResult(s, std::move(r));
    }
  }
};

/// The schema type that a C++ argument type stands for ("Tensor", "int", ...),
/// used to check typed() calls against the schema.
namespace detail {
template <class T> struct SchemaType {
  static_assert(sizeof(T) == 0, "this C++ type has no schema type: use "
                                "Tensor, int64_t, double, bool, Scalar, ...");
};
#define EMBER_SCHEMA_TYPE(T, name)                                             \
  template <> struct SchemaType<T> {                                           \
    static constexpr const char *value = name;                                 \
  };                                                                           \
  template <> struct SchemaType<std::optional<T>> {                            \
    static constexpr const char *value = name "?";                             \
  };
EMBER_SCHEMA_TYPE(Tensor, "Tensor")
EMBER_SCHEMA_TYPE(int64_t, "int")
EMBER_SCHEMA_TYPE(double, "float")
EMBER_SCHEMA_TYPE(bool, "bool")
EMBER_SCHEMA_TYPE(Scalar, "Scalar")
EMBER_SCHEMA_TYPE(IntArrayRef, "int[]")
EMBER_SCHEMA_TYPE(TensorList, "Tensor[]")
template <> struct SchemaType<OptionalIntArrayRef> {
  static constexpr const char *value = "int[]?";
};
EMBER_SCHEMA_TYPE(std::vector<Tensor>, "Tensor[]")
EMBER_SCHEMA_TYPE(std::string_view, "str")
EMBER_SCHEMA_TYPE(std::string, "str")
EMBER_SCHEMA_TYPE(ScalarType, "ScalarType")
EMBER_SCHEMA_TYPE(Device, "Device")
EMBER_SCHEMA_TYPE(Generator, "Generator")
#undef EMBER_SCHEMA_TYPE
template <class T> const char *schemaTypeOf() { return SchemaType<T>::value; }
} // namespace detail

/// One registered op (c10::OperatorHandle).
class OperatorHandle {
public:
  explicit OperatorHandle(FunctionSchema schema);
  OperatorHandle(const OperatorHandle &) = delete;

  const FunctionSchema &schema() const { return schema_; }
  /// "ember::add.Tensor"
  const std::string &name() const { return name_; }

  void setKernel(DispatchKey k, KernelFunction f);
  bool hasKernel(DispatchKey k) const { return kernels_[int(k)].valid(); }

  /// Calls the op with typed arguments: the fast path.
  template <class Ret, class... Args> Ret call(Args... args) const {
    DispatchKeySet ks = detail::keysOf(args...);
    if (EMBER_UNLIKELY(profiler::active()))
      return callProfiled<Ret, Args...>(ks, args...);
    return redispatch<Ret, Args...>(ks, args...);
  }

  /// Runs the kernel of the highest key of `ks` (after the thread-local
  /// include/exclude sets are applied).
  template <class Ret, class... Args>
  Ret redispatch(DispatchKeySet ks, Args... args) const {
    const LocalDispatchKeySet &tls = tls_local_dispatch_key_set();
    ks = (ks | tls.included) - tls.excluded;
    const KernelFunction &k = lookup(ks);
    if (k.unboxed)
      return reinterpret_cast<Ret (*)(Args...)>(k.unboxed)(args...);
    Stack s;
    s.reserve(sizeof...(Args));
    (s.emplace_back(args), ...);
    k.boxed(*this, ks, s);
    if constexpr (std::is_reference_v<Ret>) {
      // In-place ops return their first argument (Tensor(a!) self).
      return std::get<0>(std::forward_as_tuple(args...));
    } else {
      return detail::PopResult<Ret>::get(s);
    }
  }

  /// Calls the op with boxed arguments; the stack holds the results after.
  void callBoxed(Stack &stack) const;
  void redispatchBoxed(DispatchKeySet ks, Stack &stack) const;

  /// Checks a typed signature against the schema (once per typed handle).
  void checkSignature(const std::vector<const char *> &cppArgTypes) const;

  /// The name of this op's profiler rows: "ember::add" (no overload), as
  /// PyTorch's "aten::add".
  const std::string &profile_name() const { return profile_name_; }

private:
  // Note [Profiling op calls]
  // call() and callBoxed() (the entry points from user code) record one
  // profiler event per op call; redispatch() and redispatchBoxed() (a kernel
  // handing the call to the key below it) do not, as PyTorch's dispatcher,
  // so an op shows once however many keys it passes through. Ops a kernel
  // calls through the public API nest inside the caller's event.
  template <class Ret, class... Args>
  [[gnu::noinline, gnu::cold]] Ret callProfiled(DispatchKeySet ks,
                                                Args... args) const {
    profiler::record_function rf(profile_name_,
                                 profiler::RecordScope::FUNCTION);
    if (rf.needs_inputs())
      (detail::recordInput(rf, args), ...);
    return redispatch<Ret, Args...>(ks, args...);
  }

  const KernelFunction &lookup(DispatchKeySet ks) const;
  [[noreturn]] void noKernel(DispatchKeySet ks) const;

  FunctionSchema schema_;
  std::string name_;
  std::string profile_name_;
  KernelFunction kernels_[kNumDispatchKeys];
};

/// A handle with a checked C++ signature (c10::TypedOperatorHandle).
template <class Sig> class TypedOperatorHandle;
template <class Ret, class... Args> class TypedOperatorHandle<Ret(Args...)> {
public:
  explicit TypedOperatorHandle(const OperatorHandle &op) : op_(&op) {
    op.checkSignature({detail::schemaTypeOf<detail::bare_t<Args>>()...});
  }
  Ret call(Args... args) const { return op_->call<Ret, Args...>(args...); }
  const OperatorHandle &handle() const { return *op_; }

private:
  const OperatorHandle *op_;
};

/// Global registry of ops by qualified name.
class Dispatcher {
public:
  static Dispatcher &singleton();
  /// Registers a schema; throws if the name is taken.
  OperatorHandle &registerSchema(const std::string &schema,
                                 const std::string &default_ns = "ember");
  /// Finds "ns::name" or "ns::name.overload"; null when absent.
  OperatorHandle *findOp(const std::string &qualified_name) const;
  /// Like findOp, with an error naming close matches when absent.
  OperatorHandle &findSchemaOrThrow(const std::string &qualified_name) const;
  std::vector<const OperatorHandle *> allOps() const;

  /// A boxed kernel used for `key` by every op without its own (PyTorch's
  /// fallback: how modes and capture see every op).
  void setFallback(DispatchKey key, BoxedKernelFn fn);
  const KernelFunction &fallback(DispatchKey key) const {
    return fallbacks_[int(key)];
  }

private:
  OperatorHandle *findOpLocked(const std::string &qualified_name) const;

  // Note [Registry lock]
  // Ops may be defined (Library::def) on one thread while others look ops
  // up by name (find_op, call_op), so the registry's map and list are read
  // and written under mu_. The handles they own never move, so a handle
  // found under the lock stays valid without it. A handle's kernel table
  // and the fallbacks are not locked: kernels are registered before the op
  // is called (as in PyTorch), and the fallbacks once, before any call can
  // reach their key.
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<OperatorHandle>> ops_;
  std::vector<OperatorHandle *> order_;
  KernelFunction fallbacks_[kNumDispatchKeys];
};

// ---------------------------------------------------------------------------
// User dispatch modes (PyTorch's TorchDispatchMode)
// ---------------------------------------------------------------------------

/// A user mode sees every op call below the C++ API: override dispatch(),
/// inspect `op` and the boxed arguments, and produce the results on the stack
/// (usually by calling op.callBoxed(stack), which runs the op below this mode
/// and below any mode pushed before it). Push with TorchDispatchModeGuard.
class TorchDispatchMode {
public:
  virtual ~TorchDispatchMode() = default;
  virtual void dispatch(const OperatorHandle &op, Stack &stack) {
    op.callBoxed(stack);
  }
};

/// RAII: pushes a mode for the current scope, on the current thread. Modes
/// nest: the innermost sees an op first.
class TorchDispatchModeGuard {
public:
  explicit TorchDispatchModeGuard(TorchDispatchMode &mode);
  ~TorchDispatchModeGuard();
  TorchDispatchModeGuard(const TorchDispatchModeGuard &) = delete;
  TorchDispatchModeGuard &operator=(const TorchDispatchModeGuard &) = delete;

private:
  TorchDispatchMode *mode_;
};

// ---------------------------------------------------------------------------
// Custom ops (torch.library)
// ---------------------------------------------------------------------------

/// Defines ops in a namespace and registers their kernels:
///
///   ember::Library lib("mylib");
///   lib.def("scale(Tensor x, float a) -> Tensor");
///   lib.impl("scale", ember::kCPU, &scale_cpu);
///   auto op = ember::find_op<Tensor(const Tensor&, double)>("mylib::scale");
///   Tensor y = op.call(x, 2.0);
class Library {
public:
  explicit Library(std::string ns);
  Library &def(const std::string &schema);
  /// Defines and registers a CPU kernel in one step.
  template <class Ret, class... Args>
  Library &def(const std::string &schema, Ret (*fn)(Args...)) {
    def(schema);
    return impl(FunctionSchema::parse(schema, ns_).qualified_name(), kCPU, fn);
  }
  template <class Ret, class... Args>
  Library &impl(const std::string &name, DeviceType backend,
                Ret (*fn)(Args...)) {
    auto &op = resolve(name);
    std::vector<const char *> types{
        detail::schemaTypeOf<detail::bare_t<Args>>()...};
    op.checkSignature(types);
    op.setKernel(backendKey(backend), KernelFunction::makeFromUnboxed(fn));
    return *this;
  }
  Library &impl_boxed(const std::string &name, DeviceType backend,
                      BoxedKernelFn fn);

private:
  OperatorHandle &resolve(const std::string &name);
  static DispatchKey backendKey(DeviceType t) {
    return t == kCUDA ? DispatchKey::CUDA : DispatchKey::CPU;
  }
  std::string ns_;
};

/// A typed handle to a registered op ("ns::name[.overload]").
template <class Sig> TypedOperatorHandle<Sig> find_op(const std::string &name) {
  return TypedOperatorHandle<Sig>(
      Dispatcher::singleton().findSchemaOrThrow(name));
}

/// Calls any registered op with boxed arguments; returns its results.
Stack call_op(const std::string &name, Stack args);

} // namespace ember
