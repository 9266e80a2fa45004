#pragma once
/// ember::optim: optimizers and learning-rate schedulers
/// (#include <ember/optim.h>, as <torch/optim.h>).

#include "eager/optim/Adam.h"
#include "eager/optim/AdamW.h"
#include "eager/optim/LRScheduler.h"
#include "eager/optim/Optimizer.h"
#include "eager/optim/RMSprop.h"
#include "eager/optim/SGD.h"
