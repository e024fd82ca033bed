// Tests of Kiln's C runtime (runtime/include/kiln/runtime.h) and of its
// descriptor reader (runtime/src/descriptor.c). Descriptors are built with
// the flatc-generated C++ builder, the same code the compiler uses, and run
// through fake artifacts whose packed entry point is a function here. The
// corruption tests copy each descriptor into an allocation of exactly its
// size, so a read past the end shows up under AddressSanitizer.
#include "kiln/runtime.h"

#include "checked_math.h"
#include "descriptor.h"
#include "descriptor_layout.h"
#include "kiln/kiln_model_generated.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fb = kiln::fb;

// The reader's field indices and struct sizes (descriptor_layout.h) against
// flatc's code for the same schema: moving a field or resizing a struct in
// kiln_model.fbs without updating the reader fails here, at compile time.
constexpr int slot(int index) { return 4 + 2 * index; }
static_assert(slot(MODEL_FORMAT_VERSION) == fb::Model::VT_FORMAT_VERSION);
static_assert(slot(MODEL_NAME) == fb::Model::VT_NAME);
static_assert(slot(MODEL_TARGET) == fb::Model::VT_TARGET);
static_assert(slot(MODEL_CPU) == fb::Model::VT_CPU);
static_assert(slot(MODEL_PRODUCER) == fb::Model::VT_PRODUCER);
static_assert(slot(MODEL_INPUTS) == fb::Model::VT_INPUTS);
static_assert(slot(MODEL_OUTPUTS) == fb::Model::VT_OUTPUTS);
static_assert(slot(MODEL_ARENA_BYTES) == fb::Model::VT_ARENA_BYTES);
static_assert(slot(MODEL_ARENA_ALIGNMENT) == fb::Model::VT_ARENA_ALIGNMENT);
static_assert(slot(MODEL_ARENA_LOWER_BOUND_BYTES) == fb::Model::VT_ARENA_LOWER_BOUND_BYTES);
static_assert(slot(MODEL_STATE) == fb::Model::VT_STATE);
static_assert(slot(MODEL_STATE_BYTES) == fb::Model::VT_STATE_BYTES);
static_assert(slot(MODEL_STATE_ALIGNMENT) == fb::Model::VT_STATE_ALIGNMENT);
static_assert(slot(MODEL_CUDA) == fb::Model::VT_CUDA);
static_assert(slot(MODEL_KERNEL_NAMES) == fb::Model::VT_KERNEL_NAMES);
static_assert(slot(MODEL_KERNEL_FLOPS) == fb::Model::VT_KERNEL_FLOPS);
static_assert(slot(MODEL_BUCKET_SIZES) == fb::Model::VT_BUCKET_SIZES);
static_assert(slot(MODEL_BUCKET_DTYPES) == fb::Model::VT_BUCKET_DTYPES);
static_assert(slot(MODEL_BUCKET_ELEMENTS) == fb::Model::VT_BUCKET_ELEMENTS);
static_assert(slot(MODEL_SYMBOL_NAMES) == fb::Model::VT_SYMBOL_NAMES);
static_assert(slot(MODEL_SYMBOL_RANGES) == fb::Model::VT_SYMBOL_RANGES);
static_assert(slot(MODEL_ARENA_TERMS) == fb::Model::VT_ARENA_TERMS);
static_assert(slot(CUDA_GPU_ARCH) == fb::CudaModule::VT_GPU_ARCH);
static_assert(slot(CUDA_KERNELS) == fb::CudaModule::VT_KERNELS);
static_assert(slot(CUDA_STEPS) == fb::CudaModule::VT_STEPS);
static_assert(slot(CUDA_ARGS) == fb::CudaModule::VT_ARGS);
static_assert(slot(CUDA_CUBIN) == fb::CudaModule::VT_CUBIN);
static_assert(slot(CUDA_PTX) == fb::CudaModule::VT_PTX);
static_assert(slot(CUDA_CONSTANTS) == fb::CudaModule::VT_CONSTANTS);
static_assert(slot(CUDA_MORE_CUBINS) == fb::CudaModule::VT_MORE_CUBINS);
static_assert(slot(CUDA_GEMMS) == fb::CudaModule::VT_GEMMS);
static_assert(slot(CUDA_CONVS) == fb::CudaModule::VT_CONVS);
static_assert(slot(CUDA_IO_ALIGNMENT) == fb::CudaModule::VT_IO_ALIGNMENT);
static_assert(slot(CUDA_COLLECTIVES) == fb::CudaModule::VT_COLLECTIVES);
static_assert(slot(CUDA_CONV_PADS) == fb::CudaModule::VT_CONV_PADS);
static_assert(slot(CUBIN_GPU_ARCH) == fb::CudaCubin::VT_GPU_ARCH);
static_assert(slot(CUBIN_CUBIN) == fb::CudaCubin::VT_CUBIN);
static_assert(slot(TENSOR_NAME) == fb::Tensor::VT_NAME);
static_assert(slot(TENSOR_DTYPE) == fb::Tensor::VT_DTYPE);
static_assert(slot(TENSOR_SHAPE) == fb::Tensor::VT_SHAPE);
static_assert(slot(TENSOR_OFFSET) == fb::Tensor::VT_OFFSET);
static_assert(slot(TENSOR_ROLE) == fb::Tensor::VT_ROLE);
static_assert(slot(TENSOR_DIMS) == fb::Tensor::VT_DIMS);
static_assert(sizeof(fb::CudaStep) == CUDA_STEP_SIZE);
static_assert(sizeof(fb::CudaArg) == CUDA_ARG_SIZE);
static_assert(sizeof(fb::CudaGemm) == CUDA_GEMM_SIZE);
static_assert(sizeof(fb::CudaConv) == CUDA_CONV_SIZE);
static_assert(sizeof(fb::CudaCollective) == CUDA_COLLECTIVE_SIZE);
static_assert(sizeof(fb::CudaConvPad) == CUDA_CONV_PAD_SIZE);

// The descriptor_checksum an artifact of ABI `abi` carries (zero before 4).
uint32_t checksum(uint32_t abi, const void *descriptor, size_t size) {
  return abi >= 4 ? kiln_descriptor_checksum(descriptor, size) : 0;
}

// An artifact of ABI `abi` for `descriptor` with its checksum and `run`, every
// later field zero: tests set the entries and checksums they need by name, so
// a field appended to kiln_artifact_t changes no test.
kiln_artifact_t artifactOf(const void *descriptor, size_t size, kiln_status_t (*run)(void *const *, void *),
                           uint32_t abi = KILN_ABI_VERSION) {
  kiln_artifact_t artifact;
  std::memset(&artifact, 0, sizeof artifact);
  artifact.abi_version = abi;
  artifact.descriptor_checksum = checksum(abi, descriptor, size);
  artifact.descriptor = descriptor;
  artifact.descriptor_size = size;
  artifact.run_packed = run;
  return artifact;
}

// ---- descriptors --------------------------------------------------------------

struct TensorSpec {
  std::string name;
  fb::DType dtype;
  std::vector<int64_t> shape;
  bool with_name = true;
  std::vector<int64_t> dims = {}; // size programs (Tensor.dims); written only when not empty
};

// A tensor of a training step's state.
struct StateSpec {
  std::string name;
  fb::DType dtype;
  std::vector<int64_t> shape;
  uint64_t offset;
  fb::StateRole role;
};

struct ModelSpec {
  uint32_t format_version = 1;
  std::string name = "tiny";
  std::string target = "x86_64-unknown-linux-gnu";
  std::string cpu = "znver4";
  std::string producer = "kilnc 0.1.0";
  bool with_strings = true; // target, cpu, producer
  std::vector<TensorSpec> inputs = {{"x", fb::DType::f32, {2, 3}}, {"k", fb::DType::i32, {1}}};
  std::vector<TensorSpec> outputs = {{"y", fb::DType::f32, {2, 3}}};
  uint64_t arena_bytes = 256;
  uint64_t arena_alignment = 64;
  uint64_t arena_lower_bound_bytes = 192;
  bool force_defaults = true;
  bool extra_field = false; // a field a newer compiler might append
  const char *identifier = "KILN";
  std::vector<StateSpec> state; // written only when not empty
  uint64_t state_bytes = 0;
  uint64_t state_alignment = 0;
  uint64_t input_offset = 0;             // an offset on input 0 (only state tensors have one)
  std::vector<std::string> kernel_names; // written only when not empty
  std::vector<uint64_t> kernel_flops;    // likewise
  std::vector<std::string> dim_names;    // likewise
  std::vector<int64_t> dim_ranges;       // likewise
  std::vector<int64_t> arena_terms;      // likewise
  uint32_t computed_symbols = 0;         // written only when not 0
};

std::vector<uint8_t> build(const ModelSpec &spec) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(spec.force_defaults);
  // Shapes first: the first object built ends the buffer, and an int64 vector
  // leaves no padding there, so every proper prefix of the buffer cuts into
  // data the model refers to (TruncatedAtEveryLength relies on this).
  std::vector<flatbuffers::Offset<flatbuffers::Vector<int64_t>>> shapes;
  for (const auto *list : {&spec.inputs, &spec.outputs})
    for (const TensorSpec &t : *list)
      shapes.push_back(fbb.CreateVector(t.shape));
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  size_t i = 0;
  for (const auto *list : {&spec.inputs, &spec.outputs})
    for (const TensorSpec &t : *list) {
      auto name = t.with_name ? fbb.CreateString(t.name) : 0;
      auto dims = t.dims.empty() ? 0 : fbb.CreateVector(t.dims);
      tensors.push_back(fb::CreateTensor(fbb, name, t.dtype, shapes[i++], 0, fb::StateRole::none, dims));
    }
  if (spec.input_offset != 0 && !spec.inputs.empty()) {
    const TensorSpec &t = spec.inputs[0];
    tensors[0] = fb::CreateTensor(fbb, fbb.CreateString(t.name), t.dtype, shapes[0], spec.input_offset);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>> state;
  if (!spec.state.empty()) {
    std::vector<flatbuffers::Offset<fb::Tensor>> list;
    for (const StateSpec &t : spec.state)
      list.push_back(fb::CreateTensorDirect(fbb, t.name.c_str(), t.dtype, &t.shape, t.offset, t.role));
    state = fbb.CreateVector(list);
  }
  auto inputs = fbb.CreateVector(tensors.data(), spec.inputs.size());
  auto outputs = fbb.CreateVector(tensors.data() + spec.inputs.size(), spec.outputs.size());
  auto name = fbb.CreateString(spec.name);
  flatbuffers::Offset<flatbuffers::String> target, cpu, producer;
  if (spec.with_strings) {
    target = fbb.CreateString(spec.target);
    cpu = fbb.CreateString(spec.cpu);
    producer = fbb.CreateString(spec.producer);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> kernel_names;
  flatbuffers::Offset<flatbuffers::Vector<uint64_t>> kernel_flops;
  if (!spec.kernel_names.empty())
    kernel_names = fbb.CreateVectorOfStrings(spec.kernel_names);
  if (!spec.kernel_flops.empty())
    kernel_flops = fbb.CreateVector(spec.kernel_flops);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> dim_names;
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> dim_ranges;
  if (!spec.dim_names.empty())
    dim_names = fbb.CreateVectorOfStrings(spec.dim_names);
  if (!spec.dim_ranges.empty())
    dim_ranges = fbb.CreateVector(spec.dim_ranges);
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> arena_terms;
  if (!spec.arena_terms.empty())
    arena_terms = fbb.CreateVector(spec.arena_terms);
  fb::ModelBuilder model(fbb);
  model.add_format_version(spec.format_version);
  model.add_name(name);
  model.add_target(target);
  model.add_cpu(cpu);
  model.add_producer(producer);
  model.add_inputs(inputs);
  model.add_outputs(outputs);
  model.add_arena_bytes(spec.arena_bytes);
  model.add_arena_alignment(spec.arena_alignment);
  model.add_arena_lower_bound_bytes(spec.arena_lower_bound_bytes);
  if (!spec.state.empty())
    model.add_state(state);
  if (spec.state_bytes || spec.state_alignment) {
    model.add_state_bytes(spec.state_bytes);
    model.add_state_alignment(spec.state_alignment);
  }
  if (!spec.kernel_names.empty())
    model.add_kernel_names(kernel_names);
  if (!spec.kernel_flops.empty())
    model.add_kernel_flops(kernel_flops);
  if (!spec.dim_names.empty())
    model.add_symbol_names(dim_names);
  if (!spec.dim_ranges.empty())
    model.add_symbol_ranges(dim_ranges);
  if (!spec.arena_terms.empty())
    model.add_arena_terms(arena_terms);
  if (spec.computed_symbols != 0)
    model.add_computed_symbols(spec.computed_symbols);
  if (spec.extra_field)
    fbb.AddElement<uint64_t>(flatbuffers::FieldIndexToOffset(23), 77, 0); // past `computed_symbols`
  fbb.Finish(model.Finish(), spec.identifier);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

uint32_t load_u32(const std::vector<uint8_t> &buf, size_t at) {
  uint32_t v;
  std::memcpy(&v, buf.data() + at, 4); // FlatBuffers is little-endian, like the hosts we test on
  return v;
}

void store_u32(std::vector<uint8_t> &buf, size_t at, uint32_t v) { std::memcpy(buf.data() + at, &v, 4); }

// Offset in buf of the uoffset field `field` of the root Model table.
size_t model_field_at(const std::vector<uint8_t> &buf, flatbuffers::voffset_t field) {
  const auto *table = reinterpret_cast<const flatbuffers::Table *>(fb::GetModel(buf.data()));
  const uint8_t *at = table->GetAddressOf(field);
  EXPECT_NE(at, nullptr);
  return static_cast<size_t>(at - buf.data());
}

// ---- fake artifact ------------------------------------------------------------

// What the fake compiled code saw; reset by every fixture.
struct Fake {
  int calls = 0;
  void *buffers[3] = {};
  void *arena = nullptr;
  size_t arena_bytes = 256;
  kiln_status_t result = KILN_STATUS_OK;
};
Fake g_fake;

// The default signature: y = x + k, with x, y f32[2,3] and k i32[1]. Fills the
// whole arena, so an arena smaller than the signature says is an ASan error.
kiln_status_t fake_run(void *const *buffers, void *arena) {
  ++g_fake.calls;
  for (int i = 0; i < 3; ++i)
    g_fake.buffers[i] = buffers[i];
  g_fake.arena = arena;
  if (g_fake.result != KILN_STATUS_OK)
    return g_fake.result;
  if (g_fake.arena_bytes > 0)
    std::memset(arena, 0xA5, g_fake.arena_bytes);
  const float *x = static_cast<const float *>(buffers[0]);
  const int32_t *k = static_cast<const int32_t *>(buffers[1]);
  float *y = static_cast<float *>(buffers[2]);
  for (int i = 0; i < 6; ++i)
    y[i] = x[i] + static_cast<float>(k[0]);
  return KILN_STATUS_OK;
}

// Data and views for one run of the default signature.
struct RunArgs {
  int64_t x_shape[2] = {2, 3};
  int64_t k_shape[1] = {1};
  int64_t y_shape[2] = {2, 3};
  float x[6] = {0.5f, 1.5f, -2.0f, 3.0f, 4.25f, -5.5f};
  int32_t k[1] = {10};
  float y[6] = {};
  alignas(64) unsigned char arena_storage[256 + 64] = {};
  kiln_tensor_t inputs[2] = {{KILN_DTYPE_F32, 2, x_shape, x}, {KILN_DTYPE_I32, 1, k_shape, k}};
  kiln_tensor_t outputs[1] = {{KILN_DTYPE_F32, 2, y_shape, y}};
  const kiln_tensor_t *in = inputs;
  size_t num_inputs = 2;
  const kiln_tensor_t *out = outputs;
  size_t num_outputs = 1;
  void *arena = arena_storage;
  size_t arena_bytes = 256;

  RunArgs() = default;
  RunArgs(const RunArgs &) = delete;
  RunArgs &operator=(const RunArgs &) = delete;

  kiln_status_t run(const kiln_model_t *model) const {
    return kiln_model_run(model, in, num_inputs, out, num_outputs, arena, arena_bytes);
  }
};

std::string last_error() { return kiln_last_error(); }

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override { g_fake = Fake(); }
  void TearDown() override { kiln_model_close(model_); }

  kiln_status_t open(const ModelSpec &spec, kiln_status_t (*run)(void *const *, void *) = fake_run) {
    kiln_model_close(model_);
    model_ = nullptr;
    descriptor_ = build(spec);
    artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), run);
    return kiln_model_open(&artifact_, &model_);
  }

  // Opens spec and expects it to be refused with status and a message
  // containing message.
  void expect_refused(const ModelSpec &spec, kiln_status_t status, const std::string &message) {
    EXPECT_EQ(open(spec), status) << last_error();
    EXPECT_EQ(model_, nullptr);
    EXPECT_NE(last_error().find(message), std::string::npos) << "message: " << last_error();
  }

  std::vector<uint8_t> descriptor_;
  kiln_artifact_t artifact_{};
  kiln_model_t *model_ = nullptr;
};

