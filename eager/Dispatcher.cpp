#include "eager/Dispatcher.h"
#include "eager/autograd/ThreadLocalState.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace ember {

const char *toString(DispatchKey k) {
  switch (k) {
#define EMBER_DK_NAME(n)                                                       \
  case DispatchKey::n:                                                         \
    return #n;
    EMBER_FORALL_DISPATCH_KEYS(EMBER_DK_NAME)
#undef EMBER_DK_NAME
  default:
    return "Undefined";
  }
}

LocalDispatchKeySet &tls_local_dispatch_key_set() {
  static thread_local LocalDispatchKeySet s;
  return s;
}

// ---------------------------------------------------------------------------
// Schema parsing
// ---------------------------------------------------------------------------

namespace {
class SchemaParser {
public:
  explicit SchemaParser(const std::string &s) : s_(s) {}

  FunctionSchema parse(const std::string &default_ns) {
    FunctionSchema fs;
    std::string qual = ident(true);
    auto colons = qual.find("::");
    if (colons != std::string::npos) {
      fs.ns = qual.substr(0, colons);
      qual = qual.substr(colons + 2);
    } else {
      fs.ns = default_ns;
    }
    auto dot = qual.find('.');
    fs.name = qual.substr(0, dot);
    if (dot != std::string::npos)
      fs.overload = qual.substr(dot + 1);
    expect('(');
    bool kwonly = false;
    commaList([&] {
      if (peek() == '*') {
        ++i_;
        kwonly = true;
        return;
      }
      Argument a = argument(true);
      a.kwarg_only = kwonly;
      fs.arguments.push_back(std::move(a));
    });
    expect(')');
    skipWs();
    expect('-');
    expect('>');
    skipWs();
    if (peek() == '(') {
      ++i_;
      commaList([&] { fs.returns.push_back(argument(false)); });
      expect(')');
    } else {
      fs.returns.push_back(argument(false));
    }
    skipWs();
    if (i_ != s_.size())
      fail("unexpected trailing text");
    return fs;
  }

private:
  /// Parses `item (, item)*` up to a closing ')' (which is not consumed); an
  /// empty list is allowed.
  template <class F> void commaList(F &&item) {
    skipWs();
    if (peek() == ')')
      return;
    for (;;) {
      skipWs();
      item();
      skipWs();
      if (peek() != ',')
        return;
      ++i_;
    }
  }

  Argument argument(bool named) {
    Argument a;
    skipWs();
    std::string type = ident(false);
    // Alias annotation: Tensor(a) / Tensor(a!)
    if (peek() == '(') {
      auto close = s_.find(')', i_);
      if (close == std::string::npos)
        fail("unclosed alias annotation");
      std::string ann = s_.substr(i_ + 1, close - i_ - 1);
      a.is_write = !ann.empty() && ann.back() == '!';
      i_ = close + 1;
    }
    // Suffixes: [] or [N] (lists), ? (optional), in any order.
    for (;;) {
      if (peek() == '[') {
        auto close = s_.find(']', i_);
        if (close == std::string::npos)
          fail("unclosed [");
        type += "[]";
        i_ = close + 1;
      } else if (peek() == '?') {
        type += "?";
        ++i_;
      } else {
        break;
      }
    }
    static const char *known[] = {
        "Tensor",     "int",    "float",     "bool",   "Scalar",      "str",
        "ScalarType", "Device", "Generator", "Layout", "MemoryFormat"};
    std::string base = type.substr(0, type.find_first_of("[?"));
    if (std::find_if(std::begin(known), std::end(known), [&](const char *k) {
          return base == k;
        }) == std::end(known))
      fail("unknown type '" + base + "'");
    a.type = type;
    skipWs();
    if (named || std::isalpha(static_cast<unsigned char>(peek())))
      a.name = ident(false);
    skipWs();
    if (named && peek() == '=') {
      ++i_;
      size_t start = i_;
      int depth = 0;
      while (i_ < s_.size() &&
             (depth > 0 || (s_[i_] != ',' && s_[i_] != ')'))) {
        if (s_[i_] == '[')
          ++depth;
        if (s_[i_] == ']')
          --depth;
        ++i_;
      }
      a.default_value = trim(s_.substr(start, i_ - start));
    }
    return a;
  }

