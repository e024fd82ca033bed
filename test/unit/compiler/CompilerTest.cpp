//===- CompilerTest.cpp - importer, tensor data and artifact writers ------===//
//
// Unit tests that need no files: models are built with the protobuf classes,
// descriptors written by the compiler are read back by the C runtime (the two
// sides of the artifact contract checked against each other).
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Codegen/Artifact.h"
#include "kiln/Codegen/CpuCodegen.h"
#include "kiln/Codegen/CudaCodegen.h"
#include "kiln/Compiler/OnnxImporter.h"
#include "kiln/Compiler/TensorData.h"
#include "kiln/IR/ConstantBlobs.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/runtime.h"

#include "descriptor.h"

#include "onnx_subset.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

using namespace kiln;

namespace {

/// Collects diagnostics formatted as kilnc prints them.
struct Importer {
  Importer() : context(registry()) {
    context.getDiagEngine().registerHandler([this](mlir::Diagnostic &d) {
      messages += formatDiagnostic(d) + "\n";
      return mlir::success();
    });
  }
  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    r.insert<KilnDialect, mlir::func::FuncDialect>();
    return r;
  }
  mlir::OwningOpRef<mlir::ModuleOp> import(const onnx::ModelProto &m) {
    return importOnnxModel(context, m.SerializeAsString(), "model.onnx");
  }
  mlir::MLIRContext context;
  std::string messages;
};

onnx::ModelProto reluModel(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto *o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto *g = m.mutable_graph();
  auto *in = g->add_input();
  in->set_name("x");
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  auto *n = g->add_node();
  n->set_name("act");
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

TEST(Importer, ImportsAndNamesSignature) {
  Importer imp;
  auto module = imp.import(reluModel());
  ASSERT_TRUE(module) << imp.messages;
  auto func = module->lookupSymbol<mlir::func::FuncOp>("main");
  ASSERT_TRUE(func);
  EXPECT_EQ(func.getArgAttrOfType<mlir::StringAttr>(0, kNameAttr).str(), "x");
  EXPECT_EQ(func.getResultAttrOfType<mlir::StringAttr>(0, kNameAttr).str(), "y");
  int relus = 0;
  func.walk([&](ReluOp op) {
    ++relus;
    auto loc = mlir::dyn_cast<mlir::NameLoc>(op.getLoc());
    ASSERT_TRUE(loc);
    EXPECT_EQ(loc.getName().str(), "act");
  });
  EXPECT_EQ(relus, 1);
}

TEST(Importer, UnsupportedOpNamesNodeTypeAndOpset) {
  Importer imp;
  auto m = reluModel(13);
  m.mutable_graph()->mutable_node(0)->set_op_type("FancyOp");
  EXPECT_FALSE(imp.import(m));
  EXPECT_EQ(imp.messages, "error: model.onnx: node 'act' (FancyOp, opset 13): "
                          "unsupported op type 'FancyOp'\n");
}

TEST(Importer, UnknownAttributeIsAnError) {
  Importer imp;
  auto m = reluModel();
  auto *a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.1f);
  EXPECT_FALSE(imp.import(m));
  EXPECT_NE(imp.messages.find("node 'act' (Relu, opset 17): attribute 'alpha' is not supported"), std::string::npos)
      << imp.messages;
}

TEST(Importer, RejectsGarbageAndBadOpsets) {
  Importer imp;
  EXPECT_FALSE(importOnnxModel(imp.context, "\xff\xff\xff\x07garbage", "junk.onnx"));
  EXPECT_NE(imp.messages.find("error: junk.onnx: not a valid ONNX model"), std::string::npos);
  EXPECT_FALSE(imp.import(reluModel(0)));
  EXPECT_FALSE(imp.import(reluModel(kMaxOpset + 1)));
  EXPECT_NE(imp.messages.find("opset 29 is not supported (expected 1 to 28)"), std::string::npos) << imp.messages;
}

TEST(Importer, SymbolicDimensionIsRefused) {
  Importer imp;
  auto m = reluModel();
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("N");
  EXPECT_FALSE(imp.import(m));
  EXPECT_NE(imp.messages.find("graph input 'x' has a symbolic dimension 'N'"), std::string::npos) << imp.messages;
}

TEST(TensorData, DecodesRawAndTypedFields) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(3);
  for (int64_t v : {1, -2, 3})
    t.add_int64_data(v);
  TensorBytes out;
  std::string error;
  ASSERT_TRUE(decodeTensor(t, out, error)) << error;
  ASSERT_EQ(out.data.size(), 24u);
  int64_t second;
  memcpy(&second, out.data.data() + 8, 8);
  EXPECT_EQ(second, -2);

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(2);
  b.set_raw_data(std::string("\x00\x05", 2));
  ASSERT_TRUE(decodeTensor(b, out, error)) << error;
  EXPECT_EQ(out.data, std::string("\x00\x01", 2)); // bools normalized to 0/1
}

