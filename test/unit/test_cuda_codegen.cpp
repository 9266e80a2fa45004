// codegen/CudaRender.h: the CUDA C renderer of the kernel description.
// Without a GPU: every op's kernel and every fold compiles under NVRTC for
// sm_80 and sm_90, and the rendered kernels run on the host through a small
// emulation of CUDA's threads (test/unit/CudaEmulation.h), against the CPU
// generator's results.
#include "CudaTestUtil.h"
#include "TestUtil.h"

#include "codegen/CudaRender.h"
#include "codegen/Kernel.h"
#include "eager/Meta.h"
#include "eager/cuda/Pointwise.h"
#include "eager/cuda/Softmax.h"
#include "runtime/CudaGraph.h"
#include "runtime/Nvrtc.h"

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

using namespace ember;
using codegen::CudaKernel;
using codegen::KernelSpec;

namespace {

/// The functional op of each pointwise spec (the functors name theirs).
std::map<const meta::PointwiseSpec *, const OperatorHandle *> ops_by_spec() {
  std::map<const meta::PointwiseSpec *, const OperatorHandle *> m;
  for (const OperatorHandle *h : Dispatcher::singleton().allOps())
    if (const meta::PointwiseSpec *s = meta::find_pointwise_spec(*h))
      m.emplace(s, h);
  return m;
}

/// The dtype a pointwise op of `spec` gives over inputs of `dt`, or
/// Undefined when it does not take them.
ScalarType out_dtype(const meta::PointwiseSpec &spec, DtypeGroup group,
                     ScalarType dt) {
  if (!in_group(dt, group))
    return ScalarType::Undefined;
  if (spec.promote == meta::Promote::Float && !isFloatingType(dt))
    return ScalarType::Undefined;
  if (spec.promote == meta::Promote::Compare ||
      spec.promote == meta::Promote::Bool)
    return kBool;
  return dt;
}

} // namespace

// Every pointwise op of the table, in every dtype it takes (16-bit floats
// included), as a one-step kernel over a [3, 5] space -- contiguous (the
// vector path) and with a transposed input (the strided path) -- and every
// fold in every dtype, compile as one NVRTC program for sm_80 and sm_90;
// every kernel's entry is in the PTX.
TEST(CudaCodegen, EveryOpAndFoldRendersAndCompiles) {
  REQUIRE_NVRTC();
  auto ops = ops_by_spec();
  std::vector<CudaKernel> kernels;
  const ScalarType all[] = {kBool, kByte, kChar,     kShort, kInt,
                            kLong, kHalf, kBFloat16, kFloat, kDouble};
  for (const cuda::Functor &f : cuda::pointwise_functors()) {
    ASSERT_TRUE(f.spec) << f.name;
    const OperatorHandle *h = ops.at(f.spec);
    EXPECT_EQ(codegen::cuda_functor(*h), &f) << h->name();
    for (ScalarType dt : all) {
      ScalarType out = out_dtype(*f.spec, f.group, dt);
      if (out == ScalarType::Undefined)
        continue;
      for (bool strided : {false, true}) {
        if (strided && dt != kFloat && dt != kHalf)
          continue; // the index arithmetic does not depend on the dtype
        KernelSpec k;
        k.shape = {3, 5};
        std::vector<int> args;
        for (int i = 0; i < f.arity; ++i) {
          ScalarType t = ((f.spec->bool_args >> i) & 1u) ? kBool : dt;
          args.push_back(i == 0 && strided ? k.input(t, {1, 3})
                                           : k.input(t, {5, 1}));
        }
        std::vector<Scalar> scalars(size_t(f.nscalars), Scalar(int64_t(1)));
        k.outputs = {k.step(*h, args, scalars, dt, out)};
        kernels.push_back(codegen::render_cuda(k));
      }
    }
  }
  // The folds: every dtype, over the inner dim (a row per block) and the
  // outer one (a column), into their own dtype.
  for (ReductionInfo::Kind fold : {ReductionInfo::Sum, ReductionInfo::Mean,
                                   ReductionInfo::Amax, ReductionInfo::Amin})
    for (ScalarType dt : all) {
      bool sums = fold == ReductionInfo::Sum || fold == ReductionInfo::Mean;
      if ((!sums && dt == kBool) ||
          (fold == ReductionInfo::Mean && !isFloatingType(dt)))
        continue;
      for (bool inner : {true, false}) {
        KernelSpec k;
        k.shape = {6, 7};
        k.reduced = {!inner, inner};
        int x = k.input(dt, {7, 1});
        ScalarType acc = !sums                ? cuda::detail::compute_of(dt)
                         : isFloatingType(dt) ? kDouble
                                              : kLong;
        ScalarType out = sums && !isFloatingType(dt) ? kLong : dt;
        k.outputs = {k.reduce(fold, x, dt, acc, out)};
        kernels.push_back(codegen::render_cuda(k));
      }
    }
  EXPECT_GT(kernels.size(), 700u);
  // All of them for sm_80 (about 20 s of NVRTC); every 16th for sm_90,
  // whose front end is the same.
  std::vector<CudaKernel> some;
  for (size_t i = 0; i < kernels.size(); i += 16)
    some.push_back(kernels[i]);
  for (auto [arch, list] : {std::pair{80, &kernels}, std::pair{90, &some}}) {
    cuda::nvrtc::Compiled c = cuda::nvrtc::compile(codegen::cuda_program(*list),
                                                   "all_fused.cu", arch, false);
    int missing = 0;
    for (const CudaKernel &k : *list)
      if (c.binary.find(".entry " + k.entry) == std::string::npos &&
          ++missing < 5)
        ADD_FAILURE() << "sm_" << arch << ": no entry " << k.entry;
    EXPECT_EQ(missing, 0);
  }
}

// What the renderer writes: literal shapes and strides, the step's functor
// with its Scalar argument in the compute type, a 16-bit float result
// rounded, vector loads for contiguous operands and 64-bit indices only
// where an offset needs them.
TEST(CudaCodegen, RenderedSourceReadsAsTheSpec) {
  auto ops = ops_by_spec();
  const OperatorHandle &add =
      Dispatcher::singleton().findSchemaOrThrow("ember::add.Tensor");
  KernelSpec k;
  k.shape = {4, 6};
  int x = k.input(kHalf, {6, 1});
  int b = k.input(kHalf, {0, 1}); // a row, broadcast
  k.outputs = {k.step(add, {x, b}, {Scalar(2.5)}, kHalf, kHalf)};
  CudaKernel c = codegen::render_cuda(k);
  EXPECT_TRUE(c.index32);
  EXPECT_EQ(c.vector, 1) << "the broadcast row keeps it 2-D: strided";
  EXPECT_NE(c.kernel.find("const fn::add_Tensor_op<float> f2{2.5f};"),
            std::string::npos)
      << c.kernel;
  EXPECT_NE(
      c.kernel.find(
          "const ::ember::Half v2n = convert<::ember::Half>(f2(v0, v1));"),
      std::string::npos)
      << c.kernel;
  EXPECT_NE(c.kernel.find("out0[i] = v2n;"), std::string::npos) << c.kernel;
  EXPECT_NE(c.kernel.find("in1[c1]"), std::string::npos) << c.kernel;

  // Contiguous: vector loads of 4 halves; a huge space: 64-bit indices.
  KernelSpec big;
  big.shape = {int64_t(1) << 31};
  int y = big.input(kHalf, {1});
  big.outputs = {big.step(add, {y, y}, {Scalar(1)}, kHalf, kHalf)};
  CudaKernel cb = codegen::render_cuda(big);
  EXPECT_EQ(cb.vector, 4);
  EXPECT_FALSE(cb.index32);
  EXPECT_NE(cb.kernel.find("typedef long long index_t;"), std::string::npos);
  EXPECT_NE(cb.kernel.find("Vec<::ember::Half, 4>"), std::string::npos)
      << cb.kernel;
}

// --- rendered kernels on the host
// -------------------------------------------------------------
//
// Note [CUDA emulation on the host]
// The rendered source, with the device prelude (which compiles as plain
// C++: Note [Self-contained device header]), is compiled by the host C++
// compiler after a shim that gives CUDA's names a meaning: a block is
// `blockDim.x` std::threads, __syncthreads a std::barrier of the block,
// __shfl_down_sync an exchange through a per-warp slot array between two
// barriers of the warp's 32 threads, __shared__ a static (blocks run one
// after another). The kernels then run with a grid smaller than their work,
// so every grid-stride loop turns, and their outputs are compared with the
// CPU generator's for the same kernel description. This checks what the
// renderer writes (indexing, vector and tail paths, folds, conversions)
// on every machine; timing-dependent behaviour and the GPU's own math
// functions need the GPU suite.

namespace {

const char kEmulation[] = R"(#include <math.h>
#include <stdint.h>
#include <string.h>
#include <barrier>
#include <memory>
#include <thread>
#include <vector>
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
namespace emu {
struct Warp {
  std::barrier<> bar{32};
  alignas(8) unsigned char slot[32][8];
};
inline std::barrier<> *block_bar = nullptr;
inline Warp *warps = nullptr;
template <class F> void launch(unsigned grid, unsigned block, F f) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    std::barrier<> bar(block);
    std::unique_ptr<Warp[]> ws(new Warp[(block + 31) / 32]);
    block_bar = &bar;
    warps = ws.get();
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t)
      threads.emplace_back([=] {
        threadIdx.x = t;
        blockIdx.x = b;
        f();
      });
    for (std::thread &t : threads)
      t.join();
  }
}
} // namespace emu
inline void __syncthreads() { emu::block_bar->arrive_and_wait(); }
template <class T> T __shfl_down_sync(unsigned, T v, int o) {
  static_assert(sizeof(T) <= 8);
  emu::Warp &w = emu::warps[threadIdx.x / 32];
  const unsigned lane = threadIdx.x % 32;
  memcpy(w.slot[lane], &v, sizeof v);
  w.bar.arrive_and_wait();
  T r = v;
  if (lane + o < 32)
    memcpy(&r, w.slot[lane + o], sizeof r);
  w.bar.arrive_and_wait();
  return r;
}
inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, sizeof f);
  return f;
}
inline double __longlong_as_double(long long i) {
  double d;
  memcpy(&d, &i, sizeof d);
  return d;
}
)";