  std::string ident(bool qualified) {
    skipWs();
    size_t start = i_;
    while (i_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' ||
            (qualified && (s_[i_] == ':' || s_[i_] == '.'))))
      ++i_;
    if (start == i_)
      fail("expected a name");
    return s_.substr(start, i_ - start);
  }
  static std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
      s.pop_back();
    return s;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skipWs() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  void expect(char c) {
    skipWs();
    if (peek() != c)
      fail(std::string("expected '") + c + "'");
    ++i_;
  }
  [[noreturn]] void fail(const std::string &why) {
    throw Error("invalid op schema '" + s_ + "': " + why + " at offset " +
                std::to_string(i_) +
                ". Schemas look like 'name.overload(Tensor self, "
                "int dim, *, bool keepdim=False) -> Tensor'.");
  }
  const std::string &s_;
  size_t i_ = 0;
};
} // namespace

FunctionSchema FunctionSchema::parse(const std::string &s,
                                     const std::string &default_ns) {
  return SchemaParser(s).parse(default_ns);
}

std::string FunctionSchema::qualified_name() const {
  return ns + "::" + name + (overload.empty() ? "" : "." + overload);
}

bool FunctionSchema::is_inplace() const {
  return !arguments.empty() && arguments[0].is_write;
}

std::string FunctionSchema::str() const {
  std::ostringstream os;
  os << qualified_name() << "(";
  bool kw = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument &a = arguments[i];
    if (i)
      os << ", ";
    if (a.kwarg_only && !kw) {
      os << "*, ";
      kw = true;
    }
    std::string t = a.type;
    if (a.is_write) // re-insert the alias annotation after the base type
      t.insert(t.find_first_of("[?") == std::string::npos
                   ? t.size()
                   : t.find_first_of("[?"),
               "(a!)");
    os << t << " " << a.name;
    if (a.default_value)
      os << "=" << *a.default_value;
  }
  os << ") -> ";
  if (returns.size() == 1) {
    os << returns[0].type << (returns[0].is_write ? "(a!)" : "");
  } else {
    os << "(";
    for (size_t i = 0; i < returns.size(); ++i)
      os << (i ? ", " : "") << returns[i].type;
    os << ")";
  }
  return os.str();
}

// ---------------------------------------------------------------------------
// IValue printing
// ---------------------------------------------------------------------------

const char *IValue::tagName() const {
  static const char *names[] = {"None", "Tensor",     "int",     "float",
                                "bool", "int[]",      "float[]", "Tensor[]",
                                "str",  "ScalarType", "Device",  "Generator"};
  static_assert(sizeof(names) / sizeof(names[0]) ==
                std::variant_size_v<IValue::Payload>);
  return names[v_.index()];
}

std::ostream &operator<<(std::ostream &os, const IValue &v) {
  if (v.isNone())
    return os << "None";
  if (v.isTensor()) {
    const Tensor &t = v.toTensor();
    if (!t.defined())
      return os << "Tensor(undefined)";
    return os << "Tensor(" << t.sizes() << ", " << t.dtype() << ")";
  }
  if (v.isInt())
    return os << v.toInt();
  if (v.isDouble())
    return os << v.toDouble();
  if (v.isBool())
    return os << (v.toBool() ? "True" : "False");
  if (v.isIntList())
    return os << v.toIntList();
  if (v.isDoubleList())
    return os << ArrayRef<double>(v.toDoubleList());
  if (v.isTensorList())
    return os << "[" << v.toTensorList().size() << " tensors]";
  if (v.isString())
    return os << "'" << v.toStringRef() << "'";
  if (v.isScalarType())
    return os << v.toScalarType();
  if (v.isDevice())
    return os << v.toDevice();
  return os << "Generator";
}

// ---------------------------------------------------------------------------
// OperatorHandle
// ---------------------------------------------------------------------------

namespace detail {
DispatchKeySet keysOfStack(const Stack &s) {
  DispatchKeySet ks;
  for (const IValue &v : s) {
    if (v.isTensor())
      addKeys(ks, v.toTensor());
    else if (v.isTensorList())
      addKeys(ks, v.toTensorList());
  }
  return ks;
}

void recordInputs(profiler::record_function &rf, const Stack &s) {
  for (const IValue &v : s) {
    if (v.isTensor())
      recordInput(rf, v.toTensor());
    else if (v.isTensorList())
      rf.record_input({}, "TensorList");
    else if (v.isIntList() || v.isDoubleList())
      rf.record_input({}, "ScalarList");
    else if (v.isScalar())
      rf.record_input({}, "Scalar");
    else
      rf.record_input({}, "");
  }
}
} // namespace detail

