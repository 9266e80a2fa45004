// einsum: Einstein summation over any number of operands, composed of views
// (diagonal, permute, unsqueeze, squeeze), sum, mul and bmm.
//
// Note [einsum]
// Same algorithm as PyTorch's einsum (contraction left to right):
//  1. Parse the equation: labels [a-zA-Z] per operand, at most one ellipsis
//     per operand. Without '->', the output is the ellipsis dims followed by
//     the labels that appear exactly once, in alphabetical order (uppercase
//     before lowercase).
//  2. Give every label an index in a common "aligned" shape: output dims
//     first (in output order), then the contraction dims (the ellipsis
//     dims too when the output has no ellipsis).
//  3. Align every operand to that shape: a label repeated within one operand
//     takes the diagonal, missing labels become dims of size 1, and the
//     dims are permuted into place (all views, no copies). Dims of size 1
//     broadcast against the others.
//  4. Sum out each contraction dim right after the last operand that has it
//     (size != 1): a dim only the accumulated result has is summed on its
//     own; one shared with the next operand becomes the contraction dim of a
//     bmm ("sumproduct_pair"), which folds the shared batch dims, the dims
//     only the left or right has, and the summed dims into
//     (batch, rows, sum) x (batch, sum, cols).
// Intermediate sums keep the operands' dtype (an integer sum would promote
// to int64 and the following bmm would see two dtypes); the sum of a single
// operand follows sum()'s promotion, as PyTorch.
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"

#include <array>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

