#pragma once
/// ember's neural-network API (libtorch's <torch/nn.h> plus
/// <torch/serialize.h>): nn::Module and ModuleHolder, the layers,
/// nn::functional, nn::init, nn::utils (gradient clipping), and
/// ember::save / ember::load.

#include "eager/nn/ClipGrad.h"
#include "eager/nn/Cloneable.h"
#include "eager/nn/Functional.h"
#include "eager/nn/Init.h"
#include "eager/nn/Module.h"
#include "eager/nn/Modules.h"
#include "eager/nn/Options.h"
#include "eager/nn/OrderedDict.h"
#include "eager/nn/Pimpl.h"
#include "eager/nn/Serialize.h"