OperatorHandle::OperatorHandle(FunctionSchema schema)
    : schema_(std::move(schema)), name_(schema_.qualified_name()),
      profile_name_(schema_.ns + "::" + schema_.name) {}

void OperatorHandle::setKernel(DispatchKey k, KernelFunction f) {
  kernels_[int(k)] = std::move(f);
}

const KernelFunction &OperatorHandle::lookup(DispatchKeySet ks) const {
  const Dispatcher &d = Dispatcher::singleton();
  while (!ks.empty()) {
    DispatchKey k = ks.highest();
    const KernelFunction &own = kernels_[int(k)];
    if (own.valid())
      return own;
    const KernelFunction &fb = d.fallback(k);
    if (fb.valid())
      return fb;
    // Non-backend keys without a kernel fall through to the next key.
    if (k == DispatchKey::CPU || k == DispatchKey::CUDA)
      break;
    ks = ks.below(k);
  }
  noKernel(ks);
}

void OperatorHandle::noKernel(DispatchKeySet ks) const {
  if (ks.empty())
    throw Error("'" + name_ +
                "' was called without a defined tensor argument to choose a "
                "device from (an undefined Tensor, or an empty list of "
                "tensors); pass at least one defined tensor.");
  std::string available;
  for (int k = 0; k < kNumDispatchKeys; ++k)
    if (kernels_[k].valid())
      available +=
          std::string(available.empty() ? "" : ", ") + toString(DispatchKey(k));
  throw NotImplementedError(
      "Could not run '" + name_ + "' with arguments from the '" +
      toString(ks.highest()) + "' backend: the op has kernels only for [" +
      available + "]. Move the tensors to a supported device.");
}

void OperatorHandle::callBoxed(Stack &stack) const {
  // Note [Profiling op calls]
  profiler::record_function rf(profile_name_, profiler::RecordScope::FUNCTION);
  if (EMBER_UNLIKELY(rf.needs_inputs()))
    detail::recordInputs(rf, stack);
  redispatchBoxed(detail::keysOfStack(stack), stack);
}

void OperatorHandle::redispatchBoxed(DispatchKeySet ks, Stack &stack) const {
  const LocalDispatchKeySet &tls = tls_local_dispatch_key_set();
  ks = (ks | tls.included) - tls.excluded;
  lookup(ks).boxed(*this, ks, stack);
}

void OperatorHandle::checkSignature(
    const std::vector<const char *> &types) const {
  const auto &args = schema_.arguments;
  bool ok = types.size() == args.size();
  for (size_t i = 0; ok && i < args.size(); ++i) {
    std::string want = args[i].type;
    // int[N] and friends are int[]; Tensor(a!) is Tensor.
    ok = want == types[i];
  }
  if (ok)
    return;
  std::string got;
  for (const char *t : types)
    got += std::string(got.empty() ? "" : ", ") + t;
  throw Error("Tried to access or call operator " + name_ +
              " with a wrong signature: the C++ arguments are (" + got +
              ") but the schema is " + schema_.str() +
              ". Use the C++ types of the schema (Tensor: const Tensor&, "
              "int: int64_t, float: double, Scalar: const Scalar&, ...).");
}

// ---------------------------------------------------------------------------
// Dispatcher
// ---------------------------------------------------------------------------

Dispatcher &Dispatcher::singleton() {
  static Dispatcher *d = new Dispatcher();
  return *d;
}

OperatorHandle &Dispatcher::registerSchema(const std::string &schema,
                                           const std::string &default_ns) {
  FunctionSchema fs = FunctionSchema::parse(schema, default_ns);
  std::string name = fs.qualified_name();
  std::lock_guard<std::mutex> lock(mu_); // Note [Registry lock]
  EMBER_CHECK(!ops_.count(name), "op ", name, " is already defined (schema: ",
              ops_.count(name) ? ops_.at(name)->schema().str() : "",
              "); choose another name or "
              "overload");
  auto op = std::make_unique<OperatorHandle>(std::move(fs));
  OperatorHandle &ref = *op;
  ops_.emplace(name, std::move(op));
  order_.push_back(&ref);
  return ref;
}

