#pragma once
/// What the generated op bindings (Ops.cpp) use besides the dispatcher.
#include "eager/Factory.h"

#include <vector>

namespace ember::detail {

/// Records the root base of a view result (r aliases self's storage).
inline Tensor track_view(Tensor r, const Tensor &self) {
  TensorImpl *ri = r.unsafeGetTensorImpl();
  TensorImpl *si = self.unsafeGetTensorImpl();
  if (ri != si && r.is_alias_of(self) && !ri->view_base())
    ri->set_view_base(si->view_base() ? si->view_base()
                                      : self.getIntrusivePtr());
  return r;
}
inline std::vector<Tensor> track_view(std::vector<Tensor> rs,
                                      const Tensor &self) {
  for (Tensor &r : rs)
    track_view(r, self);
  return rs;
}

} // namespace ember::detail
