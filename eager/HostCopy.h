#pragma once
// A host copy of a tensor for reading its values there (Tensor::item(),
// printing), outside of any compile() recording and of autograd.
#include "eager/Tensor.h"

namespace ember {

/// `t` itself on the CPU, else a copy there. compile() does not record the
/// copy: the caller has already ended the graph for the read
/// (TensorImpl::sync_capture), and a recorded copy between devices would
/// end the next one as well.
Tensor host_copy(const Tensor &t);

} // namespace ember
