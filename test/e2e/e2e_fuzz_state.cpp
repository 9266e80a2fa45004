// A differential fuzzer of what compile() must keep (Note [What compile()
// may change] in frontend/Compile.h): random programs over a register file
// that holds the function's arguments (contiguous, transposed, sliced,
// offset, expanded, or views of another argument), tensors it captures
// (buffers and views of them, read and written at every call), and what the
// program computes: pointwise ops of the op table, scalars at the integers'
// edges, views (narrow, select, transpose, expand, diagonal, strided slices,
// as_strided at the storage offset), in-place writes through any of those,
// reductions, factories, and graph breaks between a view and its write.
// Each program runs eagerly and compiled (at a random opt level, sometimes
// in replay mode) for a sequence of calls whose arguments change layout,
// dtype or size (cache hits and recompiles), and the two must agree on:
// whether the call raises, every output's dtype, shape, values (NaNs where
// NaNs are), strides and aliasing (with each other, the arguments and the
// captured tensors), and every argument's and captured tensor's memory
// after the call.
//
// The test run checks 1000 programs (10 blocks of 100). Any number, from
// any seed (`scripts/ember.sh fuzz` runs 20,000 over several seeds):
//   FUZZ_PROGRAMS=20000 FUZZ_SEED=7 test/e2e/e2e_fuzz_state
//   --gtest_filter='*OnDemand*'
// and FUZZ_FIRST=<index> FUZZ_PROGRAMS=1 reruns one program.
// A failure prints the program, its seed and what differed.
#include "E2EUtil.h"
#include "FuzzUtil.h"
#include "eager/Meta.h"

#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

using namespace ember;
using ember::test::nudged;
using ember::test::pointwise_ops;
using ember::test::same;
using ember::test::same_layout;
using ember::test::same_where;
using ember::test::stable_mask;
using ember::test::storage_of;

