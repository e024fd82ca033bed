//===- NarrowTypes.cpp - storage and conversion of narrow types -----------===//
//
// Decoding reads a table of the type's values (at most 256 entries, built
// with APFloat at compile time). Encoding rounds to nearest even with exact
// f64 arithmetic: scaling by a power of two and rounding to an integer give
// the type's code directly, with the carry into the exponent field when the
// rounding reaches the next binade. No step can produce poison: the
// magnitude is clamped before it is converted to an integer.
//
//===----------------------------------------------------------------------===//

#include "NarrowTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using llvm::APFloat;
using llvm::APInt;

DenseElementsAttr kiln::narrowToStorage(DenseElementsAttr value) {
  auto type = cast<RankedTensorType>(value.getType());
  Type elt = type.getElementType();
  auto storage = RankedTensorType::get(type.getShape(),
                                       IntegerType::get(type.getContext(), 8));
  auto toByte = [&](auto v) -> APInt {
    if constexpr (std::is_same_v<decltype(v), APFloat>)
      return v.bitcastToAPInt().zext(8);
    else
      return elt.isUnsignedInteger() ? v.zext(8) : v.sext(8);
  };
  auto convertAll = [&](auto range) {
    if (value.isSplat())
      return DenseElementsAttr::get(storage, toByte(*range.begin()));
    SmallVector<APInt> bytes;
    bytes.reserve(value.getNumElements());
    for (auto v : range)
      bytes.push_back(toByte(v));
    return DenseElementsAttr::get(storage, bytes);
  };
  if (isa<FloatType>(elt))
    return convertAll(value.getValues<APFloat>());
  return convertAll(value.getValues<APInt>());
}

Value kiln::narrowFloatTable(OpBuilder &b, Location loc, FloatType type) {
  const llvm::fltSemantics &sem = type.getFloatSemantics();
  unsigned width = type.getWidth();
  SmallVector<float> values;
  for (unsigned i = 0; i < (1u << width); ++i)
    values.push_back(
        static_cast<float>(APFloat(sem, APInt(width, i)).convertToDouble()));
  auto tableTy = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                       b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(tableTy, ArrayRef<float>(values)));
}

Value kiln::decodeNarrowFloat(OpBuilder &b, Location loc, Value bits,
                              Value table, FloatType type) {
  // Only the type's own bits index the table, whatever the caller left in
  // the rest of the byte.
  Value mask = arith::ConstantOp::create(
      b, loc,
      b.getI8IntegerAttr(static_cast<int8_t>((1u << type.getWidth()) - 1)));
  Value code = arith::AndIOp::create(b, loc, bits, mask);
  Value index = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), code);
  return tensor::ExtractOp::create(b, loc, table, ValueRange{index});
}

/// f8E8M0FNU holds a biased exponent only. Like ONNX, rounding works on the
/// f32 encoding of `x`: its exponent field, moved up by one when the
/// fraction bits (as ONNX's reference selects them) ask for it.
static Value encodeE8M0(OpBuilder &b, Location loc, Value x, bool saturate,
                        StringRef roundMode) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  auto ne0 = [&](Value v, int64_t maskBits) -> Value {
    Value masked = arith::AndIOp::create(b, loc, v, c(maskBits));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, masked,
                                 c(0));
  };
  if (x.getType() != b.getF32Type())
    x = arith::TruncFOp::create(b, loc, b.getF32Type(), x);
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value shifted = arith::ShRUIOp::create(b, loc, bits, c(23));
  Value exponent = arith::AndIOp::create(b, loc, shifted, c(0xff));
  Value roundUp;
  if (roundMode == "up") {
    roundUp = ne0(bits, 0x4fffff);
  } else if (roundMode == "nearest") {
    Value guard = ne0(bits, 0x400000);
    Value round = ne0(bits, 0x200000);
    Value sticky = ne0(bits, 0x1fffff);
    Value normal =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, exponent, c(0));
    sticky = arith::OrIOp::create(b, loc, sticky, normal);
    Value rest = arith::OrIOp::create(b, loc, round, sticky);
    roundUp = arith::AndIOp::create(b, loc, guard, rest);
  } else { // down
    roundUp = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  }
  if (saturate) {
    Value belowMax = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           exponent, c(0xfe));
    roundUp = arith::AndIOp::create(b, loc, roundUp, belowMax);
  }
  Value carry = arith::ExtUIOp::create(b, loc, i32, roundUp);
  Value code = arith::AddIOp::create(b, loc, exponent, carry);
  // NaN and infinities (exponent field 0xff) stay 0xff, the NaN code.
  Value special = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        exponent, c(0xff));
  code = arith::SelectOp::create(b, loc, special, c(0xff), code);
  return arith::TruncIOp::create(b, loc, b.getI8Type(), code);
}

