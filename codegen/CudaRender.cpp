#include "codegen/CudaRender.h"

#include "codegen/ScalarLibrary.h"
#include "eager/Dtype.h"
#include "eager/Meta.h"
#include "eager/cuda/Pointwise.h"
#include "runtime/DiskCache.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace ember::codegen {

const cuda::Functor *cuda_functor(const OperatorHandle &op) {
  static const std::unordered_map<std::string, const cuda::Functor *> by_name =
      [] {
        std::unordered_map<std::string, const cuda::Functor *> m;
        for (const cuda::Functor &f : cuda::pointwise_functors())
          m.emplace(f.name, &f);
        return m;
      }();
  auto it = by_name.find(pointwise_cname(op) + "_op");
  return it == by_name.end() ? nullptr : it->second;
}

namespace {

// The kernels' shared device code, each in a program once.
const char kVecHelper[] = R"(namespace ember {
// A vector of N elements, loaded and stored as one access.
template <class T, int N> struct alignas(sizeof(T) * N) Vec {
  T v[N];
};
} // namespace ember
)";

} // namespace

std::string CudaKernel::source() const { return cuda_program({*this}); }

std::string cuda_program(const std::vector<CudaKernel> &kernels) {
  std::string s = cuda::prelude();
  std::set<std::string> seen;
  for (const CudaKernel &k : kernels)
    for (const cuda::Functor *f : k.functors)
      if (seen.insert(f->name).second)
        s += cuda::functor_source(*f);
  bool vec = false, reduce = false;
  for (const CudaKernel &k : kernels) {
    vec = vec || k.vector > 1;
    reduce = reduce || k.reduction;
  }
  if (vec)
    s += kVecHelper;
  if (reduce)
    s += cuda::block_reduce_source();
  // One definition per entry: equal descriptions render equal kernels.
  std::set<std::string> entries;
  for (const CudaKernel &k : kernels)
    if (entries.insert(k.entry).second)
      s += k.kernel;
  return s;
}

namespace {

using cuda::detail::ctype;

/// The largest grid a kernel is launched with: its index arithmetic is
/// checked against the loop's last step at this grid.
constexpr int64_t kMaxBlocks = 65535;
constexpr int kBlock = 256;
// Note [Persistent rows]: the largest block of a held row, the most points
// a thread holds, and the registers of held values a thread may use.
constexpr int64_t kPersistentBlock = 512;
constexpr int64_t kMaxHeld = 16;
constexpr int64_t kHeldRegisters = 32;

/// The type a value of dtype `t` travels in (Note [CUDA kernels from the
/// kernel description]).
ScalarType reg_of(ScalarType t) { return cuda::detail::compute_of(t); }

/// The 32-bit registers a value of dtype `t` takes in its register type.
int64_t registers_of(ScalarType t) {
  return std::max<int64_t>(1, int64_t(elementSize(reg_of(t))) / 4);
}

/// `expr` (of any type) as a value of dtype `t`, in t's register type: a
/// 16-bit float is rounded to it, then held as float.
std::string round_to(ScalarType t, const std::string &expr) {
  if (reg_of(t) != t)
    return std::string("convert<float>(convert<") + ctype(t) + ">(" + expr +
           "))";
  return std::string("convert<") + ctype(t) + ">(" + expr + ")";
}

/// `expr`, a value of (register) dtype `from`, converted to `to`: nothing
/// to write when they are the same.
std::string conv(ScalarType to, ScalarType from, const std::string &expr) {
  if (to == from)
    return expr;
  return std::string("convert<") + ctype(to) + ">(" + expr + ")";
}

std::string float_literal(double v, bool single) {
  if (std::isnan(v))
    return single ? "__int_as_float(0x7fc00000)"
                  : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") +
           (single ? "__int_as_float(0x7f800000)"
                   : "__longlong_as_double(0x7ff0000000000000LL)");
  char buf[64];
  std::snprintf(buf, sizeof buf, single ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return single ? s + "f" : s;
}

std::string int_literal(ScalarType t, int64_t v) {
  std::string c = ctype(t);
  if (v == INT64_MIN)
    return "(" + c + ")(-9223372036854775807LL - 1)";
  return "(" + c + ")" + std::to_string(v) + (t == kLong ? "LL" : "");
}

/// `s` as a value of dtype `t`, in t's register type (rounded to t first,
/// as the eager kernel's Scalar::to<T>() does).
std::string literal(ScalarType t, const Scalar &s) {
  std::string out;
  dispatch_dtype(t, "the CUDA renderer", [&]<class T>() {
    T v = s.to<T>();
    if constexpr (std::is_same_v<T, bool>)
      out = v ? "true" : "false";
    else if constexpr (std::is_same_v<T, double>)
      out = float_literal(v, false);
    else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                       std::is_same_v<T, BFloat16>)
      out = float_literal(double(float(v)), true);
    else
      out = int_literal(t, int64_t(v));
  });
  return out;
}

/// The identity of a fold in its accumulator's dtype.
std::string identity(const KernelSpec::Step &s) {
  ScalarType a = reg_of(s.acc_dtype());
  if (s.sums())
    return std::string(ctype(a)) + "(0)";
  bool max = s.fold == ReductionInfo::Amax;
  if (isFloatingType(a))
    return float_literal(max ? -INFINITY : INFINITY, a != kDouble);
  int64_t lo = 0, hi = 0;
  dispatch_dtype(a, "the CUDA renderer", [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {
      lo = int64_t(std::numeric_limits<T>::lowest());
      hi = int64_t(std::numeric_limits<T>::max());
    }
  });
  return int_literal(a, max ? lo : hi);
}

std::string v(int id) { return "v" + std::to_string(id); }

class Renderer {
public:
  explicit Renderer(const KernelSpec &k) : k_(k) {
    nouts_ = k.outputs.size();
    for (size_t o = 0; o < k.output_inputs.size(); ++o)
      if (k.output_inputs[o] >= 0)
        aliased_.insert(nouts_ + size_t(k.output_inputs[o]));
  }

