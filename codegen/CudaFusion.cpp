#include "codegen/CudaFusion.h"

#include "codegen/CudaRender.h"
#include "codegen/Kernel.h"
#include "codegen/Lower.h"
#include "eager/Factory.h"
#include "eager/cuda/Pointwise.h"
#include "ir/Dialect.h"
#include "ir/Queries.h"
#include "ir/Types.h"
#include "runtime/CudaDriver.h"
#include "runtime/Nvrtc.h"

#include "mlir/IR/Operation.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace ember::codegen {

const char kCombinedNotOnCuda[] =
    "combined kernels are the CPU generator's; on CUDA the inner fusions' "
    "ops run eagerly";

bool on_cuda(mlir::Operation *op) {
  for (mlir::Value v : op->getOperands())
    if (ir::value_type(v.getType()).device.is_cuda())
      return true;
  for (mlir::Value v : op->getResults())
    if (ir::value_type(v.getType()).device.is_cuda())
      return true;
  return false;
}

namespace {

/// A rendered kernel, the function NVRTC made of it, and the items its
/// grid covers (points for a pointwise kernel, kept points for a fold).
struct Launchable {
  CudaKernel kernel;
  void *fn = nullptr;
  int64_t items = 0;
};

Launchable make(const KernelSpec &spec, int device) {
  Launchable l;
  l.kernel = render_cuda(spec);
  l.fn = cuda::get_kernel(device, l.kernel.source(), l.kernel.entry);
  l.items = l.kernel.reduction ? spec.output_numel() : spec.numel();
  return l;
}

class CudaFusionKernel final : public ir::Kernel {
public:
  CudaFusionKernel(KernelSpec spec, std::vector<ir::ValueType> outputs,
                   Device device, std::vector<Launchable> parts,
                   std::optional<SplitSpecs> split)
      : spec_(std::move(spec)), outputs_(std::move(outputs)), device_(device),
        parts_(std::move(parts)), split_(std::move(split)) {}

  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const override {
    return run_reusing(inputs, {});
  }

  /// The buffer plan (ember.reuse): results written into inputs that die
  /// here (results_in_place, as on the CPU), by a variant of the kernel
  /// rendered with KernelSpec::output_inputs (never split), compiled on
  /// first use and kept.
  std::vector<Tensor>
  run_reusing(const std::vector<Tensor> &inputs,
              const std::vector<int> &reuse) const override {
    EMBER_CHECK(inputs.size() == spec_.inputs.size(), "kernel ", name(),
                " takes ", spec_.inputs.size(), " inputs, got ", inputs.size());
    std::vector<const Tensor *> ptrs;
    for (const Tensor &t : inputs)
      ptrs.push_back(&t);
    std::vector<int> in_place = results_in_place(ptrs, outputs_, reuse);
    if (std::count(in_place.begin(), in_place.end(), -1) !=
        std::ptrdiff_t(in_place.size())) {
      std::vector<Tensor> outs;
      for (size_t o = 0; o < outputs_.size(); ++o)
        outs.push_back(
            in_place[o] >= 0
                ? inputs[size_t(in_place[o])]
                : empty(outputs_[o].sizes,
                        TensorOptions(outputs_[o].dtype).device(device_)));
      launch(variant(in_place), outs, prepared(inputs));
      return outs;
    }
    std::vector<Tensor> ins = prepared(inputs);
    std::vector<Tensor> outs;
    for (const ir::ValueType &t : outputs_)
      outs.push_back(empty(t.sizes, TensorOptions(t.dtype).device(device_)));
    if (!split_) {
      launch(parts_[0], outs, ins);
      return outs;
    }
    // Note [Split reductions]: the partial folds into [parts, kept...]
    // accumulators, the combine folds those into the results.
    std::vector<Tensor> partials;
    const KernelSpec &p = split_->partial;
    // (the combine's iteration space: [parts, kept...])
    for (int o : p.outputs)
      partials.push_back(empty(split_->combine.shape,
                               TensorOptions(p.dtype(o)).device(device_)));
    launch(parts_[0], partials, ins);
    launch(parts_[1], outs, partials);
    return outs;
  }

  std::string name() const override {
    std::string n = "cuda " + parts_[0].kernel.entry;
    for (size_t i = 1; i < parts_.size(); ++i)
      n += " + " + parts_[i].kernel.entry;
    return n;
  }

private:
  /// The kernel reads its inputs contiguous (as compiled: the graph's
  /// guards fix their shapes) and on its device: a view is copied first,
  /// a CPU 0-dim tensor (as eager reads one with CUDA tensors) too.
  std::vector<Tensor> prepared(const std::vector<Tensor> &inputs) const {
    std::vector<Tensor> ins;
    ins.reserve(inputs.size());
    for (const Tensor &t : inputs) {
      if (t.device() != device_ && t.is_cpu() && t.dim() == 0) {
        ins.push_back(cuda::scalar_to_device(t, device_));
        continue;
      }
      EMBER_CHECK(t.device() == device_,
                  "Expected all tensors to be on the same device, but found "
                  "at least two devices, ",
                  device_, " and ", t.device(), "!");
      ins.push_back(t.is_contiguous() ? t : t.contiguous());
    }
    return ins;
  }

