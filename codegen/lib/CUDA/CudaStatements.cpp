//===- CudaStatements.cpp - payload ops as CUDA C statements -----------===//
//
// C types and literals of the element types, and the statements of a
// kernel's body: arith and math ops as expressions, loads, stores, loops
// and conditionals, affine index expressions.
//
//===----------------------------------------------------------------------===//

#include "../RunTimeSizes.h"
#include "CudaPrinter.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;

namespace kiln::cuda {

/// The C type of a value of type `t`, or "" if the CUDA printer lacks it.
/// f16 and bf16 values compute in float, rounded after every op as LLVM
/// promotes them; only their storage is 16 bits (storageType).
std::string cType(Type t) {
  if (t.isF32() || t.isF16() || t.isBF16())
    return "float";
  if (t.isF64())
    return "double";
  if (t.isIndex())
    return "int64_t";
  if (auto i = dyn_cast<IntegerType>(t)) {
    unsigned w = i.getWidth();
    if (w == 1)
      return "bool";
    if (w != 8 && w != 16 && w != 32 && w != 64)
      return "";
    return (i.isUnsigned() ? "uint" : "int") + std::to_string(w) + "_t";
  }
  return "";
}

/// The C type of a stored element.
std::string storageType(Type t) {
  return t.isF16() || t.isBF16() ? "uint16_t" : cType(t);
}

/// Wraps an expression of type `t` computed in float so that it rounds to t.
std::string rounded(Type t, const std::string &expr) {
  if (t.isF16())
    return "kiln_round_f16(" + expr + ")";
  if (t.isBF16())
    return "kiln_round_bf16(" + expr + ")";
  return expr;
}

/// A stored element read as a value, and a value as it is stored.
std::string loaded(Type t, const std::string &element) {
  if (t.isF16())
    return "kiln_f16_to_f32(" + element + ")";
  if (t.isBF16())
    return "kiln_bf16_to_f32(" + element + ")";
  return element;
}
std::string toStored(Type t, const std::string &value) {
  if (t.isF16())
    return "kiln_f32_to_f16(" + value + ")";
  if (t.isBF16())
    return "kiln_f32_to_bf16(" + value + ")";
  return value;
}

/// The unsigned C type of the same width (for wrapping arithmetic).
std::string unsignedType(Type t) {
  if (t.isIndex())
    return "uint64_t";
  if (auto i = dyn_cast<IntegerType>(t))
    return i.getWidth() == 1 ? "bool"
                             : "uint" + std::to_string(i.getWidth()) + "_t";
  return cType(t);
}

std::string floatLiteral(const APFloat &value, Type type) {
  bool isF32 = !type.isF64();
  if (value.isFinite()) {
    double d = value.convertToDouble();
    char buf[64];
    snprintf(buf, sizeof buf, isF32 ? "%.9g" : "%.17g", d);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos)
      s += ".0";
    return isF32 ? s + "f" : s;
  }
  // inf and nan by their bits: the printed form would not round-trip.
  APInt bits = value.bitcastToAPInt();
  if (isF32) {
    bool lossy;
    APFloat single = value;
    single.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lossy);
    bits = single.bitcastToAPInt();
    return "__int_as_float(0x" + llvm::utohexstr(bits.getZExtValue()) + ")";
  }
  return "__longlong_as_double(0x" + llvm::utohexstr(bits.getZExtValue()) +
         "LL)";
}

std::string intLiteral(const APInt &value, Type type) {
  std::string ty = cType(type);
  if (type.isInteger(1))
    return value.isZero() ? "false" : "true";
  if (isa<IntegerType>(type) && cast<IntegerType>(type).isUnsigned())
    return "((" + ty + ")" + std::to_string(value.getZExtValue()) + "ULL)";
  int64_t v = value.getSExtValue();
  if (v == INT64_MIN)
    return "((" + ty + ")(-9223372036854775807LL - 1))";
  return "((" + ty + ")" + std::to_string(v) + "LL)";
}

