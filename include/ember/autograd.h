#pragma once
/// Autograd: grad modes, the engine, custom functions, gradcheck,
/// checkpointing and the DOT export.

#include "eager/autograd/Checkpoint.h"
#include "eager/autograd/CustomFunction.h"
#include "eager/autograd/Dot.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/Gradcheck.h"
#include "eager/autograd/SavedVariable.h"
#include "eager/autograd/Variable.h"