TEST(TensorData, TakingTheDataMovesRawBytesAndChecksThemAlike) {
  // A weight-sized raw_data: the decoded bytes are the proto's own buffer,
  // moved, and the proto is left without them.
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1 << 16);
  std::string bytes(4 << 16, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 7);
  t.set_raw_data(bytes);
  const char *buffer = t.raw_data().data();
  TensorBytes copied, taken;
  std::string error;
  ASSERT_TRUE(decodeTensor(t, copied, error)) << error;
  ASSERT_TRUE(decodeTensorTakingData(t, taken, error)) << error;
  EXPECT_EQ(taken.data, bytes);
  EXPECT_EQ(taken.data, copied.data);
  EXPECT_EQ(taken.data.data(), buffer);
  EXPECT_TRUE(t.raw_data().empty());

  // Bools are still normalized, and a short raw_data still refused.
  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(2);
  b.set_raw_data(std::string("\x00\x05", 2));
  ASSERT_TRUE(decodeTensorTakingData(b, taken, error)) << error;
  EXPECT_EQ(taken.data, std::string("\x00\x01", 2));
  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::FLOAT);
  s.add_dims(4);
  s.set_raw_data(std::string(12, '\0'));
  EXPECT_FALSE(decodeTensorTakingData(s, taken, error));
  EXPECT_EQ(error, "its dims need 16 bytes of raw_data, but it holds 12");
  EXPECT_EQ(s.raw_data().size(), 12u);
}

TEST(TensorData, RejectsSizeMismatchNegativeAndHugeDims) {
  TensorBytes out;
  std::string error;
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(4);
  t.set_raw_data(std::string(12, '\0'));
  EXPECT_FALSE(decodeTensor(t, out, error));
  EXPECT_EQ(error, "its dims need 16 bytes of raw_data, but it holds 12");
  t.set_dims(0, -1);
  EXPECT_FALSE(decodeTensor(t, out, error));
  t.set_dims(0, int64_t(1) << 40);
  t.add_dims(int64_t(1) << 40);
  EXPECT_FALSE(decodeTensor(t, out, error));
  EXPECT_NE(error.find("too large"), std::string::npos);
  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::STRING);
  EXPECT_FALSE(decodeTensor(s, out, error));
  EXPECT_EQ(error, "element type string is not supported");
}

// Packed 4- and 2-bit data unpack to a byte each, low bits first; values
// are read back through ONNX's own definitions of the formats.
TEST(TensorData, UnpacksNarrowTypes) {
  TensorBytes out;
  std::string error;
  onnx::TensorProto i4;
  i4.set_data_type(onnx::TensorProto::INT4);
  i4.add_dims(3);                              // odd: the last byte's high nibble is padding
  i4.set_raw_data(std::string("\x7f\x08", 2)); // [-1, 7], [-8, pad]
  ASSERT_TRUE(decodeTensor(i4, out, error)) << error;
  EXPECT_EQ(out.data, std::string("\xff\x07\xf8", 3));
  EXPECT_EQ(elementAsDouble(kilnDTypeOfOnnx(i4.data_type()), out.data.data(), 2), -8);

  onnx::TensorProto u2;
  u2.set_data_type(onnx::TensorProto::UINT2);
  u2.add_dims(5);
  u2.add_int32_data(0xe4); // 0, 1, 2, 3
  u2.add_int32_data(0x02); // 2
  ASSERT_TRUE(decodeTensor(u2, out, error)) << error;
  EXPECT_EQ(out.data, std::string("\x00\x01\x02\x03\x02", 5));
  u2.add_int32_data(0); // one packed byte too many
  EXPECT_FALSE(decodeTensor(u2, out, error));
  EXPECT_EQ(error, "its dims need 2 packed bytes, but the data holds 3");

  onnx::TensorProto f8;
  f8.set_data_type(onnx::TensorProto::FLOAT8E4M3FN);
  f8.add_dims(3);
  for (int32_t bits : {0x38, 0xfe, 0x7f}) // 1.0, -448, NaN
    f8.add_int32_data(bits);
  ASSERT_TRUE(decodeTensor(f8, out, error)) << error;
  int e4m3 = kilnDTypeOfOnnx(onnx::TensorProto::FLOAT8E4M3FN);
  EXPECT_EQ(elementAsDouble(e4m3, out.data.data(), 0), 1.0);
  EXPECT_EQ(elementAsDouble(e4m3, out.data.data(), 1), -448.0);
  EXPECT_TRUE(std::isnan(elementAsDouble(e4m3, out.data.data(), 2)));

  // float4e2m1 0b0111 is 6, its largest value; float8e8m0 0 is 2^-127.
  char f4 = 0x07, e8m0 = 0x00;
  EXPECT_EQ(elementAsDouble(kilnDTypeOfOnnx(onnx::TensorProto::FLOAT4E2M1), &f4, 0), 6.0);
  EXPECT_EQ(elementAsDouble(kilnDTypeOfOnnx(onnx::TensorProto::FLOAT8E8M0), &e8m0, 0), std::ldexp(1.0, -127));
}

