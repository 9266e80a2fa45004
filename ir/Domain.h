#pragma once
/// The iteration domain of a fusion, shared by the pass that forms fusions
/// (passes/FuseElementwise.cpp) and the code generator that compiles them
/// (codegen/): which shapes a kernel over the domain computes, and how it
/// indexes each value. No MLIR here.
///
/// Note [Reduction fusion]
/// A fusion runs over one iteration domain: a full shape, and the dims its
/// reductions fold (none for pointwise ops only). Its values have one of two
/// levels. *Full* values have a point for every point of the full shape
/// (right-aligned: a value of lower rank broadcasts along the leading
/// dims). *Reduced* values have one per kept point: a reduction's result
/// with keepdim (the full rank, size 1 on the folded dims) or without it
/// (only the kept dims, in order: the *kept form*), and the pointwise ops
/// over those. A kernel indexes each value by the domain dims its own dims
/// lie on (dims_of). An op reads its operands as broadcasting says, right-
/// aligned against its result (read_dims), and the two must agree: a value
/// in the kept form that an op of the full rank reads is broadcast along
/// the *trailing* dims, which are the kept dims only when the folded dims
/// lead (sum over dim 0 of [A, B] is [B], read along dim 1: fine; sum over
/// dim 1 is [A], which `x[A, B] + s` would read along dim 1 as well, and
/// only fits when A == B -- a different computation the kernel must not
/// make). Such an op stays out of the fusion (reads_as_indexed). The kept
/// form is a shape only the kernel's own reductions give: a kernel *input*
/// (a value computed outside it) is always indexed right-aligned, as
/// broadcasting reads it, so the [B] weight of a layer_norm over [B, B] is
/// a row, and the pass and the code generator agree on it because both
/// classify a value as an input by where it is defined. For the same
/// reason a result of the kept points never takes over an input's buffer
/// (ember-plan-memory): that input may be a row every point reads.

#include "eager/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace ember::ir {

struct Domain {
  std::vector<int64_t> full;
  std::vector<bool> reduced; ///< per dim of `full`; empty: no reduction

  bool has_reduction() const {
    for (bool r : reduced)
      if (r)
        return true;
    return false;
  }
  /// The sizes of the kept dims (the kept form).
  std::vector<int64_t> kept() const {
    std::vector<int64_t> k;
    for (size_t d = 0; d < full.size(); ++d)
      if (!has_reduction() || !reduced[d])
        k.push_back(full[d]);
    return k;
  }
  /// The full shape with the folded dims 1 (a keepdim result).
  std::vector<int64_t> keepdim() const {
    std::vector<int64_t> k = full;
    for (size_t d = 0; d < full.size() && has_reduction(); ++d)
      if (reduced[d])
        k[d] = 1;
    return k;
  }

  /// `s` right-aligned to `rank` dims (1s added in front); nullopt when it
  /// has more dims than that which are not 1.
  static std::optional<std::vector<int64_t>> pad(IntArrayRef s, size_t rank) {
    std::vector<int64_t> out(rank, 1);
    for (size_t i = 0; i < s.size(); ++i) {
      size_t from_end = s.size() - 1 - i;
      if (from_end >= rank) {
        if (s[i] != 1)
          return std::nullopt;
        continue;
      }
      out[rank - 1 - from_end] = s[i];
    }
    return out;
  }
  static int64_t numel(IntArrayRef s) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    return n;
  }

  /// A value of shape `s` is computed at every point of the domain.
  bool is_full(IntArrayRef s) const {
    if (!has_reduction())
      return numel(s) == numel(full);
    auto p = pad(s, full.size());
    return p && *p == full;
  }
  /// A value of shape `s` has one element per kept point: a reduction's
  /// result with keepdim or in the kept form.
  bool is_reduced(IntArrayRef s) const {
    if (!has_reduction())
      return false;
    auto p = pad(s, full.size());
    return (p && *p == keepdim()) || IntArrayRef(kept()) == s;
  }
  /// The domain of two groups together, if they can be one.
  static std::optional<Domain> merge(const Domain &a, const Domain &b) {
    if (a.has_reduction() && b.has_reduction()) {
      if (a.full == b.full && a.reduced == b.reduced)
        return a;
      return std::nullopt;
    }
    if (b.has_reduction())
      return merge(b, a);
    if (a.has_reduction())
      return a.is_full(b.full) || a.is_reduced(b.full) ? std::optional(a)
                                                       : std::nullopt;
    return numel(a.full) == numel(b.full) ? std::optional(a) : std::nullopt;
  }

  /// The domain dim that each dim of a value of shape `s` lies on, as a
  /// kernel over the domain indexes the value (-1 for dims of size 1): the
  /// kept dims for the kept form of a reduction, else right-aligned. An
  /// `input` of the kernel (a value computed outside it) is always read
  /// right-aligned, as broadcasting reads it: the kept form is a shape only
  /// the kernel's own reductions give (a [B] weight of a kernel over [A, B]
  /// that folds dim 1 is a row, even when A == B).
  std::vector<int> dims_of(IntArrayRef s, bool input = false) const {
    std::vector<int> m(s.size(), -1);
    if (!input && has_reduction() && s.size() < full.size() &&
        IntArrayRef(kept()) == s) {
      size_t j = 0;
      for (size_t d = 0; d < full.size(); ++d) {
        if (reduced[d])
          continue;
        m[j] = s[j] == 1 ? -1 : int(d);
        ++j;
      }
      return m;
    }
    int64_t lead = int64_t(full.size()) - int64_t(s.size());
    for (size_t i = 0; i < s.size(); ++i)
      m[i] = s[i] == 1 || int64_t(i) + lead < 0 ? -1 : int(int64_t(i) + lead);
    return m;
  }
  /// The domain dim that each dim of an operand of shape `s` lies on as an
  /// op whose result has shape `out` reads it: broadcast right-aligned
  /// against `out`, whose dims lie where dims_of(out) says.
  std::vector<int> read_dims(IntArrayRef s, IntArrayRef out) const {
    std::vector<int> o = dims_of(out);
    std::vector<int> m(s.size(), -1);
    int64_t lead = int64_t(out.size()) - int64_t(s.size());
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1 && int64_t(i) + lead >= 0)
        m[i] = o[size_t(int64_t(i) + lead)];
    return m;
  }
  /// Note [Reduction fusion]: the kernel's indexing of an operand of shape
  /// `s` (an `input` of the kernel, or a value it computes) is what an op
  /// with result shape `out` reads.
  bool reads_as_indexed(IntArrayRef s, IntArrayRef out, bool input) const {
    return dims_of(s, input) == read_dims(s, out);
  }
};

} // namespace ember::ir