// Opens buf (copied into an allocation of exactly its size) and, if that
// succeeds, reads everything the handle exposes. Returns the status.
kiln_status_t open_and_inspect(const uint8_t *data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size > 0 ? size : 1]);
  if (size > 0)
    std::memcpy(copy.get(), data, size);
  kiln_artifact_t artifact = artifactOf(copy.get(), size, fake_run);
  kiln_model_t *model = reinterpret_cast<kiln_model_t *>(&artifact); // must be overwritten
  kiln_status_t status = kiln_model_open(&artifact, &model);
  if (status != KILN_STATUS_OK) {
    EXPECT_EQ(model, nullptr);
    EXPECT_STRNE(kiln_last_error(), "");
    return status;
  }
  copy.reset(); // the handle must not depend on the descriptor any more
  EXPECT_GT(std::strlen(kiln_model_name(model)), 0u);
  EXPECT_FALSE(kiln_model_is_cuda(model));
  for (int output = 0; output < 2; ++output) {
    size_t count = output ? kiln_model_num_outputs(model) : kiln_model_num_inputs(model);
    for (size_t i = 0; i < count; ++i) {
      kiln_tensor_info_t info;
      EXPECT_EQ(output ? kiln_model_output_info(model, i, &info) : kiln_model_input_info(model, i, &info),
                KILN_STATUS_OK);
      EXPECT_GT(std::strlen(info.name), 0u);
      EXPECT_LE(info.rank, 16u);
      size_t elements = 1;
      for (size_t d = 0; d < info.rank; ++d) {
        EXPECT_GE(info.shape[d], 0);
        elements *= static_cast<size_t>(info.shape[d]);
      }
      EXPECT_EQ(info.num_elements, elements);
      EXPECT_EQ(info.size_bytes, elements * kiln_dtype_size(info.dtype));
    }
  }
  size_t alignment = kiln_model_arena_alignment(model);
  EXPECT_TRUE(alignment != 0 && (alignment & (alignment - 1)) == 0);
  kiln_model_close(model);
  return status;
}

// ---- versions, status strings, dtypes -----------------------------------------

// The version calls report the header's version.
TEST(RuntimeVersion, MatchesHeader) {
  EXPECT_EQ(kiln_runtime_version(), static_cast<uint32_t>(KILN_RUNTIME_VERSION));
  EXPECT_STREQ(kiln_runtime_version_string(), "0.1.0");
  EXPECT_EQ(KILN_ABI_VERSION, 10);
}

// Every status has its own name; unknown values get a fixed string, never null.
TEST(RuntimeStatus, Strings) {
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_OK), "ok");
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_INVALID_ARGUMENT), "invalid argument");
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_INVALID_ARTIFACT), "invalid artifact");
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_VERSION_MISMATCH), "version mismatch");
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_OUT_OF_MEMORY), "out of memory");
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_UNAVAILABLE), "unavailable");
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_INTERNAL), "internal error");
  EXPECT_STREQ(kiln_status_string(KILN_STATUS_COMMUNICATION), "communication error");
  // Out-of-range values stay inside the C++ enum's range (0..15) here, where
  // anything else would be undefined; C callers may pass any int.
  EXPECT_STREQ(kiln_status_string(static_cast<kiln_status_t>(15)), "unknown status");
  std::set<std::string> names;
  for (int s = KILN_STATUS_OK; s <= KILN_STATUS_COMMUNICATION; ++s)
    names.insert(kiln_status_string(static_cast<kiln_status_t>(s)));
  EXPECT_EQ(names.size(), 8u);
}

// dtype names and sizes, including invalid and out-of-range values.
TEST(RuntimeDtype, NamesAndSizes) {
  struct Row {
    kiln_dtype_t dtype;
    const char *name;
    size_t size;
  };
  const Row rows[] = {
      {KILN_DTYPE_F32, "f32", 4},
      {KILN_DTYPE_F16, "f16", 2},
      {KILN_DTYPE_BF16, "bf16", 2},
      {KILN_DTYPE_F64, "f64", 8},
      {KILN_DTYPE_I8, "i8", 1},
      {KILN_DTYPE_I32, "i32", 4},
      {KILN_DTYPE_I64, "i64", 8},
      {KILN_DTYPE_BOOL, "bool", 1},
      {KILN_DTYPE_U8, "u8", 1},
      {KILN_DTYPE_U16, "u16", 2},
      {KILN_DTYPE_U32, "u32", 4},
      {KILN_DTYPE_U64, "u64", 8},
      {KILN_DTYPE_I16, "i16", 2},
      {KILN_DTYPE_F8E4M3FN, "f8e4m3fn", 1},
      {KILN_DTYPE_F8E4M3FNUZ, "f8e4m3fnuz", 1},
      {KILN_DTYPE_F8E5M2, "f8e5m2", 1},
      {KILN_DTYPE_F8E5M2FNUZ, "f8e5m2fnuz", 1},
      {KILN_DTYPE_U4, "u4", 1},
      {KILN_DTYPE_I4, "i4", 1},
      {KILN_DTYPE_F4E2M1, "f4e2m1", 1},
      {KILN_DTYPE_F8E8M0, "f8e8m0", 1},
      {KILN_DTYPE_U2, "u2", 1},
      {KILN_DTYPE_I2, "i2", 1},
      {KILN_DTYPE_INVALID, "invalid", 0},
      {static_cast<kiln_dtype_t>(24), "invalid", 0},
      {static_cast<kiln_dtype_t>(25), "invalid", 0},
  };
  for (const Row &row : rows) {
    EXPECT_STREQ(kiln_dtype_name(row.dtype), row.name) << row.dtype;
    EXPECT_EQ(kiln_dtype_size(row.dtype), row.size) << row.dtype;
  }
  // The C enum and the schema's enum are the same numbers.
  EXPECT_EQ(static_cast<int>(fb::DType::f32), KILN_DTYPE_F32);
  EXPECT_EQ(static_cast<int>(fb::DType::i1), KILN_DTYPE_BOOL);
  EXPECT_EQ(static_cast<int>(fb::DType::MAX), KILN_DTYPE_I2);
}

// ---- open and inspect -------------------------------------------------------------

// The test's own descriptors pass flatc's verifier, so the tests below corrupt
// valid buffers and not already broken ones.
TEST(RuntimeFixtures, DescriptorsAreValidFlatBuffers) {
  std::vector<uint8_t> buf = build(ModelSpec{});
  flatbuffers::Verifier verifier(buf.data(), buf.size());
  EXPECT_TRUE(fb::VerifyModelBuffer(verifier));
  EXPECT_TRUE(fb::ModelBufferHasIdentifier(buf.data()));
}