  CudaKernel render() {
    CudaKernel r;
    r.entry =
        "ember_cuda_" + disk_cache::hex(std::hash<std::string>()(k_.str()));
    collect_functors(r);
    std::ostringstream body;
    if (k_.has_reduction())
      reduction(r, body);
    else
      pointwise(r, body);
    std::ostringstream os;
    os << "namespace ember {\n";
    os << "extern \"C\" __global__ void __launch_bounds__(" << r.block << ") "
       << r.entry << "(" << params() << ") {\n";
    os << "  typedef " << (r.index32 ? "int" : "long long") << " index_t;\n";
    os << functor_instances() << constants() << body.str() << "}\n";
    os << "} // namespace ember\n";
    r.kernel = os.str();
    return r;
  }

private:
  // --- operands

  size_t noperands() const { return nouts_ + k_.inputs.size(); }
  std::string operand(size_t op) const {
    return op < nouts_ ? "out" + std::to_string(op)
                       : "in" + std::to_string(op - nouts_);
  }
  ScalarType operand_dtype(size_t op) const {
    return op < nouts_ ? k_.dtype(k_.outputs[op])
                       : k_.inputs[op - nouts_].dtype;
  }
  std::string params() const {
    std::string p;
    for (size_t op = 0; op < noperands(); ++op) {
      if (op)
        p += ", ";
      p += op < nouts_ ? "" : "const ";
      p += ctype(operand_dtype(op));
      p += aliased(op) ? " *" : " *__restrict__ ";
      p += operand(op);
    }
    return p;
  }
  /// An output written in place of an input, or that input.
  bool aliased(size_t op) const {
    if (op < nouts_)
      return op < k_.output_inputs.size() && k_.output_inputs[op] >= 0;
    return aliased_.count(op) != 0;
  }
  /// An operand's strides over the spec's shape (outputs contiguous).
  std::vector<int64_t> strides_of(size_t op) const {
    if (op >= nouts_)
      return k_.inputs[op - nouts_].strides;
    std::vector<int64_t> st(k_.shape.size());
    int64_t s = 1;
    for (size_t d = st.size(); d-- > 0;) {
      st[d] = s;
      s *= k_.shape[d];
    }
    return st;
  }

  // --- steps

  void collect_functors(CudaKernel &r) {
    std::set<const cuda::Functor *> seen;
    for (const KernelSpec::Step &s : k_.steps) {
      if (s.kind != KernelSpec::Kind::Pointwise)
        continue;
      const cuda::Functor *f = cuda_functor(*s.op);
      EMBER_CHECK(f, "the CUDA renderer: ", s.op->name(),
                  " has no device functor");
      if (seen.insert(f).second)
        r.functors.push_back(f);
    }
  }

  /// One functor object per pointwise step, its Scalar arguments in the
  /// compute type (as the eager kernel passes them).
  std::string functor_instances() const {
    std::string s;
    for (size_t id = 0; id < k_.values.size(); ++id) {
      const KernelSpec::Value &x = k_.values[id];
      if (x.kind != KernelSpec::Value::Kind::Step)
        continue;
      const KernelSpec::Step &st = k_.steps[size_t(x.index)];
      if (st.kind != KernelSpec::Kind::Pointwise)
        continue;
      const cuda::Functor *f = cuda_functor(*st.op);
      ScalarType c = reg_of(st.compute);
      s += "  const fn::" + std::string(f->name) + "<" + ctype(c) + "> f" +
           std::to_string(id) + "{";
      for (size_t i = 0; i < st.scalars.size(); ++i)
        s += (i ? ", " : "") + literal(c, st.scalars[i]);
      s += "};\n";
    }
    return s;
  }

  std::string constants() const {
    std::string s;
    for (size_t id = 0; id < k_.values.size(); ++id) {
      const KernelSpec::Value &x = k_.values[id];
      if (x.kind != KernelSpec::Value::Kind::Constant)
        continue;
      const KernelSpec::Constant &c = k_.constants[size_t(x.index)];
      s += "  const " + std::string(ctype(reg_of(c.dtype))) + " " + v(int(id)) +
           " = " + literal(c.dtype, c.value) + ";\n";
    }
    return s;
  }

