#pragma once
/// Every ember::nn module: containers, basic layers, convolution and
/// pooling, normalization, attention and losses (libtorch's
/// torch/nn/modules.h).

#include "eager/nn/ModulesAttention.h"
#include "eager/nn/ModulesContainer.h"
#include "eager/nn/ModulesConv.h"
#include "eager/nn/ModulesLayers.h"
#include "eager/nn/ModulesLoss.h"
#include "eager/nn/ModulesNorm.h"
