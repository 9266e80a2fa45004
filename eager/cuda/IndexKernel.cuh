/// The CUDA index kernels' device code (Note [CUDA index kernels] in
/// eager/cuda/Index.cpp): one point of gather, index_select, scatter_,
/// scatter_add_ or index_add_. NVRTC compiles it after the device math
/// prelude (PointwiseMath.cuh: convert<>, is_same, the 16-bit float types);
/// without __CUDACC__ it compiles as host C++ (Note [Self-contained device
/// header] in PointwiseMath.cuh), which is how test_cuda checks the kernels'
/// arithmetic on machines without a GPU: the same planning, the same
/// index_point, run point by point on CPU tensors.

namespace ember {

/// Most dims an index kernel walks (a 0-dim operand counts as one dim).
#define EMBER_INDEX_MAX_DIMS 25

/// What a launch walks: `n` points of the iteration space `sizes` (row-major,
/// innermost last), and per dim each operand's element stride: the direct
/// operand (gather's output, scatter's source), the indexed operand (with
/// the indexed dim's stride 0: its place comes from the index) and the
/// index. The indexed operand's element is at
/// indexed(p) + index[index(p)] * indexed_stride.
struct IndexPlan {
  long long n;
  long long ndim;
  long long sizes[EMBER_INDEX_MAX_DIMS];
  long long direct[EMBER_INDEX_MAX_DIMS];
  long long indexed[EMBER_INDEX_MAX_DIMS];
  long long index[EMBER_INDEX_MAX_DIMS];
  long long indexed_stride;
};

/// The modes: 0 gathers (direct = indexed[...]: gather, index_select),
/// 1 assigns (indexed[...] = direct: scatter_), 2 adds (indexed[...] +=
/// alpha * direct, in the compute type A: scatter_add_, index_add_).
#define EMBER_INDEX_GATHER 0
#define EMBER_INDEX_ASSIGN 1
#define EMBER_INDEX_ADD 2

#if defined(__CUDACC__)
/// *p += v as one atomic operation: the hardware's add for float, double,
/// int and int64; a compare-and-swap of the aligned 32-bit word that holds
/// a narrower element (16-bit floats, 8- and 16-bit integers, bool).
template <class T, class A> __device__ void add_to(T *p, A v) {
  if constexpr (detail::is_same<T, float>) {
    atomicAdd(p, float(v));
  } else if constexpr (detail::is_same<T, double>) {
    atomicAdd(p, double(v));
  } else if constexpr (detail::is_same<T, int>) {
    atomicAdd(p, int(v));
  } else if constexpr (sizeof(T) == 8) {
    // (two's complement: an unsigned add is a signed one)
    atomicAdd(reinterpret_cast<unsigned long long *>(p),
              static_cast<unsigned long long>(static_cast<long long>(v)));
  } else {
    static_assert(sizeof(T) <= 2, "add_to: an element of 1 or 2 bytes");
    unsigned long long addr = reinterpret_cast<unsigned long long>(p);
    unsigned int *word = reinterpret_cast<unsigned int *>(addr & ~3ull);
    const unsigned int shift = unsigned(addr & 3ull) * 8u;
    const unsigned int mask = sizeof(T) == 1 ? 0xffu : 0xffffu;
    unsigned int old = *word, seen;
    do {
      seen = old;
      const unsigned int bits = (seen >> shift) & mask;
      T cur;
      if constexpr (sizeof(T) == 1)
        cur = __builtin_bit_cast(T, static_cast<unsigned char>(bits));
      else
        cur = __builtin_bit_cast(T, static_cast<unsigned short>(bits));
      const T next = convert<T>(A(convert<A>(cur) + v));
      unsigned int nbits;
      if constexpr (sizeof(T) == 1)
        nbits = __builtin_bit_cast(unsigned char, next);
      else
        nbits = __builtin_bit_cast(unsigned short, next);
      old = atomicCAS(word, seen, (seen & ~(mask << shift)) | (nbits << shift));
    } while (seen != old);
  }
}
#else
template <class T, class A> inline void add_to(T *p, A v) {
  *p = convert<T>(A(convert<A>(*p) + v));
}
#endif

/// Point `i` of a launch of mode `Mode` over elements T (bit copies for
/// modes 0 and 1, any same-size type does) computing in A.
template <int Mode, class T, class A>
EMBER_DEVICE_INLINE void index_point(const IndexPlan &p, long long i,
                                     T *direct, T *indexed,
                                     const long long *index, A alpha) {
  long long r = i, od = 0, ox = 0, oi = 0;
  for (long long k = p.ndim - 1; k >= 0; --k) {
    const long long c = r % p.sizes[k];
    r /= p.sizes[k];
    od += c * p.direct[k];
    ox += c * p.indexed[k];
    oi += c * p.index[k];
  }
  T *x = indexed + ox + index[oi] * p.indexed_stride;
  if constexpr (Mode == EMBER_INDEX_GATHER)
    direct[od] = *x;
  else if constexpr (Mode == EMBER_INDEX_ASSIGN)
    *x = direct[od];
  else if constexpr (detail::is_same<A, bool>)
    add_to(x, A(alpha && convert<A>(direct[od])));
  else
    add_to(x, A(alpha * convert<A>(direct[od])));
}

} // namespace ember