namespace {

using Regs = std::vector<Tensor>;

// --- the state a program starts from -----------------------------------------

enum class Layout { Contiguous, Transposed, Sliced, Offset, Stepped, Expanded };
const char *layout_name(Layout l) {
  static const char *names[] = {"contiguous", "transposed", "sliced",
                                "offset",     "stepped",    "expanded"};
  return names[int(l)];
}

/// One argument: a tensor of its own, or a view of an earlier argument.
struct ArgSpec {
  std::vector<int64_t> shape;
  ScalarType dtype = kFloat;
  Layout layout = Layout::Contiguous;
  bool edges = false; ///< integers at their type's edges
  int view_of = -1;   ///< a view of that argument (narrow/transpose of it)
  int view_kind = 0;
};

/// A captured buffer, or a view of one.
struct CapturedSpec {
  std::vector<int64_t> shape;
  ScalarType dtype = kFloat;
  int view_of = -1; ///< index among the captured tensors
  int view_kind = 0;
};

int64_t edge_value(ScalarType dt, std::mt19937_64 &rng) {
  int64_t lo = 0, hi = 0;
  switch (dt) {
  case kByte:
    lo = 0, hi = 255;
    break;
  case kChar:
    lo = -128, hi = 127;
    break;
  case kShort:
    lo = std::numeric_limits<int16_t>::min();
    hi = std::numeric_limits<int16_t>::max();
    break;
  case kInt:
    lo = std::numeric_limits<int32_t>::min();
    hi = std::numeric_limits<int32_t>::max();
    break;
  default:
    lo = std::numeric_limits<int64_t>::min();
    hi = std::numeric_limits<int64_t>::max();
    break;
  }
  const int64_t pool[] = {lo, hi, lo + 1, hi - 1, -1, 0, 1, 2};
  return pool[rng() % std::size(pool)];
}

/// Values for a tensor of `shape` (random normal * 3, rounded for integers;
/// some integers at their edges).
Tensor values(const std::vector<int64_t> &shape, ScalarType dt, bool edges,
              uint64_t seed) {
  Generator g(seed);
  Tensor t = randn(shape, g, TensorOptions(kDouble)) * 3;
  if (!isFloatingType(dt))
    t = t.round();
  if (dt == kByte)
    t = t.abs();
  t = t.to(dt);
  if (edges && isIntegralType(dt, /*includeBool=*/false) && t.numel() > 0) {
    std::mt19937_64 rng(seed);
    Tensor flat = t.reshape({-1});
    for (int64_t i = 0; i < flat.numel(); i += 1 + int64_t(rng() % 3))
      flat[i].fill_(edge_value(dt, rng));
  }
  return t;
}

/// A tensor of `shape` laid out as `layout` (its values from `seed`).
Tensor laid_out(const std::vector<int64_t> &shape, ScalarType dt, Layout layout,
                bool edges, uint64_t seed) {
  std::vector<int64_t> big = shape;
  switch (layout) {
  case Layout::Transposed: {
    if (shape.size() < 2)
      break;
    std::swap(big[0], big[1]);
    return values(big, dt, edges, seed).transpose(0, 1);
  }
  case Layout::Sliced:
    if (shape.empty())
      break;
    big.back() = big.back() * 2 + 1;
    return values(big, dt, edges, seed).narrow(-1, 1, shape.back());
  case Layout::Offset:
    if (shape.empty())
      break;
    big[0] += 2;
    return values(big, dt, edges, seed).narrow(0, 2, shape[0]);
  case Layout::Stepped:
    if (shape.empty())
      break;
    big[0] = big[0] * 2;
    return values(big, dt, edges, seed).slice(0, 0, std::nullopt, 2);
  case Layout::Expanded: {
    // Stride 0 along the dims of size > 1 that are expanded from 1.
    std::vector<int64_t> small = shape;
    bool any = false;
    for (size_t d = 0; d < small.size(); ++d)
      if (small[d] > 1 && (d % 2 == seed % 2)) {
        small[d] = 1;
        any = true;
      }
    if (!any)
      break;
    return values(small, dt, edges, seed).expand(shape);
  }
  case Layout::Contiguous:
    break;
  }
  return values(shape, dt, edges, seed);
}

/// A view of `t` (kind picks one that fits its shape).
Tensor view_of(const Tensor &t, int kind) {
  if (t.dim() == 0)
    return t.unsqueeze(0);
  switch (kind % 5) {
  case 0:
    return t.size(0) > 1 ? t.narrow(0, 1, t.size(0) - 1) : t.view(t.sizes());
  case 1:
    return t.dim() >= 2 ? t.transpose(0, 1) : t.unsqueeze(-1);
  case 2:
    return t.select(0, t.size(0) - 1 > 0 ? t.size(0) - 1 : 0);
  case 3:
    return t.slice(-1, 0, std::nullopt, 2);
  default:
    return t.dim() >= 2 && t.size(0) > 0 && t.size(1) > 0 ? t.diagonal()
                                                          : t.view({-1});
  }
}

// --- programs
// ------------------------------------------------------------------

struct Instr {
  std::string text;
  /// Runs on the registers; `nudge` is the direction of Note [Unstable
  /// values] (0 for a plain run).
  std::function<void(Regs &, int nudge)> run;
  bool fresh = false; ///< pushes a new computed tensor (not a view)
};

struct Program {
  std::vector<ArgSpec> args;
  std::vector<CapturedSpec> captured;
  std::vector<Instr> body;
  std::vector<int> outputs; ///< registers returned
  int64_t opt_level = 2;
  bool replay = false;
  int calls = 1;
  uint64_t seed = 0;

  /// The arguments of call `c`: the specs, with another layout, dtype or
  /// size on later calls (a recompile), or the same (a cache hit).
  std::vector<Tensor> make_args(int c) const {
    std::mt19937_64 rng(seed * 31 + uint64_t(c));
    int change = c == 0 ? 0 : int(rng() % 6); // 0-2: same; 3: layout...
    std::vector<Tensor> out;
    for (size_t i = 0; i < args.size(); ++i) {
      const ArgSpec &a = args[i];
      uint64_t vseed = seed * 131 + i * 7 + uint64_t(c);
      if (a.view_of >= 0) {
        try {
          out.push_back(view_of(out[size_t(a.view_of)], a.view_kind));
        } catch (const Error &) { // the other size does not fit the view
          out.push_back(out[size_t(a.view_of)]);
        }
        continue;
      }
      std::vector<int64_t> shape = a.shape;
      ScalarType dt = a.dtype;
      Layout layout = a.layout;
      if (change == 3)
        layout = Layout((int(layout) + 1 + int(rng() % 5)) % 6);
      if (change == 4 && (dt == kFloat || dt == kDouble))
        dt = dt == kFloat ? kDouble : kFloat;
      if (change == 5)
        for (int64_t &s : shape)
          s = s == 0 ? 0 : s + 1;
      out.push_back(laid_out(shape, dt, layout, a.edges, vseed));
    }
    return out;
  }

