/// The CUDA sort kernel's device code (Note [CUDA sort] in
/// eager/cuda/Sort.cpp): one compare-exchange of a bitonic sorting network
/// over rows of a power-of-two length. NVRTC compiles it after the device
/// math prelude (PointwiseMath.cuh: convert<>, is_same, the 16-bit float
/// types); without __CUDACC__ it compiles as host C++ (Note [Self-contained
/// device header] in PointwiseMath.cuh), which is how test_cuda checks the
/// network on machines without a GPU: the same planning, the same
/// sort_point, run on CPU tensors.

namespace ember {

/// One step (k, j) of the bitonic network over `rows` rows of `p` elements
/// (a power of two), of which the first `n` are the row's own (the rest is
/// padding, ordered after them). A launch has rows * p / 2 threads: thread
/// t compares the pair (i, i ^ j) of its row, and orders it ascending where
/// (i & k) == 0, else descending (in the sort's order, which `descending`
/// makes largest first).
struct SortPlan {
  long long rows;
  long long p;
  long long n;
  long long j;
  long long k;
  int descending;
};

/// a < b in ascending key order, with NaN after every number (and NaNs
/// equal); -0.0 == 0.0.
template <class A> EMBER_DEVICE_INLINE bool key_less(A a, A b) {
  if constexpr (detail::is_floating_point<A>) {
    if (b != b)
      return a == a;
    return a < b; // (false when a is NaN)
  } else {
    return a < b;
  }
}

/// Whether element (a, ia) comes strictly before (b, ib): the sort's order
/// by key (ascending with NaN last, or descending with NaN first), equal
/// keys by the smaller index, and padding (index >= n) after every element
/// of the row in both directions. A strict total order: no two elements
/// share an index.
template <class A>
EMBER_DEVICE_INLINE bool sort_before(const SortPlan &plan, A a, long long ia,
                                     A b, long long ib) {
  const bool pad_a = ia >= plan.n, pad_b = ib >= plan.n;
  if (pad_a || pad_b)
    return pad_a && pad_b ? ia < ib : pad_b;
  if (plan.descending ? key_less(b, a) : key_less(a, b))
    return true;
  if (plan.descending ? key_less(a, b) : key_less(b, a))
    return false;
  return ia < ib;
}

/// Thread `t` of a step: compare-exchange of one pair of keys T (compared
/// in A: float for the 16-bit floats) and their indices.
template <class T, class A>
EMBER_DEVICE_INLINE void sort_point(const SortPlan &plan, long long t, T *keys,
                                    int64_t *idx) {
  const long long pairs = plan.p >> 1;
  const long long row = t / pairs, h = t - row * pairs;
  // the h-th index of the row with bit j clear, and its partner
  const long long i = ((h & ~(plan.j - 1)) << 1) | (h & (plan.j - 1));
  const long long l = i | plan.j;
  T *key = keys + row * plan.p;
  int64_t *ix = idx + row * plan.p;
  const T x = key[i], y = key[l];
  const int64_t xi = ix[i], yi = ix[l];
  const A ax = convert<A>(x), ay = convert<A>(y);
  // (an ascending block wants x before y: swap when y comes first)
  const bool swap = (i & plan.k) == 0 ? sort_before<A>(plan, ay, yi, ax, xi)
                                      : sort_before<A>(plan, ax, xi, ay, yi);
  if (swap) {
    key[i] = y;
    key[l] = x;
    ix[i] = yi;
    ix[l] = xi;
  }
}

} // namespace ember