// Opening a valid artifact exposes its whole signature and arena needs.
TEST_F(RuntimeTest, OpenAndInspect) {
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  ASSERT_NE(model_, nullptr);
  EXPECT_EQ(last_error(), "");
  EXPECT_STREQ(kiln_model_name(model_), "tiny");
  ASSERT_EQ(kiln_model_num_inputs(model_), 2u);
  ASSERT_EQ(kiln_model_num_outputs(model_), 1u);
  EXPECT_EQ(kiln_model_arena_bytes(model_), 256u);
  EXPECT_EQ(kiln_model_arena_alignment(model_), 64u);
  EXPECT_EQ(kiln_model_arena_lower_bound_bytes(model_), 192u);

  kiln_tensor_info_t x, k, y;
  ASSERT_EQ(kiln_model_input_info(model_, 0, &x), KILN_STATUS_OK);
  ASSERT_EQ(kiln_model_input_info(model_, 1, &k), KILN_STATUS_OK);
  ASSERT_EQ(kiln_model_output_info(model_, 0, &y), KILN_STATUS_OK);
  EXPECT_STREQ(x.name, "x");
  EXPECT_EQ(x.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(x.rank, 2u);
  EXPECT_EQ(x.shape[0], 2);
  EXPECT_EQ(x.shape[1], 3);
  EXPECT_EQ(x.num_elements, 6u);
  EXPECT_EQ(x.size_bytes, 24u);
  EXPECT_STREQ(k.name, "k");
  EXPECT_EQ(k.dtype, KILN_DTYPE_I32);
  ASSERT_EQ(k.rank, 1u);
  EXPECT_EQ(k.shape[0], 1);
  EXPECT_EQ(k.num_elements, 1u);
  EXPECT_EQ(k.size_bytes, 4u);
  EXPECT_STREQ(y.name, "y");
  EXPECT_EQ(y.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(y.rank, 2u);
  EXPECT_EQ(y.size_bytes, 24u);
}

// The handle holds copies: wiping the descriptor after open changes nothing.
TEST_F(RuntimeTest, HandleOutlivesDescriptorContents) {
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  std::memset(descriptor_.data(), 0, descriptor_.size());
  EXPECT_STREQ(kiln_model_name(model_), "tiny");
  kiln_tensor_info_t x;
  ASSERT_EQ(kiln_model_input_info(model_, 0, &x), KILN_STATUS_OK);
  EXPECT_STREQ(x.name, "x");
  EXPECT_EQ(x.shape[1], 3);
}

// Every dtype and a scalar (rank 0) round-trip with the right sizes.
TEST_F(RuntimeTest, AllDtypesAndScalars) {
  ModelSpec spec;
  spec.inputs = {{"a", fb::DType::f32, {3}}, {"b", fb::DType::f16, {3}}, {"c", fb::DType::bf16, {3}},
                 {"d", fb::DType::f64, {3}}, {"e", fb::DType::i8, {3}},  {"f", fb::DType::i32, {3}},
                 {"g", fb::DType::i64, {3}}, {"h", fb::DType::i1, {3}},  {"scalar", fb::DType::f32, {}}};
  spec.outputs = {{"empty", fb::DType::f32, {4, 0, 5}}};
  ASSERT_EQ(open(spec), KILN_STATUS_OK) << last_error();
  const size_t sizes[] = {12, 6, 6, 24, 3, 12, 24, 3};
  for (size_t i = 0; i < 8; ++i) {
    kiln_tensor_info_t info;
    ASSERT_EQ(kiln_model_input_info(model_, i, &info), KILN_STATUS_OK);
    EXPECT_EQ(info.dtype, static_cast<kiln_dtype_t>(i + 1));
    EXPECT_EQ(info.size_bytes, sizes[i]) << info.name;
  }
  kiln_tensor_info_t scalar, empty;
  ASSERT_EQ(kiln_model_input_info(model_, 8, &scalar), KILN_STATUS_OK);
  EXPECT_EQ(scalar.rank, 0u);
  EXPECT_EQ(scalar.num_elements, 1u);
  EXPECT_EQ(scalar.size_bytes, 4u);
  ASSERT_EQ(kiln_model_output_info(model_, 0, &empty), KILN_STATUS_OK);
  EXPECT_EQ(empty.num_elements, 0u);
  EXPECT_EQ(empty.size_bytes, 0u);
}

// Info calls refuse a null model, a null result and an index out of range.
TEST_F(RuntimeTest, InfoArgumentChecks) {
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  kiln_tensor_info_t info;
  EXPECT_EQ(kiln_model_input_info(model_, 2, &info), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "input index 2 out of range: model 'tiny' has 2 inputs");
  EXPECT_EQ(kiln_model_output_info(model_, 1, &info), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("output index 1"), std::string::npos);
  EXPECT_EQ(kiln_model_input_info(model_, 0, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "out_info is null");
  EXPECT_EQ(kiln_model_input_info(nullptr, 0, &info), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "model is null");
  EXPECT_EQ(kiln_model_output_info(model_, 0, &info), KILN_STATUS_OK);
  EXPECT_EQ(last_error(), "");
}

// The plain getters accept a null model and close ignores one.
TEST(RuntimeNullModel, Getters) {
  EXPECT_STREQ(kiln_model_name(nullptr), "");
  EXPECT_EQ(kiln_model_num_inputs(nullptr), 0u);
  EXPECT_EQ(kiln_model_num_outputs(nullptr), 0u);
  EXPECT_EQ(kiln_model_arena_bytes(nullptr), 0u);
  EXPECT_EQ(kiln_model_arena_alignment(nullptr), 0u);
  EXPECT_EQ(kiln_model_arena_lower_bound_bytes(nullptr), 0u);
  kiln_model_close(nullptr);
}

// Argument checks of open, before the descriptor is looked at.
TEST_F(RuntimeTest, OpenArgumentChecks) {
  kiln_model_t *model = reinterpret_cast<kiln_model_t *>(this);
  EXPECT_EQ(kiln_model_open(nullptr, &model), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(last_error(), "artifact is null");

  descriptor_ = build(ModelSpec{});
  kiln_artifact_t artifact = artifactOf(descriptor_.data(), descriptor_.size(), fake_run);
  EXPECT_EQ(kiln_model_open(&artifact, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "out_model is null");

  kiln_artifact_t no_run = artifact;
  no_run.run_packed = nullptr;
  EXPECT_EQ(kiln_model_open(&no_run, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("run_packed"), std::string::npos);

  kiln_artifact_t no_descriptor = artifact;
  no_descriptor.descriptor = nullptr;
  EXPECT_EQ(kiln_model_open(&no_descriptor, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(last_error(), "artifact has no descriptor");

  kiln_artifact_t tiny = artifact;
  tiny.descriptor_size = 7;
  EXPECT_EQ(kiln_model_open(&tiny, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(model, nullptr);
}

// An artifact built for another ABI is refused before anything else is read.
TEST_F(RuntimeTest, AbiMismatch) {
  descriptor_ = build(ModelSpec{});
  for (uint32_t abi : {0u, 1u, uint32_t(KILN_ABI_VERSION) + 1, 0xFFFFFFFFu}) {
    kiln_artifact_t artifact{abi, 0, nullptr, 0, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, nullptr};
    kiln_model_t *model = reinterpret_cast<kiln_model_t *>(this);
    EXPECT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_VERSION_MISMATCH);
    EXPECT_EQ(model, nullptr);
    EXPECT_EQ(last_error(), "artifact has ABI version " + std::to_string(abi) + ", this runtime supports 2 to " +
                                std::to_string(KILN_ABI_VERSION));
  }
}

// ABI 4 binds the descriptor to the code: any single changed byte of the
// descriptor is refused by its checksum before the descriptor is read (a
// structurally valid change of the arena size would otherwise be trusted).
TEST_F(RuntimeTest, DescriptorChecksum) {
  descriptor_ = build(ModelSpec{});
  kiln_artifact_t artifact{KILN_ABI_VERSION,
                           kiln_descriptor_checksum(descriptor_.data(), descriptor_.size()),
                           descriptor_.data(),
                           descriptor_.size(),
                           fake_run,
                           nullptr,
                           nullptr,
                           nullptr,
                           nullptr,
                           0,
                           0,
                           0,
                           nullptr};
  kiln_model_t *model = nullptr;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << last_error();
  kiln_model_close(model);

  std::vector<uint8_t> copy = descriptor_;
  artifact.descriptor = copy.data();
  for (size_t i = 0; i < copy.size(); ++i) {
    for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
      copy[i] ^= flip;
      model = reinterpret_cast<kiln_model_t *>(this);
      ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_INVALID_ARTIFACT) << "byte " << i;
      ASSERT_EQ(model, nullptr);
      ASSERT_NE(last_error().find("does not match the 0x"), std::string::npos) << last_error();
      copy[i] ^= flip;
    }
  }
  // The stored checksum changed instead: refused too.
  artifact.descriptor_checksum ^= 1u << 17;
  EXPECT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("was changed after compilation"), std::string::npos) << last_error();
}

// Artifacts of ABI 2 and 3 carry no checksum (the field was reserved, zero):
// still opened, and a nonzero reserved field is refused.
TEST_F(RuntimeTest, OlderAbiWithoutChecksum) {
  descriptor_ = build(ModelSpec{});
  for (uint32_t abi : {2u, 3u}) {
    kiln_artifact_t artifact{
        abi, 0, descriptor_.data(), descriptor_.size(), fake_run, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, nullptr};
    kiln_model_t *model = nullptr;
    ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << abi << ": " << last_error();
    kiln_model_close(model);
    artifact.descriptor_checksum = 7;
    EXPECT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_INVALID_ARTIFACT);
    EXPECT_NE(last_error().find("nonzero reserved field"), std::string::npos) << last_error();
  }
}

// ---- run ----------------------------------------------------------------------

// A valid run passes the data pointers in signature order and the arena, and
// the outputs hold what the (fake) compiled code wrote.
TEST_F(RuntimeTest, RunComputes) {
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  RunArgs args;
  ASSERT_EQ(args.run(model_), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(g_fake.calls, 1);
  EXPECT_EQ(g_fake.buffers[0], args.x);
  EXPECT_EQ(g_fake.buffers[1], args.k);
  EXPECT_EQ(g_fake.buffers[2], args.y);
  EXPECT_EQ(g_fake.arena, args.arena);
  const float expected[6] = {10.5f, 11.5f, 8.0f, 13.0f, 14.25f, 4.5f};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(args.y[i], expected[i]) << i;
  EXPECT_EQ(args.x[0], 0.5f); // inputs untouched
  // A larger arena than needed is fine.
  args.arena_bytes = sizeof args.arena_storage;
  EXPECT_EQ(args.run(model_), KILN_STATUS_OK) << last_error();
}

// Each check of run refuses with INVALID_ARGUMENT, names the offending tensor
// and never reaches the compiled code.
TEST_F(RuntimeTest, RunChecks) {
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  struct Case {
    const char *what;
    std::function<void(RunArgs &)> mutate;
    std::string message;
  };
  const Case cases[] = {
      {"too few inputs", [](RunArgs &a) { a.num_inputs = 1; }, "model 'tiny': expected 2 inputs, found 1"},
      {"too many outputs", [](RunArgs &a) { a.num_outputs = 2; }, "model 'tiny': expected 1 outputs, found 2"},
      {"null inputs", [](RunArgs &a) { a.in = nullptr; }, "inputs is null"},
      {"null outputs", [](RunArgs &a) { a.out = nullptr; }, "outputs is null"},
      {"wrong dtype", [](RunArgs &a) { a.inputs[1].dtype = KILN_DTYPE_I64; },
       "input 'k': expected dtype i32, found i64"},
      {"invalid dtype", [](RunArgs &a) { a.inputs[1].dtype = static_cast<kiln_dtype_t>(30); },
       "input 'k': expected dtype i32, found invalid dtype 30"},
      {"wrong output dtype", [](RunArgs &a) { a.outputs[0].dtype = KILN_DTYPE_F16; },
       "output 'y': expected dtype f32, found f16"},
      {"wrong rank", [](RunArgs &a) { a.inputs[0].rank = 1; },
       "input 'x': expected rank 2 (shape [2,3]), found rank 1"},
      {"wrong dim", [](RunArgs &a) { a.x_shape[1] = 4; }, "input 'x': expected shape [2,3], found [2,4]"},
      {"wrong output dim", [](RunArgs &a) { a.y_shape[0] = 3; }, "output 'y': expected shape [2,3], found [3,3]"},
      {"null shape", [](RunArgs &a) { a.inputs[0].shape = nullptr; }, "input 'x': shape is null"},
      {"null input data", [](RunArgs &a) { a.inputs[1].data = nullptr; }, "input 'k': data is null"},
      {"null output data", [](RunArgs &a) { a.outputs[0].data = nullptr; }, "output 'y': data is null"},
      {"null arena", [](RunArgs &a) { a.arena = nullptr; }, "arena is null, model 'tiny' needs 256 bytes"},
      {"small arena", [](RunArgs &a) { a.arena_bytes = 255; }, "arena holds 255 bytes, model 'tiny' needs 256"},
      {"misaligned arena", [](RunArgs &a) { a.arena = a.arena_storage + 8; }, "is not aligned to 64 bytes"},
      {"output aliases input", [](RunArgs &a) { a.outputs[0].data = a.x; }, "output 'y' overlaps input 'x'"},
      {"output in arena", [](RunArgs &a) { a.outputs[0].data = a.arena_storage + 255; },
       "output 'y' overlaps the arena"},
      {"input in arena", [](RunArgs &a) { a.inputs[1].data = a.arena_storage + 100; }, "input 'k' overlaps the arena"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    RunArgs args;
    c.mutate(args);
    g_fake.calls = 0;
    EXPECT_EQ(args.run(model_), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find(c.message), std::string::npos) << "message: " << last_error();
    EXPECT_EQ(g_fake.calls, 0);
  }

  RunArgs args;
  EXPECT_EQ(args.run(nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "model is null");
}

// Two outputs may not share storage; inputs may.
TEST_F(RuntimeTest, OutputsMayNotAliasEachOther) {
  ModelSpec spec;
  spec.outputs = {{"y", fb::DType::f32, {2, 3}}, {"z", fb::DType::f32, {2, 3}}};
  ASSERT_EQ(open(spec), KILN_STATUS_OK) << last_error();
  RunArgs args;
  kiln_tensor_t outputs[2] = {args.outputs[0], args.outputs[0]};
  args.out = outputs;
  args.num_outputs = 2;
  EXPECT_EQ(args.run(model_), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "output 'z' overlaps output 'y'");
  EXPECT_EQ(g_fake.calls, 0);
}

// A model that needs no arena runs with a null arena of size 0.
TEST_F(RuntimeTest, NoArenaNeeded) {
  ModelSpec spec;
  spec.arena_bytes = 0;
  spec.arena_alignment = 0; // means 1
  spec.arena_lower_bound_bytes = 0;
  ASSERT_EQ(open(spec), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(kiln_model_arena_alignment(model_), 1u);
  g_fake.arena_bytes = 0;
  RunArgs args;
  args.arena = nullptr;
  args.arena_bytes = 0;
  ASSERT_EQ(args.run(model_), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(g_fake.arena, nullptr);
  EXPECT_EQ(args.y[0], 10.5f);
  // Its arena is ignored, so its alignment does not matter either.
  args.arena = args.arena_storage + 1;
  EXPECT_EQ(args.run(model_), KILN_STATUS_OK) << last_error();
}

// A status other than OK from the compiled code is returned as is.
TEST_F(RuntimeTest, RunPackedErrorPropagates) {
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  RunArgs args;
  g_fake.result = KILN_STATUS_INTERNAL;
  EXPECT_EQ(args.run(model_), KILN_STATUS_INTERNAL);
  EXPECT_EQ(last_error(), "compiled code returned internal error");
  g_fake.result = KILN_STATUS_UNAVAILABLE;
  EXPECT_EQ(args.run(model_), KILN_STATUS_UNAVAILABLE);
  EXPECT_EQ(last_error(), "compiled code returned unavailable");
  g_fake.result = static_cast<kiln_status_t>(9); // unknown, yet inside the C++ enum's range
  EXPECT_EQ(args.run(model_), static_cast<kiln_status_t>(9));
  EXPECT_EQ(last_error(), "compiled code returned unknown status");
  EXPECT_EQ(g_fake.calls, 3);
}

// A failure's message stays until the next call that succeeds clears it.
TEST_F(RuntimeTest, LastErrorClearedOnSuccess) {
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  RunArgs bad;
  bad.arena_bytes = 1;
  EXPECT_EQ(bad.run(model_), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error(), "");
  EXPECT_STREQ(kiln_model_name(model_), "tiny"); // getters leave it alone
  EXPECT_NE(last_error(), "");
  RunArgs good;
  EXPECT_EQ(good.run(model_), KILN_STATUS_OK);
  EXPECT_EQ(last_error(), "");

  EXPECT_EQ(kiln_model_open(nullptr, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error(), "");
  kiln_model_t *second = nullptr;
  ASSERT_EQ(kiln_model_open(&artifact_, &second), KILN_STATUS_OK);
  EXPECT_EQ(last_error(), "");
  kiln_model_close(second);
}

// The last error is per thread.
TEST_F(RuntimeTest, LastErrorIsThreadLocal) {
  EXPECT_EQ(kiln_model_open(nullptr, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  const std::string mine = last_error();
  std::string theirs_before, theirs_after;
  std::thread other([&] {
    theirs_before = kiln_last_error();
    kiln_model_t *model;
    kiln_model_open(nullptr, &model);
    theirs_after = kiln_last_error();
  });
  other.join();
  EXPECT_EQ(theirs_before, "");
  EXPECT_EQ(theirs_after, "artifact is null");
  EXPECT_EQ(last_error(), mine);
}

void *g_wide_buffers[256];
kiln_status_t wide_run(void *const *buffers, void *) {
  ++g_fake.calls;
  for (int i = 0; i < 256; ++i)
    g_wide_buffers[i] = buffers[i];
  return KILN_STATUS_OK;
}

// 256 inputs and outputs in total is the limit: they open and run; one more
// is refused at open.
TEST_F(RuntimeTest, TensorCountLimit) {
  ModelSpec spec;
  spec.inputs.clear();
  spec.outputs.clear();
  for (int i = 0; i < 200; ++i)
    spec.inputs.push_back({"in" + std::to_string(i), fb::DType::f32, {}});
  for (int i = 0; i < 56; ++i)
    spec.outputs.push_back({"out" + std::to_string(i), fb::DType::f32, {}});
  spec.arena_bytes = 0;
  ASSERT_EQ(open(spec, wide_run), KILN_STATUS_OK) << last_error();
  std::vector<float> data(256);
  std::vector<kiln_tensor_t> tensors(256);
  for (int i = 0; i < 256; ++i)
    tensors[i] = {KILN_DTYPE_F32, 0, nullptr, &data[i]};
  ASSERT_EQ(kiln_model_run(model_, tensors.data(), 200, tensors.data() + 200, 56, nullptr, 0), KILN_STATUS_OK)
      << last_error();
  EXPECT_EQ(g_fake.calls, 1);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(g_wide_buffers[i], &data[i]) << i;

  spec.outputs.push_back({"one_more", fb::DType::f32, {}});
  expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "200 inputs and 57 outputs exceed this runtime's limit of 256");
}

// ---- descriptor rules -------------------------------------------------------------

// Absent optional fields read as their defaults; unknown trailing fields from
// a newer compiler are ignored.
TEST_F(RuntimeTest, DefaultsAndUnknownFields) {
  ModelSpec spec;
  spec.force_defaults = false;
  spec.with_strings = false;
  spec.arena_bytes = 0;
  spec.arena_alignment = 0;
  spec.arena_lower_bound_bytes = 0;
  spec.extra_field = true;
  ASSERT_EQ(open(spec), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(kiln_model_arena_bytes(model_), 0u);
  EXPECT_EQ(kiln_model_arena_alignment(model_), 1u);
  EXPECT_EQ(kiln_model_arena_lower_bound_bytes(model_), 0u);

  kiln_desc_model_t desc;
  char err[256] = "untouched";
  ASSERT_EQ(kiln_desc_read(descriptor_.data(), descriptor_.size(), &desc, err, sizeof err), KILN_STATUS_OK);
  EXPECT_STREQ(err, "untouched");
  EXPECT_STREQ(desc.target.data, "");
  EXPECT_STREQ(desc.cpu.data, "");
  EXPECT_STREQ(desc.producer.data, "");
  EXPECT_EQ(desc.producer.size, 0u);
}

// A model without inputs, and tensors without a shape (scalars), are fine.
TEST_F(RuntimeTest, NoInputs) {
  ModelSpec spec;
  spec.inputs.clear();
  spec.outputs = {{"answer", fb::DType::i64, {}}};
  ASSERT_EQ(open(spec), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(kiln_model_num_inputs(model_), 0u);
}

// A descriptor laid out the way kilnc writes it (the *Direct helpers, no
// forced defaults) opens too.
TEST(DescriptorReader, CompilerLayout) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<int64_t> in_shape{1, 784}, out_shape{1, 10};
  std::vector<flatbuffers::Offset<fb::Tensor>> inputs{
      fb::CreateTensorDirect(fbb, "input:0", fb::DType::f32, &in_shape)};
  std::vector<flatbuffers::Offset<fb::Tensor>> outputs{
      fb::CreateTensorDirect(fbb, "logits", fb::DType::f32, &out_shape)};
  auto model = fb::CreateModelDirect(fbb, 1, "mnist", "x86_64-unknown-linux-gnu", "generic", "kilnc 0.1.0", &inputs,
                                     &outputs, 4096, 64, 3136);
  fb::FinishModelBuffer(fbb, model);
  ASSERT_EQ(open_and_inspect(fbb.GetBufferPointer(), fbb.GetSize()), KILN_STATUS_OK) << kiln_last_error();
  kiln_desc_model_t desc;
  ASSERT_EQ(kiln_desc_read(fbb.GetBufferPointer(), fbb.GetSize(), &desc, nullptr, 0), KILN_STATUS_OK);
  kiln_desc_tensor_t input;
  ASSERT_EQ(kiln_desc_tensor(&desc, 0, 0, &input, nullptr, 0), KILN_STATUS_OK);
  EXPECT_STREQ(input.name.data, "input:0");
  EXPECT_EQ(input.size_bytes, 784u * 4);
  EXPECT_EQ(desc.arena_lower_bound_bytes, 3136u);
}

// A data-parallel step's buckets: sizes and dtypes per bucket, element
// counts per tensor. Inconsistent ones are refused, naming the bucket.
std::vector<uint8_t> bucketDescriptor(std::vector<uint32_t> sizes, std::vector<fb::DType> dtypes,
                                      std::vector<uint64_t> elements) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<int64_t> shape{2};
  std::vector<flatbuffers::Offset<fb::Tensor>> inputs{fb::CreateTensorDirect(fbb, "x", fb::DType::f32, &shape)};
  std::vector<flatbuffers::Offset<fb::Tensor>> outputs{fb::CreateTensorDirect(fbb, "y", fb::DType::f32, &shape)};
  auto model =
      fb::CreateModelDirect(fbb, 1, "dp", "x86_64-unknown-linux-gnu", "generic", "kilnc 0.1.0", &inputs, &outputs, 0,
                            64, 0, nullptr, 0, 0, 0, nullptr, nullptr, &sizes, &dtypes, &elements);
  fb::FinishModelBuffer(fbb, model);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

TEST(DescriptorReader, Buckets) {
  std::vector<uint8_t> good = bucketDescriptor({2, 1}, {fb::DType::f32, fb::DType::f64}, {6, 4, 3});
  kiln_desc_model_t desc;
  char err[256];
  ASSERT_EQ(kiln_desc_read(good.data(), good.size(), &desc, err, sizeof err), KILN_STATUS_OK) << err;
  ASSERT_EQ(desc.num_buckets, 2u);
  kiln_desc_bucket_t b0 = kiln_desc_bucket(&desc, 0), b1 = kiln_desc_bucket(&desc, 1);
  EXPECT_EQ(b0.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(b0.num_tensors, 2u);
  EXPECT_EQ(b0.first, 0u);
  EXPECT_EQ(b1.dtype, KILN_DTYPE_F64);
  EXPECT_EQ(b1.num_tensors, 1u);
  EXPECT_EQ(b1.first, 2u);
  EXPECT_EQ(kiln_desc_bucket_elements(&desc, 2), 3u);

  struct Bad {
    std::vector<uint32_t> sizes;
    std::vector<fb::DType> dtypes;
    std::vector<uint64_t> elements;
    const char *message;
  } bad[] = {
      {{1}, {fb::DType::i32}, {4}, "bucket 0 has dtype 6, expected f32 or f64"},
      {{0}, {fb::DType::f32}, {}, "bucket 0 holds no tensors"},
      {{1, 1}, {fb::DType::f32}, {4, 4}, "1 bucket_dtypes for 2 bucket_sizes"},
      {{3}, {fb::DType::f32}, {4, 4}, "bucket 0 holds 3 tensors, more than bucket_elements lists"},
      {{1}, {fb::DType::f32}, {4, 4}, "bucket_elements lists 2 tensors, the buckets hold 1"},
      {{1}, {fb::DType::f64}, {0}, "bucket 0 tensor 0 has 0 elements"},
      {{1}, {fb::DType::f64}, {uint64_t(1) << 61}, "bucket 0 tensor 0 has 2305843009213693952 elements"},
  };
  for (const Bad &b : bad) {
    std::vector<uint8_t> buf = bucketDescriptor(b.sizes, b.dtypes, b.elements);
    EXPECT_EQ(kiln_desc_read(buf.data(), buf.size(), &desc, err, sizeof err), KILN_STATUS_INVALID_ARTIFACT);
    EXPECT_NE(std::string(err).find(b.message), std::string::npos) << err;
  }
}

// The hooks entry of ABI 7: what a run hands it, and that a model with
// buckets needs it.
kiln_status_t hooks_run(void *const *buffers, void *arena, const kiln_run_hooks_t *hooks) {
  // One rank without a communicator: no collectives; the size says which
  // fields the runtime filled.
  if (hooks == nullptr || hooks->struct_size != sizeof(kiln_run_hooks_t) || hooks->collectives != nullptr ||
      hooks->profiler != nullptr)
    return KILN_STATUS_INTERNAL;
  static_cast<float *>(buffers[1])[0] = 42.0f;
  return KILN_STATUS_OK;
}

TEST(DataParallel, HooksAndComm) {
  std::vector<uint8_t> desc = bucketDescriptor({1}, {fb::DType::f32}, {2});
  // Without run_packed_hooks, buckets cannot be served.
  kiln_artifact_t old = artifactOf(desc.data(), desc.size(), fake_run);
  kiln_model_t *model = nullptr;
  EXPECT_EQ(kiln_model_open(&old, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(std::string(kiln_last_error()).find("no run_packed_hooks"), std::string::npos) << kiln_last_error();

  kiln_artifact_t artifact = artifactOf(desc.data(), desc.size(), fake_run);
  artifact.run_packed_hooks = hooks_run;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << kiln_last_error();
  EXPECT_EQ(kiln_model_num_buckets(model), 1u);
  float x[2] = {1, 2}, y[2] = {0, 0};
  int64_t shape[1] = {2};
  kiln_tensor_t in{KILN_DTYPE_F32, 1, shape, x}, out{KILN_DTYPE_F32, 1, shape, y};
  ASSERT_EQ(kiln_model_run(model, &in, 1, &out, 1, nullptr, 0), KILN_STATUS_OK) << kiln_last_error();
  EXPECT_EQ(y[0], 42.0f);
  double blocked = -1, in_flight = -1;
  kiln_model_comm_times(model, &blocked, &in_flight);
  EXPECT_EQ(blocked, 0.0);
  EXPECT_EQ(in_flight, 0.0);
  // Detaching when nothing is attached is fine; the communicator calls
  // refuse null arguments.
  EXPECT_EQ(kiln_model_set_comm(model, nullptr), KILN_STATUS_OK);
  EXPECT_EQ(kiln_comm_set_timeout(nullptr, 1.0), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_comm_open_mpi(nullptr, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_comm_rank(nullptr), 0);
  EXPECT_EQ(kiln_comm_size(nullptr), 1);
  kiln_comm_close(nullptr);
  kiln_model_close(model);

  // A model without buckets has no use for a communicator.
  std::vector<uint8_t> plain = build(ModelSpec{});
  kiln_artifact_t single = artifactOf(plain.data(), plain.size(), fake_run);
  ASSERT_EQ(kiln_model_open(&single, &model), KILN_STATUS_OK) << kiln_last_error();
  EXPECT_EQ(kiln_model_num_buckets(model), 0u);
  EXPECT_EQ(kiln_model_set_comm(model, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("is not a data-parallel step"), std::string::npos);
  kiln_model_close(model);
}

// The reader extracts every field, strings included.
TEST(DescriptorReader, ExtractsAllFields) {
  std::vector<uint8_t> buf = build(ModelSpec{});
  kiln_desc_model_t desc;
  ASSERT_EQ(kiln_desc_read(buf.data(), buf.size(), &desc, nullptr, 0), KILN_STATUS_OK);
  EXPECT_EQ(desc.format_version, 1u);
  EXPECT_STREQ(desc.name.data, "tiny");
  EXPECT_EQ(desc.name.size, 4u);
  EXPECT_STREQ(desc.target.data, "x86_64-unknown-linux-gnu");
  EXPECT_STREQ(desc.cpu.data, "znver4");
  EXPECT_STREQ(desc.producer.data, "kilnc 0.1.0");
  EXPECT_EQ(desc.num_inputs, 2u);
  EXPECT_EQ(desc.num_outputs, 1u);
  EXPECT_EQ(desc.total_rank, 5u);
  EXPECT_EQ(desc.total_name_bytes, 3u);
  EXPECT_EQ(desc.arena_bytes, 256u);
  EXPECT_EQ(desc.arena_alignment, 64u);
  EXPECT_EQ(desc.arena_lower_bound_bytes, 192u);

  kiln_desc_tensor_t k;
  ASSERT_EQ(kiln_desc_tensor(&desc, 0, 1, &k, nullptr, 0), KILN_STATUS_OK);
  EXPECT_STREQ(k.name.data, "k");
  EXPECT_EQ(k.dtype, KILN_DTYPE_I32);
  EXPECT_EQ(k.rank, 1u);
  char err[128];
  EXPECT_EQ(kiln_desc_tensor(&desc, 1, 1, &k, err, sizeof err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "descriptor: output index 1 out of range (1 outputs)");
}

// Schema rules the verifier enforces on otherwise well-formed buffers.
TEST_F(RuntimeTest, SchemaRules) {
  {
    ModelSpec spec;
    spec.format_version = 2;
    expect_refused(spec, KILN_STATUS_VERSION_MISMATCH, "format_version is 2, this runtime reads 1");
  }
  {
    ModelSpec spec;
    spec.format_version = 0;
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "format_version is missing");
  }
  {
    ModelSpec spec;
    spec.name = "";
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "model name is empty");
  }
  {
    ModelSpec spec;
    spec.inputs[1].name = "";
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "input 1 has an empty name");
  }
  {
    ModelSpec spec;
    spec.outputs[0].with_name = false;
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "output 0 has an empty name");
  }
  for (int8_t dtype : {0, 24, -1, 127}) {
    ModelSpec spec;
    spec.inputs[0].dtype = static_cast<fb::DType>(dtype);
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT,
                   "input 'x': dtype " + std::to_string(dtype) + " is not a valid dtype");
  }
  {
    ModelSpec spec;
    spec.inputs[0].shape = std::vector<int64_t>(17, 1);
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "input 'x': rank 17 exceeds the maximum of 16");
    spec.inputs[0].shape = std::vector<int64_t>(16, 1);
    EXPECT_EQ(open(spec), KILN_STATUS_OK) << last_error();
  }
  {
    ModelSpec spec;
    spec.outputs[0].shape = {2, -3};
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "output 'y': dim 1 is -3, dims must be >= 0");
  }
  {
    ModelSpec spec;
    spec.inputs[0].shape = {std::numeric_limits<int64_t>::max(), 2};
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "input 'x': element count overflows");
    spec.inputs[0].shape = {std::numeric_limits<int64_t>::max(), 2, 0}; // zero elements: fine
    EXPECT_EQ(open(spec), KILN_STATUS_OK) << last_error();
  }
  {
    ModelSpec spec;
    spec.inputs[0].dtype = fb::DType::f64;
    spec.inputs[0].shape = {int64_t(1) << 61};
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "input 'x': size in bytes overflows");
    spec.inputs[0].shape = {int64_t(1) << 40};
    ASSERT_EQ(open(spec), KILN_STATUS_OK) << last_error();
    kiln_tensor_info_t info;
    ASSERT_EQ(kiln_model_input_info(model_, 0, &info), KILN_STATUS_OK);
    EXPECT_EQ(info.size_bytes, size_t(8) << 40);
  }
  for (uint64_t alignment : {uint64_t(3), uint64_t(48), uint64_t(0x8000000000000001ull)}) {
    ModelSpec spec;
    spec.arena_alignment = alignment;
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "is not a power of two");
  }
  {
    ModelSpec spec;
    spec.arena_bytes = uint64_t(1) << 63;
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "arena sizes exceed the address space");
  }
  {
    ModelSpec spec;
    spec.identifier = "KILX";
    expect_refused(spec, KILN_STATUS_INVALID_ARTIFACT, "file identifier is \"KILX\", expected \"KILN\"");
  }
}

// ---- corrupted descriptors ---------------------------------------------------------

// Every proper prefix of a descriptor is refused, and never read past.
TEST(DescriptorCorruption, TruncatedAtEveryLength) {
  std::vector<uint8_t> full = build(ModelSpec{});
  ASSERT_EQ(open_and_inspect(full.data(), full.size()), KILN_STATUS_OK) << kiln_last_error();
  for (size_t len = 0; len < full.size(); ++len)
    EXPECT_EQ(open_and_inspect(full.data(), len), KILN_STATUS_INVALID_ARTIFACT)
        << "length " << len << " of " << full.size() << ": " << kiln_last_error();
}

// Overwriting any single byte with a few values never crashes or reads out of
// bounds; whatever opens is self-consistent.
TEST(DescriptorCorruption, ByteFlipsAtEveryPosition) {
  std::vector<uint8_t> full = build(ModelSpec{});
  size_t opened = 0, refused = 0;
  for (size_t pos = 0; pos < full.size(); ++pos) {
    const uint8_t original = full[pos];
    for (uint8_t value : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80), uint8_t(0x7F), uint8_t(original ^ 0x01),
                          uint8_t(original ^ 0x10), uint8_t(original + 4)}) {
      if (value == original)
        continue;
      std::vector<uint8_t> corrupt = full;
      corrupt[pos] = value;
      kiln_status_t status = open_and_inspect(corrupt.data(), corrupt.size());
      EXPECT_TRUE(status == KILN_STATUS_OK || status == KILN_STATUS_INVALID_ARTIFACT ||
                  status == KILN_STATUS_VERSION_MISMATCH)
          << "byte " << pos << " = " << int(value) << ": " << kiln_status_string(status);
      (status == KILN_STATUS_OK ? opened : refused)++;
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(opened, 0u); // e.g. changed dims or arena values
}

// Several bytes overwritten at random places at once (fixed seed, so every
// run tests the same buffers): never a crash or an out-of-bounds read.
TEST(DescriptorCorruption, RandomMultiByteDamage) {
  std::vector<uint8_t> full = build(ModelSpec{});
  std::mt19937 rng(20240601);
  std::uniform_int_distribution<size_t> where(0, full.size() - 1);
  std::uniform_int_distribution<int> count(2, 6), byte(0, 255);
  for (int iteration = 0; iteration < 5000; ++iteration) {
    std::vector<uint8_t> corrupt = full;
    for (int n = count(rng); n > 0; --n)
      corrupt[where(rng)] = static_cast<uint8_t>(byte(rng));
    kiln_status_t status = open_and_inspect(corrupt.data(), corrupt.size());
    EXPECT_TRUE(status == KILN_STATUS_OK || status == KILN_STATUS_INVALID_ARTIFACT ||
                status == KILN_STATUS_VERSION_MISMATCH)
        << "iteration " << iteration;
  }
}

// Structural corruptions of a valid buffer, each refused with a message.
TEST_F(RuntimeTest, StructuralCorruption) {
  const std::vector<uint8_t> valid = build(ModelSpec{});
  const fb::Model *model = fb::GetModel(valid.data());
  const size_t inputs_at = static_cast<size_t>(reinterpret_cast<const uint8_t *>(model->inputs()) - valid.data());
  const size_t name_field_at = model_field_at(valid, fb::Model::VT_NAME);
  const size_t name_at = static_cast<size_t>(reinterpret_cast<const uint8_t *>(model->name()) - valid.data());
  const size_t root_at = load_u32(valid, 0);
  const size_t x_shape_at =
      static_cast<size_t>(reinterpret_cast<const uint8_t *>(model->inputs()->Get(0)->shape()) - valid.data());
  const int32_t soffset = static_cast<int32_t>(load_u32(valid, root_at));
  const size_t vtable_at = static_cast<size_t>(static_cast<int64_t>(root_at) - soffset);

  struct Case {
    const char *what;
    std::function<void(std::vector<uint8_t> &)> corrupt;
    std::string message;
  };
  const Case cases[] = {
      {"root offset past the end", [&](auto &b) { store_u32(b, 0, static_cast<uint32_t>(b.size())); }, "root: offset"},
      {"root offset zero", [&](auto &b) { store_u32(b, 0, 0); }, "root: offset 0"},
      {"huge inputs vector", [&](auto &b) { store_u32(b, inputs_at, 0xFFFFFFFFu); }, "vector inputs of model at byte"},
      {"huge shape vector", [&](auto &b) { store_u32(b, x_shape_at, 0x10000000u); }, "vector shape of input 0"},
      {"name offset outside", [&](auto &b) { store_u32(b, name_field_at, 0x7FFFFFF0u); }, "name: offset"},
      {"name offset negative", [&](auto &b) { store_u32(b, name_field_at, 0xFFFFFFF0u); }, "name: offset"},
      {"name length past the end", [&](auto &b) { store_u32(b, name_at, 0x00FFFFFFu); },
       "string name of model at byte"},
      {"name not terminated", [&](auto &b) { b[name_at + 4 + 4] = 'X'; }, "is not NUL-terminated"},
      {"name with a NUL", [&](auto &b) { b[name_at + 4 + 1] = 0; }, "contains a NUL byte"},
      {"vtable outside", [&](auto &b) { store_u32(b, root_at, 0x80000000u); }, "vtable of model table"},
      {"vtable size odd", [&](auto &b) { b[vtable_at] = 5; }, "has invalid size 5"},
      {"vtable size too small", [&](auto &b) { b[vtable_at] = 2; }, "has invalid size 2"},
      {"vtable past the end", [&](auto &b) { b[vtable_at] = 0xFE, b[vtable_at + 1] = 0xFF; }, "extends past the end"},
      {"table size too small", [&](auto &b) { b[vtable_at + 2] = 3, b[vtable_at + 3] = 0; }, "has invalid size 3"},
      {"field outside its table", [&](auto &b) { b[vtable_at + 4 + 2] = 0xF0, b[vtable_at + 4 + 3] = 0; },
       "field name of model table"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> corrupt = valid;
    c.corrupt(corrupt);
    kiln_artifact_t artifact = artifactOf(corrupt.data(), corrupt.size(), fake_run);
    kiln_model_t *opened = reinterpret_cast<kiln_model_t *>(this);
    EXPECT_EQ(kiln_model_open(&artifact, &opened), KILN_STATUS_INVALID_ARTIFACT);
    EXPECT_EQ(opened, nullptr);
    EXPECT_EQ(last_error().rfind("descriptor: ", 0), 0u) << "message: " << last_error();
    EXPECT_NE(last_error().find(c.message), std::string::npos) << "message: " << last_error();
  }
}

// ---- state (training steps) ---------------------------------------------------

// The state of the fake training step: w f32[2,3] at 0, its moment at 64 and
// the f64 step counter at 128, in a buffer of 192 bytes aligned to 64.
ModelSpec state_spec() {
  ModelSpec spec;
  spec.state = {{"w", fb::DType::f32, {2, 3}, 0, fb::StateRole::parameter},
                {"optimizer.velocity.w", fb::DType::f32, {2, 3}, 64, fb::StateRole::moment},
                {"optimizer.step", fb::DType::f64, {}, 128, fb::StateRole::step}};
  spec.state_bytes = 192;
  spec.state_alignment = 64;
  return spec;
}

void *g_init_state_seen = nullptr;
kiln_status_t fake_init_state(void *state) {
  g_init_state_seen = state;
  std::memset(state, 0x11, 192);
  return KILN_STATUS_OK;
}

// The fake step records the state pointer, the last packed buffer.
void *g_state_seen = nullptr;
kiln_status_t fake_state_run(void *const *buffers, void *arena) {
  g_state_seen = buffers[3];
  return fake_run(buffers, arena);
}

class RuntimeStateTest : public RuntimeTest {
protected:
  kiln_status_t open_state(const ModelSpec &spec, kiln_status_t (*init)(void *) = fake_init_state) {
    kiln_model_close(model_);
    model_ = nullptr;
    descriptor_ = build(spec);
    artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), fake_state_run);
    artifact_.init_state = init;
    return kiln_model_open(&artifact_, &model_);
  }
};

// A model with state exposes its layout, initializes the caller's buffer and
// passes it to the compiled code after the outputs.
TEST_F(RuntimeStateTest, OpenInitAndRun) {
  ASSERT_EQ(open_state(state_spec()), KILN_STATUS_OK) << last_error();
  ASSERT_EQ(kiln_model_num_state(model_), 3u);
  EXPECT_EQ(kiln_model_state_bytes(model_), 192u);
  EXPECT_EQ(kiln_model_state_alignment(model_), 64u);
  kiln_state_info_t info;
  ASSERT_EQ(kiln_model_state_info(model_, 1, &info), KILN_STATUS_OK);
  EXPECT_STREQ(info.tensor.name, "optimizer.velocity.w");
  EXPECT_EQ(info.role, KILN_STATE_MOMENT);
  EXPECT_EQ(info.offset, 64u);
  EXPECT_EQ(info.tensor.size_bytes, 24u);
  ASSERT_EQ(info.tensor.rank, 2u);
  EXPECT_EQ(info.tensor.shape[1], 3);
  ASSERT_EQ(kiln_model_state_info(model_, 2, &info), KILN_STATUS_OK);
  EXPECT_EQ(info.role, KILN_STATE_STEP);
  EXPECT_EQ(info.tensor.dtype, KILN_DTYPE_F64);
  EXPECT_EQ(info.tensor.rank, 0u);
  EXPECT_EQ(kiln_model_state_info(model_, 3, &info), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("state index 3 out of range"), std::string::npos) << last_error();

  alignas(64) unsigned char state[192 + 64] = {};
  ASSERT_EQ(kiln_model_init_state(model_, state, 192), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(g_init_state_seen, state);
  EXPECT_EQ(state[191], 0x11);
  RunArgs args;
  ASSERT_EQ(kiln_model_run_with_state(model_, args.in, 2, args.out, 1, state, 192, args.arena, args.arena_bytes),
            KILN_STATUS_OK)
      << last_error();
  EXPECT_EQ(g_state_seen, state);
  EXPECT_EQ(args.y[0], 10.5f);
}

// Every way to get the state wrong is refused before the compiled code runs.
TEST_F(RuntimeStateTest, StateChecks) {
  ASSERT_EQ(open_state(state_spec()), KILN_STATUS_OK) << last_error();
  alignas(64) unsigned char state[192 + 64] = {};
  RunArgs args;
  auto run = [&](void *s, size_t bytes) {
    return kiln_model_run_with_state(model_, args.in, 2, args.out, 1, s, bytes, args.arena, args.arena_bytes);
  };
  struct Case {
    const char *what;
    std::function<kiln_status_t()> call;
    const char *message;
  } cases[] = {
      {"plain run", [&] { return args.run(model_); }, "has state: run it with kiln_model_run_with_state"},
      {"null state", [&] { return run(nullptr, 192); }, "state is null, model 'tiny' needs 192 bytes"},
      {"small state", [&] { return run(state, 191); }, "state holds 191 bytes, model 'tiny' needs 192"},
      {"misaligned state", [&] { return run(state + 8, 192); }, "is not aligned to 64 bytes"},
      {"state in the arena", [&] { return run(args.arena, 192); }, "the state overlaps the arena"},
      {"input in the state",
       [&] {
         std::memcpy(state, args.x, sizeof args.x);
         kiln_tensor_t in[2] = {args.in[0], args.in[1]};
         in[0].data = state;
         return kiln_model_run_with_state(model_, in, 2, args.out, 1, state, 192, args.arena, args.arena_bytes);
       },
       "input 'x' overlaps the state"},
      {"output in the state",
       [&] {
         kiln_tensor_t out = args.out[0];
         out.data = state + 64;
         return kiln_model_run_with_state(model_, args.in, 2, &out, 1, state, 192, args.arena, args.arena_bytes);
       },
       "output 'y' overlaps the state"},
      {"init null", [&] { return kiln_model_init_state(model_, nullptr, 192); }, "state is null"},
      {"init small", [&] { return kiln_model_init_state(model_, state, 64); }, "state holds 64 bytes"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    g_fake.calls = 0;
    g_init_state_seen = nullptr;
    EXPECT_EQ(c.call(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find(c.message), std::string::npos) << "message: " << last_error();
    EXPECT_EQ(g_fake.calls, 0);
    EXPECT_EQ(g_init_state_seen, nullptr);
  }

  // The other way round: a model without state has none to take.
  ASSERT_EQ(open(ModelSpec{}), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(kiln_model_num_state(model_), 0u);
  EXPECT_EQ(kiln_model_state_bytes(model_), 0u);
  EXPECT_EQ(kiln_model_state_alignment(model_), 1u);
  EXPECT_EQ(run(state, 192), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("has no state: run it with kiln_model_run"), std::string::npos) << last_error();
  EXPECT_EQ(kiln_model_init_state(model_, state, 192), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_num_state(nullptr), 0u);
  EXPECT_EQ(kiln_model_state_bytes(nullptr), 0u);
  EXPECT_EQ(kiln_model_state_alignment(nullptr), 0u);
}

// The descriptor's state rules, each broken once.
TEST_F(RuntimeStateTest, StateSchemaRules) {
  struct Case {
    const char *what;
    std::function<void(ModelSpec &)> change;
    const char *message;
  } cases[] = {
      {"role none", [](ModelSpec &m) { m.state[0].role = fb::StateRole::none; },
       "state 'w': role 0 is not a valid state role"},
      {"role too large", [](ModelSpec &m) { m.state[2].role = static_cast<fb::StateRole>(4); },
       "state 'optimizer.step': role 4"},
      {"misaligned offset", [](ModelSpec &m) { m.state[1].offset = 72; },
       "offset 72 is not a multiple of the state alignment 64"},
      {"overlap", [](ModelSpec &m) { m.state[1].offset = 0; },
       "state 'optimizer.velocity.w': offset 0 overlaps the previous state tensor, which ends at 24"},
      {"outside", [](ModelSpec &m) { m.state_bytes = 130; }, "lie outside the state of 130 bytes"},
      {"alignment", [](ModelSpec &m) { m.state_alignment = 48; }, "state_alignment 48 is not a power of two"},
      {"offset on an input", [](ModelSpec &m) { m.input_offset = 64; },
       "input 'x': only state tensors have a role and an offset"},
      {"sizes without state", [](ModelSpec &m) { m.state.clear(); },
       "state_bytes and state_alignment are set but there are no state tensors"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    ModelSpec spec = state_spec();
    c.change(spec);
    EXPECT_EQ(open_state(spec, spec.state.empty() ? nullptr : fake_init_state), KILN_STATUS_INVALID_ARTIFACT);
    EXPECT_EQ(model_, nullptr);
    EXPECT_NE(last_error().find(c.message), std::string::npos) << "message: " << last_error();
  }
  // init_state and state go together.
  EXPECT_EQ(open_state(state_spec(), nullptr), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("has state but no init_state"), std::string::npos) << last_error();
  EXPECT_EQ(open_state(ModelSpec{}, fake_init_state), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("init_state entry point but no state"), std::string::npos) << last_error();
}

// Corrupting a descriptor with state anywhere never crashes the reader.
TEST(DescriptorCorruption, StateByteFlips) {
  std::vector<uint8_t> valid = build(state_spec());
  for (size_t i = 0; i < valid.size(); ++i) {
    std::vector<uint8_t> corrupt = valid;
    corrupt[i] ^= 0xFF;
    std::unique_ptr<uint8_t[]> copy(new uint8_t[corrupt.size()]);
    std::memcpy(copy.get(), corrupt.data(), corrupt.size());
    kiln_artifact_t artifact = artifactOf(copy.get(), corrupt.size(), fake_state_run);
    artifact.init_state = fake_init_state;
    kiln_model_t *model = nullptr;
    if (kiln_model_open(&artifact, &model) == KILN_STATUS_OK) {
      for (size_t s = 0; s < kiln_model_num_state(model); ++s) {
        kiln_state_info_t info;
        ASSERT_EQ(kiln_model_state_info(model, s, &info), KILN_STATUS_OK);
        EXPECT_LE(info.offset + info.tensor.size_bytes, kiln_model_state_bytes(model));
      }
      kiln_model_close(model);
    }
  }
}

// ---- threads -------------------------------------------------------------------

// A fake artifact computing y = x + k one element per index, through the
// runtime's dispatcher when it gets one.
std::atomic<int> g_parallel_runs{0}, g_serial_runs{0};

struct AddJob {
  const float *x;
  const int32_t *k;
  float *y;
};

void add_range(void *data, int64_t begin, int64_t end) {
  auto *job = static_cast<AddJob *>(data);
  for (int64_t i = begin; i < end; ++i)
    job->y[i] = job->x[i] + static_cast<float>(job->k[0]);
}

AddJob add_job(void *const *buffers) {
  return {static_cast<const float *>(buffers[0]), static_cast<const int32_t *>(buffers[1]),
          static_cast<float *>(buffers[2])};
}

kiln_status_t serial_add(void *const *buffers, void *) {
  g_serial_runs.fetch_add(1);
  AddJob job = add_job(buffers);
  add_range(&job, 0, 6);
  return KILN_STATUS_OK;
}

kiln_status_t parallel_add(void *const *buffers, void *arena, const kiln_parallel_t *parallel) {
  if (parallel == nullptr || parallel->parallel_for == nullptr)
    return serial_add(buffers, arena);
  g_parallel_runs.fetch_add(1);
  AddJob job = add_job(buffers);
  parallel->parallel_for(parallel->ctx, add_range, &job, 6);
  return KILN_STATUS_OK;
}

kiln_status_t must_not_run(void *const *, void *, const kiln_parallel_t *) { return KILN_STATUS_INTERNAL; }

class ThreadsTest : public ::testing::Test {
protected:
  void SetUp() override {
    g_parallel_runs = 0;
    g_serial_runs = 0;
    descriptor_ = build(ModelSpec{});
  }
  void TearDown() override { kiln_model_close(model_); }

  kiln_status_t open(uint32_t abi, kiln_status_t (*parallel)(void *const *, void *, const kiln_parallel_t *)) {
    artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), serial_add, abi);
    artifact_.run_packed_parallel = parallel;
    return kiln_model_open(&artifact_, &model_);
  }

  static void expect_sum(const RunArgs &args) {
    for (int i = 0; i < 6; ++i)
      ASSERT_EQ(args.y[i], args.x[i] + 10.0f) << i;
  }

  std::vector<uint8_t> descriptor_;
  kiln_artifact_t artifact_{};
  kiln_model_t *model_ = nullptr;
};

// Every core by default; 0 goes back to that.
TEST_F(ThreadsTest, NumThreads) {
  ASSERT_EQ(open(KILN_ABI_VERSION, parallel_add), KILN_STATUS_OK) << last_error();
  size_t cores = kiln_model_num_threads(model_);
  EXPECT_GE(cores, 1u);
  EXPECT_EQ(kiln_model_set_num_threads(model_, 3), KILN_STATUS_OK);
  EXPECT_EQ(kiln_model_num_threads(model_), 3u);
  EXPECT_EQ(kiln_model_set_num_threads(model_, 0), KILN_STATUS_OK);
  EXPECT_EQ(kiln_model_num_threads(model_), cores);
  EXPECT_EQ(kiln_model_set_num_threads(nullptr, 2), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_num_threads(nullptr), 0u);
}

// More than one thread runs through the dispatcher, one without it; changing
// the count between runs restarts the pool.
TEST_F(ThreadsTest, DispatchFollowsCount) {
  ASSERT_EQ(open(KILN_ABI_VERSION, parallel_add), KILN_STATUS_OK) << last_error();
  for (size_t threads : {2u, 1u, 3u, 2u}) {
    ASSERT_EQ(kiln_model_set_num_threads(model_, threads), KILN_STATUS_OK);
    g_parallel_runs = 0;
    g_serial_runs = 0;
    RunArgs args;
    ASSERT_EQ(args.run(model_), KILN_STATUS_OK) << last_error();
    expect_sum(args);
    EXPECT_EQ(g_parallel_runs.load(), threads > 1 ? 1 : 0) << threads;
    EXPECT_EQ(g_serial_runs.load(), threads > 1 ? 0 : 1) << threads;
  }
}

// Runs from several threads on one handle: all correct, each either through
// the pool or, while another run holds it, on its own thread.
TEST_F(ThreadsTest, ConcurrentRuns) {
  ASSERT_EQ(open(KILN_ABI_VERSION, parallel_add), KILN_STATUS_OK) << last_error();
  ASSERT_EQ(kiln_model_set_num_threads(model_, 2), KILN_STATUS_OK);
  constexpr int kThreads = 4, kRuns = 300;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t)
    callers.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        RunArgs args;
        args.x[r % 6] = static_cast<float>(t * 1000 + r);
        if (args.run(model_) != KILN_STATUS_OK) {
          failures.fetch_add(1);
          continue;
        }
        for (int i = 0; i < 6; ++i)
          if (args.y[i] != args.x[i] + 10.0f)
            failures.fetch_add(1);
      }
    });
  for (std::thread &c : callers)
    c.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(g_parallel_runs.load() + g_serial_runs.load(), kThreads * kRuns);
  EXPECT_GT(g_parallel_runs.load(), 0);
}

// An ABI 2 artifact has no run_packed_parallel field: it is never read, and
// the model runs serially whatever the count.
TEST_F(ThreadsTest, Abi2RunsSerially) {
  ASSERT_EQ(open(2, must_not_run), KILN_STATUS_OK) << last_error();
  ASSERT_EQ(kiln_model_set_num_threads(model_, 2), KILN_STATUS_OK);
  RunArgs args;
  ASSERT_EQ(args.run(model_), KILN_STATUS_OK) << last_error();
  expect_sum(args);
  EXPECT_EQ(g_serial_runs.load(), 1);
}

} // namespace

// ---- per-kernel profiles ---------------------------------------------------------

// A fake profiled entry: two kernels, each reported as it starts, then the
// end, with the add in between.
kiln_status_t profiled_add(void *const *buffers, void *arena, const kiln_parallel_t *parallel,
                           const kiln_profiler_t *profiler) {
  auto report = [&](uint32_t k) {
    if (profiler != nullptr)
      profiler->kernel_start(profiler->ctx, k);
  };
  report(0);
  AddJob job = add_job(buffers);
  add_range(&job, 0, 3);
  report(1);
  add_range(&job, 3, 6);
  report(2);
  return KILN_STATUS_OK;
}

class ProfileTest : public ::testing::Test {
protected:
  void TearDown() override { kiln_model_close(model_); }

  kiln_status_t open(uint32_t abi, const ModelSpec &spec) {
    descriptor_ = build(spec);
    artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), serial_add, abi);
    artifact_.run_packed_parallel = parallel_add;
    artifact_.run_packed_profiled = profiled_add;
    return kiln_model_open(&artifact_, &model_);
  }

  static ModelSpec twoKernels() {
    ModelSpec spec;
    spec.kernel_names = {"Conv_0,Relu_1", "Add_2"};
    spec.kernel_flops = {1000, 0};
    return spec;
  }

  kiln_status_t run(uint64_t *timestamps, size_t count) {
    kiln_tensor_t in[2] = {{KILN_DTYPE_F32, 2, shape_, x_}, {KILN_DTYPE_I32, 1, kshape_, k_}};
    kiln_tensor_t out[1] = {{KILN_DTYPE_F32, 2, shape_, y_}};
    return kiln_model_run_profiled(model_, in, 2, out, 1, nullptr, 0, arena_, sizeof arena_, timestamps, count);
  }

  std::vector<uint8_t> descriptor_;
  kiln_artifact_t artifact_{};
  kiln_model_t *model_ = nullptr;
  int64_t shape_[2] = {2, 3}, kshape_[1] = {1};
  float x_[6] = {1, 2, 3, 4, 5, 6}, y_[6] = {};
  int32_t k_[1] = {10};
  alignas(64) unsigned char arena_[256] = {};
};

TEST_F(ProfileTest, TimesEveryKernelAndNamesIt) {
  ASSERT_EQ(open(KILN_ABI_VERSION, twoKernels()), KILN_STATUS_OK) << last_error();
  ASSERT_EQ(kiln_model_num_kernels(model_), 2u);
  EXPECT_STREQ(kiln_model_kernel_name(model_, 0), "Conv_0,Relu_1");
  EXPECT_STREQ(kiln_model_kernel_name(model_, 1), "Add_2");
  EXPECT_EQ(kiln_model_kernel_name(model_, 2), nullptr);
  EXPECT_EQ(kiln_model_kernel_flops(model_, 0), 1000u);
  EXPECT_EQ(kiln_model_kernel_flops(model_, 1), 0u);
  for (size_t threads : {1, 3}) {
    ASSERT_EQ(kiln_model_set_num_threads(model_, threads), KILN_STATUS_OK);
    uint64_t t[3] = {};
    ASSERT_EQ(run(t, 3), KILN_STATUS_OK) << last_error();
    EXPECT_GT(t[0], 0u);
    EXPECT_LE(t[0], t[1]);
    EXPECT_LE(t[1], t[2]);
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(y_[i], x_[i] + 10) << i;
  }
}

TEST_F(ProfileTest, RefusesTooFewTimestampsAndState) {
  ASSERT_EQ(open(KILN_ABI_VERSION, twoKernels()), KILN_STATUS_OK) << last_error();
  uint64_t t[3];
  EXPECT_EQ(run(t, 2), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "timestamps_ns holds 2 entries, model 'tiny' needs 3");
  EXPECT_EQ(run(nullptr, 3), KILN_STATUS_INVALID_ARGUMENT);
  kiln_tensor_t in[2] = {{KILN_DTYPE_F32, 2, shape_, x_}, {KILN_DTYPE_I32, 1, kshape_, k_}};
  kiln_tensor_t out[1] = {{KILN_DTYPE_F32, 2, shape_, y_}};
  unsigned char state[64];
  EXPECT_EQ(kiln_model_run_profiled(model_, in, 2, out, 1, state, sizeof state, arena_, sizeof arena_, t, 3),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "model 'tiny' has no state, but a state was given");
}

// An ABI 4 artifact has no run_packed_profiled field: it is never read, and
// the model has no kernels to profile.
TEST_F(ProfileTest, OlderArtifactsHaveNoProbes) {
  ASSERT_EQ(open(4, twoKernels()), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(kiln_model_num_kernels(model_), 0u);
  uint64_t t[3];
  EXPECT_EQ(run(t, 3), KILN_STATUS_UNAVAILABLE);
  EXPECT_NE(last_error().find("has no kernel probes"), std::string::npos) << last_error();
}

TEST_F(ProfileTest, RefusesFlopsThatDoNotMatchTheKernels) {
  ModelSpec spec = twoKernels();
  spec.kernel_flops = {1, 2, 3};
  EXPECT_EQ(open(KILN_ABI_VERSION, spec), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("3 kernel_flops for 2 kernel_names"), std::string::npos) << last_error();
  spec.kernel_flops.clear();
  spec.kernel_names = {"a", ""};
  EXPECT_EQ(open(KILN_ABI_VERSION, spec), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("kernel 1 has an empty name"), std::string::npos) << last_error();
}

// ---- checked arithmetic (runtime/src/checked_math.h) -------------------------------

TEST(CheckedMath, AddAndMulAtTheBoundaries) {
  const uint64_t max = UINT64_MAX, half = uint64_t(1) << 63;
  uint64_t out = 7;
  EXPECT_TRUE(kiln_checked_add(max - 1, 1, max, &out));
  EXPECT_EQ(out, max);
  out = 7;
  EXPECT_FALSE(kiln_checked_add(max, 1, max, &out)); // 2^64 wraps to 0
  EXPECT_EQ(out, 7u);
  EXPECT_FALSE(kiln_checked_add(half, half, max, &out));
  EXPECT_TRUE(kiln_checked_add(half - 1, half, max, &out));
  EXPECT_EQ(out, max);
  EXPECT_FALSE(kiln_checked_add(5, 6, 10, &out)); // over the limit, not the type
  EXPECT_FALSE(kiln_checked_add(11, 0, 10, &out));

  EXPECT_TRUE(kiln_checked_mul(half, 1, max, &out));
  EXPECT_EQ(out, half);
  EXPECT_FALSE(kiln_checked_mul(half, 2, max, &out)); // 2^64 wraps to 0
  EXPECT_FALSE(kiln_checked_mul(uint64_t(1) << 32, uint64_t(1) << 32, max, &out));
  EXPECT_TRUE(kiln_checked_mul(0, max, max, &out));
  EXPECT_EQ(out, 0u);
  EXPECT_TRUE(kiln_checked_mul(max, 0, max, &out));
  EXPECT_FALSE(kiln_checked_mul(3, 4, 11, &out));
  EXPECT_TRUE(kiln_checked_mul(3, 4, 12, &out));
  EXPECT_EQ(out, 12u);
  EXPECT_FALSE(kiln_checked_mul(1, 12, 11, &out));
}

TEST(CheckedMath, DimsProduct) {
  uint64_t out = 7;
  const int64_t big = int64_t(1) << 62;
  int64_t wraps[] = {big, 4, 1}; // 2^64: wraps to 0 in plain arithmetic
  EXPECT_FALSE(kiln_checked_dims_product(wraps, 3, UINT64_MAX, &out));
  EXPECT_EQ(out, 7u);
  int64_t npy[] = {(int64_t(1) << 58) + 1, 1, 1, 28, 28}; // the .npy of issue 28
  EXPECT_FALSE(kiln_checked_dims_product(npy, 5, UINT64_MAX, &out));
  int64_t negative[] = {2, -1};
  EXPECT_FALSE(kiln_checked_dims_product(negative, 2, UINT64_MAX, &out));
  int64_t zero[] = {big, big, 0}; // zero elements, however large the rest
  EXPECT_TRUE(kiln_checked_dims_product(zero, 3, UINT64_MAX, &out));
  EXPECT_EQ(out, 0u);
  int64_t zeroThenNegative[] = {0, -3};
  EXPECT_FALSE(kiln_checked_dims_product(zeroThenNegative, 2, UINT64_MAX, &out));
  EXPECT_TRUE(kiln_checked_dims_product(nullptr, 0, UINT64_MAX, &out)); // a scalar
  EXPECT_EQ(out, 1u);
  int64_t twoTo63[] = {int64_t(1) << 31, int64_t(1) << 32};
  EXPECT_TRUE(kiln_checked_dims_product(twoTo63, 2, UINT64_MAX, &out));
  EXPECT_EQ(out, uint64_t(1) << 63);
  EXPECT_FALSE(kiln_checked_dims_product(twoTo63, 2, uint64_t(INT64_MAX), &out)); // 2^63 > INT64_MAX
  size_t sum = 3;
  EXPECT_FALSE(kiln_checked_add_size(SIZE_MAX, 1, &sum));
  EXPECT_EQ(sum, 3u);
  EXPECT_TRUE(kiln_checked_add_size(SIZE_MAX - 1, 1, &sum));
  EXPECT_EQ(sum, SIZE_MAX);
}

// ---- the data checksum (ABI 5) ----------------------------------------------------

TEST(DataChecksum, RefusesChangedWeightsAndEmptyTables) {
  std::vector<uint8_t> descriptor = build(ModelSpec{});
  static float weights[5] = {1, 2, 3, 4, 5};
  static const uint8_t tail[3] = {7, 8, 9};
  kiln_data_range_t ranges[2] = {{weights, sizeof weights}, {tail, sizeof tail}};
  kiln_artifact_t artifact = artifactOf(descriptor.data(), descriptor.size(), serial_add);
  artifact.run_packed_parallel = parallel_add;
  artifact.data_ranges = ranges;
  artifact.num_data_ranges = 2;
  artifact.data_checksum = kiln_data_checksum(ranges, 2);
  kiln_model_t *model = nullptr;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << last_error();
  kiln_model_close(model);

  weights[3] = 4.5f; // one weight changed after "compilation"
  model = nullptr;
  EXPECT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(last_error().find("the checksum of its constant data (23 bytes of weights)"), std::string::npos)
      << last_error();
  weights[3] = 4;

  artifact.data_ranges = nullptr; // a count without a table
  EXPECT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(last_error(), "artifact lists 2 data ranges but no table of them");

  // ABI 4 has no such fields: whatever lies there is never read.
  artifact.abi_version = 4;
  artifact.descriptor_checksum = checksum(4, descriptor.data(), descriptor.size());
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << last_error();
  kiln_model_close(model);
}

// ---- the code checksum (ABI 6) ---------------------------------------------------

// The checksum of this test program's executable segment, read from its file
// (not through the loader, as the runtime does); nullopt where the file has
// more than one such segment.
static std::optional<uint64_t> fileCodeChecksum() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(Elf64_Ehdr))
    return std::nullopt;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  std::optional<uint64_t> sum;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
      continue;
    if (sum)
      return std::nullopt;
    kiln_data_range_t range{bytes.data() + ph.p_offset, ph.p_filesz};
    sum = kiln_data_checksum(&range, 1);
  }
  return sum;
}

TEST(CodeChecksum, RefusesChangedCode) {
  std::optional<uint64_t> sum = fileCodeChecksum();
  if (!sum)
    GTEST_SKIP() << "this program has more than one executable segment";
  std::vector<uint8_t> descriptor = build(ModelSpec{});
  kiln_artifact_t artifact = artifactOf(descriptor.data(), descriptor.size(), serial_add);
  artifact.run_packed_parallel = parallel_add;
  artifact.code_checksum = *sum;
  kiln_model_t *model = nullptr;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << last_error();
  kiln_model_close(model);

  artifact.code_checksum = *sum ^ 0x100; // as if one bit of the code had changed
  EXPECT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(last_error().find("the checksum of its code"), std::string::npos) << last_error();

  // An entry point outside every loaded object's code.
  static unsigned char not_code[16];
  artifact.run_packed =
      reinterpret_cast<kiln_status_t (*)(void *const *, void *)>(reinterpret_cast<uintptr_t>(not_code));
  EXPECT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("no loaded object's code holds its run_packed"), std::string::npos) << last_error();

  // 0 is an object file's: its code is placed by the application's link.
  artifact.code_checksum = 0;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << last_error();
  kiln_model_close(model);
}

