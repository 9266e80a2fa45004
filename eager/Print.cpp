/// operator<< for tensors: PyTorch's Python repr (torch/_tensor_str.py).

#include "eager/Print.h"

#include "eager/Dtype.h"
#include "eager/HostCopy.h"
#include "eager/Tensor.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace ember {

// --- options ----------------------------------------------------------------

namespace {
std::mutex g_options_mutex;
PrintOptions g_options;

// Note [Print option limits]
// PyTorch accepts edgeitems=0, but then prints a 1-D tensor's elements after
// the "..." (Python's self[-0:] is the whole tensor) and fails inside
// torch.stack for 2-D tensors; no useful behaviour to copy, so ember asks
// for edgeitems >= 1 up front. A negative precision is an error in Python's
// format specifiers; ember reports it when it is set rather than when a
// tensor is printed.
void validate(const PrintOptions &o) {
  EMBER_CHECK_VALUE(o.precision >= 0 && o.precision <= INT_MAX,
                    "set_printoptions: precision must be a non-negative "
                    "integer, got ",
                    o.precision);
  EMBER_CHECK_VALUE(o.edgeitems >= 1,
                    "set_printoptions: edgeitems must be at least 1 (the "
                    "number of items shown at each end of a summarised dim), "
                    "got ",
                    o.edgeitems);
  EMBER_CHECK_VALUE(!std::isnan(o.threshold),
                    "set_printoptions: threshold must be a number (use "
                    "infinity to never summarise), got nan");
}
} // namespace

PrintOptions PrintOptions::profile(const char *name) {
  std::string n = name ? name : "";
  PrintOptions o;
  if (n == "default")
    return o;
  if (n == "short") {
    o.precision = 2;
    o.edgeitems = 2;
    return o;
  }
  if (n == "full") {
    o.threshold = std::numeric_limits<double>::infinity();
    return o;
  }
  throw ValueError("PrintOptions::profile: unknown profile '" + n +
                   "'; expected 'default', 'short' or 'full'");
}

void set_printoptions(std::optional<int64_t> precision,
                      std::optional<double> threshold,
                      std::optional<int64_t> edgeitems,
                      std::optional<int64_t> linewidth,
                      std::optional<bool> sci_mode) {
  std::lock_guard<std::mutex> lock(g_options_mutex);
  PrintOptions o = g_options;
  if (precision)
    o.precision = *precision;
  if (threshold)
    o.threshold = *threshold;
  if (edgeitems)
    o.edgeitems = *edgeitems;
  if (linewidth)
    o.linewidth = *linewidth;
  o.sci_mode = sci_mode;
  validate(o);
  g_options = o;
}

void set_printoptions(const PrintOptions &options) {
  validate(options);
  std::lock_guard<std::mutex> lock(g_options_mutex);
  g_options = options;
}

PrintOptions get_printoptions() {
  std::lock_guard<std::mutex> lock(g_options_mutex);
  return g_options;
}

// --- formatting -------------------------------------------------------------

namespace {

/// Python's "{:.<precision><conv>}".format(v) for conv 'f' or 'e': C's
/// printf rounds the exact binary value half-to-even like Python, and both
/// write at least two exponent digits; only inf and nan differ (Python
/// writes "nan" whatever its sign bit).
std::string py_float(double v, char conv, int64_t precision) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  const char *fmt = conv == 'e' ? "%.*e" : "%.*f";
  int n = std::snprintf(nullptr, 0, fmt, int(precision), v);
  std::string s(size_t(n), '\0');
  std::snprintf(s.data(), size_t(n) + 1, fmt, int(precision), v);
  return s;
}

/// The elements the printer shows, in printing order: every element, or with
/// summarisation only the edge items of each long dim.
struct Shown {
  bool floating = false;
  bool boolean = false;
  std::vector<double> f;  // floating dtypes (16-bit floats widened)
  std::vector<int64_t> i; // integral dtypes and bool
  size_t size() const { return floating ? f.size() : i.size(); }
};

/// Which indices of each dim are shown (get_summarized_data in PyTorch).
struct Summary {
  IntArrayRef sizes, strides;
  bool summarize;
  int64_t edge;
  /// Whether dim d prints as its edge items around "...".
  /// (sizes[d] > 2 * edge, written so that no edgeitems overflows.)
  bool cut(int64_t d) const { return summarize && (sizes[d] - 1) / 2 >= edge; }

  /// Element offsets (in elements from element 0) in printing order.
  void offsets(int64_t d, int64_t off, std::vector<int64_t> &out) const {
    if (d == int64_t(sizes.size())) {
      out.push_back(off);
      return;
    }
    int64_t n = sizes[d], st = strides[d];
    if (cut(d)) {
      for (int64_t k = 0; k < edge; ++k)
        offsets(d + 1, off + k * st, out);
      for (int64_t k = n - edge; k < n; ++k)
        offsets(d + 1, off + k * st, out);
    } else {
      for (int64_t k = 0; k < n; ++k)
        offsets(d + 1, off + k * st, out);
    }
  }
};