std::string make_temp_dir() {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/ember_cuda_emulation_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  EMBER_CHECK(mkdtemp(buf.data()), "mkdtemp failed for ", pattern);
  return buf.data();
}

std::string read_text(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const OperatorHandle &op(const std::string &name) {
  return Dispatcher::singleton().findSchemaOrThrow(name);
}

using ember::test::random; // (normal floats; small integers)

/// A kernel description and the tensors its inputs read (through the
/// spec's strides, from their data pointers).
struct Case {
  std::string name;
  KernelSpec spec;
  std::vector<Tensor> inputs;
};

/// Fresh outputs of `k`: full ones over its shape, reduced ones over its
/// kept points (flat).
std::vector<Tensor> outputs_of(const KernelSpec &k) {
  std::vector<Tensor> outs;
  for (int o : k.outputs)
    outs.push_back(full({k.is_full(o) ? k.numel() : k.output_numel()}, 7,
                        TensorOptions(k.dtype(o))));
  return outs;
}

std::vector<void *> pointers(const std::vector<Tensor> &outs,
                             const std::vector<Tensor> &ins) {
  std::vector<void *> p;
  for (const Tensor &t : outs)
    p.push_back(t.data_ptr());
  for (const Tensor &t : ins)
    p.push_back(t.data_ptr());
  return p;
}

/// The rendered program of `kernels` with a host launcher of each:
/// `launch_<i>(grid, block, args)`.
std::string with_launchers(const std::vector<CudaKernel> &kernels,
                           const std::vector<KernelSpec> &specs) {
  std::string src = codegen::cuda_program(kernels);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelSpec &k = specs[i];
    src += "extern \"C\" void launch_" + std::to_string(i) +
           "(unsigned grid, unsigned block, void **p) {\n"
           "  emu::launch(grid, block, [=] { ember::" +
           kernels[i].entry + "(";
    std::vector<std::string> args;
    for (int o : k.outputs)
      args.push_back(std::string("(") + cuda::detail::ctype(k.dtype(o)) +
                     " *)p[" + std::to_string(args.size()) + "]");
    for (const KernelSpec::Input &in : k.inputs)
      args.push_back(std::string("(const ") + cuda::detail::ctype(in.dtype) +
                     " *)p[" + std::to_string(args.size()) + "]");
    for (size_t a = 0; a < args.size(); ++a)
      src += (a ? ", " : "") + args[a];
    src += "); });\n}\n";
  }
  return src;
}

/// The host build of CUDA source `src` after the emulation, loaded: its
/// `extern "C"` launchers.
class HostKernels {
public:
  explicit HostKernels(const std::string &src) { build(kEmulation + src); }
  HostKernels(const std::vector<CudaKernel> &kernels,
              const std::vector<KernelSpec> &specs)
      : HostKernels(with_launchers(kernels, specs)) {}
  ~HostKernels() {
    if (handle_)
      dlclose(handle_);
    for (const char *f : {"/kernels.cpp", "/kernels.so", "/log.txt"})
      std::remove((dir_ + f).c_str());
    std::remove(dir_.c_str());
  }
  bool ok() const { return handle_ != nullptr; }
  void launch(size_t i, unsigned grid, unsigned block, void **args) {
    using Fn = void (*)(unsigned, unsigned, void **);
    auto fn = reinterpret_cast<Fn>(
        dlsym(handle_, ("launch_" + std::to_string(i)).c_str()));
    ASSERT_TRUE(fn);
    fn(grid, block, args);
  }

private:
  void build(const std::string &src) {
    dir_ = make_temp_dir();
    std::string cpp = dir_ + "/kernels.cpp", so = dir_ + "/kernels.so",
                log = dir_ + "/log.txt";
    {
      FILE *f = std::fopen(cpp.c_str(), "w");
      EMBER_CHECK(f, "cannot write ", cpp);
      std::fwrite(src.data(), 1, src.size(), f);
      std::fclose(f);
    }
    std::string cmd = std::string(EMBER_HOST_CXX) +
                      " -std=c++20 -O1 -w -fwrapv -shared -fPIC -pthread -o " +
                      so + " " + cpp + " > " + log + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::string text = read_text(log);
      ADD_FAILURE() << "the host build of the rendered kernels failed:\n"
                    << text.substr(0, 4000);
      return;
    }
    handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    EMBER_CHECK(handle_, "dlopen: ", dlerror());
  }

  std::string dir_;
  void *handle_ = nullptr;
};

::testing::AssertionResult close(const Tensor &got, const Tensor &want,
                                 double rtol = 2e-6, double atol = 1e-6) {
  if (got.dtype() != want.dtype() || got.numel() != want.numel())
    return ::testing::AssertionFailure()
           << "got " << toString(got.dtype()) << got.sizes() << ", want "
           << toString(want.dtype()) << want.sizes();
  Tensor g = got.reshape({-1}), w = want.reshape({-1});
  bool ok = isFloatingType(g.dtype())
                ? allclose(g.to(kDouble), w.to(kDouble), rtol, atol,
                           /*equal_nan=*/true)
                : g.equal(w);
  if (ok)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got\n" << g << "\nwant\n" << w;
}

/// Renders every case, builds them for the host in one program, runs each
/// with a grid of at most 3 blocks (so the grid-stride loops turn) and
/// compares its outputs with the CPU generator's for the same description,
/// within `tolerance(dtype)` (relative and absolute; exact for integers).
void run_on_the_host(const std::vector<Case> &cases,
                     const std::function<double(ScalarType)> &tolerance) {
  std::vector<CudaKernel> kernels;
  std::vector<KernelSpec> specs;
  for (const Case &c : cases) {
    kernels.push_back(codegen::render_cuda(c.spec));
    specs.push_back(c.spec);
  }
  HostKernels host(kernels, specs);
  ASSERT_TRUE(host.ok());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const KernelSpec &k = cases[i].spec;
    // An output in place of an input (KernelSpec::output_inputs) is given
    // that input's buffer, a copy for each run.
    auto buffers = [&](std::vector<Tensor> &outs, std::vector<Tensor> &ins) {
      outs = outputs_of(k);
      ins = cases[i].inputs;
      for (size_t o = 0; o < k.output_inputs.size(); ++o)
        if (int j = k.output_inputs[o]; j >= 0) {
          ins[size_t(j)] = ins[size_t(j)].clone();
          outs[o] = ins[size_t(j)];
        }
    };
    std::vector<Tensor> want, got, want_in, got_in;
    buffers(want, want_in);
    buffers(got, got_in);
    std::vector<void *> wp = pointers(want, want_in),
                        gp = pointers(got, got_in);
    codegen::compile_kernel(k).run(reinterpret_cast<char **>(wp.data()));
    unsigned grid = unsigned(std::min<int64_t>(kernels[i].blocks, 3));
    host.launch(i, grid, unsigned(kernels[i].block), gp.data());
    for (size_t o = 0; o < got.size(); ++o) {
      double tol = tolerance(got[o].dtype());
      EXPECT_TRUE(close(got[o], want[o], tol, tol / 2)) << "output " << o;
    }
  }
}

} // namespace