// The 8- and 4-bit floats decode without LLVM (kiln-run links no LLVM);
// every code point must agree with APFloat's definition of the format.
TEST(TensorFile, SmallFloatsAgreeWithAPFloat) {
  for (int dtype : {14, 15, 16, 17, 20, 21}) {
    const llvm::fltSemantics *sem = narrowFloatSemantics(dtype);
    ASSERT_NE(sem, nullptr);
    unsigned width = llvm::APFloat::getSizeInBits(*sem);
    for (unsigned code = 0; code < (1u << width); ++code) {
      char byte = static_cast<char>(code);
      double expected = llvm::APFloat(*sem, llvm::APInt(width, code)).convertToDouble();
      double found = elementAsDouble(dtype, &byte, 0);
      // ONNX defines float8e8m0's 0xff as NaN; APFloat converts it to inf.
      if (dtype == 21 && code == 0xff)
        expected = NAN;
      if (std::isnan(expected))
        EXPECT_TRUE(std::isnan(found)) << "dtype " << dtype << " code " << code;
      else
        EXPECT_EQ(found, expected) << "dtype " << dtype << " code " << code;
    }
  }
}

// The wire reader of .pb files decodes what protobuf itself wrote exactly
// as the importer's decoder does, packed and unpacked repeated fields alike.
TEST(TensorFile, WireReaderMatchesProtobuf) {
  std::vector<onnx::TensorProto> tensors(5);
  tensors[0].set_name("f");
  tensors[0].set_data_type(onnx::TensorProto::FLOAT);
  tensors[0].add_dims(2);
  tensors[0].add_dims(2);
  for (float v : {1.5f, -2.0f, 0.0f, 1e30f})
    tensors[0].add_float_data(v);
  tensors[1].set_data_type(onnx::TensorProto::INT32);
  tensors[1].add_dims(3);
  for (int32_t v : {-1, INT32_MIN, 7})
    tensors[1].add_int32_data(v);
  tensors[2].set_data_type(onnx::TensorProto::DOUBLE);
  tensors[2].add_dims(1);
  tensors[2].add_double_data(-0.25);
  tensors[3].set_data_type(onnx::TensorProto::UINT64);
  tensors[3].add_dims(2);
  tensors[3].add_uint64_data(UINT64_MAX);
  tensors[3].add_uint64_data(3);
  tensors[4].set_name("raw");
  tensors[4].set_data_type(onnx::TensorProto::INT4);
  tensors[4].add_dims(3);
  tensors[4].set_raw_data(std::string("\x7f\x08", 2));
  for (const onnx::TensorProto &t : tensors) {
    TensorBytes viaProtobuf, viaWire;
    std::string error;
    ASSERT_TRUE(decodeTensor(t, viaProtobuf, error)) << error;
    ASSERT_TRUE(parseTensorFile(t.SerializeAsString(), viaWire, error)) << error;
    EXPECT_EQ(viaWire.name, viaProtobuf.name);
    EXPECT_EQ(viaWire.dataType, viaProtobuf.dataType);
    EXPECT_EQ(viaWire.dims, viaProtobuf.dims);
    EXPECT_EQ(viaWire.data, viaProtobuf.data);
  }
  // Unpacked: one key per element (what proto2 writers without packed emit).
  // dims 2 (field 1, varint), data_type 7 (field 2), int64_data 5 and -1
  // (field 7, varint; -1 takes ten bytes).
  std::string unpacked("\x08\x02\x10\x07\x38\x05\x38\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 17);
  TensorBytes out;
  std::string error;
  ASSERT_TRUE(parseTensorFile(unpacked, out, error)) << error;
  int64_t values[2];
  ASSERT_EQ(out.data.size(), sizeof values);
  std::memcpy(values, out.data.data(), sizeof values);
  EXPECT_EQ(values[0], 5);
  EXPECT_EQ(values[1], -1);
  // Cut anywhere, the file is read exactly when protobuf reads it and its
  // data fits its dims (a cut between fields is a shorter valid message).
  std::string whole = tensors[0].SerializeAsString();
  for (size_t n = 1; n < whole.size(); ++n) {
    onnx::TensorProto cut;
    TensorBytes expected;
    bool valid = cut.ParseFromString(whole.substr(0, n)) && decodeTensor(cut, expected, error);
    EXPECT_EQ(parseTensorFile(whole.substr(0, n), out, error), valid) << n;
    if (valid) {
      EXPECT_EQ(out.data, expected.data) << n;
    }
  }
}

TEST(TensorFile, ReplaceInitializersKeepsEveryOtherField) {
  onnx::ModelProto m;
  m.set_ir_version(9);
  m.set_producer_name("test");
  onnx::GraphProto *g = m.mutable_graph();
  g->set_name("g");
  onnx::TensorProto *w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_float_data(1);
  w->add_float_data(2);
  onnx::TensorProto *b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(1);
  b->set_raw_data(std::string(4, '\0'));
  TensorBytes value;
  value.name = "w";
  value.dataType = onnx::TensorProto::FLOAT;
  value.dims = {2};
  value.numElements = 2;
  float data[2] = {3, 4};
  value.data.assign(reinterpret_cast<const char *>(data), sizeof data);
  std::string bytes, error;
  ASSERT_TRUE(replaceInitializers(m.SerializeAsString(), {value}, bytes, error)) << error;
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(bytes));
  EXPECT_EQ(back.ir_version(), 9);
  EXPECT_EQ(back.producer_name(), "test");
  EXPECT_EQ(back.graph().name(), "g");
  ASSERT_EQ(back.graph().initializer_size(), 2);
  const onnx::TensorProto &w2 = back.graph().initializer(0);
  EXPECT_EQ(w2.name(), "w");
  EXPECT_EQ(w2.float_data_size(), 0);
  EXPECT_EQ(w2.raw_data(), value.data);
  EXPECT_EQ(back.graph().initializer(1).SerializeAsString(), b->SerializeAsString());

  value.dims = {3};
  EXPECT_FALSE(replaceInitializers(m.SerializeAsString(), {value}, bytes, error));
  EXPECT_EQ(error, "initializer 'w' is float [2], the value written back is float [3]");
  value.name = "v";
  EXPECT_FALSE(replaceInitializers(m.SerializeAsString(), {value}, bytes, error));
  EXPECT_EQ(error, "the model has no initializer named 'v'");
  EXPECT_FALSE(replaceInitializers("\x3a\x05", {value}, bytes, error));
  EXPECT_EQ(error, "not an ONNX model (the protobuf does not parse)");
}

