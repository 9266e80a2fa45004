#pragma once
/// ember dtypes and value types <-> MLIR types: the one mapping, both ways.
///
///   Float -> f32, Double -> f64, Half -> f16, BFloat16 -> bf16, Long -> i64,
///   Int -> i32, Short -> i16, Char -> i8, Byte -> ui8, Bool -> i1
///
/// A value's type is a ranked tensor with a static shape; a tensor on a
/// device other than the CPU carries `#ember.device<"cuda:0">` as its
/// encoding.

#include "ir/Trace.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace ember::ir {

/// The element type of a dtype (Float -> f32, Byte -> ui8, Bool -> i1...).
mlir::Type element_type(mlir::MLIRContext *ctx, ScalarType dtype);
/// The dtype of an element type; nullopt when it is not one of ember's.
std::optional<ScalarType> scalar_type(mlir::Type type);
/// True for the element types of ember's dtypes.
bool isElementType(mlir::Type type);

/// The tensor type of a value.
mlir::RankedTensorType tensor_type(mlir::MLIRContext *ctx, const ValueType &t);
/// The value type of a tensor type; throws ember::Error for a type that is
/// not an ember tensor (unranked, dynamic shape, other element type).
ValueType value_type(mlir::Type type);
/// The device of a tensor type: its #ember.device encoding, else the CPU.
Device device_of(mlir::RankedTensorType type);

} // namespace ember::ir