std::string CudaPrinter::name(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  // Constants defined outside the kernel (index constants at the top
  // level) are printed where they are used.
  if (auto cst = v.getDefiningOp<arith::ConstantOp>()) {
    if (auto i = dyn_cast<IntegerAttr>(cst.getValue()))
      return intLiteral(i.getValue(), i.getType());
    if (auto f = dyn_cast<FloatAttr>(cst.getValue()))
      return floatLiteral(f.getValue(), f.getType());
  }
  // A size the entry computes from the run-time sizes (kilnc --dim
  // NAME=LO..HI), computed again where it is used.
  // Kept for the kernel, so a chain of them is printed once per value.
  if (v.getParentBlock() == &func.getBody().front()) {
    Value size = v;
    if (auto cast = v.getDefiningOp<arith::IndexCastOp>())
      size = cast.getIn();
    if (size.getType().isIndex() && !cType(v.getType()).empty())
      if (std::optional<DimExpr> e = sizeExpr(size))
        return names[v] = "((" + cType(v.getType()) + ")" + symbolic(*e) + ")";
    // Arithmetic on them (a mean's divisor, the count as a float).
    Operation *def = v.getDefiningOp();
    std::string expr;
    if (def && isa<arith::ArithDialect>(def->getDialect()) &&
        def->getNumResults() == 1 &&
        llvm::all_of(def->getOperands(),
                     [&](Value operand) { return !name(operand).empty(); }) &&
        succeeded(printExpr(def, expr)) && !expr.empty())
      return names[v] = "(" + expr + ")";
  }
  return "";
}

std::string CudaPrinter::affine(AffineExpr e, ArrayRef<std::string> dims) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return dims[d.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return "(int64_t)" + std::to_string(c.getValue());
  auto bin = cast<AffineBinaryOpExpr>(e);
  std::string l = affine(bin.getLHS(), dims), r = affine(bin.getRHS(), dims);
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return "(" + l + " + " + r + ")";
  case AffineExprKind::Mul:
    return "(" + l + " * " + r + ")";
  case AffineExprKind::Mod:
    return "kiln_mod(" + l + ", " + r + ")";
  case AffineExprKind::FloorDiv:
    return "kiln_floordiv(" + l + ", " + r + ")";
  case AffineExprKind::CeilDiv:
    return "kiln_ceildiv(" + l + ", " + r + ")";
  default:
    return "";
  }
}

static const char *cmpfText(arith::CmpFPredicate p) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse:
    return "false";
  case P::OEQ:
    return "(A == B)";
  case P::OGT:
    return "(A > B)";
  case P::OGE:
    return "(A >= B)";
  case P::OLT:
    return "(A < B)";
  case P::OLE:
    return "(A <= B)";
  case P::ONE:
    return "(A < B || A > B)";
  case P::ORD:
    return "(A == A && B == B)";
  case P::UEQ:
    return "!(A < B || A > B)";
  case P::UGT:
    return "!(A <= B)";
  case P::UGE:
    return "!(A < B)";
  case P::ULT:
    return "!(A >= B)";
  case P::ULE:
    return "!(A > B)";
  case P::UNE:
    return "(A != B)";
  case P::UNO:
    return "(A != A || B != B)";
  case P::AlwaysTrue:
    return "true";
  }
  return "false";
}

static std::string substitute(StringRef pattern, const std::string &a,
                              const std::string &b) {
  std::string out;
  for (char c : pattern)
    out += c == 'A' ? a : c == 'B' ? b : std::string(1, c);
  return out;
}