TEST(TensorFile, NpyRoundTripsAndRefusesBadHeaders) {
  std::vector<int64_t> shape = {2, 1, 3};
  std::string data(24, '\x11');
  std::string file = npyFile(1, shape, data);
  EXPECT_EQ(file.size() % 64, 24u); // data starts at a multiple of 64
  NpyTensor t;
  std::string error;
  ASSERT_TRUE(readNpy(file, t, error)) << error;
  EXPECT_EQ(t.dtype, 1);
  EXPECT_EQ(t.shape, shape);
  EXPECT_EQ(t.data, data);
  EXPECT_FALSE(readNpy(file.substr(0, file.size() - 1), t, error));
  EXPECT_EQ(error, "expected 24 data bytes, found 23");
  EXPECT_FALSE(readNpy("\x93NUMPZ\x01\x00\x00\x00", t, error));
  EXPECT_EQ(error, "no .npy magic");
  std::string fortran = file;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_FALSE(readNpy(fortran, t, error));
  EXPECT_EQ(error, "Fortran order is not supported");
  ASSERT_TRUE(readNpy(npyFile(8, {}, std::string(1, '\1')), t, error)) << error;
  EXPECT_TRUE(t.shape.empty());
}

// The detached weights added to a code object (decision 0021): each
// global at an offset of its alignment in one more read-only section, the
// code's undefined symbols of their names now defined there (hidden,
// global, of the global's size), a symbol of its own for a global the code
// does not read. Read back by LLVM's ELF reader, then linked and run: the
// code's relocations reach the bytes. Anything but a relocatable ELF
// object is refused without writing a file.
TEST(Artifact, WeightsAddedToTheCodeObjectAtEachSymbol) {
  std::string first(5000, '\0'), second = "abc", third(4096, '\0');
  for (size_t i = 0; i < first.size(); ++i)
    first[i] = static_cast<char>(i * 7);
  for (size_t i = 0; i < third.size(); ++i)
    third[i] = static_cast<char>(255 - i);
  DetachedData data;
  data.globals = {{"m.d0", first, 16, ""}, {"m.d1", second, 64, ""}, {"m.d2", third, 16, ""}};

  // m_read(i) = d0[i] * 256 + d2[i]; d1 is not read.
  auto tm = createCpuTargetMachine(CpuCodegenOptions());
  ASSERT_TRUE(bool(tm)) << llvm::toString(tm.takeError());
  if (!canDetachData((*tm)->getTargetTriple()))
    GTEST_SKIP() << "no ELF objects on this host";
  llvm::LLVMContext llvmContext;
  llvm::Module module("m", llvmContext);
  module.setTargetTriple((*tm)->getTargetTriple());
  module.setDataLayout((*tm)->createDataLayout());
  llvm::IRBuilder<> b(llvmContext);
  auto declare = [&](const DetachedData::Global &global) {
    auto *type = llvm::ArrayType::get(b.getInt8Ty(), global.bytes.size());
    auto *var = new llvm::GlobalVariable(module, type, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage, nullptr,
                                         global.name);
    var->setVisibility(llvm::GlobalValue::HiddenVisibility);
    return var;
  };
  llvm::GlobalVariable *d0 = declare(data.globals[0]);
  llvm::GlobalVariable *d2 = declare(data.globals[2]);
  auto *fn = llvm::Function::Create(llvm::FunctionType::get(b.getInt32Ty(), {b.getInt64Ty()}, false),
                                    llvm::GlobalValue::ExternalLinkage, "m_read", module);
  b.SetInsertPoint(llvm::BasicBlock::Create(llvmContext, "entry", fn));
  auto byteAt = [&](llvm::GlobalVariable *var) {
    llvm::Value *at = b.CreateGEP(b.getInt8Ty(), var, fn->getArg(0));
    return b.CreateZExt(b.CreateLoad(b.getInt8Ty(), at), b.getInt32Ty());
  };
  b.CreateRet(b.CreateAdd(b.CreateShl(byteAt(d0), 8), byteAt(d2)));
  auto code = emitObject(module, **tm);
  ASSERT_TRUE(bool(code)) << llvm::toString(code.takeError());

  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("weights", "o", path));
  ASSERT_FALSE(llvm::errorToBool(writeObjectWithData(*code, data, path)));
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buffer));
  auto file = llvm::object::ObjectFile::createObjectFile(**buffer);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(file->get());
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->getELFFile().getHeader().e_type, llvm::ELF::ET_REL);

  // The data section is the last one.
  std::optional<llvm::object::SectionRef> rodata;
  for (const llvm::object::SectionRef &section : elf->sections())
    rodata = section;
  ASSERT_TRUE(rodata.has_value());
  EXPECT_EQ(cantFail(rodata->getName()), ".rodata");
  EXPECT_EQ(rodata->getAlignment().value(), 64u);
  EXPECT_FALSE(rodata->isText());
  llvm::Expected<llvm::StringRef> contents = rodata->getContents();
  ASSERT_TRUE(bool(contents));

  std::map<std::string, std::pair<uint64_t, uint64_t>> symbols;
  for (const llvm::object::ELFSymbolRef &symbol : elf->symbols()) {
    std::string name = cantFail(symbol.getName()).str();
    if (name.rfind("m.d", 0) != 0)
      continue;
    EXPECT_EQ(symbol.getBinding(), llvm::ELF::STB_GLOBAL) << name;
    EXPECT_EQ(symbol.getOther(), llvm::ELF::STV_HIDDEN) << name;
    EXPECT_EQ(symbol.getELFType(), llvm::ELF::STT_OBJECT) << name;
    EXPECT_EQ(*cantFail(symbol.getSection()), *rodata) << name;
    EXPECT_TRUE(symbols.insert({name, {cantFail(symbol.getValue()), symbol.getSize()}}).second) << name << " twice";
  }
  ASSERT_EQ(symbols.size(), 3u);
  for (const DetachedData::Global &global : data.globals) {
    auto [offset, size] = symbols[global.name];
    EXPECT_EQ(offset % global.alignment, 0u) << global.name;
    EXPECT_EQ(size, global.bytes.size()) << global.name;
    EXPECT_EQ(contents->substr(offset, size), global.bytes) << global.name;
  }
  // Laid out in order, each at the next offset of its alignment.
  EXPECT_EQ(symbols["m.d1"].first, 5056u);
  EXPECT_EQ(symbols["m.d2"].first, 5072u);
  EXPECT_EQ(contents->size(), 5072u + 4096u);

  // Linked into a library, the code reads the weights it was given.
  if (auto cc = llvm::sys::findProgramByName("cc")) {
    std::string library = (path + ".so").str();
    llvm::SmallVector<llvm::StringRef> args = {*cc, "-shared", "-o", library, path};
    std::string message;
    ASSERT_EQ(runLinkerDriver(*cc, args, message), 0) << message;
    std::string error;
    auto lib = llvm::sys::DynamicLibrary::getPermanentLibrary(library.c_str(), &error);
    llvm::sys::fs::remove(library);
    ASSERT_TRUE(lib.isValid()) << error;
    auto read = reinterpret_cast<int32_t (*)(int64_t)>(lib.getAddressOfSymbol("m_read"));
    ASSERT_NE(read, nullptr);
    for (int64_t i : {0, 1, 77, 4095})
      EXPECT_EQ(read(i), (uint8_t(first[i]) << 8) + uint8_t(third[i])) << i;
  }
  llvm::sys::fs::remove(path);

  llvm::SmallString<128> refused;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("refused", "o", refused));
  llvm::sys::fs::remove(refused);
  EXPECT_TRUE(llvm::errorToBool(writeObjectWithData("not an object at all, not even a header", data, refused)));
  EXPECT_FALSE(llvm::sys::fs::exists(refused));
}