namespace ember::native {

namespace {

constexpr int kNumLetters = 'z' - 'a' + 1;
constexpr int kTotalLabels = 2 * kNumLetters;
constexpr int kEllipsis = kTotalLabels;

/// A label in [A-Za-z] as an index: 'A'..'Z' are 0..25, 'a'..'z' 26..51, so
/// index order is alphabetical order with uppercase first.
int labelIndex(unsigned char c) {
  return std::isupper(c) ? c - 'A' : c - 'a' + kNumLetters;
}
char labelChar(int index) {
  return index < kNumLetters ? char('A' + index)
                             : char('a' + index - kNumLetters);
}

/// Moves dim `from` of t to position `to`, keeping the order of the rest.
Tensor moveDim(const Tensor &t, int64_t from, int64_t to) {
  std::vector<int64_t> rest;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != from)
      rest.push_back(d);
  rest.insert(rest.begin() + to, from);
  return t.permute(rest);
}

/// Sums dim d away; keepDtype stops integer sums from promoting.
Tensor sumDim(const Tensor &t, int64_t d, bool keepdim, bool keepDtype) {
  int64_t dims[] = {d};
  return t.sum(IntArrayRef(dims), keepdim,
               keepDtype ? std::optional<ScalarType>(t.dtype()) : std::nullopt);
}

/// left * right (both aligned to the same rank, size-1 dims broadcasting),
/// summed over sumDims, as one bmm. Dims not summed are kept in place; the
/// summed dims are removed.
Tensor sumProductPair(Tensor left, Tensor right,
                      const std::vector<int64_t> &sumDims) {
  int64_t dim = left.dim();
  auto isSum = dim_list_to_bitset(sumDims, dim);
  std::vector<int64_t> lro, lo, ro;
  int64_t lroSize = 1, loSize = 1, roSize = 1, sumSize = 1;
  for (int64_t i = 0; i < dim; ++i) {
    bool sl = left.size(i) != 1, sr = right.size(i) != 1;
    if (isSum[size_t(i)]) {
      if (sl && sr) {
        EMBER_CHECK(left.size(i) == right.size(i), "einsum(): non-broadcast ",
                    "dimensions must match");
        sumSize *= left.size(i);
      } else if (sl) {
        left = sumDim(left, i, true, true);
      } else if (sr) {
        right = sumDim(right, i, true, true);
      }
    } else if (sl && sr) {
      EMBER_CHECK(left.size(i) == right.size(i), "einsum(): non-broadcast ",
                  "dimensions must match");
      lro.push_back(i);
      lroSize *= left.size(i);
    } else if (sl) {
      lo.push_back(i);
      loSize *= left.size(i);
    } else {
      ro.push_back(i);
      roSize *= right.size(i);
    }
  }
  // left: (lro, lo, sum); right: (lro, sum, ro); bmm gives (lro, lo, ro),
  // viewed with size-1 dims for the summed ones and permuted back.
  std::vector<int64_t> outSize;
  for (int64_t d : lro)
    outSize.push_back(left.size(d));
  for (int64_t d : lo)
    outSize.push_back(left.size(d));
  for (size_t k = 0; k < sumDims.size(); ++k)
    outSize.push_back(1);
  for (int64_t d : ro)
    outSize.push_back(right.size(d));

  std::vector<int64_t> lperm(lro);
  lperm.insert(lperm.end(), lo.begin(), lo.end());
  lperm.insert(lperm.end(), sumDims.begin(), sumDims.end());
  lperm.insert(lperm.end(), ro.begin(), ro.end());
  std::vector<int64_t> rperm(lro);
  rperm.insert(rperm.end(), sumDims.begin(), sumDims.end());
  rperm.insert(rperm.end(), ro.begin(), ro.end());
  rperm.insert(rperm.end(), lo.begin(), lo.end());
  std::vector<int64_t> operm(size_t(dim), -1);
  int64_t pos = 0;
  const std::array<const std::vector<int64_t> *, 4> groups = {&lro, &lo,
                                                              &sumDims, &ro};
  for (const std::vector<int64_t> *group : groups)
    for (int64_t d : *group)
      operm[size_t(d)] = pos++;

  left = left.permute(lperm).reshape({lroSize, loSize, sumSize});
  right = right.permute(rperm).reshape({lroSize, sumSize, roSize});
  Tensor result = ember::bmm(left, right).view(outSize).permute(operm);
  std::vector<int64_t> finalSize;
  for (int64_t i = 0; i < dim; ++i)
    if (!isSum[size_t(i)])
      finalSize.push_back(result.size(i));
  return result.reshape(finalSize);
}

template <class Container> std::string shapeString(const Container &c) {
  std::ostringstream os;
  os << "[";
  bool first = true;
  for (int64_t s : c) {
    os << (first ? "" : ", ") << s;
    first = false;
  }
  os << "]";
  return os.str();
}

} // namespace

