#include "eager/optim/Adam.h"
#include "eager/Capturing.h"
#include "eager/optim/AdamW.h"

#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

#include <cmath>
#include <map>

namespace ember::optim {

namespace {
/// torch.optim.Adam's / AdamW's argument checks, in their order.
template <class Options>
std::unique_ptr<OptimizerOptions> checked(const Options &o) {
  auto [beta1, beta2] = o.betas();
  EMBER_CHECK_VALUE(o.lr() >= 0, "Invalid learning rate: ", o.lr());
  EMBER_CHECK_VALUE(o.eps() >= 0, "Invalid epsilon value: ", o.eps());
  EMBER_CHECK_VALUE(beta1 >= 0 && beta1 < 1,
                    "Invalid beta parameter at index 0: ", beta1);
  EMBER_CHECK_VALUE(beta2 >= 0 && beta2 < 1,
                    "Invalid beta parameter at index 1: ", beta2);
  EMBER_CHECK_VALUE(o.weight_decay() >= 0,
                    "Invalid weight_decay value: ", o.weight_decay());
  return std::make_unique<Options>(o);
}

/// One Adam / AdamW step over every param group (torch.optim.adam's and
/// adamw's _single_tensor_adam(w)). `decoupled` selects AdamW's weight
/// decay (p *= 1 - lr * wd) over Adam's (g += wd * p).
template <class Options, class State>
void adam_step(Optimizer &opt, Optimizer::StateMap &state, bool decoupled) {
  std::vector<OptimizerParamGroup> &groups = opt.param_groups();
  detail::StepReplay replay(opt); // Note [Replayed optimizer steps]
  // The states sharing one set of factors (one step count) in a group:
  // a replay needs their counts still equal.
  auto sharing =
      std::make_shared<std::map<std::string, std::vector<State *>>>();
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    auto &group = groups[gi];
    const auto &o = detail::options_as<Options>(group);
    auto [beta1, beta2] = o.betas();
    const double lr = o.lr(), wd = o.weight_decay();
    for (const auto &p : group.params()) {
      Tensor grad = detail::checked_grad(p);
      if (!grad.defined())
        continue;
      auto [st, fresh] = detail::state_of<State>(state, p);
      if (fresh) {
        replay.made_state();
        st.step(0);
        st.exp_avg(zeros_like(p));
        st.exp_avg_sq(zeros_like(p));
      }
      if (o.amsgrad() && !st.max_exp_avg_sq().defined()) {
        replay.made_state();
        st.max_exp_avg_sq(zeros_like(p));
      }

      st.step(st.step() + 1);
      replay.count_step(st);
      replay.watch(st, [](const State &s) {
        return std::array<Tensor, 3>{s.exp_avg(), s.exp_avg_sq(),
                                     s.max_exp_avg_sq()};
      });
      // (the factors of one group and step count are one tensor each)
      std::string key;
      if (replay.on()) {
        key = std::to_string(gi) + "/" + std::to_string(st.step());
        (*sharing)[key].push_back(&st);
      }
      // (the factors a replay reads anew: from the group's learning rate
      // and the step count of the state that made them)
      auto factor = [&](const char *name, auto f) {
        return replay.value(name + key, p.device(),
                            [gi, s = &st, f](Optimizer &opt) {
                              return f(opt.param_groups()[gi].options(), *s);
                            });
      };
      // (Note [Captured updates round as eager's])
      using R = detail::StepReplay;
      if (decoupled && replay.on())
        R::scale_(
            p, factor("decay", [wd](const OptimizerOptions &og, const State &) {
              return 1 - og.get_lr() * wd;
            }));
      else if (decoupled)
        p.mul_(1 - lr * wd);
      else if (wd != 0)
        grad = grad.add(p, wd);

      // Decay the first and second moment running averages.
      st.exp_avg().lerp_(grad, 1 - beta1);
      st.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);

      const double step = double(st.step());
      const double bias_correction1 = 1 - std::pow(beta1, step);
      const double bias_correction2 = 1 - std::pow(beta2, step);
      const double step_size = lr / bias_correction1;
      const double bias_correction2_sqrt = std::sqrt(bias_correction2);

      // Note [Compiled optimizer steps]
      // Inside ember::compile the factors that change with the step count
      // are 0-dim tensors: tensors made by a factory are graph inputs, read
      // at each call, where numbers are constants of the graph. So one
      // compiled graph serves every step, instead of a recompile per step
      // (PyTorch's capturable Adam keeps its step in a tensor for the same
      // reason), and a replay remakes them from that call's step count and
      // learning rate (Note [Replayed optimizer steps]).
      const bool capturing = replay.on();
      Tensor denom;
      if (o.amsgrad()) {
        // torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        st.max_exp_avg_sq().copy_(
            ember::maximum(st.max_exp_avg_sq(), st.exp_avg_sq()));
      }
      const Tensor &sq = o.amsgrad() ? st.max_exp_avg_sq() : st.exp_avg_sq();
      if (capturing) {
        // (Note [Captured updates round as eager's])
        denom = R::div(
            sq.sqrt(),
            factor("bc2", [beta2](const OptimizerOptions &, const State &s) {
              return std::sqrt(1 - std::pow(beta2, double(s.step())));
            }));
        denom.add_(o.eps());
        R::addcdiv_(p, st.exp_avg(), denom,
                    factor("-step_size",
                           [beta1](const OptimizerOptions &og, const State &s) {
                             return -og.get_lr() /
                                    (1 - std::pow(beta1, double(s.step())));
                           }));
        continue;
      }
      denom = sq.sqrt() / bias_correction2_sqrt;
      denom.add_(o.eps());
      p.addcdiv_(st.exp_avg(), denom, -step_size);
    }
  }
  replay.finish(&detail::same_options_but_lr<Options>, [sharing] {
    for (const auto &[key, states] : *sharing)
      for (const State *s : states)
        if (s->step() != states.front()->step())
          return false;
    return true;
  });
}