// The checksum's definition: FNV-1a 64 over little-endian words, then the
// tail bytes; a known value computed by hand from the constants.
TEST(DataChecksum, Definition) {
  EXPECT_EQ(kiln_data_checksum(nullptr, 0), 14695981039346656037ull);
  const uint8_t one = 0x61; // 'a': FNV-1a 64 of "a" is af63dc4c8601ec8c
  kiln_data_range_t r = {&one, 1};
  EXPECT_EQ(kiln_data_checksum(&r, 1), 0xaf63dc4c8601ec8cull);
}

// ---- symbolic dimensions ------------------------------------------------------

namespace {

// x [batch, 3] and z [batch] in, y [2*batch + 1, 3] out, batch in 1..4:
// the size programs of kiln_model.fbs (Tensor.dims).
ModelSpec symbolicSpec() {
  ModelSpec spec;
  const std::vector<int64_t> batch = {2, 1, 0}, three = {2, 0, 3};
  spec.inputs = {{"x", fb::DType::f32, {4, 3}, true, {2, 1, 0, 2, 0, 3}}, {"z", fb::DType::f32, {4}, true, batch}};
  // 2 * batch + 1: const 2, symbol 0, mul, const 1, add.
  std::vector<int64_t> y = {8, 0, 2, 1, 0, 3, 0, 1, 2};
  y.insert(y.end(), three.begin(), three.end());
  spec.outputs = {{"y", fb::DType::f32, {9, 3}, true, y}};
  spec.dim_names = {"batch"};
  spec.dim_ranges = {1, 4};
  // The arena at a run's sizes: the larger of 64 and 32 * batch + 64.
  spec.arena_terms = {2, 0, 64, 8, 0, 32, 1, 0, 3, 0, 64, 2};
  return spec;
}

struct SymbolicRun {
  int calls = 0;
  int64_t batch = -1;
};
SymbolicRun g_symbolic;

// Records the size it was given and writes the first 2 * batch + 1 rows.
kiln_status_t symbolic_hooks_run(void *const *buffers, void *, const kiln_run_hooks_t *hooks) {
  ++g_symbolic.calls;
  if (hooks == nullptr || hooks->struct_size < sizeof(kiln_run_hooks_t) || hooks->dims == nullptr)
    return KILN_STATUS_INVALID_ARGUMENT;
  g_symbolic.batch = hooks->dims[0];
  float *y = static_cast<float *>(buffers[2]);
  for (int64_t i = 0; i < (2 * g_symbolic.batch + 1) * 3; ++i)
    y[i] = 1.0f;
  return KILN_STATUS_OK;
}

} // namespace