/// The C expression of a pure scalar op, or failure if it has none.
LogicalResult CudaPrinter::printExpr(Operation *op, std::string &expr) {
  auto arg = [&](unsigned i) { return name(op->getOperand(i)); };
  Type resTy = op->getNumResults() ? op->getResult(0).getType() : Type();
  std::string ty = resTy ? cType(resTy) : "";
  std::string uty = resTy ? unsignedType(resTy) : "";
  bool f32 = resTy && (resTy.isF32() || resTy.isF16() || resTy.isBF16());
  auto call = [&](StringRef fn) {
    std::string s = fn.str() + (f32 ? "f(" : "(");
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      s += (i ? ", " : "") + arg(i);
    return s + ")";
  };
  auto binary = [&](StringRef sym) {
    return "(" + arg(0) + " " + sym.str() + " " + arg(1) + ")";
  };
  // Integer add, sub, mul and shl wrap: computed unsigned.
  auto wrapping = [&](StringRef sym) {
    return "(" + ty + ")((" + uty + ")" + arg(0) + " " + sym.str() + " (" +
           uty + ")" + arg(1) + ")";
  };
  auto srcUnsigned = [&](unsigned i) {
    return "(" + unsignedType(op->getOperand(i).getType()) + ")" + arg(i);
  };

  if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    expr = name(cst.getResult());
    return success(!expr.empty());
  }
  if (isa<arith::AddFOp>(op))
    expr = binary("+");
  else if (isa<arith::SubFOp>(op))
    expr = binary("-");
  else if (isa<arith::MulFOp>(op))
    expr = binary("*");
  else if (isa<arith::DivFOp>(op))
    expr = binary("/");
  else if (isa<arith::RemFOp>(op))
    expr = call("fmod");
  else if (isa<arith::NegFOp>(op))
    expr = "(-" + arg(0) + ")";
  else if (isa<arith::AddIOp>(op))
    expr = wrapping("+");
  else if (isa<arith::SubIOp>(op))
    expr = wrapping("-");
  else if (isa<arith::MulIOp>(op))
    expr = wrapping("*");
  else if (isa<arith::ShLIOp>(op))
    expr = wrapping("<<");
  else if (isa<arith::DivSIOp>(op))
    expr = binary("/");
  else if (isa<arith::RemSIOp>(op))
    expr = binary("%");
  else if (isa<arith::DivUIOp>(op))
    expr = "(" + ty + ")(" + srcUnsigned(0) + " / " + srcUnsigned(1) + ")";
  else if (isa<arith::RemUIOp>(op))
    expr = "(" + ty + ")(" + srcUnsigned(0) + " % " + srcUnsigned(1) + ")";
  else if (isa<arith::ShRSIOp>(op))
    expr = binary(">>");
  else if (isa<arith::ShRUIOp>(op))
    expr = "(" + ty + ")(" + srcUnsigned(0) + " >> " + arg(1) + ")";
  else if (isa<arith::AndIOp>(op))
    expr = "(" + ty + ")" + binary("&");
  else if (isa<arith::OrIOp>(op))
    expr = "(" + ty + ")" + binary("|");
  else if (isa<arith::XOrIOp>(op))
    expr = "(" + ty + ")" + binary("^");
  else if (isa<arith::MaxSIOp>(op))
    expr =
        "(" + arg(0) + " > " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")";
  else if (isa<arith::MinSIOp>(op))
    expr =
        "(" + arg(0) + " < " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")";
  else if (isa<arith::MaxUIOp>(op))
    expr = "(" + srcUnsigned(0) + " > " + srcUnsigned(1) + " ? " + arg(0) +
           " : " + arg(1) + ")";
  else if (isa<arith::MinUIOp>(op))
    expr = "(" + srcUnsigned(0) + " < " + srcUnsigned(1) + " ? " + arg(0) +
           " : " + arg(1) + ")";
  else if (isa<arith::MaximumFOp>(op))
    expr = "kiln_maximum(" + arg(0) + ", " + arg(1) + ")";
  else if (isa<arith::MinimumFOp>(op))
    expr = "kiln_minimum(" + arg(0) + ", " + arg(1) + ")";
  else if (isa<arith::MaxNumFOp>(op))
    expr = call("fmax");
  else if (isa<arith::MinNumFOp>(op))
    expr = call("fmin");
  else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    bool isUnsigned =
        cmp.getPredicate() == P::ult || cmp.getPredicate() == P::ule ||
        cmp.getPredicate() == P::ugt || cmp.getPredicate() == P::uge;
    std::string a = isUnsigned ? srcUnsigned(0) : arg(0);
    std::string b = isUnsigned ? srcUnsigned(1) : arg(1);
    const char *sym = "==";
    switch (cmp.getPredicate()) {
    case P::eq:
      sym = "==";
      break;
    case P::ne:
      sym = "!=";
      break;
    case P::slt:
    case P::ult:
      sym = "<";
      break;
    case P::sle:
    case P::ule:
      sym = "<=";
      break;
    case P::sgt:
    case P::ugt:
      sym = ">";
      break;
    case P::sge:
    case P::uge:
      sym = ">=";
      break;
    }
    expr = "(" + a + " " + sym + " " + b + ")";
  } else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    expr = substitute(cmpfText(cmp.getPredicate()), arg(0), arg(1));
  } else if (isa<arith::SelectOp>(op)) {
    if (!op->getOperand(0).getType().isInteger(1))
      return failure();
    expr = "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
  } else if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
                 arith::FPToSIOp, arith::ExtSIOp, arith::IndexCastOp>(op)) {
    expr = "(" + ty + ")" + arg(0);
  } else if (isa<arith::TruncIOp>(op)) {
    expr = resTy.isInteger(1) ? "(bool)(" + arg(0) + " & 1)"
                              : "(" + ty + ")" + arg(0);
  } else if (isa<arith::ExtUIOp, arith::UIToFPOp, arith::IndexCastUIOp>(op)) {
    expr = "(" + ty + ")" + srcUnsigned(0);
  } else if (isa<arith::FPToUIOp>(op)) {
    expr = "(" + ty + ")(" + uty + ")" + arg(0);
  } else if (isa<arith::BitcastOp>(op)) {
    Type from = op->getOperand(0).getType();
    if (from.isF16() || from.isBF16())
      expr = "(" + ty + ")" + toStored(from, arg(0));
    else if (resTy.isF16() || resTy.isBF16())
      expr = loaded(resTy, "(uint16_t)" + arg(0));
    else
      expr = "kiln_bitcast<" + ty + ">(" + arg(0) + ")";
  } else if (isa<math::AbsIOp>(op)) {
    expr =
        "(" + arg(0) + " < 0 ? (" + ty + ")-" + arg(0) + " : " + arg(0) + ")";
  } else if (isa<math::IsNaNOp>(op)) {
    expr = "isnan(" + arg(0) + ")";
  } else if (isa<math::IsInfOp>(op)) {
    expr = "isinf(" + arg(0) + ")";
  } else if (isa<math::IsFiniteOp>(op)) {
    expr = "isfinite(" + arg(0) + ")";
  } else if (isa<math::FPowIOp, math::IPowIOp>(op)) {
    expr = "kiln_powi(" + arg(0) + ", (int64_t)" + arg(1) + ")";
  } else if (isa<math::CountLeadingZerosOp, math::CountTrailingZerosOp,
                 math::CtPopOp>(op)) {
    unsigned width = resTy.getIntOrFloatBitWidth();
    std::string fn = isa<math::CountLeadingZerosOp>(op)    ? "kiln_clz"
                     : isa<math::CountTrailingZerosOp>(op) ? "kiln_ctz"
                                                           : "kiln_popc";
    expr = "(" + ty + ")" + fn + "((uint64_t)(" + uty + ")" + arg(0) + ", " +
           std::to_string(width) + ")";
  } else {
    static const std::pair<StringRef, StringRef> mathFns[] = {
        {"math.exp", "exp"},        {"math.exp2", "exp2"},
        {"math.expm1", "expm1"},    {"math.log", "log"},
        {"math.log2", "log2"},      {"math.log10", "log10"},
        {"math.log1p", "log1p"},    {"math.sqrt", "sqrt"},
        {"math.rsqrt", "rsqrt"},    {"math.cbrt", "cbrt"},
        {"math.tanh", "tanh"},      {"math.sin", "sin"},
        {"math.cos", "cos"},        {"math.tan", "tan"},
        {"math.asin", "asin"},      {"math.acos", "acos"},
        {"math.atan", "atan"},      {"math.atan2", "atan2"},
        {"math.sinh", "sinh"},      {"math.cosh", "cosh"},
        {"math.asinh", "asinh"},    {"math.acosh", "acosh"},
        {"math.atanh", "atanh"},    {"math.erf", "erf"},
        {"math.erfc", "erfc"},      {"math.floor", "floor"},
        {"math.ceil", "ceil"},      {"math.round", "round"},
        {"math.roundeven", "rint"}, {"math.trunc", "trunc"},
        {"math.absf", "fabs"},      {"math.copysign", "copysign"},
        {"math.fma", "fma"},        {"math.powf", "pow"}};
    StringRef opName = op->getName().getStringRef();
    for (auto [mlirName, fn] : mathFns)
      if (opName == mlirName) {
        if (!f32 && !resTy.isF64())
          return failure();
        expr = call(fn);
        return success();
      }
    return failure();
  }
  return success();
}