Shown read_shown(const Tensor &t, const Summary &s) {
  std::vector<int64_t> offs;
  s.offsets(0, 0, offs);
  Shown out;
  out.floating = isFloatingType(t.dtype());
  out.boolean = t.dtype() == kBool;
  const char *base = static_cast<const char *>(t.const_data_ptr());
  dispatch_dtype(t.dtype(), "print", [&]<class T>() {
    const T *p = reinterpret_cast<const T *>(base);
    if constexpr (std::is_same_v<T, bool>) {
      // Read the byte: a bool tensor's storage may hold any byte value.
      for (int64_t o : offs)
        out.i.push_back(*reinterpret_cast<const uint8_t *>(p + o) != 0);
    } else if constexpr (std::is_floating_point_v<compute_t<T>>) {
      out.f.reserve(offs.size());
      for (int64_t o : offs)
        out.f.push_back(double(static_cast<compute_t<T>>(p[o])));
    } else {
      out.i.reserve(offs.size());
      for (int64_t o : offs)
        out.i.push_back(int64_t(p[o]));
    }
  });
  return out;
}

/// torch._tensor_str._Formatter: chooses integer, fixed or scientific
/// notation and the common width from the shown elements.
class Formatter {
public:
  Formatter(const Shown &v, const PrintOptions &o) : v_(v), o_(o) {
    if (!v.floating) {
      for (size_t k = 0; k < v.size(); ++k)
        width_ = std::max(width_, int64_t(raw(k).size()));
      return;
    }
    std::vector<double> nz; // nonzero finite values
    for (double x : v.f)
      if (std::isfinite(x) && x != 0)
        nz.push_back(x);
    if (!nz.empty()) {
      double lo = std::fabs(nz[0]), hi = lo;
      for (double x : nz) {
        lo = std::min(lo, std::fabs(x));
        hi = std::max(hi, std::fabs(x));
      }
      for (double x : nz)
        if (x != std::ceil(x)) {
          int_mode_ = false;
          break;
        }
      double ratio = hi / lo;
      if (ratio > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4)) {
        sci_mode_ = true;
        for (double x : nz)
          width_ =
              std::max(width_, int64_t(py_float(x, 'e', o.precision).size()));
      } else if (int_mode_) {
        // Integral floats print as "3." : one more character than "3".
        for (double x : nz)
          width_ = std::max(width_, int64_t(py_float(x, 'f', 0).size()) + 1);
      } else {
        for (double x : nz)
          width_ =
              std::max(width_, int64_t(py_float(x, 'f', o.precision).size()));
      }
    }
    if (o.sci_mode)
      sci_mode_ = *o.sci_mode;
  }

  int64_t width() const { return width_; }

  /// Shown element k, right-aligned to the common width (never cut: a
  /// longer string such as "-0." or "nan" just takes more room).
  std::string format(size_t k) const {
    std::string s = raw(k);
    if (int64_t(s.size()) < width_)
      s.insert(0, size_t(width_) - s.size(), ' ');
    return s;
  }

private:
  std::string raw(size_t k) const {
    if (!v_.floating) {
      if (v_.boolean)
        return v_.i[k] ? "True" : "False";
      return std::to_string(v_.i[k]);
    }
    double x = v_.f[k];
    if (sci_mode_)
      return py_float(x, 'e', o_.precision);
    if (int_mode_) {
      std::string s = py_float(x, 'f', 0);
      if (std::isfinite(x))
        s += '.';
      return s;
    }
    return py_float(x, 'f', o_.precision);
  }

  const Shown &v_;
  const PrintOptions &o_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int64_t width_ = 1;
};

/// _tensor_str_with_formatter / _vector_str: nests the formatted elements
/// in brackets, wrapping rows at linewidth.
class Layout {
public:
  Layout(const Summary &s, const Formatter &f, const PrintOptions &o)
      : s_(s), f_(f), o_(o) {}