  void launch(const Launchable &l, const std::vector<Tensor> &outs,
              const std::vector<Tensor> &ins) const {
    if (l.items == 0)
      return;
    std::vector<void *> ptrs;
    for (const Tensor &t : outs)
      ptrs.push_back(t.data_ptr());
    for (const Tensor &t : ins)
      ptrs.push_back(t.data_ptr());
    std::vector<void *> args;
    for (void *&p : ptrs)
      args.push_back(&p);
    const CudaKernel &k = l.kernel;
    int64_t grid =
        std::min(cuda::detail::grid_for(device_.index(), l.items, k.per_block),
                 k.max_blocks);
    cuda::launch_kernel(device_.index(), l.fn, unsigned(grid),
                        unsigned(k.block), args.data());
  }

  /// The kernel writing results in place of inputs as `in_place` says.
  const Launchable &variant(const std::vector<int> &in_place) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &[key, l] : variants_)
      if (key == in_place)
        return *l;
    KernelSpec s = spec_;
    s.output_inputs = in_place;
    variants_.emplace_back(
        in_place, std::make_unique<Launchable>(make(s, device_.index())));
    return *variants_.back().second;
  }

  KernelSpec spec_;
  std::vector<ir::ValueType> outputs_;
  Device device_;
  std::vector<Launchable> parts_;
  std::optional<SplitSpecs> split_;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<std::vector<int>, std::unique_ptr<Launchable>>>
      variants_;
};

} // namespace

namespace {
/// The kernel description of a CUDA fusion, or why it has none.
std::string describe(mlir::Operation *fusion, KernelSpec &spec) {
  auto f = llvm::dyn_cast<ir::FusionOp>(fusion);
  std::string malformed;
  if (f && !ir::inner_fusions(f, &malformed).empty())
    return kCombinedNotOnCuda;
  if (!malformed.empty())
    return malformed;
  return lower_fusion(fusion, spec, Generator::Cuda);
}

/// The kernels a fusion's description launches: one, or a split
/// reduction's two.
std::vector<KernelSpec> launched(const KernelSpec &spec,
                                 std::optional<SplitSpecs> &split) {
  split = split_reduction(spec, kCudaSplit);
  if (split)
    return {split->partial, split->combine};
  return {spec};
}
} // namespace

void precompile_cuda_fusions(const std::vector<mlir::Operation *> &fusions) {
  std::map<int, std::vector<cuda::KernelSource>> by_device;
  for (mlir::Operation *op : fusions) {
    try {
      KernelSpec spec;
      if (!describe(op, spec).empty())
        continue;
      int device = ir::value_type(op->getResult(0).getType()).device.index();
      std::optional<SplitSpecs> split;
      for (const KernelSpec &k : launched(spec, split)) {
        CudaKernel c = render_cuda(k);
        by_device[device].push_back({c.source(), c.entry});
      }
    } catch (const Error &) {
      // (compile_cuda_fusion says why)
    }
  }
  for (const auto &[device, kernels] : by_device)
    if (kernels.size() > 1)
      cuda::precompile_kernels(cuda::driver::compute_capability(device),
                               kernels, device);
}

FusionCompile compile_cuda_fusion(mlir::Operation *fusion) {
  FusionCompile r;
  try {
    KernelSpec spec;
    r.why_not = describe(fusion, spec);
    if (!r.why_not.empty())
      return r;
    // (the buffer plan, ember.reuse, is decided per call: run_reusing)
    Device device = ir::value_type(fusion->getResult(0).getType()).device;
    std::vector<ir::ValueType> outs;
    for (mlir::Value v : fusion->getResults())
      outs.push_back(ir::value_type(v.getType()));
    auto t0 = std::chrono::steady_clock::now();
    cuda::KernelCacheStats before = cuda::kernel_cache_stats();
    std::optional<SplitSpecs> split;
    std::vector<Launchable> parts;
    for (const KernelSpec &k : launched(spec, split))
      parts.push_back(make(k, device.index()));
    cuda::KernelCacheStats after = cuda::kernel_cache_stats();
    // (NVRTC's time for a kernel the graph's precompile compiled: Note [The
    // kernels of a graph compile in parallel])
    r.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (after.precompiled > before.precompiled)
      r.compile_seconds += after.nvrtc_seconds - before.nvrtc_seconds;
    r.origin = after.precompiled > before.precompiled
                   ? "compiled (NVRTC, in parallel with the graph's others)"
               : after.compiled > before.compiled   ? "compiled (NVRTC)"
               : after.from_disk > before.from_disk ? "disk cache"
                                                    : "memory cache";
    r.spec = spec.str();
    r.kernel = std::make_shared<CudaFusionKernel>(
        std::move(spec), std::move(outs), device, std::move(parts),
        std::move(split));
  } catch (const Error &e) {
    r.kernel = nullptr;
    r.why_not = e.what();
  }
  if (!r.kernel && r.why_not.empty())
    r.why_not = "no kernel";
  return r;
}

} // namespace ember::codegen