  /// The definition of pointwise or conversion step `id`.
  std::string step_line(int id, const std::string &indent) const {
    const KernelSpec::Step &s = k_.step_of(id);
    std::string expr; // before rounding to s.out
    if (s.kind == KernelSpec::Kind::Convert) {
      expr = v(s.args[0]);
    } else {
      const meta::PointwiseSpec *spec = meta::find_pointwise_spec(*s.op);
      ScalarType c = reg_of(s.compute);
      bool float_numbers = spec && spec->float_numbers;
      std::string call = "f" + std::to_string(id) + "(";
      for (size_t i = 0; i < s.args.size(); ++i) {
        int a = s.args[i];
        ScalarType from = k_.dtype(a);
        std::string x;
        if (spec && ((spec->bool_args >> i) & 1u)) {
          // A mask or condition, read as bool (as the eager kernel reads it).
          x = conv(kBool, reg_of(from), v(a));
        } else if (c != s.compute && float_numbers && i == 1 &&
                   k_.values[size_t(a)].kind ==
                       KernelSpec::Value::Kind::Constant) {
          // A number keeps the compute type's precision in mul and div
          // (Note [Numbers in reduced precision]): x * 0.1 in float16
          // multiplies by 0.1f.
          x = conv(c, reg_of(from), v(a));
        } else if (c != s.compute && from != s.compute) {
          // Eager converts each input to the op's dtype first: a value of
          // another dtype is rounded to the 16-bit float, then read in
          // float (as the CPU generator's cast to Step::compute).
          x = round_to(s.compute, v(a));
        } else {
          x = conv(c, reg_of(from), v(a));
        }
        call += (i ? ", " : "") + x;
      }
      expr = call + ")";
    }
    if (has_narrow(id))
      // Rounded to the 16-bit float once: the value as stored (`v<id>n`),
      // then in float; an output stores the first instead of rounding the
      // float again.
      return indent + "const " + ctype(s.out) + " " + v(id) + "n = convert<" +
             ctype(s.out) + ">(" + expr + ");\n" + indent + "const " +
             ctype(reg_of(s.out)) + " " + v(id) + " = convert<" +
             ctype(reg_of(s.out)) + ">(" + v(id) + "n);\n";
    return indent + "const " + ctype(reg_of(s.out)) + " " + v(id) + " = " +
           round_to(s.out, expr) + ";\n";
  }

  /// Whether step `x` is rounded to a 16-bit float, its value defined in
  /// that type too (`v<x>n`, beside v<x> in float) where it is computed.
  bool has_narrow(int x) const {
    return k_.values[size_t(x)].kind == KernelSpec::Value::Kind::Step &&
           !k_.is_reduce(x) && reg_of(k_.dtype(x)) != k_.dtype(x);
  }

  /// Output `o`'s value as its dtype stores it: a 16-bit step's rounded
  /// value where it was computed in scope (not read from a held value's
  /// registers, Note [Held values]).
  std::string store(size_t o, bool computed_here = true) const {
    int x = k_.outputs[o];
    if (computed_here && has_narrow(x) && operand_dtype(o) == k_.dtype(x))
      return v(x) + "n";
    return conv(operand_dtype(o), reg_of(k_.dtype(x)), v(x));
  }

  /// The values `roots` read, transitively, that `want` selects, in order.
  std::vector<int> closure(const std::vector<int> &roots,
                           const std::function<bool(int)> &want) const {
    std::vector<bool> need(k_.values.size(), false);
    std::vector<int> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (need[size_t(x)] || !want(x))
        continue;
      need[size_t(x)] = true;
      if (k_.values[size_t(x)].kind == KernelSpec::Value::Kind::Step &&
          !k_.is_reduce(x))
        for (int a : k_.step_of(x).args)
          stack.push_back(a);
    }
    std::vector<int> out;
    for (size_t x = 0; x < need.size(); ++x)
      if (need[x])
        out.push_back(int(x));
    return out;
  }

  /// Lines computing `values` (inputs loaded by `load`, steps by their
  /// functors; constants are defined at the kernel's top). `load` gives an
  /// input in its storage type, or in its register type for the inputs in
  /// `in_register` (a held row's).
  std::string compute(const std::vector<int> &values,
                      const std::function<std::string(int)> &load,
                      const std::string &indent,
                      const std::set<int> &in_register = {}) const {
    std::string s;
    for (int x : values) {
      const KernelSpec::Value &val = k_.values[size_t(x)];
      if (val.kind == KernelSpec::Value::Kind::Input) {
        ScalarType t = k_.inputs[size_t(val.index)].dtype;
        ScalarType from = in_register.count(val.index) ? reg_of(t) : t;
        s += indent + "const " + ctype(reg_of(t)) + " " + v(x) + " = " +
             conv(reg_of(t), from, load(val.index)) + ";\n";
      } else if (val.kind == KernelSpec::Value::Kind::Step) {
        s += step_line(x, indent);
      }
    }
    return s;
  }

  /// `sum over dims of coord_d * stride_d`, the zero strides skipped.
  static std::string offset(const std::vector<std::string> &coords,
                            const std::vector<int64_t> &strides) {
    std::string s;
    for (size_t d = 0; d < coords.size(); ++d) {
      if (strides[d] == 0)
        continue;
      if (!s.empty())
        s += " + ";
      s += strides[d] == 1
               ? coords[d]
               : coords[d] + " * (index_t)" + std::to_string(strides[d]);
    }
    return s.empty() ? "0" : s;
  }

  /// Lines splitting `index` into coordinates `prefix<d>` over `sizes`
  /// (innermost last).
  static std::string split(const std::string &index,
                           const std::vector<int64_t> &sizes,
                           const std::string &prefix,
                           const std::string &indent) {
    std::vector<int64_t> sz = sizes;
    if (std::find(sz.begin(), sz.end(), 0) != sz.end())
      sz.assign(sz.size(), 1); // no point: the loop never runs
    if (sz.size() == 1)
      return indent + "const index_t " + prefix + "0 = " + index + ";\n";
    std::string s = indent + "index_t " + prefix + "r = " + index + ";\n";
    for (size_t d = sz.size(); d-- > 0;) {
      std::string c = prefix + std::to_string(d);
      if (d == 0) {
        s += indent + "const index_t " + c + " = " + prefix + "r;\n";
        break;
      }
      std::string n = "(index_t)" + std::to_string(sz[d]);
      s += indent + "const index_t " + c + " = " + prefix + "r % " + n + ";\n" +
           indent + prefix + "r /= " + n + ";\n";
    }
    return s;
  }