  std::string str(int64_t d, int64_t indent) {
    int64_t rest = int64_t(s_.sizes.size()) - d;
    if (rest == 0)
      return f_.format(next_++);
    if (rest == 1)
      return vector(d, indent);
    std::vector<std::string> slices;
    int64_t n = s_.sizes[d];
    if (s_.cut(d)) {
      for (int64_t k = 0; k < s_.edge; ++k)
        slices.push_back(str(d + 1, indent + 1));
      slices.push_back("...");
      for (int64_t k = 0; k < s_.edge; ++k)
        slices.push_back(str(d + 1, indent + 1));
    } else {
      for (int64_t k = 0; k < n; ++k)
        slices.push_back(str(d + 1, indent + 1));
    }
    // Sub-blocks of a 3-D+ tensor are separated by rest - 1 newlines.
    std::string sep =
        "," + std::string(size_t(rest - 1), '\n') + spaces(indent + 1);
    return "[" + join(slices, sep) + "]";
  }

private:
  static std::string spaces(int64_t n) {
    return std::string(size_t(std::max<int64_t>(n, 0)), ' ');
  }
  static std::string join(const std::vector<std::string> &parts,
                          const std::string &sep) {
    std::string out;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k)
        out += sep;
      out += parts[k];
    }
    return out;
  }

  std::string vector(int64_t d, int64_t indent) {
    int64_t element_length = f_.width() + 2; // ", " between elements
    int64_t per_line = std::max<int64_t>(
        1, int64_t(std::floor((double(o_.linewidth) - double(indent)) /
                              double(element_length))));
    std::vector<std::string> data;
    int64_t n = s_.sizes[d];
    if (s_.cut(d)) {
      for (int64_t k = 0; k < s_.edge; ++k)
        data.push_back(f_.format(next_++));
      data.push_back(" ...");
      for (int64_t k = 0; k < s_.edge; ++k)
        data.push_back(f_.format(next_++));
    } else {
      for (int64_t k = 0; k < n; ++k)
        data.push_back(f_.format(next_++));
    }
    std::string out = "[";
    for (size_t k = 0; k < data.size(); ++k) {
      if (k)
        out += k % size_t(per_line) == 0 ? ",\n" + spaces(indent + 1) : ", ";
      out += data[k];
    }
    return out + "]";
  }

  const Summary &s_;
  const Formatter &f_;
  const PrintOptions &o_;
  size_t next_ = 0;
};

/// Python's str(tuple(shape)): "(0, 3)", "(0,)".
std::string tuple_str(IntArrayRef sizes) {
  std::string s = "(";
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (k)
      s += ", ";
    s += std::to_string(sizes[k]);
  }
  if (sizes.size() == 1)
    s += ",";
  return s + ")";
}

/// _add_suffixes: ", dtype=..." on the last line, or on a new line indented
/// under the "[" when the line would pass linewidth. The length of the last
/// line is counted as PyTorch counts it (two more than its characters).
std::string add_suffixes(std::string s,
                         const std::vector<std::string> &suffixes,
                         int64_t indent, const PrintOptions &o) {
  size_t nl = s.rfind('\n');
  int64_t last =
      int64_t(s.size()) - (nl == std::string::npos ? -1 : int64_t(nl)) + 1;
  for (const std::string &suffix : suffixes) {
    int64_t len = int64_t(suffix.size());
    if (last + len + 2 > o.linewidth) {
      s += ",\n" + std::string(size_t(indent), ' ') + suffix;
      last = indent + len;
    } else {
      s += ", " + suffix;
      last += len + 2;
    }
  }
  return s + ")";
}

std::string repr(const Tensor &t) {
  const PrintOptions o = get_printoptions();
  const std::string prefix = "tensor(";
  const int64_t indent = int64_t(prefix.size());
  std::vector<std::string> suffixes;
  if (!t.is_cpu())
    suffixes.push_back("device='" + t.device().str() + "'");
  const ScalarType dtype = t.dtype();
  const std::string dtype_suffix =
      std::string("dtype=ember.") + toString(dtype);
  std::string body;
  if (t.numel() == 0) {
    // No element tells the dtype, so any but the default float is shown.
    if (t.dim() != 1)
      suffixes.push_back("size=" + tuple_str(t.sizes()));
    if (dtype != get_default_dtype())
      suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    if (dtype != get_default_dtype() && dtype != kLong && dtype != kBool)
      suffixes.push_back(dtype_suffix);
    Tensor c = host_copy(t);
    Summary s{c.sizes(), c.strides(), double(c.numel()) > o.threshold,
              o.edgeitems};
    Shown shown = read_shown(c, s);
    Formatter f(shown, o);
    body = Layout(s, f, o).str(0, indent);
  }
  AutogradMetaInterface *meta = t.unsafeGetTensorImpl()->autograd_meta();
  std::string grad_fn = meta ? meta->grad_fn_name() : std::string();
  if (!grad_fn.empty())
    suffixes.push_back("grad_fn=<" + grad_fn + ">");
  else if (t.requires_grad())
    suffixes.push_back("requires_grad=True");
  return add_suffixes(prefix + body, suffixes, indent, o);
}

} // namespace

/// Prints `t` as PyTorch's repr does: tensor([1., 2.], dtype=ember.float64).
/// An undefined tensor prints as libtorch prints it.
std::ostream &operator<<(std::ostream &os, const Tensor &t) {
  if (!t.defined())
    return os << "[ Tensor (undefined) ]";
  // (operator<< cannot take the caller's source_location: the break names
  // no line rather than this one)
  t.unsafeGetTensorImpl()->sync_capture("printing a tensor (operator<<)",
                                        std::source_location{});
  return os << repr(t);
}

} // namespace ember