Value kiln::encodeNarrowFloat(OpBuilder &b, Location loc, Value x,
                              FloatType type, bool saturate,
                              StringRef roundMode) {
  if (isa<Float8E8M0FNUType>(type))
    return encodeE8M0(b, loc, x, saturate, roundMode);

  const llvm::fltSemantics &sem = type.getFloatSemantics();
  int64_t mantissaBits = APFloat::semanticsPrecision(sem) - 1;
  int64_t minExponent = APFloat::semanticsMinExponent(sem);
  unsigned width = APFloat::getSizeInBits(sem);
  APFloat largest = APFloat::getLargest(sem);
  int64_t maxCode = largest.bitcastToAPInt().getZExtValue();
  int64_t signBit = int64_t(1) << (width - 1);
  // Where the type has no -0 (the FNUZ types), a negative value that rounds
  // to zero is +0.
  int64_t negZeroCode =
      APFloat::getZero(sem, /*Negative=*/true).bitcastToAPInt().getZExtValue();
  bool hasNaN = APFloat::semanticsHasNaN(sem);
  bool hasInf = APFloat::semanticsHasInf(sem);
  int64_t overflowCode =
      saturate || (!hasInf && !hasNaN)
          ? maxCode
          : APFloat(hasInf ? APFloat::getInf(sem) : APFloat::getQNaN(sem))
                .bitcastToAPInt()
                .getZExtValue();
  // NaN in a type without NaN (f4E2M1FN) becomes -0, as ml_dtypes does.
  int64_t nanCode = hasNaN
                        ? APFloat::getQNaN(sem).bitcastToAPInt().getZExtValue()
                        : negZeroCode;

  Type i64 = b.getI64Type(), f64 = b.getF64Type();
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  };
  if (x.getType() != f64)
    x = arith::ExtFOp::create(b, loc, f64, x);

  Value bits = arith::BitcastOp::create(b, loc, i64, x);
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  Value isNegative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, bits, c(0));
  // |x| clamped to a value that surely overflows (NaN and infinities too),
  // so every later step stays finite.
  Value big = arith::ConstantOp::create(
      b, loc, b.getF64FloatAttr(2 * largest.convertToDouble()));
  Value magnitude = math::AbsFOp::create(b, loc, x);
  Value finite =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, magnitude, big);
  magnitude = arith::SelectOp::create(b, loc, finite, magnitude, big);
  Value magBits = arith::BitcastOp::create(b, loc, i64, magnitude);

  // e = floor(log2 |x|), at least the smallest normal exponent (below it
  // the quantum is the subnormal one).
  Value biased = arith::ShRUIOp::create(b, loc, magBits, c(52));
  Value exponent = arith::SubIOp::create(b, loc, biased, c(1023));
  exponent = arith::MaxSIOp::create(b, loc, exponent, c(minExponent));
  // n = roundeven(|x| * 2^(mantissaBits - e)), exact in f64.
  Value scaleExp =
      arith::SubIOp::create(b, loc, c(mantissaBits + 1023), exponent);
  Value scaleBits = arith::ShLIOp::create(b, loc, scaleExp, c(52));
  Value scale = arith::BitcastOp::create(b, loc, f64, scaleBits);
  Value scaled = arith::MulFOp::create(b, loc, magnitude, scale);
  Value n = math::RoundEvenOp::create(b, loc, scaled);
  // code = ((e - minExponent) << mantissaBits) + n: n >= 2^mantissaBits
  // carries the implicit bit into the exponent field.
  Value field = arith::SubIOp::create(b, loc, exponent, c(minExponent));
  field = arith::ShLIOp::create(b, loc, field, c(mantissaBits));
  Value nInt = arith::FPToSIOp::create(b, loc, i64, n);
  Value code = arith::AddIOp::create(b, loc, field, nInt);
  // Codes grow with magnitude, so overflow is a code past the largest.
  Value maxCodeV = c(maxCode);
  Value overflows =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, code, maxCodeV);
  Value overflowV = overflowCode == maxCode ? maxCodeV : c(overflowCode);
  code = arith::SelectOp::create(b, loc, overflows, overflowV, code);
  Value zero = c(0);
  Value isZeroCode =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, code, zero);
  Value negZero = negZeroCode == 0 ? zero : c(negZeroCode);
  Value signed_ = arith::OrIOp::create(b, loc, code, c(signBit));
  Value negative =
      arith::SelectOp::create(b, loc, isZeroCode, negZero, signed_);
  code = arith::SelectOp::create(b, loc, isNegative, negative, code);
  code = arith::SelectOp::create(b, loc, isNaN, c(nanCode), code);
  return arith::TruncIOp::create(b, loc, b.getI8Type(), code);
}

Value kiln::wrapNarrowInt(OpBuilder &b, Location loc, Value x, unsigned width,
                          bool isSigned) {
  Value byte = arith::TruncIOp::create(b, loc, b.getI8Type(), x);
  Value shift =
      arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(8 - width));
  Value up = arith::ShLIOp::create(b, loc, byte, shift);
  return isSigned ? Value(arith::ShRSIOp::create(b, loc, up, shift))
                  : Value(arith::ShRUIOp::create(b, loc, up, shift));
}