  /// Whether index arithmetic over `sizes` with these strides, and `n`
  /// points stepped `step` at a time, fits in int32.
  bool fits32(int64_t n, int64_t step) const {
    if (n > INT32_MAX - step)
      return false;
    for (size_t op = 0; op < noperands(); ++op) {
      std::vector<int64_t> st = strides_of(op);
      int64_t extent = 0;
      for (size_t d = 0; d < st.size(); ++d) {
        int64_t e = 0;
        if (__builtin_mul_overflow(k_.shape[d] - 1, st[d] < 0 ? -st[d] : st[d],
                                   &e) ||
            __builtin_add_overflow(extent, e, &extent))
          return false;
      }
      if (extent > INT32_MAX)
        return false;
    }
    return true;
  }

  // --- pointwise kernels

  void pointwise(CudaKernel &r, std::ostringstream &os) {
    Loops l = coalesce(k_);
    const int64_t n = k_.numel();
    const size_t nops = noperands();
    const bool flat = l.sizes.size() == 1;
    // Points per thread: a 16-byte vector of the widest dtype read or
    // written with stride 1, at most 4 (Note [CUDA kernels from the kernel
    // description]).
    // Several dims take vectors along the innermost (Note [Vectors along
    // the innermost dim]) when every operand steps it by 1 or 0.
    const size_t inner = l.sizes.empty() ? 0 : l.sizes.size() - 1;
    bool rows = !flat && !l.sizes.empty();
    for (size_t op = 0; op < nops && rows; ++op)
      rows = l.strides[op][inner] == 0 || l.strides[op][inner] == 1;
    int vec = 1;
    if (flat || rows) {
      size_t widest = 0;
      for (size_t op = 0; op < nops; ++op)
        if (l.strides[op][inner] == 1)
          widest = std::max(widest, elementSize(operand_dtype(op)));
      vec = widest ? int(std::min<size_t>(4, 16 / widest)) : 1;
    }
    if (rows) {
      // A thread's vector lies in one row, at offsets a multiple of `vec`
      // in every operand it is a vector of.
      bool fits = vec > 1 && l.sizes[inner] % vec == 0;
      for (size_t op = 0; op < nops && fits; ++op)
        if (l.strides[op][inner] == 1)
          for (size_t d = 0; d < inner; ++d)
            fits = fits && l.strides[op][d] % vec == 0;
      if (!fits)
        rows = false, vec = 1;
    }
    r.vector = vec;
    r.block = kBlock;
    r.per_block = int64_t(kBlock) * vec;
    r.blocks = std::max<int64_t>(1, (n + kBlock * vec - 1) / (kBlock * vec));
    r.max_blocks = kMaxBlocks;
    r.index32 = fits32(n, kMaxBlocks * kBlock * vec);

    std::vector<int> needed = closure(k_.outputs, [](int) { return true; });

    os << "  const index_t n = (index_t)" << n << "LL;\n";
    if (rows) {
      vectors_along_rows(l, vec, needed, os);
      return;
    }
    if (!flat) {
      os << "  for (index_t i = (index_t)blockIdx.x * blockDim.x + "
            "threadIdx.x; i < n;\n"
            "       i += (index_t)gridDim.x * blockDim.x) {\n";
      std::vector<std::string> coords;
      for (size_t d = 0; d < l.sizes.size(); ++d)
        coords.push_back("c" + std::to_string(d));
      os << split("i", l.sizes, "c", "    ");
      auto load = [&](int input) {
        return "in" + std::to_string(input) + "[" +
               offset(coords, l.strides[nouts_ + size_t(input)]) + "]";
      };
      os << compute(needed, load, "    ");
      for (size_t o = 0; o < nouts_; ++o)
        os << "    out" << o << "[i] = " << store(o) << ";\n";
      os << "  }\n";
      return;
    }

    // One dim: vector loads and stores where every unit-stride operand is
    // aligned for them, a broadcast operand read once.
    if (vec > 1)
      os << aligned(l, 0, vec);
    for (size_t i = 0; i < k_.inputs.size(); ++i)
      if (l.strides[nouts_ + i][0] == 0)
        os << "  const " << ctype(k_.inputs[i].dtype) << " b" << i << " = in"
           << i << "[0];\n";
    os << "  for (index_t base = ((index_t)blockIdx.x * blockDim.x + "
          "threadIdx.x) * "
       << vec
       << ";\n       base < n; base += (index_t)gridDim.x * blockDim.x * "
       << vec << ") {\n";
    auto strided_load = [&](int input, const std::string &i) {
      int64_t st = l.strides[nouts_ + size_t(input)][0];
      std::string name = "in" + std::to_string(input);
      if (st == 0)
        return "b" + std::to_string(input);
      return name + "[" +
             (st == 1 ? i : i + " * (index_t)" + std::to_string(st)) + "]";
    };
    if (vec > 1) {
      const std::string sv = std::to_string(vec);
      os << "    if (aligned && base + " << vec << " <= n) {\n";
      for (size_t i = 0; i < k_.inputs.size(); ++i)
        if (l.strides[nouts_ + i][0] == 1) {
          std::string t = ctype(k_.inputs[i].dtype);
          os << "      const Vec<" << t << ", " << sv << "> a" << i
             << " = *(const Vec<" << t << ", " << sv << "> *)(in" << i
             << " + base);\n";
        }
      vector_body(
          vec, needed,
          [&](int input) {
            if (l.strides[nouts_ + size_t(input)][0] == 1)
              return "a" + std::to_string(input) + ".v[j]";
            return strided_load(input, "(base + j)");
          },
          os);
    }
    // (the tail and misaligned launches: one copy of the body, not
    // unrolled, which keeps the kernel small for NVVM and ptxas)
    os << (vec > 1 ? "#pragma unroll 1\n" : "") << "    for (int j = 0; j < "
       << vec << "; ++j) {\n"
       << "      const index_t i = base + j;\n"
       << "      if (i >= n)\n        break;\n";
    auto load = [&](int input) { return strided_load(input, "i"); };
    os << compute(needed, load, "      ");
    for (size_t o = 0; o < nouts_; ++o)
      os << "      out" << o << "[i] = " << store(o) << ";\n";
    os << "    }\n  }\n";
  }