TEST(CudaCodegen, RenderedKernelsRunOnTheHostAsTheCpuKernels) {
  NoGradGuard guard;
  std::vector<Case> cases;
  auto add_case = [&](std::string name, KernelSpec k,
                      std::vector<Tensor> inputs) {
    cases.push_back({std::move(name), std::move(k), std::move(inputs)});
  };
  const OperatorHandle &mul = op("ember::mul.Tensor"),
                       &addt = op("ember::add.Tensor"),
                       &sub = op("ember::sub.Tensor");
  {
    // silu(x * w + b): x transposed, w a row, b a column (strided path).
    Tensor x = random({32, 40}, kFloat, 1).t(), w = random({32}, kFloat, 2),
           b = random({40, 1}, kFloat, 3);
    KernelSpec k;
    k.shape = {40, 32};
    int vx = k.input(kFloat, x.strides().vec());
    int vw = k.input(kFloat, {0, 1});
    int vb = k.input(kFloat, {1, 0});
    int m = k.step(mul, {vx, vw}, {}, kFloat, kFloat);
    int a = k.step(addt, {m, vb}, {Scalar(1)}, kFloat, kFloat);
    k.outputs = {k.step(op("ember::silu"), {a}, {}, kFloat, kFloat), m};
    add_case("strided chain", k, {x, w, b});
  }
  {
    // sigmoid(x * y + 2) over 1003 points: the vector path and its tail;
    // then from a misaligned view (the scalar path), with a broadcast.
    Tensor x = random({1004}, kFloat, 4), y = random({1003}, kFloat, 5),
           s = random({1}, kFloat, 6);
    for (bool misaligned : {false, true}) {
      KernelSpec k;
      k.shape = {1003};
      int vx = k.input(kFloat, {1}), vy = k.input(kFloat, {1}),
          vs = k.input(kFloat, {0});
      int two = k.constant(kDouble, Scalar(2.0));
      int m = k.step(mul, {vx, vy}, {}, kFloat, kFloat);
      int a = k.step(addt, {m, two}, {Scalar(1)}, kFloat, kFloat);
      int c = k.step(sub, {a, vs}, {Scalar(3)}, kFloat, kFloat);
      k.outputs = {k.step(op("ember::sigmoid"), {c}, {}, kFloat, kFloat)};
      add_case(
          misaligned ? "misaligned vector chain" : "vector chain", k,
          {misaligned ? x.narrow(0, 1, 1003) : x.narrow(0, 0, 1003), y, s});
    }
  }
  {
    // Note [Vectors along the innermost dim]: gelu(x * w + b) with w a row
    // and b a column over [6, 40] (vectors of 4 along each row, the column
    // read once a vector, two outputs), from an aligned x and from a
    // misaligned one (the points one by one); then rows of 42, not a
    // multiple of 4: one point a thread.
    Tensor x = random({6 * 40 + 1}, kFloat, 11), w = random({40}, kFloat, 12),
           b = random({6, 1}, kFloat, 13);
    for (bool misaligned : {false, true}) {
      KernelSpec k;
      k.shape = {6, 40};
      int vx = k.input(kFloat, {40, 1}), vw = k.input(kFloat, {0, 1}),
          vb = k.input(kFloat, {1, 0});
      int m = k.step(mul, {vx, vw}, {}, kFloat, kFloat);
      int a = k.step(addt, {m, vb}, {Scalar(1)}, kFloat, kFloat);
      k.outputs = {k.step(op("ember::_gelu_erf"), {a}, {}, kFloat, kFloat), m};
      CudaKernel r = codegen::render_cuda(k);
      EXPECT_EQ(r.vector, 4);
      EXPECT_NE(r.kernel.find("*(const Vec<float, 4> *)(in0 + "),
                std::string::npos)
          << r.kernel;
      add_case(misaligned ? "misaligned row vectors" : "row vectors", k,
               {x.narrow(0, misaligned ? 1 : 0, 240).view({6, 40}), w, b});
    }
    Tensor x42 = random({6, 42}, kFloat, 14), w42 = random({42}, kFloat, 15);
    KernelSpec k;
    k.shape = {6, 42};
    int vx = k.input(kFloat, {42, 1}), vw = k.input(kFloat, {0, 1});
    k.outputs = {k.step(mul, {vx, vw}, {}, kFloat, kFloat)};
    EXPECT_EQ(codegen::render_cuda(k).vector, 1);
    add_case("rows of 42", k, {x42, w42});
  }
  {
    // int32 + half -> half (rounded), exp, where over a mask into float,
    // gt into bool, a conversion to int8 and to bfloat16.
    Tensor i = random({300}, kInt, 7), h = random({300}, kHalf, 8),
           bf = random({300}, kBFloat16, 9), m = random({300}, kFloat, 10) > 0;
    KernelSpec k;
    k.shape = {300};
    int vi = k.input(kInt, {1}), vh = k.input(kHalf, {1}),
        vb = k.input(kBFloat16, {1}), vm = k.input(kBool, {1});
    int s = k.step(addt, {vi, vh}, {Scalar(2)}, kHalf, kHalf);
    int e = k.step(op("ember::exp"), {s}, {}, kHalf, kHalf);
    int w = k.step(op("ember::where.self"), {vm, vb, e}, {}, kFloat, kFloat);
    int c = k.step(op("ember::gt.Tensor"), {w, vi}, {}, kFloat, kBool);
    k.outputs = {s, e, w, c, k.convert(w, kChar), k.convert(w, kBFloat16)};
    add_case("sixteen-bit floats and masks", k, {i, h, bf, m});
  }
  {
    // Eager converts each operand to a float16 op's dtype first: an int32
    // 2049 or a number 0.5002 is rounded to float16 before the add (2048,
    // 0.5); only mul's and div's second operand, a number, keeps float
    // precision (Note [Numbers in reduced precision]). Found by a probe:
    // the renderer read them in float.
    Tensor h = tensor({1024.f, 2048.f, 3.f, 2048.f}).to(kHalf);
    Tensor i = tensor({2049, 2049, 7, 2047}, kInt);
    Tensor s = tensor({2049, 2049, 3, 2047}, kShort);
    KernelSpec k;
    k.shape = {4};
    int vh = k.input(kHalf, {1}), vi = k.input(kInt, {1}),
        vs = k.input(kShort, {1});
    int num = k.constant(kDouble, Scalar(0.5002)),
        tenth = k.constant(kDouble, Scalar(0.1));
    k.outputs = {k.step(addt, {vh, num}, {Scalar(1)}, kHalf, kHalf),
                 k.step(addt, {vi, vh}, {Scalar(1)}, kHalf, kHalf),
                 k.step(op("ember::ne.Tensor"), {vh, vs}, {}, kHalf, kBool),
                 k.step(mul, {tenth, vh}, {}, kHalf, kHalf),
                 k.step(mul, {vh, tenth}, {}, kHalf, kHalf),
                 k.step(sub, {vh, vi}, {Scalar(1)}, kHalf, kHalf)};
    add_case("operands rounded to float16", k, {h, i, s});
  }
  {
    // int8 wraps; remainder takes the divisor's sign; int64 arithmetic.
    Tensor a = random({77}, kChar, 11), b = random({77}, kChar, 12) * 3 + 101;
    Tensor l = random({77}, kLong, 13) * 1000000007;
    KernelSpec k;
    k.shape = {77};
    int va = k.input(kChar, {1}), vb = k.input(kChar, {1}),
        vl = k.input(kLong, {1});
    int p = k.step(mul, {va, vb}, {}, kChar, kChar);
    int r = k.step(op("ember::remainder.Tensor"), {va, vb}, {}, kChar, kChar);
    int q = k.step(mul, {vl, vl}, {}, kLong, kLong);
    k.outputs = {p, r, q};
    ASSERT_FALSE((b == 0).any().item<bool>());
    add_case("integers", k, {a, b, l});
  }
  {
    // softmax over rows of 37: amax, exp in the sum's loop and again in
    // the output loop; a NaN row and a row of -inf.
    Tensor x = random({6, 37}, kFloat, 14);
    x.select(0, 2).fill_(-INFINITY);
    x.select(0, 4).index_put_({indexing::Slice(3, 4)}, NAN);
    KernelSpec k;
    k.shape = {6, 37};
    k.reduced = {false, true};
    int vx = k.input(kFloat, {37, 1});
    int mx = k.reduce(ReductionInfo::Amax, vx, kFloat, kFloat, kFloat);
    int d = k.step(sub, {vx, mx}, {Scalar(1)}, kFloat, kFloat);
    int e = k.step(op("ember::exp"), {d}, {}, kFloat, kFloat);
    int s = k.reduce(ReductionInfo::Sum, e, kFloat, kDouble, kFloat);
    int rc = k.step(op("ember::reciprocal"), {s}, {}, kFloat, kFloat);
    k.outputs = {k.step(mul, {e, rc}, {}, kFloat, kFloat), mx, s};
    add_case("softmax", k, {x});
  }
  {
    // Over the outer dim (a strided column per block): the mean and the
    // variance of a [300, 5] float16 input, in float, and the centered
    // values; the mean divides by the count.
    Tensor x = random({300, 5}, kHalf, 15);
    KernelSpec k;
    k.shape = {300, 5};
    k.reduced = {true, false};
    int vx = k.input(kHalf, {5, 1});
    int mean = k.reduce(ReductionInfo::Mean, vx, kHalf, kDouble, kHalf);
    int c = k.step(sub, {vx, mean}, {Scalar(1)}, kHalf, kHalf);
    int sq = k.step(mul, {c, c}, {}, kHalf, kHalf);
    int var = k.reduce(ReductionInfo::Mean, sq, kFloat, kDouble, kFloat);
    k.outputs = {mean, var, c};
    add_case("column mean and variance", k, {x});
    // The same over rows of 300 (held, Note [Persistent rows]): the
    // variance's loop keeps the float16 centered values (Note [Held
    // values]), and the output loop stores them from those registers.
    Tensor xr = random({5, 300}, kHalf, 16);
    KernelSpec r;
    r.shape = {5, 300};
    r.reduced = {false, true};
    int vr = r.input(kHalf, {300, 1});
    int rmean = r.reduce(ReductionInfo::Mean, vr, kHalf, kDouble, kHalf);
    int rc = r.step(sub, {vr, rmean}, {Scalar(1)}, kHalf, kHalf);
    int rvar =
        r.reduce(ReductionInfo::Mean, r.step(mul, {rc, rc}, {}, kHalf, kHalf),
                 kFloat, kDouble, kFloat);
    r.outputs = {rmean, rvar, rc};
    CudaKernel rk = codegen::render_cuda(r);
    EXPECT_GT(rk.held, 0);
    EXPECT_NE(rk.kernel.find("c" + std::to_string(rc) + "[p] = "),
              std::string::npos)
        << rk.kernel;
    add_case("row mean and variance, centered values held", r, {xr});
  }
  {
    // Integer folds: the int64 sum of int8, the int16 max and min.
    Tensor a = random({9, 130}, kChar, 16), s = random({9, 130}, kShort, 17);
    KernelSpec k;
    k.shape = {9, 130};
    k.reduced = {false, true};
    int va = k.input(kChar, {130, 1}), vs = k.input(kShort, {130, 1});
    k.outputs = {k.reduce(ReductionInfo::Sum, va, kLong, kLong, kLong),
                 k.reduce(ReductionInfo::Amax, vs, kShort, kShort, kShort),
                 k.reduce(ReductionInfo::Amin, vs, kShort, kShort, kShort)};
    add_case("integer folds", k, {a, s});
  }
  {
    // A whole [3, 4, 5] space folded over dims 0 and 2 (kept: dim 1), an
    // expanded input read by its extent.
    Tensor x = random({3, 4, 5}, kDouble, 18), r = random({4, 1}, kDouble, 19);
    KernelSpec k;
    k.shape = {3, 4, 5};
    k.reduced = {true, false, true};
    int vx = k.input(kDouble, {20, 5, 1});
    int vr = k.input(kDouble, {0, 1, 0}, {1, 4, 1});
    int m = k.step(mul, {vx, vr}, {}, kDouble, kDouble);
    k.outputs = {k.reduce(ReductionInfo::Sum, m, kDouble, kDouble, kDouble), m};
    add_case("two folded dims", k, {x, r});
  }
  {
    // Results written in place of an input (the memory plan's
    // KernelSpec::output_inputs: the same pointer twice, neither
    // __restrict__): a vector chain with a tail, softmax rows (read by
    // three loops, the last writing them) and a column fold's centered
    // values.
    Tensor x = random({1003}, kFloat, 30), r = random({6, 37}, kFloat, 31),
           c = random({40, 7}, kFloat, 32);
    KernelSpec k;
    k.shape = {1003};
    int vx = k.input(kFloat, {1});
    int two = k.constant(kDouble, Scalar(2.0));
    int m = k.step(mul, {vx, two}, {}, kFloat, kFloat);
    k.outputs = {k.step(op("ember::sigmoid"), {m}, {}, kFloat, kFloat)};
    k.output_inputs = {0};
    add_case("vector chain in place", k, {x});
    KernelSpec s;
    s.shape = {6, 37};
    s.reduced = {false, true};
    int vr = s.input(kFloat, {37, 1});
    int mx = s.reduce(ReductionInfo::Amax, vr, kFloat, kFloat, kFloat);
    int e = s.step(op("ember::exp"),
                   {s.step(sub, {vr, mx}, {Scalar(1)}, kFloat, kFloat)}, {},
                   kFloat, kFloat);
    int sum = s.reduce(ReductionInfo::Sum, e, kFloat, kDouble, kFloat);
    s.outputs = {s.step(op("ember::div.Tensor"), {e, sum}, {}, kFloat, kFloat)};
    s.output_inputs = {0};
    add_case("softmax in place", s, {r});
    KernelSpec col;
    col.shape = {40, 7};
    col.reduced = {true, false};
    int vc = col.input(kFloat, {7, 1});
    int mean = col.reduce(ReductionInfo::Mean, vc, kFloat, kDouble, kFloat);
    col.outputs = {col.step(sub, {vc, mean}, {Scalar(1)}, kFloat, kFloat),
                   mean};
    col.output_inputs = {0, -1};
    add_case("column centered in place", col, {c});
  }
  {
    // Note [Persistent rows]: layer_norm's rows of 1000 (a block of 256
    // threads holding 4 points each, the last thread's partly empty), a
    // bfloat16 input and a broadcast weight row held beside it; then rows
    // of 9000 points, more than a block holds: looped.
    Tensor x = random({5, 1000}, kBFloat16, 33), w = random({1000}, kFloat, 34);
    KernelSpec k;
    k.shape = {5, 1000};
    k.reduced = {false, true};
    int vx = k.input(kBFloat16, {1000, 1}), vw = k.input(kFloat, {0, 1});
    int mean = k.reduce(ReductionInfo::Mean, vx, kFloat, kDouble, kFloat);
    int c = k.step(sub, {vx, mean}, {Scalar(1)}, kFloat, kFloat);
    int var =
        k.reduce(ReductionInfo::Mean, k.step(mul, {c, c}, {}, kFloat, kFloat),
                 kFloat, kDouble, kFloat);
    int y = k.step(mul, {k.step(mul, {c, var}, {}, kFloat, kFloat), vw}, {},
                   kFloat, kFloat);
    k.outputs = {y, mean, var};
    EXPECT_EQ(codegen::render_cuda(k).held, 4);
    EXPECT_EQ(codegen::render_cuda(k).block, 256);
    add_case("persistent rows", k, {x, w});
    Tensor l = random({4, 9000}, kFloat, 35);
    KernelSpec looped;
    looped.shape = {4, 9000};
    looped.reduced = {false, true};
    int vl = looped.input(kFloat, {9000, 1});
    int mx = looped.reduce(ReductionInfo::Amax, vl, kFloat, kFloat, kFloat);
    looped.outputs = {looped.step(sub, {vl, mx}, {Scalar(1)}, kFloat, kFloat),
                      mx};
    EXPECT_EQ(codegen::render_cuda(looped).held, 0);
    add_case("looped rows", looped, {l});
    // layer_norm with a weight and a bias over rows of 8192 (issue 15's
    // benchmark): only x, which the folds read, is held (16 points a
    // thread, a block of 512); the output loop reads the weight and the
    // bias. Held as well, the three would not fit and the row would loop.
    Tensor x8 = random({3, 8192}, kFloat, 36), w8 = random({8192}, kFloat, 37),
           b8 = random({8192}, kFloat, 38);
    KernelSpec ln;
    ln.shape = {3, 8192};
    ln.reduced = {false, true};
    int lx = ln.input(kFloat, {8192, 1}), lw = ln.input(kFloat, {0, 1}),
        lb = ln.input(kFloat, {0, 1});
    int lm = ln.reduce(ReductionInfo::Mean, lx, kFloat, kDouble, kFloat);
    int lc = ln.step(sub, {lx, lm}, {Scalar(1)}, kFloat, kFloat);
    int lv = ln.reduce(ReductionInfo::Mean,
                       ln.step(mul, {lc, lc}, {}, kFloat, kFloat), kFloat,
                       kDouble, kFloat);
    int scaled = ln.step(mul, {ln.step(mul, {lc, lv}, {}, kFloat, kFloat), lw},
                         {}, kFloat, kFloat);
    ln.outputs = {ln.step(addt, {scaled, lb}, {Scalar(1)}, kFloat, kFloat), lm,
                  lv};
    CudaKernel rl = codegen::render_cuda(ln);
    EXPECT_EQ(rl.held, 16);
    EXPECT_EQ(rl.block, 512);
    EXPECT_NE(rl.kernel.find("float h0[16];"), std::string::npos) << rl.kernel;
    EXPECT_EQ(rl.kernel.find("h1["), std::string::npos) << rl.kernel;
    EXPECT_EQ(rl.kernel.find("h2["), std::string::npos) << rl.kernel;
    // Note [Held values]: the variance's loop keeps x - mean, which the
    // output loop reads instead of x: the mean's and the variance's loops
    // read the held x, the output loop does not.
    auto count = [&](const std::string &needle) {
      size_t n = 0;
      for (size_t at = rl.kernel.find(needle); at != std::string::npos;
           at = rl.kernel.find(needle, at + 1))
        ++n;
      return n;
    };
    EXPECT_EQ(count(" = h0[p];"), 2u) << rl.kernel;
    EXPECT_EQ(count("float c" + std::to_string(lc) + "[16];"), 1u) << rl.kernel;
    add_case("persistent rows, weight and bias read by the output loop", ln,
             {x8, w8, b8});
    // A float64 row of 8192 takes all 32 registers held (16 points of two
    // each): nothing is kept (Note [Held values]), not even the bool
    // x > mean that the sum's loop makes and the output loop reads; two
    // float64 inputs would take 64, and the row is looped.
    KernelSpec d8;
    d8.shape = {2, 8192};
    d8.reduced = {false, true};
    int dx = d8.input(kDouble, {8192, 1});
    int dm = d8.reduce(ReductionInfo::Mean, dx, kDouble, kDouble, kDouble);
    int above = d8.step(op("ember::gt.Tensor"), {dx, dm}, {}, kDouble, kBool);
    int above_count = d8.reduce(ReductionInfo::Sum, d8.convert(above, kDouble),
                                kDouble, kDouble, kDouble);
    d8.outputs = {above, above_count};
    CudaKernel rd = codegen::render_cuda(d8);
    EXPECT_EQ(rd.held, 16);
    EXPECT_EQ(rd.kernel.find(" c" + std::to_string(above) + "["),
              std::string::npos)
        << rd.kernel;
    add_case("float64 row held, nothing kept", d8,
             {random({2, 8192}, kDouble, 39)});
    KernelSpec d2;
    d2.shape = {2, 8192};
    d2.reduced = {false, true};
    int da = d2.input(kDouble, {8192, 1}), db = d2.input(kDouble, {8192, 1});
    d2.outputs = {d2.reduce(ReductionInfo::Sum,
                            d2.step(mul, {da, db}, {}, kDouble, kDouble),
                            kDouble, kDouble, kDouble)};
    EXPECT_EQ(codegen::render_cuda(d2).held, 0);
  }
  {
    // Folding an empty dim: sums are 0, means NaN.
    KernelSpec k;
    k.shape = {4, 0};
    k.reduced = {false, true};
    int vx = k.input(kFloat, {0, 1});
    k.outputs = {k.reduce(ReductionInfo::Sum, vx, kFloat, kDouble, kFloat),
                 k.reduce(ReductionInfo::Mean, vx, kFloat, kDouble, kFloat)};
    add_case("empty fold", k, {empty({0})});
  }

  run_on_the_host(cases, [](ScalarType) { return 2e-6; });
}