// The ranges and the shapes at a run's sizes read back; kiln_model_run
// takes the size from the inputs, checks it against its range and across
// the inputs, and hands it to the code.
TEST_F(RuntimeTest, SymbolicDimensions) {
  ModelSpec spec = symbolicSpec();
  descriptor_ = build(spec);
  artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), fake_run);
  artifact_.run_packed_hooks = symbolic_hooks_run;
  ASSERT_EQ(kiln_model_open(&artifact_, &model_), KILN_STATUS_OK) << last_error();
  ASSERT_EQ(kiln_model_num_dims(model_), 1u);
  kiln_dim_info_t dim;
  ASSERT_EQ(kiln_model_dim_info(model_, 0, &dim), KILN_STATUS_OK);
  EXPECT_STREQ(dim.name, "batch");
  EXPECT_EQ(dim.min, 1);
  EXPECT_EQ(dim.max, 4);
  EXPECT_EQ(kiln_model_dim_info(model_, 1, &dim), KILN_STATUS_INVALID_ARGUMENT);
  kiln_tensor_info_t y;
  ASSERT_EQ(kiln_model_output_info(model_, 0, &y), KILN_STATUS_OK);
  EXPECT_EQ(y.shape[0], 9); // the bound
  int64_t dims[1] = {3}, shape[2] = {};
  ASSERT_EQ(kiln_model_output_shape(model_, 0, dims, shape), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(shape[0], 7);
  EXPECT_EQ(shape[1], 3);
  // The inputs' shapes at the same sizes: x is [batch, 3], z is [batch].
  ASSERT_EQ(kiln_model_input_shape(model_, 0, dims, shape), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(shape[0], 3);
  EXPECT_EQ(shape[1], 3);
  ASSERT_EQ(kiln_model_input_shape(model_, 1, nullptr, shape), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(shape[0], 4); // the bound
  EXPECT_EQ(kiln_model_input_shape(model_, 2, dims, shape), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("input index 2 out of range"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("has 2 inputs"), std::string::npos) << last_error();
  dims[0] = 5;
  EXPECT_EQ(kiln_model_output_shape(model_, 0, dims, shape), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "dimension 'batch' is 5, outside its range 1..4");
  EXPECT_EQ(kiln_model_input_shape(model_, 0, dims, shape), KILN_STATUS_INVALID_ARGUMENT);

  g_symbolic = SymbolicRun();
  float x[12] = {}, z[4] = {}, out[27] = {};
  int64_t x_shape[2] = {2, 3}, z_shape[1] = {2}, y_shape[2] = {5, 3};
  kiln_tensor_t inputs[2] = {{KILN_DTYPE_F32, 2, x_shape, x}, {KILN_DTYPE_F32, 1, z_shape, z}};
  kiln_tensor_t outputs[1] = {{KILN_DTYPE_F32, 2, y_shape, out}};
  alignas(64) unsigned char arena[256];
  ASSERT_EQ(kiln_model_dims_of_inputs(model_, inputs, 2, dims), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(dims[0], 2);
  ASSERT_EQ(kiln_model_run(model_, inputs, 2, outputs, 1, arena, sizeof arena), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(g_symbolic.calls, 1);
  EXPECT_EQ(g_symbolic.batch, 2);
  EXPECT_EQ(out[14], 1.0f);
  EXPECT_EQ(out[15], 0.0f); // past the run's 5 rows

  // The arena a run needs follows its sizes: 32 * 2 + 64 bytes at batch 2.
  size_t bytes = 0;
  ASSERT_EQ(kiln_model_arena_bytes_at(model_, dims, &bytes), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(bytes, 128u);
  ASSERT_EQ(kiln_model_arena_bytes_at(model_, nullptr, &bytes), KILN_STATUS_OK);
  EXPECT_EQ(bytes, 256u); // the bound's plan
  ASSERT_EQ(kiln_model_run(model_, inputs, 2, outputs, 1, arena, 128), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(kiln_model_run(model_, inputs, 2, outputs, 1, arena, 127), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "arena holds 127 bytes, model 'tiny' needs 128");
  dims[0] = 0;
  EXPECT_EQ(kiln_model_arena_bytes_at(model_, dims, &bytes), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "dimension 'batch' is 0, outside its range 1..4");
  EXPECT_EQ(g_symbolic.calls, 2);
  g_symbolic.calls = 1;

  // Outputs at other sizes, sizes outside the range and inputs that
  // disagree are refused before the code runs.
  y_shape[0] = 9;
  EXPECT_EQ(kiln_model_run(model_, inputs, 2, outputs, 1, arena, sizeof arena), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "output 'y': expected shape [5,3], found [9,3]");
  x_shape[0] = z_shape[0] = 5;
  EXPECT_EQ(kiln_model_run(model_, inputs, 2, outputs, 1, arena, sizeof arena), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "input 'x': dimension 'batch' (axis 0) is 5, outside its range 1..4");
  x_shape[0] = 3;
  z_shape[0] = 2;
  EXPECT_EQ(kiln_model_run(model_, inputs, 2, outputs, 1, arena, sizeof arena), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "dimension 'batch' is 3 in input 'x' but 2 in input 'z' (axis 0)");
  EXPECT_EQ(g_symbolic.calls, 1);
}

// Size programs are checked when the model opens.
TEST_F(RuntimeTest, SymbolicDimensionsRefused) {
  auto refuse = [&](ModelSpec spec, const std::string &message) {
    descriptor_ = build(spec);
    artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), fake_run);
    artifact_.run_packed_hooks = symbolic_hooks_run;
    kiln_model_close(model_);
    model_ = nullptr;
    EXPECT_EQ(kiln_model_open(&artifact_, &model_), KILN_STATUS_INVALID_ARTIFACT) << message;
    EXPECT_NE(last_error().find(message), std::string::npos) << "message: " << last_error();
  };
  ModelSpec spec = symbolicSpec();
  spec.outputs[0].dims[1] = 6; // opcode
  refuse(spec, "output 'y': the size program of axis 0 has unknown opcode 6");
  spec = symbolicSpec();
  spec.inputs[1].dims = {2, 1, 1}; // symbol 1 of 1
  refuse(spec, "input 'z': the size program of axis 0 reads symbol 1 of 1");
  spec = symbolicSpec();
  spec.inputs[1].dims = {4, 1, 0, 4, 0}; // floor(batch / 0)
  refuse(spec, "input 'z': the size program of axis 0 divides by 0");
  spec = symbolicSpec();
  spec.inputs[1].dims = {1, 2}; // add on an empty stack
  refuse(spec, "input 'z': the size program of axis 0 pops an empty stack");
  spec = symbolicSpec();
  spec.outputs[0].shape = {8, 3}; // 2 * 4 + 1 is 9
  refuse(spec, "output 'y': axis 0 is 9 at the upper bounds and 3 at the lower ones, expected 8 and at least 0");
  spec = symbolicSpec();
  spec.inputs[0].dims = {2, 0, 4, 2, 0, 3};
  spec.inputs[1].dims = {2, 0, 4};
  refuse(spec, "symbolic dimension 'batch' is the size of no input axis");
  spec = symbolicSpec();
  spec.dim_ranges = {1};
  refuse(spec, "1 symbol_ranges for 1 symbol_names, expected two each");
  spec = symbolicSpec();
  spec.dim_names.clear();
  spec.dim_ranges.clear();
  refuse(spec, "arena_terms, but the model has no symbolic dimensions");
  spec.arena_terms.clear();
  refuse(spec, "input 'x': has size programs, but the model has no symbolic dimensions");
  spec = symbolicSpec();
  spec.arena_terms = {2, 0, 300}; // more than the 256 bytes planned
  refuse(spec, "arena term 0 is outside 0..256 over the symbols' ranges");
  spec = symbolicSpec();
  spec.arena_terms = {3, 0, 64}; // a count past the codes
  refuse(spec, "arena term 0 has 3 codes");
  // Before ABI 8 there is no way to give the code its sizes.
  spec = symbolicSpec();
  descriptor_ = build(spec);
  artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), fake_run, 7);
  artifact_.run_packed_hooks = symbolic_hooks_run;
  kiln_model_close(model_);
  model_ = nullptr;
  EXPECT_EQ(kiln_model_open(&artifact_, &model_), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(last_error().find("no run_packed_hooks entry point of ABI 8"), std::string::npos) << last_error();
}

// ---- computed dimensions (decision 0031) -------------------------------------

namespace {

// x [4] in; y [2, count] out, where count (0..4) is computed by the run.
ModelSpec computedSpec() {
  ModelSpec spec;
  spec.inputs = {{"x", fb::DType::f32, {4}}};
  spec.outputs = {{"y", fb::DType::i64, {2, 4}, true, {2, 0, 2, 2, 1, 0}}};
  spec.dim_names = {"nz.count"};
  spec.dim_ranges = {0, 4};
  spec.computed_symbols = 1;
  return spec;
}

int64_t g_computed_in = -1;

// Reports count 3 and writes y densely at [2, 3].
kiln_status_t computed_hooks_run(void *const *buffers, void *, const kiln_run_hooks_t *hooks) {
  if (hooks == nullptr || hooks->dims == nullptr)
    return KILN_STATUS_INVALID_ARGUMENT;
  g_computed_in = hooks->dims[0];
  hooks->dims[0] = 3;
  int64_t *y = static_cast<int64_t *>(buffers[1]);
  for (int64_t i = 0; i < 6; ++i)
    y[i] = 10 + i;
  return KILN_STATUS_OK;
}

} // namespace

// A computed dimension is reported as such, its buffers are at the bound,
// and the run's value comes back through kiln_model_last_dims.
TEST_F(RuntimeTest, ComputedDimensions) {
  ModelSpec spec = computedSpec();
  descriptor_ = build(spec);
  artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), fake_run);
  artifact_.run_packed_hooks = computed_hooks_run;
  ASSERT_EQ(kiln_model_open(&artifact_, &model_), KILN_STATUS_OK) << last_error();
  ASSERT_EQ(kiln_model_num_dims(model_), 1u);
  kiln_dim_info_t dim;
  ASSERT_EQ(kiln_model_dim_info(model_, 0, &dim), KILN_STATUS_OK);
  EXPECT_STREQ(dim.name, "nz.count");
  EXPECT_EQ(dim.min, 0);
  EXPECT_EQ(dim.max, 4);
  EXPECT_EQ(dim.computed, 1);
  int64_t dims[1] = {-1}, shape[2] = {};
  ASSERT_EQ(kiln_model_last_dims(model_, dims), KILN_STATUS_OK);
  EXPECT_EQ(dims[0], 4); // the bound before a run

  // The inputs leave it at its bound: the buffers a run needs.
  float x[4] = {};
  int64_t x_shape[1] = {4}, y_shape[2] = {2, 4}, y[8] = {};
  kiln_tensor_t inputs[1] = {{KILN_DTYPE_F32, 1, x_shape, x}};
  kiln_tensor_t outputs[1] = {{KILN_DTYPE_I64, 2, y_shape, y}};
  ASSERT_EQ(kiln_model_dims_of_inputs(model_, inputs, 1, dims), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(dims[0], 4);
  alignas(64) unsigned char arena[256];
  ASSERT_EQ(kiln_model_run(model_, inputs, 1, outputs, 1, arena, sizeof arena), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(g_computed_in, 4);
  ASSERT_EQ(kiln_model_last_dims(model_, dims), KILN_STATUS_OK);
  EXPECT_EQ(dims[0], 3);
  ASSERT_EQ(kiln_model_output_shape(model_, 0, dims, shape), KILN_STATUS_OK) << last_error();
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(y[5], 15);
  EXPECT_EQ(kiln_model_last_dims(model_, nullptr), KILN_STATUS_INVALID_ARGUMENT);

  // A failed run leaves the last dims as they were.
  y_shape[1] = 3;
  EXPECT_EQ(kiln_model_run(model_, inputs, 1, outputs, 1, arena, sizeof arena), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "output 'y': expected shape [2,4], found [2,3]");
}

// A computed dimension must start at 0, be no input's size, and come from a
// compiler of ABI 10 or later.
TEST_F(RuntimeTest, ComputedDimensionsRefused) {
  auto refuse = [&](ModelSpec spec, uint32_t abi, const std::string &message) {
    descriptor_ = build(spec);
    artifact_ = artifactOf(descriptor_.data(), descriptor_.size(), fake_run, abi);
    artifact_.run_packed_hooks = computed_hooks_run;
    kiln_model_close(model_);
    model_ = nullptr;
    EXPECT_EQ(kiln_model_open(&artifact_, &model_), KILN_STATUS_INVALID_ARTIFACT) << message;
    EXPECT_NE(last_error().find(message), std::string::npos) << "message: " << last_error();
  };
  ModelSpec spec = computedSpec();
  spec.dim_ranges = {1, 4};
  refuse(spec, KILN_ABI_VERSION, "computed symbolic dimension 0 has a lowest size other than 0");
  spec = computedSpec();
  spec.computed_symbols = 2;
  refuse(spec, KILN_ABI_VERSION, "2 computed_symbols of 1 symbolic dimensions");
  spec = computedSpec();
  spec.inputs = {{"x", fb::DType::f32, {4}, true, {2, 1, 0}}};
  refuse(spec, KILN_ABI_VERSION, "computed symbolic dimension 'nz.count' is the size of an input axis");
  refuse(computedSpec(), 9, "artifact has computed dimensions but is older than ABI 10");
}