  /// The line defining `aligned`: every operand of stride 1 along dim `d`
  /// is aligned for vectors of `vec` (checked once per launch: a view's
  /// offset may misalign it).
  std::string aligned(const Loops &l, size_t d, int vec) const {
    std::ostringstream all;
    all << "  const bool aligned =";
    const char *sep = "\n      ";
    for (size_t op = 0; op < noperands(); ++op)
      if (l.strides[op][d] == 1) {
        all << sep << "(unsigned long long)" << operand(op) << " % sizeof(Vec<"
            << ctype(operand_dtype(op)) << ", " << vec << ">) == 0";
        sep = " &&\n      ";
      }
    all << ";\n";
    return all.str();
  }

  /// The aligned path's body: each output's vector computed lane by lane
  /// (`load` reads lane j of an input), stored at out<o> + base as one.
  void vector_body(int vec, const std::vector<int> &needed,
                   const std::function<std::string(int)> &load,
                   std::ostringstream &os) const {
    const std::string sv = std::to_string(vec);
    for (size_t o = 0; o < nouts_; ++o)
      os << "      Vec<" << ctype(operand_dtype(o)) << ", " << sv << "> r" << o
         << ";\n";
    os << "#pragma unroll\n      for (int j = 0; j < " << vec << "; ++j) {\n";
    os << compute(needed, load, "        ");
    for (size_t o = 0; o < nouts_; ++o)
      os << "        r" << o << ".v[j] = " << store(o) << ";\n";
    os << "      }\n";
    for (size_t o = 0; o < nouts_; ++o)
      os << "      *(Vec<" << ctype(operand_dtype(o)) << ", " << sv
         << "> *)(out" << o << " + base) = r" << o << ";\n";
    os << "      continue;\n    }\n";
  }

  /// Note [Vectors along the innermost dim]
  /// A pointwise kernel over several dims (x * w + b: a row broadcast over
  /// a matrix) whose operands each step the innermost dim by 1 or 0, and
  /// whose innermost size and unit-stride operands' other strides are
  /// multiples of `vec`, takes `vec` consecutive points of one row a
  /// thread: the thread splits its first point's index into coordinates
  /// once, loads each unit-stride operand as one aligned vector (when every
  /// such pointer is aligned, checked once per launch) and each operand of
  /// innermost stride 0 once, and stores each output as one vector. A
  /// misaligned launch takes the points one by one. The one-point-a-thread
  /// path divides the index by every size at every point: a quarter of the
  /// divisions, and 16-byte memory transactions, here.
  void vectors_along_rows(const Loops &l, int vec,
                          const std::vector<int> &needed,
                          std::ostringstream &os) const {
    const size_t inner = l.sizes.size() - 1;
    const std::string sv = std::to_string(vec);
    os << aligned(l, inner, vec);
    os << "  for (index_t base = ((index_t)blockIdx.x * blockDim.x + "
          "threadIdx.x) * "
       << vec
       << ";\n       base < n; base += (index_t)gridDim.x * blockDim.x * "
       << vec << ") {\n";
    std::vector<std::string> coords;
    for (size_t d = 0; d < l.sizes.size(); ++d)
      coords.push_back(std::string("c").append(std::to_string(d)));
    os << split("base", l.sizes, "c", "    ");
    auto at = [&](size_t op) { return offset(coords, l.strides[op]); };
    os << "    if (aligned) {\n";
    for (size_t i = 0; i < k_.inputs.size(); ++i) {
      size_t op = nouts_ + i;
      std::string t = ctype(k_.inputs[i].dtype);
      if (l.strides[op][inner] == 1)
        os << "      const Vec<" << t << ", " << sv << "> a" << i
           << " = *(const Vec<" << t << ", " << sv << "> *)(in" << i << " + "
           << at(op) << ");\n";
      else
        os << "      const " << t << " a" << i << " = in" << i << "[" << at(op)
           << "];\n";
    }
    vector_body(
        vec, needed,
        [&](int input) {
          bool unit = l.strides[nouts_ + size_t(input)][inner] == 1;
          return "a" + std::to_string(input) + (unit ? ".v[j]" : "");
        },
        os);
    // (misaligned: the points one by one, not unrolled)
    os << "#pragma unroll 1\n    for (int j = 0; j < " << vec << "; ++j) {\n";
    auto sload = [&](int input) {
      size_t op = nouts_ + size_t(input);
      return "in" + std::to_string(input) + "[" + at(op) +
             (l.strides[op][inner] == 1 ? " + j" : "") + "]";
    };
    os << compute(needed, sload, "      ");
    for (size_t o = 0; o < nouts_; ++o)
      os << "      out" << o << "[base + j] = " << store(o) << ";\n";
    os << "    }\n  }\n";
  }