LogicalResult CudaPrinter::printBlock(Block &block, llvm::raw_ostream &os,
                                      int indent) {
  for (Operation &op : block.without_terminator())
    if (failed(printOp(&op, os, indent)))
      return failure();
  return success();
}

LogicalResult CudaPrinter::printOp(Operation *op, llvm::raw_ostream &os,
                                   int indent) {
  std::string pad(indent, ' ');
  if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    std::string v = fresh();
    os << pad << "int64_t " << v << " = d" << index.getDim() << ";\n";
    names[index.getResult()] = v;
    return success();
  }
  // Views only compute addresses, resolved where they are used.
  if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
          memref::ReinterpretCastOp, memref::CastOp, memref::ViewOp>(op))
    return success();
  if (op->getNumResults() == 1 && op->getNumRegions() == 0 &&
      isMemoryEffectFree(op)) {
    Type t = op->getResult(0).getType();
    std::string ty = cType(t), expr;
    if (ty.empty())
      return op->emitOpError("cuda: type ") << t << " is not supported yet";
    if (failed(printExpr(op, expr)))
      return op->emitOpError("cuda: no CUDA C form for this op yet");
    if (!isa<arith::ConstantOp>(op))
      expr = rounded(t, expr);
    std::string v = fresh();
    os << pad << ty << " " << v << " = " << expr << ";\n";
    names[op->getResult(0)] = v;
    return success();
  }
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    auto ref = resolve(load.getMemRef(), op);
    if (failed(ref))
      return failure();
    SmallVector<std::string> idx;
    for (Value i : load.getIndices())
      idx.push_back(name(i));
    std::string v = fresh();
    os << pad << cType(ref->elementType) << " " << v << " = "
       << loaded(ref->elementType, element(*ref, idx)) << ";\n";
    names[load.getResult()] = v;
    return success();
  }
  if (auto store = dyn_cast<memref::StoreOp>(op)) {
    auto ref = resolve(store.getMemRef(), op);
    if (failed(ref))
      return failure();
    SmallVector<std::string> idx;
    for (Value i : store.getIndices())
      idx.push_back(name(i));
    os << pad << element(*ref, idx) << " = "
       << toStored(ref->elementType, name(store.getValue())) << ";\n";
    return success();
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    SmallVector<std::string> vars;
    for (auto [init, result] :
         llvm::zip(loop.getInitArgs(), loop.getResults())) {
      std::string ty = cType(result.getType());
      if (ty.empty())
        return op->emitOpError("cuda: type ")
               << result.getType() << " is not supported yet";
      std::string v = fresh();
      os << pad << ty << " " << v << " = " << name(init) << ";\n";
      vars.push_back(v);
    }
    std::string iv = fresh();
    os << pad << "for (int64_t " << iv << " = " << name(loop.getLowerBound())
       << "; " << iv << " < " << name(loop.getUpperBound()) << "; " << iv
       << " += " << name(loop.getStep()) << ") {\n";
    names[loop.getInductionVar()] = iv;
    for (auto [arg, v] : llvm::zip(loop.getRegionIterArgs(), vars))
      names[arg] = v;
    if (failed(printBlock(*loop.getBody(), os, indent + 2)))
      return failure();
    // Yielded values go through temporaries: one may be another's iter arg.
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    SmallVector<std::string> temps;
    for (Value y : yield.getOperands()) {
      std::string t = fresh();
      os << pad << "  " << cType(y.getType()) << " " << t << " = " << name(y)
         << ";\n";
      temps.push_back(t);
    }
    for (auto [v, t] : llvm::zip(vars, temps))
      os << pad << "  " << v << " = " << t << ";\n";
    os << pad << "}\n";
    for (auto [result, v] : llvm::zip(loop.getResults(), vars))
      names[result] = v;
    return success();
  }
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    SmallVector<std::string> vars;
    for (Value result : ifOp.getResults()) {
      std::string ty = cType(result.getType());
      if (ty.empty())
        return op->emitOpError("cuda: type ")
               << result.getType() << " is not supported yet";
      std::string v = fresh();
      os << pad << ty << " " << v << ";\n";
      vars.push_back(v);
      names[result] = v;
    }
    auto branch = [&](Region &region) -> LogicalResult {
      Block &block = region.front();
      if (failed(printBlock(block, os, indent + 2)))
        return failure();
      for (auto [v, y] : llvm::zip(vars, block.getTerminator()->getOperands()))
        os << pad << "  " << v << " = " << name(y) << ";\n";
      return success();
    };
    os << pad << "if (" << name(ifOp.getCondition()) << ") {\n";
    if (failed(branch(ifOp.getThenRegion())))
      return failure();
    if (!ifOp.getElseRegion().empty()) {
      os << pad << "} else {\n";
      if (failed(branch(ifOp.getElseRegion())))
        return failure();
    }
    os << pad << "}\n";
    return success();
  }
  return op->emitOpError("cuda: no CUDA C form for this op yet");
}

} // namespace kiln::cuda
