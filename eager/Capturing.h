#pragma once
/// Whether ember::compile is recording ops on this thread (the eager layer's
/// one question about capture; frontend/Capture.cpp does the recording).

#include "eager/DispatchKey.h"

#include <functional>

namespace ember {

class Tensor;

/// Its Capture key is on and not excluded: an eager kernel that capture
/// itself calls sees false.
inline bool is_capturing() {
  const LocalDispatchKeySet &ks = tls_local_dispatch_key_set();
  return ks.included.has(DispatchKey::Capture) &&
         !ks.excluded.has(DispatchKey::Capture);
}

namespace detail {
/// Called by the autograd engine after a backward pass run while compile()
/// records (set by frontend/Capture.cpp): the grads that pass made for the
/// function's arguments become visible through them (Note [An argument's
/// grad] there).
inline void (*capture_after_backward_fn)() = nullptr;
/// Set by frontend/Capture.cpp: marks the call being captured as one replay
/// mode must not replay (no_replay()).
inline void (*capture_no_replay_fn)(const char *why) = nullptr;
/// Set by frontend/Capture.cpp: the hooks of Note [Host state in replayed
/// calls] (replay_guard(), replay_effect(), remake_on_replay(),
/// replay_clear_grad(), and the record of each access to a .grad by
/// Tensor::grad() or, `replaceable` (the caller may assign through it),
/// Tensor::mutable_grad()).
inline void (*capture_replay_guard_fn)(const char *what,
                                       std::function<bool()>) = nullptr;
inline void (*capture_replay_effect_fn)(std::function<void()>) = nullptr;
inline void (*capture_remake_fn)(const Tensor &,
                                 std::function<Tensor()>) = nullptr;
inline void (*capture_grad_read_fn)(const Tensor &owner, const Tensor &grad,
                                    bool replaceable) = nullptr;
inline void (*capture_clear_grad_fn)(const Tensor &owner) = nullptr;
/// Set by frontend/Capture.cpp: a factory (zeros, full) made `t`, which
/// `remake` makes again; a replay remakes the ones that ember's own code
/// made (the derivative formulas of a traced backward, composite ops, code
/// in a LibraryFactories scope: their values follow from shapes and the
/// ops' arguments), not the function's own (whose values may come from
/// host state: Note [Host state in replayed calls]).
inline void (*capture_factory_fn)(const Tensor &t,
                                  std::function<Tensor()> remake) = nullptr;
/// While one is alive on a thread, the factories that thread calls are
/// ember's own code's (capture_factory_fn).
inline thread_local int library_factories_depth = 0;
struct LibraryFactories {
  LibraryFactories() { ++library_factories_depth; }
  ~LibraryFactories() { --library_factories_depth; }
  LibraryFactories(const LibraryFactories &) = delete;
  LibraryFactories &operator=(const LibraryFactories &) = delete;
};
} // namespace detail

// Note [Host state in replayed calls]
// Replay mode (CompileOptions::replay) runs a call's captured program
// without running the function's C++ again, so whatever the function reads
// or writes on the host is the first call's. Code that knows its host state
// declares it while it is captured, and a replay then does what the code
// would have done:
// - replay_guard(what, f): f() is checked before every replay (after the
//   replay key); false captures the call again (state the graph depended
//   on changed, or is gone: explain() lists `what` among the recompiles).
//   It must only read.
// - replay_effect(f): f() runs at every replay, before the program, in the
//   order declared (a step counter's increment).
// - remake_on_replay(t, f): t, a tensor this call made outside the graph
//   from host values (a factory's result, which the graph reads as an
//   input), is made again by f() at every replay, in order with the
//   effects, and the program reads that one.
// - A read of a leaf's .grad (Tensor::grad(), Tensor::mutable_grad()) is
//   recorded with its owner: a replay reads the owner's .grad of that call
//   (zero_grad() and backward make a new one each step), and writes in
//   place go to it; it needs it defined where the capture's was, with the
//   same metadata and sharing memory with no other tensor the graph reads,
//   else the call is captured again.
// - replay_clear_grad(owner): the call clears owner's .grad (zero_grad's
//   set_to_none), and a replay does too, after taking the .grads its
//   program reads. A call that replaces a .grad in any other way
//   (`p.mutable_grad() = ...`) is not replayed: a replay would not assign.
// The optimizers' steps use them (eager/optim), so a training loop's step
// replays. Code that reads host state and declares none of it calls
// no_replay() instead.
inline void replay_guard(const char *what, std::function<bool()> still_valid) {
  if (is_capturing() && detail::capture_replay_guard_fn)
    detail::capture_replay_guard_fn(what, std::move(still_valid));
}
inline void replay_effect(std::function<void()> effect) {
  if (is_capturing() && detail::capture_replay_effect_fn)
    detail::capture_replay_effect_fn(std::move(effect));
}
inline void remake_on_replay(const Tensor &t, std::function<Tensor()> remake) {
  if (is_capturing() && detail::capture_remake_fn)
    detail::capture_remake_fn(t, std::move(remake));
}
inline void replay_clear_grad(const Tensor &owner) {
  if (is_capturing() && detail::capture_clear_grad_fn)
    detail::capture_clear_grad_fn(owner);
}

/// Called by code whose ops read state that compile()'s replay key does not
/// see: an optimizer's step reads each parameter's .grad, a new tensor at
/// every backward, and makes its state on its first call. While capturing,
/// the call is then not replayed (explain() gives `why`): replay mode would
/// run the first call's graph on the first call's tensors.
inline void no_replay(const char *why) {
  if (is_capturing() && detail::capture_no_replay_fn)
    detail::capture_no_replay_fn(why);
}

namespace detail {
/// no_replay()'s reason for a read of the .grad of a compiled function's
/// argument (a capture tensor, Note [An argument's grad] in
/// frontend/Capture.h).
inline constexpr const char *kReadsGrad =
    "it reads an argument's .grad (a new tensor after every zero_grad() and "
    "backward): a replay would read the first call's .grad";
/// ... and for an argument's .grad taken through mutable_grad().
inline constexpr const char *kTakesGrad =
    "it takes an argument's .grad through mutable_grad() (which may replace "
    "it): a replay would read the first call's .grad and assign nothing";
} // namespace detail

} // namespace ember
