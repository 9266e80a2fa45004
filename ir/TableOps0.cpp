// Definitions of the ember dialect's ops, shard 0 of 2 (mlir-tblgen
// -op-shard-count=2: the two shards build in parallel).
#include "ir/TableOps.h"

#define GET_OP_DEFS_0
#include "ir/EmberOps.cpp.inc"
