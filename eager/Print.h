#pragma once
/// Printing options for `std::cout << tensor` (torch.set_printoptions).
///
/// `operator<<(std::ostream &, const Tensor &)` (declared in eager/Tensor.h,
/// defined in eager/Print.cpp) prints what PyTorch's Python repr prints, with
/// "ember." in place of "torch." in dtype names:
///
///   tensor([[1.0000, 0.5000],
///           [0.2500, 0.1250]], dtype=ember.float64)
///
/// The options below change it the way torch.set_printoptions changes repr.

#include <cstdint>
#include <optional>

namespace ember {

/// What the printer reads (torch._tensor_str.PRINT_OPTS).
struct PrintOptions {
  /// Digits after the decimal point for floating point values.
  int64_t precision = 4;
  /// Tensors with more elements than this are summarised (edge items of each
  /// dim and "..."). A double so that infinity means "never summarise"
  /// (torch.set_printoptions(threshold=float('inf'))).
  double threshold = 1000;
  /// Items shown at the start and at the end of each summarised dim.
  int64_t edgeitems = 3;
  /// Characters per line before a 1-D row of values wraps.
  int64_t linewidth = 80;
  /// Force scientific notation on (true) or off (false); unset lets the
  /// printer choose from the values (PyTorch's rules).
  std::optional<bool> sci_mode;

  /// torch.set_printoptions(profile=...): "default", "short" (precision 2,
  /// edgeitems 2) or "full" (never summarise). Raises ValueError for any
  /// other name.
  static PrintOptions profile(const char *name);
};

/// Changes the options that every later print uses (process-wide, as
/// torch.set_printoptions). An unset argument keeps its current value,
/// except `sci_mode`, which is always set: leaving it unset returns to the
/// automatic choice, exactly as in PyTorch. Raises ValueError for a negative
/// precision, an edgeitems below 1 or a NaN threshold.
void set_printoptions(std::optional<int64_t> precision = std::nullopt,
                      std::optional<double> threshold = std::nullopt,
                      std::optional<int64_t> edgeitems = std::nullopt,
                      std::optional<int64_t> linewidth = std::nullopt,
                      std::optional<bool> sci_mode = std::nullopt);
/// Replaces every option at once (set_printoptions(PrintOptions{}) restores
/// the defaults). Validated as above.
void set_printoptions(const PrintOptions &options);
/// The options in force now.
PrintOptions get_printoptions();

/// Sets print options for a scope and restores the previous ones on exit.
class PrintOptionsGuard {
public:
  explicit PrintOptionsGuard(const PrintOptions &options)
      : saved_(get_printoptions()) {
    set_printoptions(options);
  }
  ~PrintOptionsGuard() { set_printoptions(saved_); }
  PrintOptionsGuard(const PrintOptionsGuard &) = delete;
  PrintOptionsGuard &operator=(const PrintOptionsGuard &) = delete;

private:
  PrintOptions saved_;
};

} // namespace ember
