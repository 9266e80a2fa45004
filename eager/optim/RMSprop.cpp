#include "eager/optim/RMSprop.h"

#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

namespace ember::optim {

namespace {
/// torch.optim.RMSprop's argument checks, in its order.
std::unique_ptr<OptimizerOptions> checked(const RMSpropOptions &o) {
  EMBER_CHECK_VALUE(o.lr() >= 0, "Invalid learning rate: ", o.lr());
  EMBER_CHECK_VALUE(o.eps() >= 0, "Invalid epsilon value: ", o.eps());
  EMBER_CHECK_VALUE(o.momentum() >= 0,
                    "Invalid momentum value: ", o.momentum());
  EMBER_CHECK_VALUE(o.weight_decay() >= 0,
                    "Invalid weight_decay value: ", o.weight_decay());
  EMBER_CHECK_VALUE(o.alpha() >= 0, "Invalid alpha value: ", o.alpha());
  return std::make_unique<RMSpropOptions>(o);
}

bool same(const Tensor &x, const Tensor &y) {
  if (x.defined() != y.defined())
    return false;
  return !x.defined() || (x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
                          ember::equal(x, y));
}
} // namespace

bool operator==(const RMSpropOptions &a, const RMSpropOptions &b) {
  return a.lr() == b.lr() && a.alpha() == b.alpha() && a.eps() == b.eps() &&
         a.weight_decay() == b.weight_decay() && a.momentum() == b.momentum() &&
         a.centered() == b.centered();
}

bool operator==(const RMSpropParamState &a, const RMSpropParamState &b) {
  return a.step() == b.step() && same(a.square_avg(), b.square_avg()) &&
         same(a.momentum_buffer(), b.momentum_buffer()) &&
         same(a.grad_avg(), b.grad_avg());
}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups,
                 RMSpropOptions defaults)
    : Optimizer(std::move(param_groups), checked(defaults)) {}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions defaults)
    : Optimizer(std::move(params), checked(defaults)) {}

Tensor RMSprop::step(LossClosure closure) {
  NoGradGuard no_grad;
  Tensor loss = detail::run_closure(closure);
  detail::StepReplay replay(*this); // Note [Replayed optimizer steps]
  for (size_t gi = 0; gi < param_groups_.size(); ++gi) {
    auto &group = param_groups_[gi];
    const auto &o = detail::options_as<RMSpropOptions>(group);
    const double alpha = o.alpha();
    for (const auto &p : group.params()) {
      Tensor grad = detail::checked_grad(p);
      if (!grad.defined())
        continue;
      auto [st, fresh] = detail::state_of<RMSpropParamState>(state_, p);
      if (fresh) {
        replay.made_state();
        st.step(0);
        st.square_avg(zeros_like(p));
      }
      if (o.momentum() > 0 && !st.momentum_buffer().defined()) {
        replay.made_state();
        st.momentum_buffer(zeros_like(p));
      }
      if (o.centered() && !st.grad_avg().defined()) {
        replay.made_state();
        st.grad_avg(zeros_like(p));
      }

      st.step(st.step() + 1);
      replay.count_step(st);
      replay.watch(st, [](const RMSpropParamState &s) {
        return std::array<Tensor, 3>{s.square_avg(), s.momentum_buffer(),
                                     s.grad_avg()};
      });
      if (o.weight_decay() != 0)
        grad = grad.add(p, o.weight_decay());

      st.square_avg().mul_(alpha).addcmul_(grad, grad, 1 - alpha);
      Tensor avg;
      if (o.centered()) {
        st.grad_avg().lerp_(grad, 1 - alpha);
        avg = st.square_avg().addcmul(st.grad_avg(), st.grad_avg(), -1);
        avg.sqrt_();
      } else {
        avg = st.square_avg().sqrt();
      }
      avg.add_(o.eps());

      using R = detail::StepReplay;
      if (o.momentum() > 0) {
        st.momentum_buffer().mul_(o.momentum()).addcdiv_(grad, avg);
        // (Note [Captured updates round as eager's])
        if (replay.on())
          R::add_(p, st.momentum_buffer(), replay.neg_lr(gi, p.device()));
        else
          p.add_(st.momentum_buffer(), -o.lr());
      } else if (replay.on()) {
        R::addcdiv_(p, grad, avg, replay.neg_lr(gi, p.device()));
      } else {
        p.addcdiv_(grad, avg, -o.lr());
      }
    }
  }
  replay.finish(&detail::same_options_but_lr<RMSpropOptions>);
  return loss;
}

} // namespace ember::optim
