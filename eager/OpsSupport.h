#pragma once
/// What the generated op bindings (Ops.cpp) use besides the dispatcher.
#include "eager/Factory.h"