  std::vector<Tensor> make_captured() const {
    std::vector<Tensor> out;
    for (size_t i = 0; i < captured.size(); ++i) {
      const CapturedSpec &c = captured[i];
      out.push_back(c.view_of >= 0
                        ? view_of(out[size_t(c.view_of)], c.view_kind)
                        : values(c.shape, c.dtype, false, seed * 17 + i));
    }
    return out;
  }

  /// Runs the body on `args` and `captured` (registers 0.. then the
  /// captured ones) and returns the outputs.
  /// `direction` +1 or -1 nudges every computed floating value (Note
  /// [Unstable values]).
  std::vector<Tensor> run(const std::vector<Tensor> &a,
                          const std::vector<Tensor> &captured,
                          int direction = 0) const {
    Regs regs(a.begin(), a.end());
    regs.insert(regs.end(), captured.begin(), captured.end());
    for (const Instr &i : body) {
      i.run(regs, direction);
      if (direction && i.fresh && isFloatingType(regs.back().dtype()))
        regs.back() = nudged(regs.back(), direction);
    }
    std::vector<Tensor> out;
    for (int o : outputs)
      out.push_back(regs.at(size_t(o)));
    return out;
  }

  std::string str() const {
    std::ostringstream os;
    os << "  seed " << seed << ", opt_level " << opt_level
       << (replay ? ", replay" : "") << ", " << calls << " calls\n";
    int r = 0;
    for (const ArgSpec &a : args) {
      os << "  %" << r++ << " = argument ";
      if (a.view_of >= 0)
        os << "view " << a.view_kind << " of %" << a.view_of << "\n";
      else
        os << toString(a.dtype) << IntArrayRef(a.shape) << " "
           << layout_name(a.layout) << (a.edges ? " edge values" : "") << "\n";
    }
    for (const CapturedSpec &c : captured) {
      os << "  %" << r++ << " = captured ";
      if (c.view_of >= 0)
        os << "view " << c.view_kind << " of captured " << c.view_of << "\n";
      else
        os << toString(c.dtype) << IntArrayRef(c.shape) << "\n";
    }
    for (const Instr &i : body)
      os << "  " << i.text << "\n";
    os << "  return";
    for (int o : outputs)
      os << " %" << o;
    return os.str();
  }
};

class Generator : public ember::test::FuzzRandom {
public:
  using FuzzRandom::FuzzRandom;