// A reduction with few output points runs as the two kernels of Note [Split
// reductions] (what compile_cuda_fusion launches, under the GPU's policy): a
// partial fold of each slice into accumulators, then their fold into the
// outputs; on the host, against the CPU generator's kernel (split by the
// CPU's policy). Rows: three folds of [4, 65536] (256 parts); columns: a
// sum and a max over the batch of [8192, 96] (32 parts, each thread of the
// partial kernel folding 256 points of its column).
static void expect_split_runs_as_the_cpu(const KernelSpec &k,
                                         const std::vector<Tensor> &inputs,
                                         int64_t parts) {
  std::optional<codegen::SplitSpecs> split =
      codegen::split_reduction(k, codegen::kCudaSplit);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->parts, parts);
  std::vector<CudaKernel> kernels{codegen::render_cuda(split->partial),
                                  codegen::render_cuda(split->combine)};
  HostKernels host(kernels, {split->partial, split->combine});
  ASSERT_TRUE(host.ok());
  std::vector<Tensor> partials = outputs_of(split->partial);
  std::vector<Tensor> got = outputs_of(k), want = outputs_of(k);
  std::vector<void *> pp = pointers(partials, inputs),
                      cp = pointers(got, partials), wp = pointers(want, inputs);
  for (int i = 0; i < 2; ++i)
    host.launch(size_t(i), unsigned(std::min<int64_t>(kernels[i].blocks, 3)),
                unsigned(kernels[i].block), i == 0 ? pp.data() : cp.data());
  codegen::compile_kernel(k).run(reinterpret_cast<char **>(wp.data()));
  for (size_t o = 0; o < got.size(); ++o)
    EXPECT_TRUE(close(got[o], want[o])) << "output " << o;
}