// A compile whose weights were added to the object after code generation
// (a Gemm with 2 MB of them: added even with code for one part) leaves none of its blobs in
// the caller's context, as one whose LLVM constants held them did not.
TEST(Artifact, DetachedWeightsLeaveNoBlobsBehind) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto *o = m.add_opset_import();
  o->set_domain("");
  o->set_version(17);
  auto *g = m.mutable_graph();
  auto addInput = [&](const char *name, std::vector<int64_t> dims) {
    auto *in = g->add_input();
    in->set_name(name);
    auto *tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  addInput("x", {4, 512});
  auto addWeight = [&](const char *name, std::vector<int64_t> dims) {
    auto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      count *= d;
    }
    std::vector<float> values(count);
    for (int64_t i = 0; i < count; ++i)
      values[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
    t->set_raw_data(values.data(), values.size() * sizeof(float));
  };
  addWeight("w", {512, 1024});
  addWeight("b", {1024});
  auto *n = g->add_node();
  n->set_name("gemm");
  n->set_op_type("Gemm");
  n->add_input("x");
  n->add_input("w");
  n->add_input("b");
  n->add_output("y");
  g->add_output()->set_name("y");

  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("detached", "onnx", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << m.SerializeAsString();
  }
  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  CompileOptions options;
  options.inputPath = path.str().str();
  options.name = "m";
  options.jobs = 1;
  auto compiled = compileToObject(context, options);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(mlir::succeeded(compiled));

  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(compiled->object, "m.o"));
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  bool detached = false;
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols())
    if (llvm::Expected<llvm::StringRef> name = symbol.getName())
      detached |= *name == "m.d0";
    else
      llvm::consumeError(name.takeError());
  EXPECT_TRUE(detached);
  EXPECT_EQ(releaseUnusedBlobs(&context, nullptr, {}), 0u);
}

