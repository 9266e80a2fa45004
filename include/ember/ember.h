#pragma once
/// ember: the one umbrella header (#include <ember/ember.h>), as
/// <torch/torch.h>, which also brings <iostream> (libtorch's examples print
/// with std::cout after including only it).

#include "eager/Dispatcher.h"
#include "eager/Factory.h"
#include "eager/Indexing.h"
#include "eager/Memory.h"
#include "eager/Print.h"
#include "eager/Tensor.h"
#include "eager/TensorIterator.h"
#include "eager/amp/Autocast.h"
#include "eager/amp/GradScaler.h"
#include "eager/generated/Functions.h"
#include "eager/profiler/Profiler.h"
#include "ember/autograd.h"
#include "ember/nn.h"
#include "ember/optim.h"
#include "frontend/Compile.h"
#include "runtime/Allocator.h"
#include "runtime/Cuda.h"
#include "runtime/Generator.h"
#include "runtime/Logging.h"
#include "runtime/ThreadPool.h"

#include <iostream>
