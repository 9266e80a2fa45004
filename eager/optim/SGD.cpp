#include "eager/optim/SGD.h"

#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

namespace ember::optim {

namespace {
/// torch.optim.SGD's argument checks, in its order.
std::unique_ptr<OptimizerOptions> checked(const SGDOptions &o) {
  EMBER_CHECK_VALUE(!(o.lr() < 0), "Invalid learning rate: ", o.lr());
  EMBER_CHECK_VALUE(!(o.momentum() < 0),
                    "Invalid momentum value: ", o.momentum());
  EMBER_CHECK_VALUE(!(o.weight_decay() < 0),
                    "Invalid weight_decay value: ", o.weight_decay());
  EMBER_CHECK_VALUE(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0),
                    "Nesterov momentum requires a momentum and zero "
                    "dampening");
  return std::make_unique<SGDOptions>(o);
}
} // namespace

bool operator==(const SGDOptions &a, const SGDOptions &b) {
  return a.lr() == b.lr() && a.momentum() == b.momentum() &&
         a.dampening() == b.dampening() &&
         a.weight_decay() == b.weight_decay() && a.nesterov() == b.nesterov();
}

bool operator==(const SGDParamState &a, const SGDParamState &b) {
  const Tensor &x = a.momentum_buffer(), &y = b.momentum_buffer();
  if (x.defined() != y.defined())
    return false;
  return !x.defined() || (x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
                          ember::equal(x, y));
}

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults)
    : Optimizer(std::move(param_groups), checked(defaults)) {}

SGD::SGD(std::vector<Tensor> params, SGDOptions defaults)
    : Optimizer(std::move(params), checked(defaults)) {}

Tensor SGD::step(LossClosure closure) {
  NoGradGuard no_grad;
  Tensor loss = detail::run_closure(closure);
  detail::StepReplay replay(*this); // Note [Replayed optimizer steps]
  for (size_t gi = 0; gi < param_groups_.size(); ++gi) {
    auto &group = param_groups_[gi];
    const auto &o = detail::options_as<SGDOptions>(group);
    for (const auto &p : group.params()) {
      const Tensor &grad = detail::checked_grad(p);
      if (!grad.defined())
        continue;
      Tensor d_p = grad;
      if (o.weight_decay() != 0)
        d_p = d_p.add(p, o.weight_decay());
      if (o.momentum() != 0) {
        auto [st, fresh] = detail::state_of<SGDParamState>(state_, p);
        if (fresh || !st.momentum_buffer().defined()) {
          replay.made_state();
          st.momentum_buffer(ember::clone(d_p).detach());
        } else {
          st.momentum_buffer().mul_(o.momentum()).add_(d_p, 1 - o.dampening());
        }
        replay.watch(st, [](const SGDParamState &s) {
          return std::array<Tensor, 1>{s.momentum_buffer()};
        });
        const Tensor &buf = st.momentum_buffer();
        d_p = o.nesterov() ? d_p.add(buf, o.momentum()) : buf;
      }
      if (!replay.on()) {
        p.add_(d_p, -o.lr());
        continue;
      }
      // (the learning rate, read at each replay: Note [Captured updates
      // round as eager's])
      detail::StepReplay::add_(p, d_p, replay.neg_lr(gi, p.device()));
    }
  }
  replay.finish(&detail::same_options_but_lr<SGDOptions>);
  return loss;
}

} // namespace ember::optim