TEST(Artifact, SanitizesIdentifiers) {
  EXPECT_EQ(sanitizeIdentifier("input.1"), "input_1");
  EXPECT_EQ(sanitizeIdentifier("0abc"), "t_0abc");
  EXPECT_EQ(sanitizeIdentifier("float"), "float_");
  EXPECT_EQ(sanitizeIdentifier(""), "t_");
}

ArtifactInfo sampleInfo() {
  ArtifactInfo info;
  info.name = "net";
  info.inputs.push_back({"data.in", "data_in", KILN_DTYPE_F32, "float", {1, 4}, 16, {}});
  info.outputs.push_back({"scores", "scores", KILN_DTYPE_I64, "int64_t", {2}, 16, {}});
  info.arenaBytes = 256;
  info.arenaAlignment = 64;
  info.arenaLowerBoundBytes = 128;
  info.triple = "x86_64-unknown-linux-gnu";
  info.cpu = "x86-64";
  return info;
}

TEST(Artifact, HeaderDeclaresEntryAndArena) {
  std::string h = emitHeader(sampleInfo());
  EXPECT_NE(h.find("#define NET_ARENA_BYTES 256ull"), std::string::npos) << h;
  EXPECT_NE(h.find("#define NET_ARENA_LOWER_BOUND_BYTES 128ull"), std::string::npos);
  EXPECT_NE(h.find("kiln_status_t net_run(\n    const float *data_in /* 1x4 */,\n"
                   "    int64_t *scores /* 2 */,\n    void *arena);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("const kiln_artifact_t *net_artifact(void);"), std::string::npos);
}

kiln_status_t fakeRun(void *const *, void *) { return KILN_STATUS_OK; }

TEST(Artifact, RuntimeReadsTheCompilersDescriptor) {
  std::string desc = buildDescriptor(sampleInfo());
  EXPECT_EQ(desc, buildDescriptor(sampleInfo())); // deterministic
  kiln_artifact_t artifact = {KILN_ABI_VERSION,
                              kiln_descriptor_checksum(desc.data(), desc.size()),
                              desc.data(),
                              desc.size(),
                              fakeRun,
                              nullptr,
                              nullptr,
                              nullptr,
                              nullptr,
                              0,
                              0,
                              0,
                              nullptr};
  kiln_model_t *model = nullptr;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << kiln_last_error();
  EXPECT_STREQ(kiln_model_name(model), "net");
  EXPECT_EQ(kiln_model_arena_bytes(model), 256u);
  EXPECT_EQ(kiln_model_arena_alignment(model), 64u);
  EXPECT_EQ(kiln_model_arena_lower_bound_bytes(model), 128u);
  ASSERT_EQ(kiln_model_num_inputs(model), 1u);
  kiln_tensor_info_t info;
  ASSERT_EQ(kiln_model_input_info(model, 0, &info), KILN_STATUS_OK);
  EXPECT_STREQ(info.name, "data.in");
  EXPECT_EQ(info.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.shape[1], 4);
  ASSERT_EQ(kiln_model_output_info(model, 0, &info), KILN_STATUS_OK);
  EXPECT_EQ(info.dtype, KILN_DTYPE_I64);
  EXPECT_EQ(info.size_bytes, 16u);
  kiln_model_close(model);
}

TEST(Diagnostics, FormatsFileOnlyAndNodeLocations) {
  mlir::MLIRContext ctx;
  std::string text;
  ctx.getDiagEngine().registerHandler([&](mlir::Diagnostic &d) {
    text = formatDiagnostic(d);
    return mlir::success();
  });
  auto file = mlir::FileLineColLoc::get(&ctx, "m.onnx", 0, 0);
  mlir::emitError(file) << "the graph has no outputs";
  EXPECT_EQ(text, "error: m.onnx: the graph has no outputs");
  mlir::emitError(mlir::NameLoc::get(mlir::StringAttr::get(&ctx, "n1"), file)) << "'kiln.add' op failed";
  EXPECT_EQ(text, "error: m.onnx: node 'n1': 'kiln.add' op failed");
}

} // namespace

// ---- CUDA: NVRTC errors and the descriptor the runtime reads ------------------

namespace {

/// A program of two kernels; the second has `k1Body` as its body.
CudaProgram twoKernels(mlir::MLIRContext &context, const std::string &k1Body) {
  CudaProgram p;
  p.gpuArch = "sm_90";
  p.source = "typedef long long int64_t;\n"                    // line 1
             "extern \"C\" __global__ void k0(char *out0) {\n" // 2
             "  out0[0] = 1;\n"                                // 3
             "}\n"                                             // 4
             "extern \"C\" __global__ void k1(char *out0) {\n" // 5
             "  " +
             k1Body +
             "\n"   // 6
             "}\n"; // 7
  p.kernels.push_back({"k0", mlir::NameLoc::get(mlir::StringAttr::get(&context, "first")), 2, 4});
  p.kernels.push_back({"k1", mlir::NameLoc::get(mlir::StringAttr::get(&context, "second")), 5, 7});
  return p;
}

} // namespace

// A compile error is reported at the node of the kernel it is in.
TEST(CudaCodegen, NvrtcErrorsNameTheKernel) {
  if (!haveNvrtc())
    GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
  Importer importer;
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&importer.context));
  CudaProgram bad = twoKernels(importer.context, "out0[0] = undeclared_name;");
  EXPECT_TRUE(mlir::failed(compileCudaProgram(*module, bad)));
  EXPECT_NE(importer.messages.find("error: node 'second': nvrtc could not compile kernel 'k1' "
                                   "(line 6 of the CUDA C): identifier \"undeclared_name\" is undefined"),
            std::string::npos)
      << importer.messages;

  importer.messages.clear();
  CudaProgram good = twoKernels(importer.context, "out0[0] = 2;");
  ASSERT_TRUE(mlir::succeeded(compileCudaProgram(*module, good))) << importer.messages;
  EXPECT_EQ(good.cubin.substr(0, 4), "\x7f"
                                     "ELF");
  EXPECT_NE(good.ptx.find(".entry k1"), std::string::npos);
  EXPECT_TRUE(good.moreCubins.empty());

  // A list of architectures: a cubin for each, the PTX for the lowest.
  CudaProgram list = twoKernels(importer.context, "out0[0] = 2;");
  list.gpuArch = "sm_80";
  list.moreGpuArchs = {"sm_86", "sm_90"};
  ASSERT_TRUE(mlir::succeeded(compileCudaProgram(*module, list))) << importer.messages;
  ASSERT_EQ(list.moreCubins.size(), 2u);
  for (const std::string &cubin : list.moreCubins)
    EXPECT_EQ(cubin.substr(0, 4), "\x7f"
                                  "ELF");
  EXPECT_NE(list.moreCubins[0], list.moreCubins[1]);
  EXPECT_NE(list.cubin, list.moreCubins[1]);
  EXPECT_NE(list.ptx.find(".target sm_80"), std::string::npos);
}