OperatorHandle *Dispatcher::findOpLocked(const std::string &name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

OperatorHandle *Dispatcher::findOp(const std::string &name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return findOpLocked(name);
}

OperatorHandle &Dispatcher::findSchemaOrThrow(const std::string &name) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (auto *op = findOpLocked(name))
    return *op;
  // "ns::name" without overload: accept when there is exactly one.
  OperatorHandle *only = nullptr;
  int count = 0;
  std::string overloads;
  for (auto *op : order_) {
    const auto &s = op->schema();
    if (s.ns + "::" + s.name == name) {
      only = op;
      ++count;
      overloads += (overloads.empty() ? "" : ", ") + op->name();
    }
  }
  lock.unlock();
  if (count == 1)
    return *only;
  if (count > 1)
    throw Error("op name '" + name +
                "' is ambiguous; name an overload: " + overloads);
  throw Error("no op named '" + name +
              "' is registered. Custom ops must be defined with "
              "ember::Library(\"ns\").def(schema) before use, and names are "
              "qualified as 'ns::name'.");
}

std::vector<const OperatorHandle *> Dispatcher::allOps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {order_.begin(), order_.end()};
}

void Dispatcher::setFallback(DispatchKey key, BoxedKernelFn fn) {
  fallbacks_[int(key)] = KernelFunction::makeFromBoxed(std::move(fn));
}

// ---------------------------------------------------------------------------
// Modes
// ---------------------------------------------------------------------------

namespace {
std::vector<TorchDispatchMode *> &modeStack() {
  static thread_local std::vector<TorchDispatchMode *> s;
  return s;
}
void syncModeKey() {
  auto &tls = tls_local_dispatch_key_set();
  tls.included = modeStack().empty() ? tls.included - DispatchKey::Mode
                                     : tls.included | DispatchKey::Mode;
}

// Note [Mode dispatch]
// The Mode key's fallback pops the innermost mode while that mode handles
// the op, so that the mode's own calls (op.callBoxed) reach the next mode or
// the kernels below; the mode is pushed back afterwards, even on error.
void modeFallback(const OperatorHandle &op, DispatchKeySet, Stack &stack) {
  auto &modes = modeStack();
  EMBER_INTERNAL_ASSERT(!modes.empty());
  TorchDispatchMode *mode = modes.back();
  modes.pop_back();
  syncModeKey();
  struct Restore {
    TorchDispatchMode *m;
    ~Restore() {
      modeStack().push_back(m);
      syncModeKey();
    }
  } restore{mode};
  mode->dispatch(op, stack);
}

const bool kModeFallbackRegistered = [] {
  Dispatcher::singleton().setFallback(DispatchKey::Mode, &modeFallback);
  return true;
}();
} // namespace

namespace detail {
std::vector<TorchDispatchMode *> get_mode_stack() { return modeStack(); }
void set_mode_stack(std::vector<TorchDispatchMode *> modes) {
  modeStack() = std::move(modes);
  syncModeKey();
}
} // namespace detail

TorchDispatchModeGuard::TorchDispatchModeGuard(TorchDispatchMode &mode)
    : mode_(&mode) {
  (void)kModeFallbackRegistered;
  modeStack().push_back(mode_);
  syncModeKey();
}

TorchDispatchModeGuard::~TorchDispatchModeGuard() {
  auto &modes = modeStack();
  // Guards are scoped, so the innermost is ours.
  if (!modes.empty() && modes.back() == mode_)
    modes.pop_back();
  syncModeKey();
}

// ---------------------------------------------------------------------------
// Library
// ---------------------------------------------------------------------------

Library::Library(std::string ns) : ns_(std::move(ns)) {
  EMBER_CHECK(!ns_.empty() && ns_ != "ember",
              "Library: the namespace 'ember' is reserved for built-in ops; "
              "use your own namespace");
}

Library &Library::def(const std::string &schema) {
  FunctionSchema fs = FunctionSchema::parse(schema, ns_);
  EMBER_CHECK(fs.ns == ns_, "Library(\"", ns_, "\").def: schema '", schema,
              "' names another namespace");
  Dispatcher::singleton().registerSchema(schema, ns_);
  return *this;
}

OperatorHandle &Library::resolve(const std::string &name) {
  std::string q =
      name.find("::") == std::string::npos ? ns_ + "::" + name : name;
  return Dispatcher::singleton().findSchemaOrThrow(q);
}

Library &Library::impl_boxed(const std::string &name, DeviceType backend,
                             BoxedKernelFn fn) {
  resolve(name).setKernel(backendKey(backend),
                          KernelFunction::makeFromBoxed(std::move(fn)));
  return *this;
}

Stack call_op(const std::string &name, Stack args) {
  Dispatcher::singleton().findSchemaOrThrow(name).callBoxed(args);
  return args;
}

} // namespace ember