  Program make() {
    Program p;
    p.seed = seed_;
    p.opt_level = chance(0.6) ? 2 : pick(0, 1);
    p.replay = chance(0.15);
    p.calls = pick(1, 4);
    // A base shape; arguments take it or broadcastable parts of it.
    std::vector<int64_t> base;
    int rank = pick(0, 3);
    for (int d = 0; d < rank; ++d)
      base.push_back(chance(0.03) ? 0 : pick(1, 5));
    int nargs = pick(1, 3);
    for (int i = 0; i < nargs; ++i) {
      ArgSpec a;
      if (i > 0 && chance(0.15)) {
        a.view_of = pick(0, i - 1);
        a.view_kind = pick(0, 4);
      } else {
        a.shape = base;
        if (!a.shape.empty() && chance(0.25))
          a.shape.erase(a.shape.begin(),
                        a.shape.begin() + pick(1, int(a.shape.size())));
        for (int64_t &s : a.shape)
          if (chance(0.2))
            s = 1;
        a.dtype = dtype();
        a.layout = Layout(pick(0, 5));
        a.edges = chance(0.3);
      }
      p.args.push_back(a);
    }
    int nbuf = chance(0.5) ? pick(1, 2) : 0;
    for (int b = 0; b < nbuf; ++b) {
      CapturedSpec c;
      c.shape = base;
      c.dtype = chance(0.7) ? kFloat : dtype();
      int buf = int(p.captured.size());
      p.captured.push_back(c);
      for (int v = pick(0, 2); v > 0; --v) {
        CapturedSpec w;
        w.view_of = buf;
        w.view_kind = pick(0, 4);
        p.captured.push_back(w);
      }
    }
    // Build the body against a state of its own, keeping instructions that
    // run; sometimes the last one raises (the error must match too).
    std::vector<Tensor> a0;
    std::vector<Tensor> c0;
    try {
      a0 = p.make_args(0);
      c0 = p.make_captured();
    } catch (const Error &) {
      p.captured.clear();
      a0 = p.make_args(0);
    }
    Regs regs(a0.begin(), a0.end());
    regs.insert(regs.end(), c0.begin(), c0.end());
    std::vector<int> reads(regs.size(), 0);
    int raising_output = -1;
    int nsteps = pick(2, 10);
    for (int s = 0; s < nsteps; ++s) {
      for (int attempt = 0; attempt < 20; ++attempt) {
        Instr in = instruction(regs);
        if (!in.run)
          continue;
        size_t before = regs.size();
        Regs trial = regs;
        bool raised = false;
        try {
          NoGradGuard g;
          in.run(trial, 0);
        } catch (const Error &) {
          raised = true;
        }
        if (raised) {
          if (s == nsteps - 1 && chance(0.1)) { // an erroring program
            p.body.push_back(std::move(in));
            if (last_write_ < 0) // its result, returned (not dead code)
              raising_output = int(regs.size());
            s = nsteps;
            break;
          }
          continue;
        }
        regs = std::move(trial);
        for (int r : last_reads_)
          ++reads[size_t(r)];
        reads.resize(regs.size(), 0);
        // A write makes its target's value new: returned unless read again
        // (no dead write whose error only eager would raise).
        if (last_write_ >= 0)
          reads[size_t(last_write_)] = 0;
        (void)before;
        p.body.push_back(std::move(in));
        break;
      }
    }
    // Outputs: every value nothing reads (no dead code: an op that would
    // raise must run in both), and some others.
    size_t first = p.args.size() + p.captured.size();
    for (size_t r = first; r < regs.size(); ++r)
      if (reads[r] == 0 || chance(0.2))
        p.outputs.push_back(int(r));
    if (p.outputs.empty() || chance(0.2))
      p.outputs.push_back(pick(0, int(regs.size()) - 1));
    if (raising_output >= 0)
      p.outputs.push_back(raising_output);
    return p;
  }

private:
  int any(const Regs &r) { return pick(0, int(r.size()) - 1); }
  /// A register, favouring recent ones (chains) over old ones.
  int recent(const Regs &r) { return chance(0.5) ? int(r.size()) - 1 : any(r); }

  ScalarType dtype() {
    static const ScalarType pool[] = {kFloat, kFloat,    kFloat, kDouble,
                                      kHalf,  kBFloat16, kInt,   kLong,
                                      kLong,  kBool,     kByte,  kShort};
    return pool[pick(0, int(std::size(pool)) - 1)];
  }

  Scalar scalar(ScalarType dt) {
    if (isIntegralType(dt, false) && chance(0.4))
      return Scalar(edge_value(dt, rng_));
    if (chance(0.5))
      return Scalar(int64_t(pick(-3, 3)));
    return Scalar(double(pick(-20, 20)) / 4);
  }