TEST(CudaCodegen, SplitReductionRunsOnTheHostAsTheCpuKernels) {
  NoGradGuard guard;
  {
    Tensor x = random({4, 65536}, kFloat, 20);
    Tensor h = random({4, 65536}, kHalf, 21);
    KernelSpec k;
    k.shape = {4, 65536};
    k.reduced = {false, true};
    int vx = k.input(kFloat, {65536, 1}), vh = k.input(kHalf, {65536, 1});
    int sq = k.step(op("ember::mul.Tensor"), {vx, vx}, {}, kFloat, kFloat);
    k.outputs = {k.reduce(ReductionInfo::Sum, sq, kFloat, kDouble, kFloat),
                 k.reduce(ReductionInfo::Mean, vh, kHalf, kDouble, kHalf),
                 k.reduce(ReductionInfo::Amax, vx, kFloat, kFloat, kFloat)};
    expect_split_runs_as_the_cpu(k, {x, h}, 256);
  }
  {
    Tensor x = random({8192, 96}, kFloat, 22);
    KernelSpec k;
    k.shape = {8192, 96};
    k.reduced = {true, false};
    int vx = k.input(kFloat, {96, 1});
    k.outputs = {k.reduce(ReductionInfo::Sum, vx, kFloat, kDouble, kFloat),
                 k.reduce(ReductionInfo::Amax, vx, kFloat, kFloat, kFloat)};
    // (without the split: 96 threads, each folding 8192 points)
    EXPECT_FALSE(codegen::split_reduction(k, codegen::kCpuSplit).has_value());
    expect_split_runs_as_the_cpu(k, {x}, 32);
  }
  {
    // A full reduction whose outermost dim is short (mse_loss's mean over
    // [8, 512, 64]): the reduced dims the inputs step through as one are
    // merged, so the parts are 256 slices of 8 * 512 rows, not 8 (which
    // ran as 8 blocks); a broadcast input (along both) merges too, and a
    // transposed one, which does not step through them as one, keeps the
    // 8 parts.
    Tensor x = random({8, 512, 64}, kFloat, 23), b = random({64}, kFloat, 24);
    KernelSpec k;
    k.shape = {8, 512, 64};
    k.reduced = {true, true, true};
    int vx = k.input(kFloat, {512 * 64, 64, 1}),
        vb = k.input(kFloat, {0, 0, 1});
    int d =
        k.step(op("ember::sub.Tensor"), {vx, vb}, {Scalar(1)}, kFloat, kFloat);
    k.outputs = {k.reduce(ReductionInfo::Mean, d, kFloat, kDouble, kFloat),
                 k.reduce(ReductionInfo::Amin, vx, kFloat, kFloat, kFloat)};
    expect_split_runs_as_the_cpu(k, {x, b}, 256);
    Tensor t = random({512, 8, 64}, kFloat, 25).transpose(0, 1);
    KernelSpec kt = k;
    kt.inputs[0].strides = t.strides().vec();
    expect_split_runs_as_the_cpu(kt, {t, b}, 8);
  }
}

// Note [CUDA reductions]: the eager reduction kernels (a block per row, and
// the split's two kernels) compile under NVRTC for every fold and dtype,
// and run on the host as the CPU's sum, mean, amax and amin: rows of 5000
// with a NaN in one, unsplit (two blocks of 96 threads) and split into 7
// parts of 715 points (three blocks, then one).
TEST(CudaCodegen, ReductionKernelsCompileAndRunAsTheCpuKernels) {
  REQUIRE_NVRTC();
  using cuda::ReduceKind;
  const ReduceKind kinds[] = {ReduceKind::Sum, ReduceKind::Mean,
                              ReduceKind::Amax, ReduceKind::Amin};
  for (ReduceKind kind : kinds)
    for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kLong})
      for (int arch : {80, 90}) {
        if (arch == 80 && t != kFloat)
          continue;
        cuda::nvrtc::Compiled c = cuda::nvrtc::compile(
            cuda::reduce_source(kind, t), "reduce.cu", arch, false);
        for (const char *entry :
             {".entry ember_reduce(", ".entry ember_reduce_split(",
              ".entry ember_reduce_combine("})
          EXPECT_NE(c.binary.find(entry), std::string::npos)
              << entry << " " << int(kind) << " " << toString(t) << " sm_"
              << arch;
      }
  const int64_t rows = 2, n = 5000, splits = 7, chunk = 715;
  for (ReduceKind kind : kinds)
    for (ScalarType t : {kFloat, kHalf}) {
      SCOPED_TRACE(std::to_string(int(kind)) + " " + toString(t));
      Tensor x = random({rows, n}, kFloat, 60).to(t);
      x.select(0, 1).select(0, 4321).fill_(NAN);
      Tensor want = kind == ReduceKind::Sum    ? x.sum(1)
                    : kind == ReduceKind::Mean ? x.mean(1)
                    : kind == ReduceKind::Amax ? x.amax(1)
                                               : x.amin(1);
      const char *ct = cuda::detail::ctype(t);
      const char *ca = cuda::detail::ctype(cuda::reduce_accumulator(kind, t));
      std::string launch = "extern \"C\" void launch_%d(unsigned grid, "
                           "unsigned block, void **p) {\n  emu::launch(grid, "
                           "block, [=] { ember::%s; });\n}\n";
      auto wrapper = [&](int i, const std::string &call) {
        std::string w = launch;
        w.replace(w.find("%d"), 2, std::to_string(i));
        w.replace(w.find("%s"), 2, call);
        return w;
      };
      std::string ll = "*(long long *)p[";
      HostKernels host(
          cuda::reduce_source(kind, t) +
          wrapper(0, std::string("ember_reduce((const ") + ct + " *)p[0], (" +
                         ct + " *)p[1], " + ll + "2], " + ll + "3])") +
          wrapper(1, std::string("ember_reduce_split((const ") + ct +
                         " *)p[0], (" + ca + " *)p[1], " + ll + "2], " + ll +
                         "3], " + ll + "4], " + ll + "5])") +
          wrapper(2, std::string("ember_reduce_combine((const ") + ca +
                         " *)p[0], (" + ct + " *)p[1], " + ll + "2], " + ll +
                         "3], " + ll + "4])"));
      ASSERT_TRUE(host.ok());
      int64_t r = rows, nn = n, sp = splits, ch = chunk;
      Tensor whole = full({rows}, 7, TensorOptions(t));
      std::vector<void *> p0 = {x.data_ptr(), whole.data_ptr(), &r, &nn};
      host.launch(0, 2, 96, p0.data());
      Tensor part = full({rows * splits}, 7,
                         TensorOptions(cuda::reduce_accumulator(kind, t)));
      Tensor split = full({rows}, 7, TensorOptions(t));
      std::vector<void *> p1 = {x.data_ptr(), part.data_ptr(), &r, &nn, &sp,
                                &ch};
      host.launch(1, 3, 96, p1.data());
      std::vector<void *> p2 = {part.data_ptr(), split.data_ptr(), &r, &sp,
                                &nn};
      host.launch(2, 1, 64, p2.data());
      const double tol = t == kHalf ? 2e-3 : 2e-6;
      EXPECT_TRUE(close(whole, want, tol, tol));
      EXPECT_TRUE(close(split, want, tol, tol));
    }
}

// Note [CUDA softmax kernels] (eager/cuda/Softmax.cpp): the eager CUDA
// kernels of softmax, log_softmax and their backward kernels compile under
// NVRTC for sm_80 and sm_90 in every stored dtype, and run on the host
// (Note [CUDA emulation on the host]) as the CPU kernels: rows of 300 with
// a NaN in one row and a row of -inf, two blocks of 96 threads over five
// rows (the grid-stride loop turns).
TEST(CudaCodegen, SoftmaxKernelsCompileUnderNvrtc) {
  REQUIRE_NVRTC();
  for (bool log : {false, true})
    for (bool backward : {false, true})
      for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16})
        for (int arch : {80, 90}) {
          const cuda::SoftmaxKernel k{log, backward};
          SCOPED_TRACE(k.signature(t) + " sm_" + std::to_string(arch));
          cuda::nvrtc::Compiled c =
              cuda::nvrtc::compile(cuda::softmax_source({log, backward}, t),
                                   "softmax.cu", arch, false);
          EXPECT_NE(c.binary.find(".entry ember_softmax"), std::string::npos);
        }
}

