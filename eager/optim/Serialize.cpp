// Optimizer state save/load through ember::serialize archives.

#include "eager/optim/Adam.h"
#include "eager/optim/AdamW.h"
#include "eager/optim/Optimizer.h"
#include "eager/optim/RMSprop.h"
#include "eager/optim/SGD.h"

#include <string>

namespace ember::optim {

// Note [Optimizer archive layout]
// Optimizer::save writes (all keys of one archive level):
//
//   "optimizer"     string: the optimizer's name ("SGD", "Adam", ...)
//   "param_groups"  archive: "size" (int), and "0", "1", ... one archive per
//                   group: "num_params" (int), "sizes/<j>" (int[]: the shape
//                   of parameter j) and "options" (the options' fields)
//   "state"         archive: "<k>" for each parameter that has state, where
//                   k numbers the parameters over all groups in order (as
//                   the keys of PyTorch's state_dict()['state']); each holds
//                   the state's fields (tensors, and "step" where kept)
//
// Parameters are identified by position, not by identity, so the state can
// be loaded into a new optimizer over new parameters built the same way.
// load() checks the optimizer name, the number of groups, each group's
// parameter count (PyTorch's checks) and each parameter's shape, replaces
// every group's options with the saved ones, and replaces the whole state.

namespace {
double read_double(serialize::InputArchive &archive, const std::string &key) {
  IValue v;
  archive.read(key, v);
  EMBER_CHECK(v.isDouble() || v.isInt(), "optimizer archive: '", key,
              "' should hold a number");
  return v.toDouble();
}
bool read_bool(serialize::InputArchive &archive, const std::string &key) {
  IValue v;
  archive.read(key, v);
  EMBER_CHECK(v.isBool(), "optimizer archive: '", key, "' should hold a bool");
  return v.toBool();
}
int64_t read_int(serialize::InputArchive &archive, const std::string &key) {
  IValue v;
  archive.read(key, v);
  EMBER_CHECK(v.isInt(), "optimizer archive: '", key,
              "' should hold an integer");
  return v.toInt();
}
std::tuple<double, double> read_betas(serialize::InputArchive &archive) {
  IValue v;
  archive.read("betas", v);
  EMBER_CHECK(v.isDoubleList() && v.toDoubleList().size() == 2,
              "optimizer archive: 'betas' should hold two numbers");
  return {v.toDoubleList()[0], v.toDoubleList()[1]};
}
std::vector<double> betas_list(const std::tuple<double, double> &b) {
  return {std::get<0>(b), std::get<1>(b)};
}

/// Writes / reads the fields shared by Adam's and AdamW's options.
template <class Options>
void write_adam_options(const Options &o, serialize::OutputArchive &archive) {
  archive.write("lr", o.lr());
  archive.write("betas", betas_list(o.betas()));
  archive.write("eps", o.eps());
  archive.write("weight_decay", o.weight_decay());
  archive.write("amsgrad", o.amsgrad());
}
template <class Options>
void read_adam_options(Options &o, serialize::InputArchive &archive) {
  o.lr(read_double(archive, "lr"));
  o.betas(read_betas(archive));
  o.eps(read_double(archive, "eps"));
  o.weight_decay(read_double(archive, "weight_decay"));
  o.amsgrad(read_bool(archive, "amsgrad"));
}
template <class State>
void write_adam_state(const State &s, serialize::OutputArchive &archive) {
  archive.write("step", s.step());
  archive.write("exp_avg", s.exp_avg());
  archive.write("exp_avg_sq", s.exp_avg_sq());
  archive.write("max_exp_avg_sq", s.max_exp_avg_sq());
}
template <class State>
void read_adam_state(State &s, serialize::InputArchive &archive) {
  s.step(read_int(archive, "step"));
  archive.read("exp_avg", s.exp_avg());
  archive.read("exp_avg_sq", s.exp_avg_sq());
  archive.read("max_exp_avg_sq", s.max_exp_avg_sq());
}
} // namespace

// --- base classes
// ----------------------------------------------------------------

void OptimizerParamState::serialize(serialize::OutputArchive &) const {
  throw NotImplementedError(
      "serialize(OutputArchive&) has not been implemented for this optimizer "
      "param state; override it in your OptimizerCloneableParamState "
      "subclass");
}
void OptimizerParamState::serialize(serialize::InputArchive &) {
  throw NotImplementedError(
      "serialize(InputArchive&) has not been implemented for this optimizer "
      "param state; override it in your OptimizerCloneableParamState "
      "subclass");
}
void OptimizerOptions::serialize(serialize::OutputArchive &) const {
  throw NotImplementedError(
      "serialize(OutputArchive&) has not been implemented for these "
      "optimizer options; override it in your OptimizerCloneableOptions "
      "subclass");
}
void OptimizerOptions::serialize(serialize::InputArchive &) {
  throw NotImplementedError(
      "serialize(InputArchive&) has not been implemented for these "
      "optimizer options; override it in your OptimizerCloneableOptions "
      "subclass");
}

void Optimizer::save(serialize::OutputArchive &archive) const {
  archive.write("optimizer", name());
  serialize::OutputArchive groups;
  groups.write("size", int64_t(param_groups_.size()));
  serialize::OutputArchive state;
  int64_t k = 0;
  for (size_t i = 0; i < param_groups_.size(); ++i) {
    const auto &group = param_groups_[i];
    serialize::OutputArchive g;
    g.write("num_params", int64_t(group.params().size()));
    for (size_t j = 0; j < group.params().size(); ++j) {
      const Tensor &p = group.params()[j];
      g.write("sizes/" + std::to_string(j), p.sizes());
      if (OptimizerParamState *s = find_state(p)) {
        serialize::OutputArchive sa;
        s->serialize(sa);
        state.write(std::to_string(k), sa);
      }
      ++k;
    }
    serialize::OutputArchive options;
    group.options().serialize(options);
    g.write("options", options);
    groups.write(std::to_string(i), g);
  }
  archive.write("param_groups", groups);
  archive.write("state", state);
}

void Optimizer::load(serialize::InputArchive &archive) {
  IValue saved_name;
  archive.read("optimizer", saved_name);
  EMBER_CHECK(saved_name.isString(),
              "optimizer archive: 'optimizer' should hold a name");
  EMBER_CHECK_VALUE(saved_name.toStringRef() == name(),
                    "cannot load the state saved by optimizer ",
                    saved_name.toStringRef(), " into optimizer ", name());
  serialize::InputArchive groups;
  archive.read("param_groups", groups);
  EMBER_CHECK_VALUE(read_int(groups, "size") == int64_t(param_groups_.size()),
                    "loaded state dict has a different number of parameter "
                    "groups");

  // Read and check everything first, then commit, so that a failed load
  // leaves the optimizer as it was.
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  StateMap state;
  serialize::InputArchive saved_state;
  archive.read("state", saved_state);
  int64_t k = 0;
  for (size_t i = 0; i < param_groups_.size(); ++i) {
    const auto &group = param_groups_[i];
    serialize::InputArchive g;
    groups.read(std::to_string(i), g);
    EMBER_CHECK_VALUE(read_int(g, "num_params") ==
                          int64_t(group.params().size()),
                      "loaded state dict contains a parameter group that "
                      "doesn't match the size of optimizer's group");
    for (size_t j = 0; j < group.params().size(); ++j) {
      const Tensor &p = group.params()[j];
      IValue sizes;
      g.read("sizes/" + std::to_string(j), sizes);
      EMBER_CHECK(sizes.isIntList(), "optimizer archive: 'sizes/", j,
                  "' should hold a shape");
      EMBER_CHECK_VALUE(sizes.toIntList() == p.sizes(), "parameter ", j,
                        " of param group ", i, " has shape ", p.sizes(),
                        " but the loaded state is for shape ",
                        sizes.toIntList());
      serialize::InputArchive sa;
      if (saved_state.try_read(std::to_string(k), sa)) {
        std::unique_ptr<OptimizerParamState> s = make_param_state();
        s->serialize(sa);
        state[p.unsafeGetTensorImpl()] = std::move(s);
      }
      ++k;
    }
    serialize::InputArchive oa;
    g.read("options", oa);
    std::unique_ptr<OptimizerOptions> o = group.options().clone();
    o->serialize(oa);
    options.push_back(std::move(o));
  }
  for (size_t i = 0; i < param_groups_.size(); ++i)
    param_groups_[i].set_options(std::move(options[i]));
  state_ = std::move(state);
}

// --- SGD
// ----------------------------------------------------------------------

void SGDOptions::serialize(serialize::OutputArchive &archive) const {
  archive.write("lr", lr());
  archive.write("momentum", momentum());
  archive.write("dampening", dampening());
  archive.write("weight_decay", weight_decay());
  archive.write("nesterov", nesterov());
}
void SGDOptions::serialize(serialize::InputArchive &archive) {
  lr(read_double(archive, "lr"));
  momentum(read_double(archive, "momentum"));
  dampening(read_double(archive, "dampening"));
  weight_decay(read_double(archive, "weight_decay"));
  nesterov(read_bool(archive, "nesterov"));
}
void SGDParamState::serialize(serialize::OutputArchive &archive) const {
  archive.write("momentum_buffer", momentum_buffer());
}
void SGDParamState::serialize(serialize::InputArchive &archive) {
  archive.read("momentum_buffer", momentum_buffer());
}

// --- Adam / AdamW
// -----------------------------------------------------------------

void AdamOptions::serialize(serialize::OutputArchive &archive) const {
  write_adam_options(*this, archive);
}
void AdamOptions::serialize(serialize::InputArchive &archive) {
  read_adam_options(*this, archive);
}
void AdamParamState::serialize(serialize::OutputArchive &archive) const {
  write_adam_state(*this, archive);
}
void AdamParamState::serialize(serialize::InputArchive &archive) {
  read_adam_state(*this, archive);
}
void AdamWOptions::serialize(serialize::OutputArchive &archive) const {
  write_adam_options(*this, archive);
}
void AdamWOptions::serialize(serialize::InputArchive &archive) {
  read_adam_options(*this, archive);
}
void AdamWParamState::serialize(serialize::OutputArchive &archive) const {
  write_adam_state(*this, archive);
}
void AdamWParamState::serialize(serialize::InputArchive &archive) {
  read_adam_state(*this, archive);
}

// --- RMSprop
// ----------------------------------------------------------------------

void RMSpropOptions::serialize(serialize::OutputArchive &archive) const {
  archive.write("lr", lr());
  archive.write("alpha", alpha());
  archive.write("eps", eps());
  archive.write("weight_decay", weight_decay());
  archive.write("momentum", momentum());
  archive.write("centered", centered());
}
void RMSpropOptions::serialize(serialize::InputArchive &archive) {
  lr(read_double(archive, "lr"));
  alpha(read_double(archive, "alpha"));
  eps(read_double(archive, "eps"));
  weight_decay(read_double(archive, "weight_decay"));
  momentum(read_double(archive, "momentum"));
  centered(read_bool(archive, "centered"));
}
void RMSpropParamState::serialize(serialize::OutputArchive &archive) const {
  archive.write("step", step());
  archive.write("square_avg", square_avg());
  archive.write("momentum_buffer", momentum_buffer());
  archive.write("grad_avg", grad_avg());
}
void RMSpropParamState::serialize(serialize::InputArchive &archive) {
  step(read_int(archive, "step"));
  archive.read("square_avg", square_avg());
  archive.read("momentum_buffer", momentum_buffer());
  archive.read("grad_avg", grad_avg());
}

} // namespace ember::optim

namespace ember::serialize {

OutputArchive &operator<<(OutputArchive &archive,
                          const optim::Optimizer &optimizer) {
  optimizer.save(archive);
  return archive;
}

InputArchive &operator>>(InputArchive &archive, optim::Optimizer &optimizer) {
  optimizer.load(archive);
  return archive;
}

} // namespace ember::serialize