  /// A random instruction over `regs` (the registers it reads in
  /// last_reads_); an instruction without `run` when none fits.
  Instr instruction(const Regs &regs) {
    static const std::vector<const OperatorHandle *> ops = pointwise_ops();
    last_reads_.clear();
    last_write_ = -1;
    int out = int(regs.size());
    auto name = [](int r) { return "%" + std::to_string(r); };
    auto push = [](auto fn) {
      return [fn](Regs &r, int) { r.push_back(fn(r)); };
    };
    Instr in;
    int kind = pick(0, 99);
    int a = recent(regs);
    const Tensor &t = regs[size_t(a)];
    last_reads_ = {a};
    if (kind < 30) { // a pointwise op of the table
      const OperatorHandle *op = ops[size_t(pick(0, int(ops.size()) - 1))];
      std::vector<int> args;
      for (const Argument &arg : op->schema().arguments)
        if (arg.type == "Tensor")
          args.push_back(args.empty() ? a : recent(regs));
      last_reads_ = args;
      in.text = name(out) + " = " + op->name() + "(";
      for (size_t k = 0; k < args.size(); ++k)
        in.text += (k ? ", " : "") + name(args[k]);
      in.text += ")";
      in.fresh = true;
      in.run = push([op, args](Regs &r) {
        Stack st;
        size_t k = 0;
        for (const Argument &arg : op->schema().arguments)
          st.push_back(arg.type == "Tensor" ? IValue(r[size_t(args[k++])])
                                            : *arg.default_value);
        op->callBoxed(st);
        return st.at(0).toTensor();
      });
    } else if (kind < 38) { // a scalar at the edges
      Scalar s = scalar(t.dtype());
      int which = pick(0, 3);
      const char *names[] = {"add", "sub", "mul", "maximum"};
      std::ostringstream os;
      os << name(out) << " = " << names[which] << "(" << name(a) << ", " << s
         << ")";
      in.text = os.str();
      in.fresh = true;
      in.run = push([a, s, which](Regs &r) {
        const Tensor &x = r[size_t(a)];
        switch (which) {
        case 0:
          return x + s;
        case 1:
          return x - s;
        case 2:
          return x * s;
        default:
          return maximum(x, scalar_tensor(s, TensorOptions(x.dtype())));
        }
      });
    } else if (kind < 55) { // a view
      if (t.dim() == 0) {
        in.text = name(out) + " = unsqueeze(" + name(a) + ", 0)";
        in.run = push([a](Regs &r) { return r[size_t(a)].unsqueeze(0); });
        return in;
      }
      int d = pick(0, int(t.dim()) - 1);
      int64_t n = t.size(d);
      switch (pick(0, 7)) {
      case 0: {
        int64_t start = n > 0 ? pick(0, int(n) - 1) : 0;
        int64_t len = n > 0 ? pick(0, int(n - start)) : 0;
        in.text = name(out) + " = narrow(" + name(a) + ", " +
                  std::to_string(d) + ", " + std::to_string(start) + ", " +
                  std::to_string(len) + ")";
        in.run = push([a, d, start, len](Regs &r) {
          return r[size_t(a)].narrow(d, start, len);
        });
        break;
      }
      case 1: {
        int64_t i = n > 0 ? pick(0, int(n) - 1) : 0;
        in.text = name(out) + " = select(" + name(a) + ", " +
                  std::to_string(d) + ", " + std::to_string(i) + ")";
        in.run = push([a, d, i](Regs &r) { return r[size_t(a)].select(d, i); });
        break;
      }
      case 2: {
        int e = pick(0, int(t.dim()) - 1);
        in.text = name(out) + " = transpose(" + name(a) + ", " +
                  std::to_string(d) + ", " + std::to_string(e) + ")";
        in.run =
            push([a, d, e](Regs &r) { return r[size_t(a)].transpose(d, e); });
        break;
      }
      case 3: { // expand: a leading dim, and size-1 dims to 3
        std::vector<int64_t> to{2};
        for (int64_t s : t.sizes())
          to.push_back(s == 1 ? 3 : s);
        in.text = name(out) + " = expand(" + name(a) + ", " +
                  detail::str(IntArrayRef(to)) + ")";
        in.run = push([a, to](Regs &r) { return r[size_t(a)].expand(to); });
        break;
      }
      case 4:
        in.text = name(out) + " = slice(" + name(a) + ", " + std::to_string(d) +
                  ", step 2)";
        in.run = push([a, d](Regs &r) {
          return r[size_t(a)].slice(d, 0, std::nullopt, 2);
        });
        break;
      case 5:
        in.text = name(out) + " = diagonal(" + name(a) + ")";
        in.run = push([a](Regs &r) { return r[size_t(a)].diagonal(); });
        break;
      case 6: // as_strided at the tensor's own offset, in its storage
        in.text = name(out) + " = as_strided(" + name(a) +
                  ", sizes, strides, storage_offset())";
        in.run = push([a](Regs &r) {
          const Tensor &x = r[size_t(a)];
          return x.as_strided(x.sizes(), x.strides(), x.storage_offset());
        });
        break;
      default:
        in.text = name(out) + " = reshape(" + name(a) + ", -1)";
        in.run = push([a](Regs &r) { return r[size_t(a)].reshape({-1}); });
        break;
      }
    } else if (kind < 72) { // an in-place write, through views too
      int b = recent(regs);
      last_write_ = a;
      Scalar s = scalar(t.dtype());
      std::ostringstream os;
      int which = pick(0, 6);
      last_reads_.clear();
      if (which == 0 || which == 4 || which == 6) // add_, copy_, masked_fill_
        last_reads_ = {b};
      const char *names[] = {"add_",  "mul_", "fill_",       "zero_",
                             "copy_", "neg_", "masked_fill_"};
      os << names[which] << "(" << name(a);
      if (which == 0 || which == 4 || which == 6)
        os << ", " << name(b);
      if (which == 1 || which == 2 || which == 6)
        os << ", " << s;
      os << ")";
      in.text = os.str();
      in.run = [a, b, s, which](Regs &r, int) {
        const Tensor &x = r[size_t(a)];
        const Tensor &y = r[size_t(b)];
        switch (which) {
        case 0:
          x.add_(y);
          break;
        case 1:
          x.mul_(s);
          break;
        case 2:
          x.fill_(s);
          break;
        case 3:
          x.zero_();
          break;
        case 4:
          x.copy_(y);
          break;
        case 5:
          x.neg_();
          break;
        default:
          x.masked_fill_(y.to(kBool), s);
          break;
        }
      };
    } else if (kind < 84) { // a reduction
      int d = t.dim() ? pick(0, int(t.dim()) - 1) : 0;
      bool keep = chance(0.5);
      int which = pick(0, 5);
      const char *names[] = {"sum",     "mean",        "amax",
                             "softmax", "log_softmax", "std"};
      in.text = name(out) + " = " + names[which] + "(" + name(a) + ", " +
                std::to_string(d) + (keep ? ", keepdim)" : ")");
      in.fresh = true;
      in.run = push([a, d, keep, which](Regs &r) {
        const Tensor &x = r[size_t(a)];
        switch (which) {
        case 0:
          return x.sum(d, keep);
        case 1:
          return x.mean(d, keep);
        case 2:
          return x.amax(d, keep);
        case 3:
          return x.softmax(d);
        case 4:
          return x.log_softmax(d);
        default:
          return x.std(d);
        }
      });
    } else if (kind < 90) { // a graph break: a value C++ reads
      int b = recent(regs);
      last_reads_ = {a, b};
      in.text = name(out) + " = " + name(b) + " + item(sum(" + name(a) + "))";
      in.fresh = true;
      in.run = [a, b](Regs &r, int nudge) {
        Tensor x = r[size_t(a)].to(kDouble);
        double s = x.sum().item<double>();
        // The sum's own rounding (n ulps of the largest term, whatever the
        // order of the additions) is nudged too.
        Tensor m =
            x.abs().masked_fill(x != x, 0).masked_fill(x.abs() == INFINITY, 0);
        double bound =
            m.numel() ? m.max().item<double>() * double(m.numel()) : 0;
        s += nudge * std::ldexp(bound, -50);
        if (!std::isfinite(s) || std::abs(s) > 1e6)
          s = 1;
        r.push_back(r[size_t(b)] + s);
      };
    } else { // a factory (a tensor the function creates outside the graph)
      last_reads_.clear(); // it reads only the metadata
      int which = pick(0, 2);
      const char *names[] = {"zeros_like", "full_like 2.5", "ones"};
      in.text = name(out) + " = " + names[which] + "(" + name(a) + ")";
      in.run = push([a, which](Regs &r) {
        const Tensor &x = r[size_t(a)];
        switch (which) {
        case 0:
          return zeros_like(x);
        case 1:
          return full_like(x, 2.5);
        default:
          return ones(x.sizes(), TensorOptions(x.dtype()));
        }
      });
    }
    return in;
  }