TEST(CudaCodegen, SoftmaxKernelsRunOnTheHostAsTheCpuKernels) {
  const int64_t rows = 5, n = 300;
  for (ScalarType t : {kFloat, kDouble, kHalf})
    for (bool log : {false, true})
      for (bool backward : {false, true}) {
        cuda::SoftmaxKernel k{log, backward};
        SCOPED_TRACE(k.signature(t));
        const ScalarType c = t == kDouble ? kDouble : kFloat;
        Tensor x = (random({rows, n}, kFloat, 40) * 3).to(t);
        x.select(0, 1).fill_(-INFINITY);
        x.select(0, 3).select(0, 7).fill_(NAN);
        Tensor y = log ? x.log_softmax(1) : x.softmax(1);
        Tensor g = random({rows, n}, c, 41);
        Tensor want = backward ? (log ? _log_softmax_backward_data(g, y, 1, t)
                                      : _softmax_backward_data(g, y, 1, t))
                               : y;
        const char *ct = cuda::detail::ctype(t);
        const char *cc = cuda::detail::ctype(c);
        std::string call =
            backward
                ? std::string("(const ") + cc + " *)p[0], (const " + ct +
                      " *)p[1], (" + ct + " *)p[2]"
                : std::string("(const ") + ct + " *)p[0], (" + ct + " *)p[1]";
        HostKernels host(
            cuda::softmax_source(k, t) +
            "extern \"C\" void launch_0(unsigned grid, unsigned block, "
            "void **p) {\n  emu::launch(grid, block, [=] { "
            "ember::ember_softmax(" +
            call + ", *(long long *)p[" + (backward ? "3" : "2") +
            "], *(long long *)p[" + (backward ? "4" : "3") + "]); });\n}\n");
        ASSERT_TRUE(host.ok());
        Tensor got = full({rows, n}, 7, TensorOptions(t));
        int64_t r = rows, nn = n;
        std::vector<void *> p;
        if (backward)
          p = {g.data_ptr(), y.data_ptr(), got.data_ptr(), &r, &nn};
        else
          p = {x.data_ptr(), got.data_ptr(), &r, &nn};
        host.launch(0, 2, 96, p.data());
        const double tol = t == kHalf ? 2e-3 : t == kFloat ? 2e-6 : 1e-12;
        EXPECT_TRUE(close(got, want, tol, tol));
      }
}

// native_layer_norm's eager CUDA kernel (Note [CUDA softmax kernels]), in
// every input dtype with and without a weight and a bias: compiles under
// NVRTC, and runs on the host as the CPU kernel (rows of 300, one of them
// at a mean of 1000, two blocks of 96 threads over five rows).
TEST(CudaCodegen, LayerNormKernelCompilesAndRunsAsTheCpuKernel) {
  REQUIRE_NVRTC();
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16})
    for (int arch : {80, 90}) {
      cuda::nvrtc::Compiled c = cuda::nvrtc::compile(
          cuda::layer_norm_source(t, true, true), "ln.cu", arch, false);
      EXPECT_NE(c.binary.find(".entry ember_layer_norm"), std::string::npos)
          << toString(t) << " sm_" << arch;
    }
  const int64_t rows = 5, n = 300;
  for (ScalarType t : {kFloat, kDouble, kHalf})
    for (int affine = 0; affine < 4; ++affine) {
      const bool w = affine & 1, b = affine & 2;
      SCOPED_TRACE(std::string(toString(t)) + (w ? " weight" : "") +
                   (b ? " bias" : ""));
      const ScalarType c = t == kDouble ? kDouble : kFloat;
      Tensor x = random({rows, n}, kFloat, 50);
      x.select(0, 2).add_(1000);
      x = x.to(t);
      Tensor wt = random({n}, c, 51), bt = random({n}, c, 52);
      auto [want, wmean, wrstd] = native_layer_norm(
          x, {n}, w ? std::optional<Tensor>(wt) : std::nullopt,
          b ? std::optional<Tensor>(bt) : std::nullopt, 1e-5);
      const char *ct = cuda::detail::ctype(t), *cc = cuda::detail::ctype(c);
      HostKernels host(
          cuda::layer_norm_source(t, w, b) +
          "extern \"C\" void launch_0(unsigned grid, unsigned block, "
          "void **p) {\n  emu::launch(grid, block, [=] { "
          "ember::ember_layer_norm((const " +
          ct + " *)p[0], (const " + cc + " *)p[1], (const " + cc +
          " *)p[2], (" + ct + " *)p[3], (" + cc + " *)p[4], (" + cc +
          " *)p[5], *(long long *)p[6], *(long long *)p[7], *(double "
          "*)p[8]); });\n}\n");
      ASSERT_TRUE(host.ok());
      Tensor y = full({rows, n}, 7, TensorOptions(t));
      Tensor mean = full({rows}, 7, TensorOptions(c)),
             rstd = full({rows}, 7, TensorOptions(c));
      int64_t r = rows, nn = n;
      double eps = 1e-5;
      std::vector<void *> p = {x.data_ptr(),
                               wt.data_ptr(),
                               bt.data_ptr(),
                               y.data_ptr(),
                               mean.data_ptr(),
                               rstd.data_ptr(),
                               &r,
                               &nn,
                               &eps};
      host.launch(0, 2, 96, p.data());
      const double tol = t == kHalf ? 2e-3 : t == kFloat ? 1e-5 : 1e-12;
      EXPECT_TRUE(close(y, want, tol, tol));
      EXPECT_TRUE(close(mean, wmean.reshape({-1}), tol, tol));
      EXPECT_TRUE(close(rstd, wrstd.reshape({-1}), tol, tol));
    }
}

TEST(CudaCodegen, LayerNormBackwardKernelsRunAsTheCpuKernel) {
  // native_layer_norm_backward's two CUDA kernels (Note [CUDA softmax
  // kernels]): compiled by NVRTC, and run on the host through the emulation
  // against the CPU kernel, with and without a weight, a float gradient of
  // a float16 input, and column chunks of 2 rows over 5 (3 partial sums).
  REQUIRE_NVRTC();
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16})
    for (int arch : {80, 90}) {
      cuda::nvrtc::Compiled c = cuda::nvrtc::compile(
          cuda::layer_norm_backward_source(t, t, true), "lnb.cu", arch, false);
      EXPECT_NE(c.binary.find(".entry ember_layer_norm_dx"), std::string::npos)
          << toString(t) << " sm_" << arch;
      EXPECT_NE(c.binary.find(".entry ember_layer_norm_dwb"), std::string::npos)
          << toString(t) << " sm_" << arch;
    }
  const int64_t rows = 5, n = 300;
  struct Case {
    ScalarType t, g;
    bool w;
  };
  for (Case k : {Case{kFloat, kFloat, true}, Case{kFloat, kFloat, false},
                 Case{kDouble, kDouble, true}, Case{kHalf, kHalf, true},
                 Case{kHalf, kFloat, true}}) {
    SCOPED_TRACE(std::string(toString(k.t)) + " grad " + toString(k.g) +
                 (k.w ? " weight" : ""));
    const ScalarType c = k.t == kDouble ? kDouble : kFloat;
    Tensor x = random({rows, n}, kFloat, 60);
    x.select(0, 2).add_(100);
    x = x.to(k.t);
    Tensor wt = random({n}, c, 61), bt = random({n}, c, 62);
    Tensor g = random({rows, n}, kFloat, 63).to(k.g);
    std::optional<Tensor> w = k.w ? std::optional<Tensor>(wt) : std::nullopt;
    auto [y, mean, rstd] = native_layer_norm(x, {n}, w, bt, 1e-5);
    auto [wdx, wdw, wdb] = native_layer_norm_backward(g.to(k.t), x, {n}, mean,
                                                      rstd, w, bt, {1, 1, 1});
    const char *ct = cuda::detail::ctype(k.t), *cg = cuda::detail::ctype(k.g),
               *cc = cuda::detail::ctype(c);
    auto cast = [](const char *type, int i, bool is_const = true) {
      return std::string("(") + (is_const ? "const " : "") + type + " *)p[" +
             std::to_string(i) + "]";
    };
    HostKernels host(
        cuda::layer_norm_backward_source(k.t, k.g, k.w) +
        "extern \"C\" void launch_0(unsigned grid, unsigned block, "
        "void **p) {\n  emu::launch(grid, block, [=] { "
        "ember::ember_layer_norm_dx(" +
        cast(cg, 0) + ", " + cast(ct, 1) + ", " + cast(cc, 2) + ", " +
        cast(cc, 3) + ", " + cast(cc, 4) + ", " + cast(ct, 5, false) +
        ", *(long long *)p[6], *(long long *)p[7]); });\n}\n"
        "extern \"C\" void launch_1(unsigned grid, unsigned block, "
        "void **p) {\n  emu::launch(grid, block, [=] { "
        "ember::ember_layer_norm_dwb(" +
        cast(cg, 0) + ", " + cast(ct, 1) + ", " + cast(cc, 2) + ", " +
        cast(cc, 3) + ", " + cast(cc, 4, false) + ", " + cast(cc, 5, false) +
        ", *(long long *)p[6], *(long long *)p[7], *(long long *)p[8]); "
        "});\n}\n");
    ASSERT_TRUE(host.ok());
    Tensor m = mean.reshape({-1}), r = rstd.reshape({-1});
    Tensor dx = full({rows, n}, 7, TensorOptions(k.t));
    Tensor pw = full({3, n}, 7, TensorOptions(c)),
           pb = full({3, n}, 7, TensorOptions(c));
    int64_t rr = rows, nn = n, chunk = 2;
    std::vector<void *> p = {g.data_ptr(), x.data_ptr(), wt.data_ptr(),
                             m.data_ptr(), r.data_ptr(), dx.data_ptr(),
                             &rr,          &nn};
    host.launch(0, 2, 96, p.data());
    std::vector<void *> q = {g.data_ptr(), x.data_ptr(),  m.data_ptr(),
                             r.data_ptr(), pw.data_ptr(), pb.data_ptr(),
                             &rr,          &nn,           &chunk};
    host.launch(1, 4, 256, q.data());
    const double tol = k.t == kHalf ? 5e-3 : k.t == kFloat ? 1e-5 : 1e-12;
    EXPECT_TRUE(close(dx, wdx, tol, tol));
    EXPECT_TRUE(close(pw.sum({0}).to(wdw.dtype()), wdw, tol, tol));
    EXPECT_TRUE(close(pb.sum({0}).to(wdb.dtype()), wdb, tol, tol));
  }
}

