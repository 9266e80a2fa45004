#include "passes/FusionTarget.h"

#include <map>
#include <mutex>

namespace ember::passes {

namespace {

/// Note [Per-op capability]: every op fuses.
class AnyTarget final : public FusionTarget {
public:
  std::string name() const override { return "any"; }
  std::string unsupported(mlir::Operation *) const override { return ""; }
};

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const FusionTarget>> targets{
      {"any", std::make_shared<AnyTarget>()}};
};
Registry &registry() {
  static Registry *r = new Registry(); // never destroyed: used at exit
  return *r;
}

} // namespace

void register_fusion_target(std::shared_ptr<const FusionTarget> target) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.targets[target->name()] = std::move(target);
}

std::shared_ptr<const FusionTarget>
find_fusion_target(const std::string &name) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.targets.find(name);
  return it == r.targets.end() ? nullptr : it->second;
}

std::vector<std::string> fusion_target_names() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto &[name, t] : r.targets)
    names.push_back(name);
  return names;
}

} // namespace ember::passes