  // --- reduction kernels

  /// The values each loop over the reduced points computes, and those
  /// held across loops (Note [Held values]).
  struct LoopPlan {
    std::vector<std::vector<int>> values; ///< per loop, in order
    std::map<int, size_t> made_in; ///< a full step's value: the loop making it
    std::set<int> cached;          ///< values later loops read from registers
    /// Whether loop `i` reads `x` from the registers an earlier loop wrote.
    bool read_kept(int x, size_t i) const {
      return cached.count(x) && made_in.at(x) != i;
    }
  };

  /// Note [Held values]
  /// In a held row (Note [Persistent rows]) every loop runs over the same
  /// points of the thread, so a value one loop computed (softmax's
  /// exp(x - max), in the sum's loop) can be kept for a later loop (the
  /// output's, which divides it by the sum) instead of computed again: an
  /// array of `held` registers, written where it is computed. A later
  /// loop's values are walked from its roots down; the first value an
  /// earlier loop made is kept and ends the walk there, so what is kept is
  /// what is read, not its operands. A conversion is not kept (at most an
  /// instruction; a held float16 row's to float is none): the walk goes on
  /// to its operand. Each kept value takes `held` registers
  /// (two a point for 64-bit types) out of `budget`; past it, values are
  /// computed again, as in a looped row, where nothing is kept. The values
  /// are the same either way: the same functors on the same operands.
  /// Softmax's output loop then runs no exp, and its PTX halves.
  LoopPlan plan_loops(const std::vector<std::vector<int>> &roots, int64_t held,
                      int64_t budget) const {
    LoopPlan plan;
    plan.values.resize(roots.size());
    for (size_t i = 0; i < roots.size(); ++i) {
      std::vector<bool> need(k_.values.size(), false);
      std::vector<int> stack = roots[i];
      while (!stack.empty()) {
        int x = stack.back();
        stack.pop_back();
        if (need[size_t(x)] || !k_.is_full(x))
          continue;
        need[size_t(x)] = true;
        auto made = plan.made_in.find(x);
        if (held && made != plan.made_in.end() && !plan.cached.count(x) &&
            k_.step_of(x).kind != KernelSpec::Kind::Convert) {
          const int64_t cost = held * registers_of(k_.dtype(x));
          if (cost <= budget) {
            budget -= cost;
            plan.cached.insert(x);
          }
        }
        if (plan.read_kept(x, i))
          continue;
        if (k_.values[size_t(x)].kind == KernelSpec::Value::Kind::Step &&
            !k_.is_reduce(x))
          for (int a : k_.step_of(x).args)
            stack.push_back(a);
      }
      for (size_t x = 0; x < need.size(); ++x) {
        if (!need[x])
          continue;
        plan.values[i].push_back(int(x));
        if (k_.values[x].kind == KernelSpec::Value::Kind::Step &&
            !k_.is_reduce(int(x)))
          plan.made_in.emplace(int(x), i);
      }
    }
    return plan;
  }