// Note [The kernels of a graph compile in parallel]: precompile_kernels
// compiles the kernels no cache holds, each once, on several threads, into
// the disk cache (and a table in memory, with the disk cache off); a second
// call finds them all; a kernel NVRTC rejects is left for get_kernel,
// without an exception. Needs NVRTC only.
TEST(CudaCodegen, KernelsOfAGraphCompileInParallel) {
  REQUIRE_NVRTC();
  std::vector<cuda::KernelSource> kernels;
  for (int i = 0; i < 4; ++i) {
    KernelSpec k;
    k.shape = {100 + i};
    int x = k.input(kFloat, {1});
    k.outputs = {k.step(op("ember::exp"), {x}, {}, kFloat, kFloat)};
    CudaKernel c = codegen::render_cuda(k);
    kernels.push_back({c.source(), c.entry});
  }
  kernels.push_back(kernels[0]);
  kernels.push_back(
      {"extern \"C\" __global__ void broken() { nothing(); }", "broken"});
  const char *was = std::getenv("EMBER_CACHE_DIR");
  std::string saved = was ? was : "";
  std::string dir = make_temp_dir();
  setenv("EMBER_CACHE_DIR", dir.c_str(), 1);
  EXPECT_EQ(cuda::precompile_kernels(80, kernels), 4);
  EXPECT_EQ(cuda::precompile_kernels(80, kernels), 0);
  int files = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    files += e.path().filename().string().rfind("cuda-", 0) == 0;
  EXPECT_EQ(files, 4);
  // The disk cache off: compiled into memory, found there the second time.
  setenv("EMBER_CACHE_DIR", "", 1);
  EXPECT_EQ(cuda::precompile_kernels(90, kernels), 4);
  EXPECT_EQ(cuda::precompile_kernels(90, kernels), 0);
  if (was)
    setenv("EMBER_CACHE_DIR", saved.c_str(), 1);
  else
    unsetenv("EMBER_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

// --- with a GPU
// ----------------------------------------------------------------

// compile() of functions of CUDA tensors: each fusion is a CUDA kernel
// (explain() names them "cuda ember_cuda_..."), none runs eagerly, and the
// results equal eager CUDA's: a pointwise chain over a broadcast, softmax
// and layer_norm rows, a full sum (the split reduction) and a float16
// chain; then again on a non-contiguous input.
TEST(Cuda, CompiledFusionsAreCudaKernels) {
  REQUIRE_GPU();
  NoGradGuard guard;
  // (a fresh disk cache: the graph's kernels compile, in parallel)
  std::string dir = make_temp_dir();
  setenv("EMBER_CACHE_DIR", dir.c_str(), 1);
  namespace F = nn::functional;
  Tensor x = random({64, 1000}, kFloat, 1).cuda(),
         w = random({1000}, kFloat, 2).cuda(),
         b = random({1000}, kFloat, 3).cuda();
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &b) {
    Tensor g = F::gelu(x * w + b);
    Tensor s = g.softmax(-1);
    Tensor l = F::layer_norm(x, F::LayerNormFuncOptions({1000}).weight(w));
    return std::make_tuple(g, s, l, (x * x).sum(), (x.to(kHalf) * 2).relu());
  };
  auto compiled = compile(fn);
  for (bool strided : {false, true}) {
    Tensor in = strided ? random({1000, 64}, kFloat, 4).cuda().t() : x;
    auto want = fn(in, w, b);
    auto got = compiled(in, w, b);
    EXPECT_TRUE(
        allclose(std::get<0>(got).cpu(), std::get<0>(want).cpu(), 1e-5, 1e-6));
    EXPECT_TRUE(
        allclose(std::get<1>(got).cpu(), std::get<1>(want).cpu(), 1e-5, 1e-7));
    EXPECT_TRUE(
        allclose(std::get<2>(got).cpu(), std::get<2>(want).cpu(), 1e-4, 1e-5));
    EXPECT_TRUE(
        allclose(std::get<3>(got).cpu(), std::get<3>(want).cpu(), 1e-5, 1e-3));
    EXPECT_TRUE(std::get<4>(got).cpu().equal(std::get<4>(want).cpu()));
  }
  ExplainOutput e = compiled.explain();
  ASSERT_FALSE(e.graphs.empty());
  // (on an H200: two kernels a graph, the pointwise chain, softmax and
  // layer_norm one row-persistent kernel, the sum the other; the strided
  // call's graph finds them in the memory cache)
  for (const GraphInfo &g : e.graphs) {
    EXPECT_GE(g.kernel_list.size(), 2u) << e;
    EXPECT_EQ(g.fallbacks, 0) << e;
    for (const KernelSummary &k : g.kernel_list) {
      EXPECT_EQ(k.name.rfind("cuda ember_cuda_", 0), 0u) << e;
      if (&g == &e.graphs[0]) {
        EXPECT_NE(k.origin.find("in parallel"), std::string::npos) << e;
      }
    }
  }
  unsetenv("EMBER_CACHE_DIR");
  std::printf("[ INFO     ] %s\n", e.str().c_str());
}

// The buffer plan on CUDA (CudaFusionKernel::run_reusing): a fusion after a
// matmul writes into the matmul's result, which dies there; the results
// equal eager's and the plan's off switch's, and the step's peak is lower.
TEST(Cuda, CompiledFusionsWriteIntoDyingBuffers) {
  REQUIRE_GPU();
  NoGradGuard guard;
  // (the product's result and the fusion's are the only buffers: the
  // peak is one 1 MiB buffer with the plan, two without it)
  auto fn = [](const Tensor &x) { return (x.mm(x) * 2).tanh().neg(); };
  Tensor x = random({512, 512}, kFloat, 5).cuda();
  Tensor want = fn(x);
  int64_t peak[2];
  for (bool inplace : {false, true}) {
    auto f = compile(fn, CompileOptions().inplace_buffers(inplace));
    f(x); // (compiles)
    cuda::synchronize();
    cuda::reset_peak_memory_stats();
    int64_t before = cuda::memory_allocated();
    Tensor got = f(x);
    cuda::synchronize();
    peak[inplace] = cuda::max_memory_allocated() - before;
    EXPECT_TRUE(allclose(got.cpu(), want.cpu(), 1e-5, 1e-6)) << inplace;
  }
  EXPECT_LT(peak[1], peak[0]);
}

TEST(CudaCodegen, GraphPatchesFindAddressesInsideBuffers) {
  // Note [CUDA graphs with patched addresses]: the words of a node's
  // parameters that point into a buffer, and their rewrite for new bases.
  const uint64_t A = 0x7f0000000000, B = 0x7f0000100000;
  std::vector<cuda::GraphBuffer> buffers = {{A, 4096}, {B, 512}};
  struct Params {
    uint64_t a;     // inside A
    int32_t n, m;   // a size and a stride
    uint64_t b;     // B's base
    uint64_t past;  // one past A's end: not A's
    uint64_t other; // no buffer's
    uint64_t zero;  // null
  } p{A + 64, 4096, 7, B, A + 4096, 0x7f0000200000, 0};
  std::vector<cuda::PatchSite> sites =
      cuda::find_pointers(&p, sizeof p, buffers);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].offset, 0u);
  EXPECT_EQ(sites[0].buffer, 0);
  EXPECT_EQ(sites[0].delta, 64u);
  EXPECT_EQ(sites[1].offset, 16u);
  EXPECT_EQ(sites[1].buffer, 1);
  EXPECT_EQ(sites[1].delta, 0u);
  cuda::apply_patches(&p, sites, {0x100000000, 0x200000000});
  EXPECT_EQ(p.a, 0x100000000u + 64);
  EXPECT_EQ(p.b, 0x200000000u);
  EXPECT_EQ(p.n, 4096);
  EXPECT_EQ(p.m, 7);
  EXPECT_EQ(p.past, A + 4096);
  EXPECT_EQ(p.other, 0x7f0000200000u);
  // An empty buffer matches nothing; overlapping buffers are refused.
  EXPECT_TRUE(cuda::find_pointers(&p, sizeof p, {{0x100000000, 0}}).empty());
  EXPECT_THROW(cuda::find_pointers(&p, sizeof p, {{A, 4096}, {A + 4000, 8}}),
               Error);
}