Tensor einsum(std::string_view equation, TensorList operands) {
  EMBER_CHECK(!operands.empty(), "einsum(): must provide at least one operand");
  const size_t numOps = operands.size();

  // 1. Parse the operands' labels.
  const size_t arrow = equation.find("->");
  const std::string_view lhs = equation.substr(0, arrow);
  std::vector<std::vector<int>> opLabels(numOps);
  bool ellInInput = false;
  size_t curOp = 0;
  for (size_t i = 0; i < lhs.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(lhs[i]);
    switch (c) {
    case ' ':
      break;
    case '.':
      EMBER_CHECK(!ellInInput, "einsum(): found '.' for operand ", curOp,
                  " for which an ellipsis was already found");
      EMBER_CHECK(i + 2 < lhs.size() && lhs[++i] == '.' && lhs[++i] == '.',
                  "einsum(): found '.' for operand ", curOp,
                  " that is not part of any ellipsis");
      opLabels[curOp].push_back(kEllipsis);
      ellInInput = true;
      break;
    case ',':
      ++curOp;
      EMBER_CHECK(curOp < numOps, "einsum(): fewer operands were provided ",
                  "than specified in the equation");
      ellInInput = false;
      break;
    default:
      EMBER_CHECK(std::isalpha(c), "einsum(): invalid subscript given at ",
                  "index ", i, " in the equation string, subscripts must be ",
                  "in [a-zA-Z]");
      opLabels[curOp].push_back(labelIndex(c));
    }
  }
  EMBER_CHECK(curOp == numOps - 1, "einsum(): more operands were provided ",
              "than specified in the equation");

  // Label counts and the number of dims the ellipses cover.
  std::array<int64_t, kTotalLabels> labelCount{};
  int64_t ellNumDim = 0;
  for (size_t i = 0; i < numOps; ++i) {
    const Tensor &op = operands[i];
    EMBER_CHECK(op.defined(), "einsum(): operand ", i, " is undefined");
    int64_t ndim = op.dim();
    int64_t nlabels = int64_t(opLabels[i].size());
    bool hasEllipsis = false;
    for (int label : opLabels[i]) {
      if (label == kEllipsis) {
        --nlabels;
        hasEllipsis = true;
        ellNumDim = std::max(ellNumDim, ndim - nlabels);
      } else {
        ++labelCount[size_t(label)];
      }
    }
    EMBER_CHECK(hasEllipsis ? nlabels <= ndim : nlabels == ndim,
                "einsum(): the number of subscripts in the equation (", nlabels,
                ") ", hasEllipsis ? "is more than" : "does not match",
                " the number of dimensions (", ndim, ") for operand ", i,
                hasEllipsis ? "" : " and no ellipsis was given");
  }

  // 2. The aligned shape: output dims, then contraction dims.
  std::array<int64_t, kTotalLabels> labelPerm;
  labelPerm.fill(-1);
  int64_t permIndex = 0, ellIndex = 0;
  bool ellInOutput = false;
  if (arrow == std::string_view::npos) {
    permIndex = ellNumDim;
    ellInOutput = true;
    for (int label = 0; label < kTotalLabels; ++label)
      if (labelCount[size_t(label)] == 1)
        labelPerm[size_t(label)] = permIndex++;
  } else {
    const std::string_view rhs = equation.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(rhs[i]);
      switch (c) {
      case ' ':
        break;
      case '.':
        EMBER_CHECK(!ellInOutput, "einsum(): found '.' for output but an ",
                    "ellipsis (...) was already found");
        EMBER_CHECK(i + 2 < rhs.size() && rhs[++i] == '.' && rhs[++i] == '.',
                    "einsum(): found '.' for output that is not part of any ",
                    "ellipsis (...)");
        ellIndex = permIndex;
        permIndex += ellNumDim;
        ellInOutput = true;
        break;
      default: {
        EMBER_CHECK(std::isalpha(c), "einsum(): invalid subscript given at ",
                    "index ", lhs.size() + 2 + i, " in the equation string, ",
                    "subscripts must be in [a-zA-Z]");
        int label = labelIndex(c);
        EMBER_CHECK(labelCount[size_t(label)] > 0 &&
                        labelPerm[size_t(label)] == -1,
                    "einsum(): output subscript ", char(c),
                    labelPerm[size_t(label)] > -1
                        ? " appears more than once in the output"
                        : " does not appear in the equation for any input "
                          "operand");
        labelPerm[size_t(label)] = permIndex++;
      }
      }
    }
  }
  const int64_t outNumDim = permIndex;
  if (!ellInOutput) { // the ellipsis dims are summed
    ellIndex = permIndex;
    permIndex += ellNumDim;
  }
  for (int label = 0; label < kTotalLabels; ++label)
    if (labelCount[size_t(label)] > 0 && labelPerm[size_t(label)] == -1)
      labelPerm[size_t(label)] = permIndex++;

  // 3. Align every operand (diagonals, unsqueezes, permute: all views).
  std::vector<Tensor> aligned;
  aligned.reserve(numOps);
  for (size_t i = 0; i < numOps; ++i) {
    std::vector<int64_t> permShape(size_t(permIndex), -1);
    std::array<int64_t, kTotalLabels> labelDim;
    labelDim.fill(-1);
    Tensor op = operands[i];
    const int64_t originalDim = op.dim();
    const auto &labels = opLabels[i];
    int64_t j = 0;
    for (int label : labels) {
      if (label == kEllipsis) {
        // Pad the ellipsis on the left to ellNumDim dims (broadcasting).
        int64_t covered = originalDim - int64_t(labels.size()) + 1;
        for (int64_t k = 0; k < ellNumDim - covered; ++k)
          op = op.unsqueeze(j);
        for (int64_t k = 0; k < ellNumDim; ++k)
          permShape[size_t(ellIndex + k)] = j++;
      } else if (labelDim[size_t(label)] != -1) {
        // Repeated label: take the diagonal, keep it where the label was.
        int64_t d = labelDim[size_t(label)];
        EMBER_CHECK(op.size(j) == op.size(d), "einsum(): subscript ",
                    labelChar(label), " is repeated for operand ", i,
                    " but the sizes don't match, ", op.size(j),
                    " != ", op.size(d));
        op = moveDim(op.diagonal(0, d, j), op.dim() - 2, d);
      } else {
        labelDim[size_t(label)] = j;
        permShape[size_t(labelPerm[size_t(label)])] = j++;
      }
    }
    for (int64_t &index : permShape)
      if (index == -1) {
        op = op.unsqueeze(-1);
        index = j++;
      }
    aligned.push_back(op.permute(permShape));
  }

  // Broadcast check; the last operand with a non-1 size of every dim.
  std::vector<size_t> dimLastOp(size_t(permIndex), 0);
  bool hasZeroSizeDim = false;
  for (int64_t d = 0; d < permIndex; ++d) {
    int64_t broadcastSize = aligned[0].size(d);
    for (size_t i = 1; i < numOps; ++i) {
      int64_t s = aligned[i].size(d);
      if (broadcastSize != s && broadcastSize != 1 && s != 1) {
        std::ostringstream msg;
        msg << "einsum(): operands do not broadcast with remapped shapes "
               "(original->remapped):";
        for (size_t k = 0; k < numOps; ++k)
          msg << " " << shapeString(operands[k].sizes()) << "->"
              << shapeString(aligned[k].sizes());
        throw Error(msg.str());
      }
      if (s != 1) {
        broadcastSize = s;
        dimLastOp[size_t(d)] = i;
      }
    }
    hasZeroSizeDim |= broadcastSize == 0;
  }

  // 4. Contract.
  Tensor result = aligned[0];
  if (hasZeroSizeDim) {
    std::vector<int64_t> outShape(static_cast<size_t>(outNumDim));
    for (int64_t d = 0; d < outNumDim; ++d)
      outShape[size_t(d)] = aligned[dimLastOp[size_t(d)]].size(d);
    return zeros(outShape, result.options());
  }
  const bool keepDtype = numOps > 1;
  int64_t dim = outNumDim;
  for (int64_t d = outNumDim; d < permIndex; ++d, ++dim)
    if (dimLastOp[size_t(d)] == 0) {
      if (result.size(dim) == 1)
        result = result.squeeze(dim--);
      else
        result = sumDim(result, dim--, false, keepDtype);
    }

  for (size_t i = 1; i < numOps; ++i) {
    Tensor op = aligned[i];
    std::vector<int64_t> sumDims;
    dim = outNumDim;
    for (int64_t d = outNumDim; d < permIndex; ++d, ++dim) {
      if (dimLastOp[size_t(d)] < i) {
        op = op.squeeze(dim--);
      } else if (dimLastOp[size_t(d)] == i) {
        if (result.size(dim) == 1) {
          op = sumDim(op, dim, false, true);
          result = result.squeeze(dim--);
        } else {
          sumDims.push_back(dim);
        }
      }
    }
    if (sumDims.empty())
      result = result.mul(op);
    else if (int64_t(sumDims.size()) == result.dim())
      result = ember::dot(result.flatten(), op.flatten());
    else
      result = sumProductPair(result, op, sumDims);
  }
  return result;
}

} // namespace ember::native