// --gpu-arch lists: sorted, without repeats; the first bad item is named.
TEST(CudaCodegen, ParsesArchitectureLists) {
  std::vector<std::string> archs;
  std::string bad;
  ASSERT_TRUE(parseGpuArchs("sm_90, sm_80,sm_90,sm_100", archs, bad));
  EXPECT_EQ(archs, (std::vector<std::string>{"sm_80", "sm_90", "sm_100"}));
  EXPECT_FALSE(parseGpuArchs("sm_80,sm_50", archs, bad));
  EXPECT_EQ(bad, "sm_50");
  EXPECT_FALSE(parseGpuArchs("sm_80,", archs, bad));
  EXPECT_EQ(bad, "");
}

// The descriptor of a CUDA program reads back in the C runtime with its
// target, architecture and steps.
TEST(CudaCodegen, DescriptorReadsBack) {
  mlir::MLIRContext context;
  ArtifactInfo info;
  info.name = "m";
  info.triple = "cuda";
  info.arenaBytes = 512;
  info.arenaAlignment = 256;
  info.inputs.push_back({"x", "x", 1, "float", {4}, 16, {}});
  info.outputs.push_back({"y", "y", 1, "float", {4}, 16, {}});
  CudaProgram p;
  p.gpuArch = "sm_80";
  p.ptx = ".version 8.0";
  p.kernels.push_back({"k0", mlir::UnknownLoc::get(&context), 1, 2});
  p.steps.push_back({0,
                     3,
                     256,
                     {{CudaSpace::Input, 0, 0}, {CudaSpace::Arena, 0, 256}, {CudaSpace::Output, 0, 0}},
                     std::nullopt,
                     std::nullopt,
                     std::nullopt});
  std::string desc = buildDescriptor(info, &p);
  kiln_artifact_t artifact{KILN_ABI_VERSION,
                           kiln_descriptor_checksum(desc.data(), desc.size()),
                           desc.data(),
                           desc.size(),
                           [](void *const *, void *) { return KILN_STATUS_UNAVAILABLE; },
                           nullptr,
                           nullptr,
                           nullptr,
                           nullptr,
                           0,
                           0,
                           0,
                           nullptr};
  kiln_model_t *model = nullptr;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << kiln_last_error();
  EXPECT_EQ(kiln_model_run(model, nullptr, 1, nullptr, 1, nullptr, 0), KILN_STATUS_UNAVAILABLE);
  kiln_model_close(model);

  // With more architectures, each further cubin is written with its name.
  p.cubin = std::string("\x7f"
                        "ELF"
                        "\x50",
                        5);
  p.moreGpuArchs = {"sm_86", "sm_90"};
  p.moreCubins = {std::string("\x7f"
                              "ELF"
                              "\x56",
                              5),
                  std::string("\x7f"
                              "ELF"
                              "\x5a"
                              "!",
                              6)};
  desc = buildDescriptor(info, &p);
  kiln_desc_model_t m;
  ASSERT_EQ(kiln_desc_read(desc.data(), desc.size(), &m, nullptr, 0), KILN_STATUS_OK);
  EXPECT_STREQ(m.gpu_arch.data, "sm_80");
  EXPECT_EQ(m.cubin_size, 5u);
  ASSERT_EQ(m.num_more_cubins, 2u);
  EXPECT_STREQ(m.more_arch[0].data, "sm_86");
  EXPECT_STREQ(m.more_arch[1].data, "sm_90");
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(m.more_cubin[1]), m.more_cubin_size[1]), p.moreCubins[1]);

  // A gemm step is written as kernel index kernels + gemm, and the C reader
  // reads back every field the compiler wrote (the struct's layout).
  CudaGemm g;
  g.m = 4, g.n = 1, g.k = 2, g.lda = 2, g.ldb = 2, g.ldd = 4; // A is 2 x 4, transposed
  g.strideA = 7, g.strideB = 9, g.strideD = 11, g.batch = 1;
  g.dtype = 3, g.dDtype = 1, g.transA = true, g.transB = false, g.accumulate = false, g.tf32 = true;
  g.epilogue = CudaGemm::BiasRelu, g.workspaceBytes = 64;
  p.gemms = {g};
  info.arenaBytes = 512;
  p.steps.push_back({0,
                     1,
                     1,
                     {{CudaSpace::Input, 0, 0},
                      {CudaSpace::Input, 0, 0},
                      {CudaSpace::Arena, 0, 0},
                      {CudaSpace::Arena, 0, 256},
                      {CudaSpace::Output, 0, 0}},
                     0u,
                     std::nullopt,
                     std::nullopt});
  desc = buildDescriptor(info, &p);
  ASSERT_EQ(kiln_desc_read(desc.data(), desc.size(), &m, nullptr, 0), KILN_STATUS_OK);
  ASSERT_EQ(m.num_gemms, 1u);
  EXPECT_EQ(kiln_desc_cuda_step(&m, 1).kernel, 1u);
  kiln_desc_cuda_gemm_t r = kiln_desc_cuda_gemm(&m, 0);
  EXPECT_EQ(r.m, 4);
  EXPECT_EQ(r.n, 1);
  EXPECT_EQ(r.k, 2);
  EXPECT_EQ(r.lda, 2);
  EXPECT_EQ(r.ldb, 2);
  EXPECT_EQ(r.ldd, 4);
  EXPECT_EQ(r.stride_a, 7);
  EXPECT_EQ(r.stride_b, 9);
  EXPECT_EQ(r.stride_d, 11);
  EXPECT_EQ(r.batch, 1u);
  EXPECT_EQ(r.dtype, KILN_DTYPE_BF16);
  EXPECT_EQ(r.trans_a, 1);
  EXPECT_EQ(r.trans_b, 0);
  EXPECT_EQ(r.epilogue, 3);
  EXPECT_EQ(r.accumulate, 0);
  EXPECT_EQ(r.tf32, 1);
  EXPECT_EQ(r.d_dtype, KILN_DTYPE_F32);
  EXPECT_EQ(r.workspace_bytes, 64u);
}