  std::vector<int> last_reads_;
  int last_write_ = -1;
};

// --- running and comparing
// -------------------------------------------------------

/// What one side did in one call.
struct Outcome {
  bool raised = false;
  std::string error;
  std::vector<Tensor> outputs;
};

/// The eager runs of one call: plain, nudged up and down.
struct EagerRuns {
  Outcome plain, up, down;
  std::vector<Tensor> args, args_up, args_down;
  /// The nudged runs raised where the plain one did not, or the reverse:
  /// the call's outcome hangs on unstable values.
  bool unstable() const {
    return up.raised != plain.raised || down.raised != plain.raised;
  }
};

int e_raised(const EagerRuns &er) { return er.plain.raised ? 1 : 0; }

/// The first difference between the two sides of a call ("" if none).
std::string compare(const EagerRuns &er, const Outcome &k,
                    const std::vector<Tensor> &ka,
                    const std::vector<std::vector<Tensor>> &ec,
                    const std::vector<Tensor> &kc) {
  const Outcome &e = er.plain;
  const std::vector<Tensor> &ea = er.args;
  std::ostringstream os;
  if (e.raised != k.raised) {
    os << (e.raised ? "eager raised (" + e.error + ") and compiled did not"
                    : "compiled raised (" + k.error + ") and eager did not");
    return os.str();
  }
  if (e.raised)
    return ""; // Note [What compile() may change]: the writes may differ
  if (e.outputs.size() != k.outputs.size())
    return "output counts differ";
  auto all = [](const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
    std::vector<Tensor> v = a;
    v.insert(v.end(), b.begin(), b.end());
    return v;
  };
  std::vector<Tensor> eheld = all(ea, ec[0]), kheld = all(ka, kc);
  std::vector<Tensor> upheld = all(er.args_up, ec[1]),
                      downheld = all(er.args_down, ec[2]);
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    const Tensor &x = e.outputs[i], &y = k.outputs[i];
    if (x.dtype() != y.dtype() || x.sizes() != y.sizes()) {
      os << "output " << i << ": " << toString(y.dtype()) << y.sizes()
         << " compiled, " << toString(x.dtype()) << x.sizes() << " eager";
      return os.str();
    }
    Tensor stable = stable_mask(x, er.up.outputs.at(i), er.down.outputs.at(i));
    if (auto r = same_where(y, x, stable); !r) {
      os << "output " << i << ": " << r.message();
      return os.str();
    }
    if (!same_layout(y, x)) {
      os << "output " << i << ": strides " << y.strides() << " compiled, "
         << x.strides() << " eager";
      return os.str();
    }
    for (size_t j = 0; j < i; ++j)
      if (x.is_alias_of(e.outputs[j]) != y.is_alias_of(k.outputs[j])) {
        os << "outputs " << i << " and " << j << " share memory "
           << (x.is_alias_of(e.outputs[j]) ? "eagerly only" : "compiled only");
        return os.str();
      }
    for (size_t j = 0; j < eheld.size(); ++j)
      if (x.is_alias_of(eheld[j]) != y.is_alias_of(kheld[j])) {
        os << "output " << i << " and register %" << j << " share memory "
           << (x.is_alias_of(eheld[j]) ? "eagerly only" : "compiled only");
        return os.str();
      }
  }
  for (size_t j = 0; j < eheld.size(); ++j)
    if (auto r =
            same_where(storage_of(kheld[j]), storage_of(eheld[j]),
                       stable_mask(storage_of(eheld[j]), storage_of(upheld[j]),
                                   storage_of(downheld[j])));
        !r) {
      os << "register %" << j
         << " (argument or captured) afterwards: " << r.message();
      return os.str();
    }
  return "";
}