template <class State> bool state_equal(const State &a, const State &b) {
  auto same = [](const Tensor &x, const Tensor &y) {
    if (x.defined() != y.defined())
      return false;
    return !x.defined() || (x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
                            ember::equal(x, y));
  };
  return a.step() == b.step() && same(a.exp_avg(), b.exp_avg()) &&
         same(a.exp_avg_sq(), b.exp_avg_sq()) &&
         same(a.max_exp_avg_sq(), b.max_exp_avg_sq());
}

template <class Options>
bool options_equal(const Options &a, const Options &b) {
  return a.lr() == b.lr() && a.betas() == b.betas() && a.eps() == b.eps() &&
         a.weight_decay() == b.weight_decay() && a.amsgrad() == b.amsgrad();
}
} // namespace

bool operator==(const AdamOptions &a, const AdamOptions &b) {
  return options_equal(a, b);
}
bool operator==(const AdamWOptions &a, const AdamWOptions &b) {
  return options_equal(a, b);
}
bool operator==(const AdamParamState &a, const AdamParamState &b) {
  return state_equal(a, b);
}
bool operator==(const AdamWParamState &a, const AdamWParamState &b) {
  return state_equal(a, b);
}

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults)
    : Optimizer(std::move(param_groups), checked(defaults)) {}

Adam::Adam(std::vector<Tensor> params, AdamOptions defaults)
    : Optimizer(std::move(params), checked(defaults)) {}

Tensor Adam::step(LossClosure closure) {
  NoGradGuard no_grad;
  Tensor loss = detail::run_closure(closure);
  adam_step<AdamOptions, AdamParamState>(*this, state_, /*decoupled=*/false);
  return loss;
}

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups,
             AdamWOptions defaults)
    : Optimizer(std::move(param_groups), checked(defaults)) {}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions defaults)
    : Optimizer(std::move(params), checked(defaults)) {}

Tensor AdamW::step(LossClosure closure) {
  NoGradGuard no_grad;
  Tensor loss = detail::run_closure(closure);
  adam_step<AdamWOptions, AdamWParamState>(*this, state_, /*decoupled=*/true);
  return loss;
}

} // namespace ember::optim