TEST(Cuda, ReplaysRunAsCudaGraphsWithNewAddresses) {
  // Note [CUDA graphs in replay mode]: each call's inputs are at new
  // addresses; the replays (a cuBLAS product, fusions, a reduction, a
  // mutation of an argument, an output that views an input) equal eager's,
  // and a replay does not overwrite the outputs of the ones before it.
  REQUIRE_GPU();
  NoGradGuard guard;
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &acc) {
    Tensor h = (x.mm(w) * 0.5).tanh();
    acc.add_(h.sum(0));
    return std::make_tuple(h, h.softmax(-1), x.t(), (h * h).sum());
  };
  for (bool graphs : {true, false}) {
    int64_t before = cuda::memory_allocated();
    {
      auto f = compile(fn, CompileOptions().replay(true).cuda_graphs(graphs));
      Tensor w = random({32, 16}, kFloat, 2);
      Tensor wc = w.cuda(), acc = zeros({16}), accc = acc.cuda();
      std::vector<std::tuple<Tensor, Tensor, Tensor, Tensor>> got, want;
      for (int call = 0; call < 6; ++call) {
        Tensor x = random({8, 32}, kFloat, 10 + call);
        want.push_back(fn(x, w, acc));
        got.push_back(f(x.cuda(), wc, accc));
        ASSERT_TRUE(allclose(accc.cpu(), acc, 1e-5, 1e-5))
            << graphs << " call " << call;
      }
      for (size_t call = 0; call < got.size(); ++call) {
        auto [h, s, xt, l] = got[call];
        auto [eh, es, ext, el] = want[call];
        EXPECT_TRUE(allclose(h.cpu(), eh, 1e-5, 1e-6)) << graphs << call;
        EXPECT_TRUE(allclose(s.cpu(), es, 1e-5, 1e-6)) << graphs << call;
        EXPECT_TRUE(xt.cpu().equal(ext)) << graphs << call;
        EXPECT_TRUE(allclose(l.cpu(), el, 1e-5, 1e-5)) << graphs << call;
      }
      ExplainOutput e = f.explain();
      ASSERT_EQ(e.graphs.size(), 1u) << e;
      if (graphs)
        EXPECT_EQ(e.graphs[0].cuda_graph.rfind("a CUDA graph of", 0), 0u) << e;
      else
        EXPECT_EQ(e.graphs[0].cuda_graph, "") << e;
      EXPECT_GE(e.cache_hits, 5) << e;
    }
    // The graph, destroyed, gives back the intermediates it held.
    cuda::synchronize();
    EXPECT_EQ(cuda::memory_allocated(), before) << graphs;
  }
}

TEST(Cuda, ReplaysWithoutACudaGraphSayWhy) {
  // index_select checks its indices on the host (a round trip that waits
  // for the stream), which a capture cannot hold: replays run the program,
  // right, and explain() says why on the graph's line.
  REQUIRE_GPU();
  NoGradGuard guard;
  auto fn = [](const Tensor &x, const Tensor &i) {
    return (x.index_select(0, i) * 2).exp();
  };
  auto f = compile(fn, CompileOptions().replay(true));
  Tensor i = tensor({3, 0, 3, 1}, kLong);
  Tensor ic = i.cuda();
  for (int call = 0; call < 3; ++call) {
    Tensor x = random({4, 8}, kFloat, 20 + call);
    EXPECT_TRUE(allclose(f(x.cuda(), ic).cpu(), fn(x, i), 1e-5, 1e-6));
  }
  ExplainOutput e = f.explain();
  ASSERT_EQ(e.graphs.size(), 1u) << e;
  EXPECT_EQ(
      e.graphs[0].cuda_graph.rfind("no CUDA graph: the capture failed", 0), 0u)
      << e;
  EXPECT_NE(e.str().find("replays: no CUDA graph"), std::string::npos) << e;
  // A replay that raises (an index out of range) raises as eagerly.
  EXPECT_THROW(f(random({4, 8}, kFloat, 30).cuda(), tensor({4}, kLong).cuda()),
               IndexError);
}

TEST(Cuda, ScalarOperandsReachTheDeviceWithoutWaiting) {
  // A CPU 0-dim operand of a CUDA op is filled in on the device, not copied
  // from the host (which waits for the stream): at opt level 0 a replayed
  // chain of `y * 0.999 + 0.001` (each constant such an operand) is
  // captured into one CUDA graph.
  REQUIRE_GPU();
  NoGradGuard guard;
  auto fn = [](const Tensor &x) {
    Tensor y = x;
    for (int k = 0; k < 4; ++k)
      y = y * 0.999 + 0.001;
    return y;
  };
  Tensor x = random({256}, kFloat, 40);
  EXPECT_TRUE(
      allclose((x.cuda() * scalar_tensor(3.0)).cpu(), x * 3.0, 1e-6, 0));
  auto f = compile(fn, CompileOptions().replay(true).opt_level(0));
  for (int call = 0; call < 3; ++call)
    EXPECT_TRUE(allclose(f(x.cuda()).cpu(), fn(x), 1e-5, 1e-6));
  ExplainOutput e = f.explain();
  ASSERT_EQ(e.graphs.size(), 1u) << e;
  EXPECT_EQ(e.graphs[0].cuda_graph.rfind("a CUDA graph of", 0), 0u) << e;
}

// Random kernel descriptions -- 1 to 3 dims with size-1 dims, transposed
// and broadcast inputs, float32/float64/float16/bfloat16 chains of unary
// and binary ops, folds over any subset of dims feeding pointwise steps,
// several outputs -- rendered and run on the host (Note [CUDA emulation on
// the host]) against the CPU generator. A fixed seed: the same 48 kernels
// every run.
TEST(CudaCodegen, RandomKernelsRunOnTheHostAsTheCpuKernels) {
  NoGradGuard guard;
  struct Rng {
    uint64_t s;
    uint64_t next() {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      return s >> 33;
    }
    int below(int n) { return int(next() % uint64_t(n)); }
  } rng{12345};
  const char *unary[] = {"ember::exp", "ember::tanh", "ember::sigmoid",
                         "ember::neg", "ember::abs",  "ember::relu",
                         "ember::sin", "ember::silu", "ember::reciprocal"};
  const char *binary[] = {"ember::add.Tensor", "ember::sub.Tensor",
                          "ember::mul.Tensor", "ember::maximum",
                          "ember::minimum"};
  const int64_t sizes[] = {1, 2, 3, 5, 8, 17, 33, 64, 130};
  const ScalarType dtypes[] = {kFloat, kFloat, kDouble, kHalf, kBFloat16};
  std::vector<Case> cases;
  for (int c = 0; c < 48; ++c) {
    KernelSpec k;
    int nd = 1 + rng.below(3);
    for (int d = 0; d < nd; ++d)
      k.shape.push_back(sizes[rng.below(9)]);
    ScalarType dt = dtypes[rng.below(5)];
    bool fold = rng.below(2) == 0;
    if (fold) {
      k.reduced.assign(size_t(nd), false);
      for (int d = 0; d < nd; ++d)
        k.reduced[size_t(d)] = rng.below(2) == 0;
      k.reduced[size_t(rng.below(nd))] = true;
    }
    std::vector<Tensor> inputs;
    std::vector<int> full; // values over the whole space
    int nin = 1 + rng.below(3);
    for (int i = 0; i < nin; ++i) {
      std::vector<int64_t> extent = k.shape;
      bool broadcast = i > 0 && rng.below(3) == 0;
      if (broadcast)
        for (int64_t &e : extent)
          if (rng.below(2) == 0)
            e = 1;
      Tensor t = random(extent, dt, uint64_t(100 * c + i));
      if (nd >= 2 && rng.below(3) == 0) // a transposed layout
        t = t.transpose(0, nd - 1).contiguous().transpose(0, nd - 1);
      std::vector<int64_t> st = t.expand(k.shape).strides().vec();
      inputs.push_back(t);
      int v = k.input(dt, st, extent);
      if (!broadcast || k.is_full(v))
        full.push_back(v);
    }
    if (full.empty())
      full.push_back(0);
    auto pick = [&] { return full[size_t(rng.below(int(full.size())))]; };
    auto binop = [&](int a, int b) {
      std::string name = binary[rng.below(5)];
      std::vector<Scalar> alpha; // add's and sub's
      if (name == "ember::add.Tensor" || name == "ember::sub.Tensor")
        alpha.push_back(Scalar(int64_t(1 + rng.below(2))));
      return k.step(op(name), {a, b}, alpha, dt, dt);
    };
    auto pointwise = [&](int a, int b) {
      if (rng.below(2) == 0)
        return k.step(op(unary[rng.below(9)]), {a}, {}, dt, dt);
      return binop(a, b);
    };
    for (int s = 0, n = 1 + rng.below(4); s < n; ++s)
      full.push_back(pointwise(pick(), pick()));
    std::vector<int> outs{full.back()};
    if (fold) {
      // One or two folds, then a step reading a fold beside a full value
      // (softmax's shape).
      for (int f = 0, n = 1 + rng.below(2); f < n; ++f) {
        ReductionInfo::Kind kind = ReductionInfo::Kind(rng.below(4));
        bool sums = kind == ReductionInfo::Sum || kind == ReductionInfo::Mean;
        ScalarType acc = sums ? kDouble : cuda::detail::compute_of(dt);
        int r = k.reduce(kind, pick(), dt, acc, dt);
        outs.push_back(r);
        if (rng.below(2) == 0)
          outs.push_back(binop(pick(), r));
      }
    }
    std::sort(outs.begin(), outs.end());
    outs.erase(std::unique(outs.begin(), outs.end()), outs.end());
    k.outputs = outs;
    cases.push_back(
        {"random kernel " + std::to_string(c) + ":\n" + k.str(), k, inputs});
  }
  // The host's libm against the CPU kernels' polynomials, compounded along
  // a chain, and a 16-bit float's rounding of each step.
  run_on_the_host(cases, [](ScalarType t) {
    return t == kDouble ? 1e-12 : t == kFloat ? 1e-4 : 3e-2;
  });
}