  void reduction(CudaKernel &r, std::ostringstream &os) {
    // Kept and reduced dims (size-1 dims move nothing).
    std::vector<size_t> kept, red;
    std::vector<int64_t> ksizes, rsizes;
    for (size_t d = 0; d < k_.shape.size(); ++d) {
      if (k_.shape[d] == 1)
        continue;
      (k_.reduced[d] ? red : kept).push_back(d);
      (k_.reduced[d] ? rsizes : ksizes).push_back(k_.shape[d]);
    }
    const int64_t nkept = k_.output_numel(), nred = k_.reduced_numel();
    // The layout (Note [CUDA kernels from the kernel description]): when
    // the innermost dim is kept, neighbouring kept points are neighbours in
    // memory, and a thread per kept point folds its column alone (the
    // warp's loads coalesce); else a block folds each kept point's row.
    const bool column =
        !kept.empty() && (red.empty() || kept.back() > red.back());
    auto full = [&](int x) { return k_.is_full(x); };
    // The inputs read at every reduced point.
    std::vector<int> full_inputs;
    for (size_t x = 0; x < k_.values.size(); ++x)
      if (k_.values[x].kind == KernelSpec::Value::Kind::Input && full(int(x)))
        full_inputs.push_back(k_.values[x].index);
    auto round32 = [](int64_t t) { return (t + 31) / 32 * 32; };
    int64_t block =
        round32(std::min<int64_t>(kBlock, std::max<int64_t>(32, nred)));
    // The full inputs a fold reads (layer_norm's x, not its weight and
    // bias, which only the output loop reads): those a held row holds.
    std::set<int> folded;
    for (size_t x = 0; x < k_.values.size(); ++x)
      if (!full(int(x)) && k_.is_reduce(int(x)))
        for (int y : closure({k_.step_of(int(x)).args[0]}, full))
          if (k_.values[size_t(y)].kind == KernelSpec::Value::Kind::Input)
            folded.insert(k_.values[size_t(y)].index);
    std::vector<int> held_inputs;
    for (int i : full_inputs)
      if (folded.count(i))
        held_inputs.push_back(i);
    // A row that fits in registers (Note [Persistent rows]): `held` points
    // a thread, each input a fold reads loaded once.
    int64_t held = 0, held_registers = 0; // a point's, of the held inputs
    for (int i : held_inputs)
      held_registers += registers_of(k_.inputs[size_t(i)].dtype);
    if (!column && !held_inputs.empty()) {
      const int64_t most =
          std::min<int64_t>(kMaxHeld, kHeldRegisters / held_registers);
      const int64_t b =
          std::clamp<int64_t>(round32((nred + 3) / 4), 32, kPersistentBlock);
      if (most >= 1 && (nred + b - 1) / b <= most) {
        block = b;
        held = (nred + b - 1) / b;
      }
    }
    if (column)
      block = round32(std::min<int64_t>(kBlock, std::max<int64_t>(32, nkept)));
    r.block = int(block);
    r.held = int(held);
    r.per_block = column ? block : 1;
    r.blocks = std::max<int64_t>(1, (nkept + r.per_block - 1) / r.per_block);
    r.max_blocks = kMaxBlocks;
    r.index32 = fits32(std::max(nkept, nred), kMaxBlocks * block);
    r.reduction = true;
    auto coords_of = [](const std::vector<size_t> &dims, const std::string &p) {
      std::vector<std::string> c;
      for (size_t i = 0; i < dims.size(); ++i)
        c.push_back(p + std::to_string(i));
      return c;
    };
    auto pick = [](const std::vector<int64_t> &st,
                   const std::vector<size_t> &dims) {
      std::vector<int64_t> out;
      for (size_t d : dims)
        out.push_back(st[d]);
      return out;
    };
    std::vector<std::string> kc = coords_of(kept, "k"),
                             rc = coords_of(red, "r");

    if (column)
      os << "  for (index_t row = (index_t)blockIdx.x * blockDim.x + "
            "threadIdx.x;\n       row < (index_t)"
         << nkept << "LL; row += (index_t)gridDim.x * blockDim.x) {\n";
    else
      os << "  for (index_t row = blockIdx.x; row < (index_t)" << nkept
         << "LL; row += gridDim.x) {\n";
    if (!kept.empty())
      os << split("row", ksizes, "k", "    ");
    // Each input's offset at the kept point; a full input adds its
    // reduced coordinates' in the loops.
    for (size_t i = 0; i < k_.inputs.size(); ++i)
      os << "    const index_t ko" << i << " = "
         << offset(kc, pick(k_.inputs[i].strides, kept)) << ";\n";
    auto full_load = [&](int input) {
      std::string ro = offset(rc, pick(k_.inputs[size_t(input)].strides, red));
      return "in" + std::to_string(input) + "[ko" + std::to_string(input) +
             (ro == "0" ? "" : " + " + ro) + "]";
    };
    auto kept_load = [&](int input) {
      return "in" + std::to_string(input) + "[ko" + std::to_string(input) + "]";
    };
    // A loop over the reduced points: the thread's column, its share of the
    // row, or its held points (`p`, unrolled).
    const std::string snred = "(index_t)" + std::to_string(nred) + "LL";
    auto loop_head = [&](const std::string &indent) {
      std::string s;
      if (column)
        s = indent + "for (index_t j = 0; j < " + snred + "; ++j) {\n";
      else if (!held)
        s = indent + "for (index_t j = threadIdx.x; j < " + snred +
            "; j += blockDim.x) {\n";
      else {
        s = "#pragma unroll\n" + indent + "for (int p = 0; p < " +
            std::to_string(held) + "; ++p) {\n" + indent +
            "  const index_t j = threadIdx.x + (index_t)p * " +
            std::to_string(block) + ";\n";
        // Every thread's points are in the row when the block's `held`
        // turns cover it exactly (rows of 8192: 16 of 512), and NVVM cannot
        // prove it (threadIdx.x < blockDim.x): no test, no branch a point.
        if (held * block != nred)
          s += indent + "  if (j >= " + snred + ")\n" + indent + "    break;\n";
      }
      if (!red.empty())
        s += split("j", rsizes, "r", indent + "  ");
      return s;
    };
    // Held rows: the points of each input a fold reads, loaded once, in
    // its register type (a 16-bit float converted once, exactly, instead of
    // in every loop that reads it); the output loop reads the other full
    // inputs.
    if (held) {
      for (int i : held_inputs)
        os << "    " << ctype(reg_of(k_.inputs[size_t(i)].dtype)) << " h" << i
           << "[" << held << "];\n";
      os << loop_head("    ");
      for (int i : held_inputs) {
        ScalarType t = k_.inputs[size_t(i)].dtype;
        os << "      h" << i << "[p] = " << conv(reg_of(t), t, full_load(i))
           << ";\n";
      }
      os << "    }\n";
    }
    auto loop_load = [&](int input) {
      return held && folded.count(input) ? "h" + std::to_string(input) + "[p]"
                                         : full_load(input);
    };
    const std::set<int> in_register = held ? folded : std::set<int>{};
    // The loops over the reduced points: each fold's, in order, then the
    // full outputs'.
    std::vector<int> full_outs;
    for (size_t o = 0; o < nouts_; ++o)
      if (full(k_.outputs[o]))
        full_outs.push_back(k_.outputs[o]);
    std::vector<std::vector<int>> roots;
    for (size_t x = 0; x < k_.values.size(); ++x)
      if (!full(int(x)) && k_.is_reduce(int(x)))
        roots.push_back({k_.step_of(int(x)).args[0]});
    if (!full_outs.empty())
      roots.push_back(full_outs);
    const LoopPlan plan =
        plan_loops(roots, held, kHeldRegisters - held * held_registers);
    for (const auto &[x, loop] : plan.made_in)
      if (plan.cached.count(x))
        os << "    " << ctype(reg_of(k_.dtype(x))) << " c" << x << "[" << held
           << "];\n";
    // The lines of loop `i`: a value an earlier loop cached read from its
    // registers, the rest computed; then the values it caches stored.
    auto loop_body = [&](size_t i) {
      std::string s;
      std::vector<int> computed;
      for (int x : plan.values[i]) {
        if (plan.read_kept(x, i))
          s += "      const " + std::string(ctype(reg_of(k_.dtype(x)))) + " " +
               v(x) + " = c" + std::to_string(x) + "[p];\n";
        else
          computed.push_back(x);
      }
      s += compute(computed, loop_load, "      ", in_register);
      for (const auto &[x, loop] : plan.made_in)
        if (loop == i && plan.cached.count(x))
          s += "      c" + std::to_string(x) + "[p] = " + v(x) + ";\n";
      return s;
    };
    size_t loop = 0;
    for (size_t x = 0; x < k_.values.size(); ++x) {
      int id = int(x);
      if (full(id))
        continue; // computed in the loops
      const KernelSpec::Value &val = k_.values[x];
      if (val.kind == KernelSpec::Value::Kind::Constant)
        continue;
      if (val.kind == KernelSpec::Value::Kind::Input) {
        os << compute({id}, kept_load, "    ");
        continue;
      }
      if (!k_.is_reduce(id)) {
        os << step_line(id, "    ");
        continue;
      }
      // A fold: one loop over the reduced points, then the block.
      const KernelSpec::Step &s = k_.step_of(id);
      // The accumulator, in its register type (a 16-bit float's max in
      // float: every value it holds is one of the inputs, exact).
      const ScalarType acc = reg_of(s.acc_dtype());
      const std::string a = ctype(acc);
      const int kind = s.sums() ? 0 : s.fold == ReductionInfo::Amax ? 1 : 2;
      os << "    " << a << " acc" << id << " = " << identity(s) << ";\n";
      os << loop_head("    ");
      int arg = s.args[0];
      os << loop_body(loop++);
      // The folded value in the op's `dtype` (rounded), then the
      // accumulator's.
      std::string folded = v(arg);
      if (reg_of(k_.dtype(arg)) != s.in)
        folded = std::string("convert<") + ctype(s.in) + ">(" + folded + ")";
      ScalarType held = reg_of(k_.dtype(arg)) != s.in ? s.in : reg_of(s.in);
      os << "      acc" << id << " = ember_combine<" << kind << ">(acc" << id
         << ", " << conv(acc, held, folded) << ");\n";
      os << "    }\n";
      if (!column)
        os << "    acc" << id << " = ember_block_reduce<" << kind << ">(acc"
           << id << ", " << identity(s) << ");\n";
      std::string fin = "acc" + std::to_string(id);
      if (s.fold == ReductionInfo::Mean)
        fin += " / " +
               float_literal(double(s.count ? s.count : nred), acc == kFloat);
      os << "    const " << ctype(reg_of(s.out)) << " " << v(id) << " = "
         << round_to(s.out, fin) << ";\n";
    }
    // The full outputs, then the reduced ones.
    if (!full_outs.empty()) {
      os << loop_head("    ");
      const size_t out_loop = loop;
      os << loop_body(loop++);
      std::vector<int64_t> contiguous = strides_of(0);
      std::string at = offset(kc, pick(contiguous, kept));
      std::string ro = offset(rc, pick(contiguous, red));
      for (size_t o = 0; o < nouts_; ++o) {
        const int x = k_.outputs[o];
        if (!full(x))
          continue;
        os << "      out" << o << "[" << at << " + " << ro
           << "] = " << store(o, !plan.read_kept(x, out_loop)) << ";\n";
      }
      os << "    }\n";
    }
    bool reduced_outs = false;
    for (size_t o = 0; o < nouts_; ++o)
      reduced_outs = reduced_outs || !full(k_.outputs[o]);
    if (reduced_outs) {
      if (!column)
        os << "    if (threadIdx.x == 0) {\n";
      for (size_t o = 0; o < nouts_; ++o)
        if (!full(k_.outputs[o]))
          os << (column ? "    out" : "      out") << o
             << "[row] = " << store(o) << ";\n";
      if (!column)
        os << "    }\n";
    }
    os << "  }\n";
  }

  const KernelSpec &k_;
  size_t nouts_ = 0;
  std::set<size_t> aliased_;
};

} // namespace

CudaKernel render_cuda(const KernelSpec &spec) {
  EMBER_CHECK(!spec.outputs.empty(), "the CUDA renderer: a kernel without "
                                     "outputs");
  size_t pointers = spec.outputs.size() + spec.inputs.size();
  EMBER_CHECK(pointers <= kMaxCudaKernelPointers,
              "the CUDA renderer: the kernel would take ", pointers,
              " pointers; CUDA passes at most ", kMaxCudaKernelPointers,
              " (4 KB of kernel parameters)");
  return Renderer(spec).render();
}

} // namespace ember::codegen