Outcome run_side(const std::function<std::vector<Tensor>()> &f) {
  Outcome o;
  try {
    o.outputs = f();
  } catch (const Error &err) {
    o.raised = true;
    o.error = err.what();
  }
  return o;
}

/// What a run of the fuzzer exercised.
struct Stats {
  int programs = 0, calls = 0, with_kernels = 0, raised = 0, breaks = 0,
      recompiles = 0, replayed = 0, unstable = 0;
  std::string str() const {
    std::ostringstream os;
    os << programs << " programs, " << calls << " calls: " << with_kernels
       << " ran compiled kernels, " << breaks << " had graph breaks, "
       << recompiles << " recompiled, " << replayed << " replayed a call, "
       << raised << " raised (both sides), " << unstable
       << " calls skipped as unstable (Note [Unstable values])";
    return os.str();
  }
};

/// Runs programs [first, first + n) of the stream from `seed`.
Stats fuzz(uint64_t seed, int first, int n) {
  Stats st;
  int &with_kernels = st.with_kernels;
  for (int i = first; i < first + n; ++i) {
    uint64_t s = seed * 1000003 + uint64_t(i);
    Program p = Generator(s).make();
    NoGradGuard g;
    // Each side keeps its captured tensors across calls, as a model's
    // buffers: the compiled function reaches its own through `kc`; the
    // eager runs (plain, nudged up and down) have theirs in `ec`.
    std::vector<std::vector<Tensor>> ec{p.make_captured(), p.make_captured(),
                                        p.make_captured()};
    std::vector<Tensor> kc = p.make_captured();
    auto compiled = compile(
        [&p, &kc](const std::vector<Tensor> &a) { return p.run(a, kc); },
        CompileOptions().opt_level(p.opt_level).replay(p.replay));
    bool failed = false;
    for (int c = 0; c < p.calls && !failed; ++c) {
      EagerRuns er;
      std::vector<Tensor> ka;
      try {
        er.args = p.make_args(c);
        er.args_up = p.make_args(c);
        er.args_down = p.make_args(c);
        ka = p.make_args(c);
      } catch (const Error &) {
        break;
      }
      er.plain = run_side([&] { return p.run(er.args, ec[0]); });
      er.up = run_side([&] { return p.run(er.args_up, ec[1], +1); });
      er.down = run_side([&] { return p.run(er.args_down, ec[2], -1); });
      Outcome k = run_side([&] { return compiled(ka); });
      ++st.calls;
      if (er.unstable()) {
        ++st.unstable;
        break; // whether the call raises hangs on rounding
      }
      st.raised += e_raised(er);
      const Outcome &e = er.plain;
      std::string diff = compare(er, k, ka, ec, kc);
      if (!diff.empty()) {
        ADD_FAILURE() << "program " << i << " (seed " << s << "), call " << c
                      << ": " << diff << "\n"
                      << p.str() << "\n"
                      << compiled.explain();
        failed = true;
      }
      if (e.raised)
        break; // the two states may differ from here on, by design
    }
    ExplainOutput ex = compiled.explain();
    ++st.programs;
    st.breaks += ex.graph_break_count > 0;
    st.recompiles += !ex.recompiles.empty();
    st.replayed += p.replay && ex.cache_hits > 0 && ex.calls > 1;
    with_kernels += ember::test::ran_kernels(ex);
  }
  return st;
}

class FuzzState : public ::testing::TestWithParam<int> {};

TEST_P(FuzzState, CompiledKeepsWhatEagerDoes) {
  constexpr int kPerBlock = 100;
  Stats st = fuzz(/*seed=*/1, GetParam() * kPerBlock, kPerBlock);
  // A good share of the programs must run compiled kernels, break graphs,
  // recompile and raise.
  EXPECT_GT(st.with_kernels, kPerBlock / 5) << st.str();
  EXPECT_GT(st.breaks, kPerBlock / 20) << st.str();
  EXPECT_GT(st.recompiles, kPerBlock / 20) << st.str();
}
INSTANTIATE_TEST_SUITE_P(Blocks, FuzzState, ::testing::Range(0, 10));

TEST(FuzzStateOnDemand, FromEnvironment) {
  std::optional<ember::test::FuzzRequest> r = ember::test::fuzz_request();
  if (!r)
    GTEST_SKIP() << "set FUZZ_PROGRAMS (and FUZZ_SEED) to run more programs";
  Stats st = fuzz(r->seed, r->first, r->programs);
  std::cout << "[fuzz] " << st.str() << "\n";
}

} // namespace
