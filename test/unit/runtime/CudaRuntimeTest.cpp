// Tests of the CUDA half of the artifact contract without a GPU: the
// descriptor reader's checks of the CudaModule (runtime/src/descriptor.c),
// the CPU runtime refusing to run a CUDA model, and, where the CUDA runtime
// is built (KILN_TEST_CUDA_RUNTIME), kiln/runtime_cuda.h reporting a missing
// driver as KILN_STATUS_UNAVAILABLE. With a driver present that one test
// skips and says so: running kernels is the GPU suite's job.
#include "kiln/runtime.h"

#include "descriptor.h"
#include "kiln/kiln_model_generated.h"

#ifdef KILN_TEST_CUDA_RUNTIME
#include "kiln/runtime_cuda.h"
#include "vendor_library.h" // runtime/cuda, internal
#include <cuda.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <unistd.h>
#endif

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace fb = kiln::fb;

struct CudaSpec {
  std::string target = "cuda";
  bool with_module = true;
  std::string gpu_arch = "sm_90";
  std::vector<std::string> kernels = {"k0", "k1"};
  std::vector<fb::CudaStep> steps = {fb::CudaStep(0, 4, 256, 0, 2), fb::CudaStep(1, 1, 1, 2, 1)};
  std::vector<fb::CudaArg> args = {fb::CudaArg(0, 0, 0), fb::CudaArg(2, 0, 256), fb::CudaArg(1, 0, 0)};
  std::vector<uint8_t> cubin = {0x7f, 'E', 'L', 'F'};
  std::string ptx = ".version 8.0";
  std::vector<uint8_t> constants = {1, 2, 3, 4};
  // Cubins for further architectures (kilnc --gpu-arch lists).
  std::vector<std::pair<std::string, std::vector<uint8_t>>> more;
  struct Gemm {
    int64_t m = 2, n = 2, k = 2, lda = 2, ldb = 2, ldd = 2, stride_a = 0, stride_b = 0, stride_d = 0;
    uint32_t batch = 1;
    fb::DType dtype = fb::DType::f32;
    uint8_t trans_a = 0, trans_b = 1, epilogue = 3, accumulate = 0, tf32 = 0;
    fb::DType d_dtype = fb::DType::f32;
    uint64_t workspace_bytes = 256;
    fb::CudaGemm fb() const {
      return fb::CudaGemm(m, n, k, lda, ldb, ldd, stride_a, stride_b, stride_d, batch, dtype, trans_a, trans_b,
                          epilogue, accumulate, tf32, d_dtype, workspace_bytes);
    }
  };
  std::vector<Gemm> gemms;
  struct Conv {
    int64_t n = 1, c = 1, h = 4, w = 4, xs[4] = {16, 16, 4, 1}, k = 1, r = 2, s = 2, p = 2, q = 2, ys[4] = {4, 4, 2, 1};
    int32_t stride_h = 2, stride_w = 2, dilation_h = 1, dilation_w = 1, groups = 1;
    fb::DType dtype = fb::DType::f32;
    uint8_t tf32 = 0, epilogue = 0;
    uint64_t workspace_bytes = 256;
    fb::CudaConv fb() const {
      return fb::CudaConv(n, c, h, w, xs[0], xs[1], xs[2], xs[3], k, r, s, p, q, ys[0], ys[1], ys[2], ys[3], stride_h,
                          stride_w, dilation_h, dilation_w, groups, dtype, tf32, epilogue, workspace_bytes);
    }
  };
  std::vector<Conv> convs;
  // Per conv, the zero padding cuDNN applies (ABI 9); empty: none.
  std::vector<fb::CudaConvPad> conv_pads;
  uint32_t io_alignment = 0;
  // A training step's state: one f32[4] parameter, 64 bytes.
  bool with_state = false;
  // Symbolic dimensions (kilnc --dim NAME=LO..HI): names and lo, hi pairs.
  std::vector<std::string> dim_names;
  std::vector<int64_t> dim_ranges;
};

// A spec whose step 2 calls cuDNN: y[1, 1, 2, 2] (the output) = x[1, 1, 4, 4]
// (arena+0) convolved with w[1, 1, 2, 2] (the constants) at stride 2, with
// 256 bytes of workspace at arena+256.
CudaSpec convSpec() {
  CudaSpec spec;
  spec.constants.assign(16, 0);
  spec.convs = {CudaSpec::Conv()};
  spec.steps.push_back(fb::CudaStep(2, 1, 1, 3, 4));
  spec.args.insert(spec.args.end(),
                   {fb::CudaArg(2, 0, 0), fb::CudaArg(3, 0, 0), fb::CudaArg(1, 0, 0), fb::CudaArg(2, 0, 256)});
  return spec;
}

// convSpec's conv on x[1, 1, 2, 2] padded by 1 on each side (cuDNN pads):
// the same output size.
CudaSpec paddedConvSpec() {
  CudaSpec spec = convSpec();
  CudaSpec::Conv &c = spec.convs[0];
  c.h = c.w = 2;
  c.xs[0] = c.xs[1] = 4;
  c.xs[2] = 2;
  spec.conv_pads = {fb::CudaConvPad(1, 1)};
  return spec;
}

// A spec whose step 2 calls cuBLASLt: per batch of 1, D[2x2] at arena+0 =
// relu(A[2x2] (the input) * B^T (the constants) + bias (the constants)),
// with 256 bytes of workspace at arena+256.
CudaSpec gemmSpec() {
  CudaSpec spec;
  spec.constants.assign(16, 0);
  spec.gemms = {CudaSpec::Gemm()};
  spec.steps.push_back(fb::CudaStep(2, 1, 1, 3, 5));
  spec.args.insert(spec.args.end(), {fb::CudaArg(0, 0, 0), fb::CudaArg(3, 0, 0), fb::CudaArg(2, 0, 0),
                                     fb::CudaArg(2, 0, 256), fb::CudaArg(3, 0, 8)});
  return spec;
}

// One f32[4] input, one f32[4] output, a 512-byte arena.
std::vector<uint8_t> build(const CudaSpec &spec) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<int64_t> shape{4};
  // With dimensions, the input's axis is the first one's size (at most 4).
  std::vector<int64_t> firstDim{2, 1, 0};
  std::vector<flatbuffers::Offset<fb::Tensor>> inputs{fb::CreateTensorDirect(
      fbb, "x", fb::DType::f32, &shape, 0, fb::StateRole::none, spec.dim_names.empty() ? nullptr : &firstDim)};
  std::vector<flatbuffers::Offset<fb::Tensor>> outputs{fb::CreateTensorDirect(fbb, "y", fb::DType::f32, &shape)};
  flatbuffers::Offset<fb::CudaModule> module;
  if (spec.with_module) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> kernels;
    for (const std::string &k : spec.kernels)
      kernels.push_back(fbb.CreateString(k));
    std::vector<flatbuffers::Offset<fb::CudaCubin>> more;
    for (const auto &[arch, bytes] : spec.more)
      more.push_back(fb::CreateCudaCubinDirect(fbb, arch.c_str(), &bytes));
    std::vector<fb::CudaGemm> gemms;
    for (const CudaSpec::Gemm &g : spec.gemms)
      gemms.push_back(g.fb());
    std::vector<fb::CudaConv> convs;
    for (const CudaSpec::Conv &c : spec.convs)
      convs.push_back(c.fb());
    module = fb::CreateCudaModuleDirect(fbb, spec.gpu_arch.c_str(), &kernels, &spec.steps, &spec.args, &spec.cubin,
                                        spec.ptx.c_str(), &spec.constants, spec.more.empty() ? nullptr : &more,
                                        gemms.empty() ? nullptr : &gemms, convs.empty() ? nullptr : &convs,
                                        spec.io_alignment, nullptr, spec.conv_pads.empty() ? nullptr : &spec.conv_pads);
  }
  std::vector<flatbuffers::Offset<fb::Tensor>> state;
  if (spec.with_state)
    state.push_back(fb::CreateTensorDirect(fbb, "w", fb::DType::f32, &shape, 0, fb::StateRole::parameter));
  std::vector<flatbuffers::Offset<flatbuffers::String>> dimNames;
  for (const std::string &d : spec.dim_names)
    dimNames.push_back(fbb.CreateString(d));
  auto model = fb::CreateModelDirect(
      fbb, 1, "tiny", spec.target.c_str(), "", "kilnc 0.1.0", &inputs, &outputs, 512, 256, 512,
      spec.with_state ? &state : nullptr, spec.with_state ? 64 : 0, spec.with_state ? 64 : 0, module, nullptr, nullptr,
      nullptr, nullptr, nullptr, dimNames.empty() ? nullptr : &dimNames, dimNames.empty() ? nullptr : &spec.dim_ranges);
  fb::FinishModelBuffer(fbb, model);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

kiln_status_t unavailable(void *const *, void *) { return KILN_STATUS_UNAVAILABLE; }

kiln_artifact_t artifactOf(const std::vector<uint8_t> &desc) {
  return kiln_artifact_t{KILN_ABI_VERSION,
                         kiln_descriptor_checksum(desc.data(), desc.size()),
                         desc.data(),
                         desc.size(),
                         unavailable,
                         nullptr,
                         nullptr,
                         nullptr,
                         nullptr,
                         0,
                         0,
                         0,
                         nullptr};
}

kiln_status_t readStatus(const CudaSpec &spec, std::string &message) {
  std::vector<uint8_t> desc = build(spec);
  kiln_desc_model_t model;
  char err[256] = "";
  kiln_status_t st = kiln_desc_read(desc.data(), desc.size(), &model, err, sizeof err);
  message = err;
  return st;
}

// The reader hands back every field of a valid module.
TEST(CudaDescriptor, ReadsTheModule) {
  std::vector<uint8_t> desc = build(CudaSpec());
  kiln_desc_model_t m;
  ASSERT_EQ(kiln_desc_read(desc.data(), desc.size(), &m, nullptr, 0), KILN_STATUS_OK);
  ASSERT_TRUE(m.has_cuda);
  EXPECT_STREQ(m.gpu_arch.data, "sm_90");
  ASSERT_EQ(m.num_kernels, 2u);
  EXPECT_STREQ(kiln_desc_cuda_kernel(&m, 1).data, "k1");
  ASSERT_EQ(m.num_steps, 2u);
  kiln_desc_cuda_step_t s = kiln_desc_cuda_step(&m, 0);
  EXPECT_EQ(s.grid, 4u);
  EXPECT_EQ(s.block, 256u);
  EXPECT_EQ(s.num_args, 2u);
  ASSERT_EQ(m.num_args, 3u);
  kiln_desc_cuda_arg_t a = kiln_desc_cuda_arg(&m, 1);
  EXPECT_EQ(a.space, KILN_DESC_CUDA_ARENA);
  EXPECT_EQ(a.offset, 256u);
  EXPECT_EQ(m.cubin_size, 4u);
  EXPECT_STREQ(m.ptx.data, ".version 8.0");
  ASSERT_EQ(m.constants_size, 4u);
  EXPECT_EQ(m.constants[3], 4);
  EXPECT_EQ(m.num_more_cubins, 0u);
  EXPECT_EQ(m.io_alignment, 1u); // absent: no assumption

  // Further architectures come back in order, each with its cubin.
  CudaSpec list;
  list.gpu_arch = "sm_80";
  list.more = {{"sm_86", {0x7f, 'E', 'L', 'F', 86}}, {"sm_90", {0x7f, 'E', 'L', 'F', 90, 0}}};
  desc = build(list);
  ASSERT_EQ(kiln_desc_read(desc.data(), desc.size(), &m, nullptr, 0), KILN_STATUS_OK);
  ASSERT_EQ(m.num_more_cubins, 2u);
  EXPECT_STREQ(m.more_arch[0].data, "sm_86");
  EXPECT_STREQ(m.more_arch[1].data, "sm_90");
  EXPECT_EQ(m.more_cubin_size[1], 6u);
  EXPECT_EQ(m.more_cubin[0][4], 86);

  // A gemm step names the gemm after the kernels; every field comes back.
  desc = build(gemmSpec());
  ASSERT_EQ(kiln_desc_read(desc.data(), desc.size(), &m, nullptr, 0), KILN_STATUS_OK);
  ASSERT_EQ(m.num_gemms, 1u);
  EXPECT_EQ(kiln_desc_cuda_step(&m, 2).kernel, 2u);
  kiln_desc_cuda_gemm_t g = kiln_desc_cuda_gemm(&m, 0);
  EXPECT_EQ(g.m, 2);
  EXPECT_EQ(g.ldd, 2);
  EXPECT_EQ(g.batch, 1u);
  EXPECT_EQ(g.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(g.trans_a, 0);
  EXPECT_EQ(g.trans_b, 1);
  EXPECT_EQ(g.epilogue, KILN_DESC_GEMM_BIAS | KILN_DESC_GEMM_RELU);
  EXPECT_EQ(g.workspace_bytes, 256u);
  EXPECT_EQ(kiln_desc_cuda_arg(&m, 4).space, KILN_DESC_CUDA_CONSTANTS);

  // A conv step names the conv after the kernels and gemms.
  desc = build(convSpec());
  ASSERT_EQ(kiln_desc_read(desc.data(), desc.size(), &m, nullptr, 0), KILN_STATUS_OK);
  ASSERT_EQ(m.num_convs, 1u);
  kiln_desc_cuda_conv_t c = kiln_desc_cuda_conv(&m, 0);
  EXPECT_EQ(c.h, 4);
  EXPECT_EQ(c.x_stride[2], 4);
  EXPECT_EQ(c.q, 2);
  EXPECT_EQ(c.y_stride[0], 4);
  EXPECT_EQ(c.y_stride[3], 1);
  EXPECT_EQ(c.stride_w, 2);
  EXPECT_EQ(c.groups, 1);
  EXPECT_EQ(c.pad_h, 0);
  EXPECT_EQ(c.pad_w, 0);
  EXPECT_EQ(c.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(c.workspace_bytes, 256u);

  // With its padding (ABI 9): x [1, 1, 2, 2] read as if [1, 1, 4, 4].
  desc = build(paddedConvSpec());
  ASSERT_EQ(kiln_desc_read(desc.data(), desc.size(), &m, nullptr, 0), KILN_STATUS_OK) << kiln_last_error();
  c = kiln_desc_cuda_conv(&m, 0);
  EXPECT_EQ(c.h, 2);
  EXPECT_EQ(c.pad_h, 1);
  EXPECT_EQ(c.pad_w, 1);
  EXPECT_EQ(c.p, 2);
}

// Every rule of the module is checked, with a message naming the entry.
TEST(CudaDescriptor, RefusesBrokenModules) {
  struct Case {
    const char *what;
    std::function<void(CudaSpec &)> edit;
    const char *message;
  };
  const Case cases[] = {
      {"kernel out of range", [](CudaSpec &s) { s.steps[1] = fb::CudaStep(2, 1, 1, 2, 1); },
       "step 1 launches kernel 2 of 2"},
      {"block too large", [](CudaSpec &s) { s.steps[0] = fb::CudaStep(0, 4, 2048, 0, 2); }, "block 2048"},
      {"zero grid", [](CudaSpec &s) { s.steps[0] = fb::CudaStep(0, 0, 256, 0, 2); }, "grid 0"},
      {"args past the end", [](CudaSpec &s) { s.steps[1] = fb::CudaStep(1, 1, 1, 2, 2); }, "arguments 2..4 of 3"},
      {"input out of range", [](CudaSpec &s) { s.args[0] = fb::CudaArg(0, 1, 0); }, "space 0 index 1"},
      {"unknown space", [](CudaSpec &s) { s.args[0] = fb::CudaArg(4, 0, 0); }, "space 4"},
      {"a size of a model without dimensions", [](CudaSpec &s) { s.args[0] = fb::CudaArg(5, 0, 0); },
       "space 5 index 0"},
      {"space past the sizes", [](CudaSpec &s) { s.args[0] = fb::CudaArg(6, 0, 0); }, "space 6"},
      {"constants to a kernel", [](CudaSpec &s) { s.args[0] = fb::CudaArg(3, 0, 0); },
       "step 0 passes the constants to a kernel"},
      {"offset past the arena", [](CudaSpec &s) { s.args[1] = fb::CudaArg(2, 0, 513); }, "offset 513"},
      {"offset past an output", [](CudaSpec &s) { s.args[2] = fb::CudaArg(1, 0, 17); }, "offset 17"},
      {"empty kernel name", [](CudaSpec &s) { s.kernels[0] = ""; }, "kernel 0 has an empty name"},
      {"io alignment not a power of two", [](CudaSpec &s) { s.io_alignment = 24; },
       "io_alignment is 24, expected a power of two up to 256"},
      {"bad architecture", [](CudaSpec &s) { s.gpu_arch = "compute_90"; }, "gpu_arch is \"compute_90\""},
      {"no code",
       [](CudaSpec &s) {
         s.cubin.clear();
         s.ptx.clear();
       },
       "neither a cubin nor PTX"},
      {"cuda without module", [](CudaSpec &s) { s.with_module = false; }, "cuda module is missing"},
      {"more cubins not ascending",
       [](CudaSpec &s) {
         s.more = {{"sm_90", {0x7f, 'E', 'L', 'F', 1}}};
       },
       "more cubin 0 is for \"sm_90\", expected sm_<digits> above sm_90"},
      {"more cubins out of order",
       [](CudaSpec &s) {
         s.gpu_arch = "sm_80";
         s.more = {{"sm_100", {0x7f, 'E', 'L', 'F', 1}}, {"sm_90", {0x7f, 'E', 'L', 'F', 2}}};
       },
       "more cubin 1 is for \"sm_90\", expected sm_<digits> above sm_100"},
      {"empty more cubin",
       [](CudaSpec &s) {
         s.more = {{"sm_100", {}}};
       },
       "more cubin 0 (sm_100) is empty"},
      {"too many cubins",
       [](CudaSpec &s) {
         s.gpu_arch = "sm_75";
         for (int a = 80; a < 89; ++a)
           s.more.push_back({"sm_" + std::to_string(a), {0x7f, 'E', 'L', 'F', 1}});
       },
       "9 more cubins, at most 8"},
      {"module on another target", [](CudaSpec &s) { s.target = "x86_64-unknown-linux-gnu"; },
       "but a cuda module is present"},
  };
  // `make()`'s spec with its first gemm or conv (`entries`) edited.
  auto edited = [](CudaSpec (*make)(), auto entries, auto edit) {
    return std::function<void(CudaSpec &)>([=](CudaSpec &s) {
      s = make();
      edit((s.*entries)[0]);
    });
  };
  // A gemm's matrices must lie inside the buffers its arguments name.
  auto gemm = [&](std::function<void(CudaSpec::Gemm &)> edit) { return edited(gemmSpec, &CudaSpec::gemms, edit); };
  const Case gemmCases[] = {
      {"gemm out of range",
       [](CudaSpec &s) {
         s = gemmSpec();
         s.steps[2] = fb::CudaStep(3, 1, 1, 3, 5);
       },
       "step 2 launches kernel 3 of 3"},
      {"gemm without its bias",
       [](CudaSpec &s) {
         s = gemmSpec();
         s.steps[2] = fb::CudaStep(2, 1, 1, 3, 4);
       },
       "4 arguments, expected 1, 1 and 5"},
      {"gemm on a grid",
       [](CudaSpec &s) {
         s = gemmSpec();
         s.steps[2] = fb::CudaStep(2, 4, 1, 3, 5);
       },
       "with grid 4"},
      {"A past the input", gemm([](CudaSpec::Gemm &g) {
         g.k = 3;
         g.lda = 3;
       }),
       "outside its buffer"},
      {"leading dimension too small", gemm([](CudaSpec::Gemm &g) { g.ldd = 1; }), "outside its buffer"},
      {"batches past the arena", gemm([](CudaSpec::Gemm &g) {
         g.batch = 40;
         g.stride_d = 4;
       }),
       "outside its buffer"},
      {"negative stride", gemm([](CudaSpec::Gemm &g) {
         g.batch = 2;
         g.stride_a = -1;
       }),
       "outside its buffer"},
      {"workspace past the arena", gemm([](CudaSpec::Gemm &g) { g.workspace_bytes = 257; }), "outside its buffer"},
      {"bad dtype", gemm([](CudaSpec::Gemm &g) { g.dtype = fb::DType::i32; }), "expected f32, f16 or bf16"},
      {"D of another type", gemm([](CudaSpec::Gemm &g) {
         g.dtype = fb::DType::f16;
         g.d_dtype = fb::DType::bf16;
       }),
       "expected f32, f16 or bf16, and it or f32"},
      {"bad epilogue", gemm([](CudaSpec::Gemm &g) { g.epilogue = 4; }), "invalid flag"},
      {"accumulate with an epilogue", gemm([](CudaSpec::Gemm &g) { g.accumulate = 1; }), "invalid flag"},
  };
  // A conv's shape must be consistent and its tensors inside their buffers.
  auto conv = [&](std::function<void(CudaSpec::Conv &)> edit) { return edited(convSpec, &CudaSpec::convs, edit); };
  const Case convCases[] = {
      {"conv out of range",
       [](CudaSpec &s) {
         s = convSpec();
         s.steps[2] = fb::CudaStep(3, 1, 1, 3, 4);
       },
       "step 2 launches kernel 3 of 3"},
      {"conv with 3 arguments",
       [](CudaSpec &s) {
         s = convSpec();
         s.steps[2] = fb::CudaStep(2, 1, 1, 3, 3);
       },
       "3 arguments, expected 1, 1 and 4"},
      {"output size not cuDNN's", conv([](CudaSpec::Conv &c) { c.p = 3; }), "invalid shape"},
      {"y past the output", conv([](CudaSpec::Conv &c) {
         c.ys[0] = 8;
         c.n = 2;
       }),
       "invalid shape"},
      {"w past the constants", conv([](CudaSpec::Conv &c) {
         c.k = 2;
         c.ys[1] = 1;
       }),
       "invalid shape"},
      {"groups not dividing", conv([](CudaSpec::Conv &c) { c.groups = 2; }), "invalid shape"},
      {"x past the arena", conv([](CudaSpec::Conv &c) { c.xs[2] = 200; }), "invalid shape"},
      {"bad conv dtype", conv([](CudaSpec::Conv &c) { c.dtype = fb::DType::i8; }), "expected f32, f16 or bf16"},
      {"relu without a bias", conv([](CudaSpec::Conv &c) { c.epilogue = 2; }), "epilogue 2, expected 0, 1, 3 or 7"},
      {"residual without its argument", conv([](CudaSpec::Conv &c) { c.epilogue = 7; }),
       "4 arguments, expected 1, 1 and 6"},
      {"bias epilogue without a bias", conv([](CudaSpec::Conv &c) { c.epilogue = 1; }),
       "4 arguments, expected 1, 1 and 5"},
      // Paddings: one per conv, never negative, and cuDNN's output size.
      {"two paddings for one conv",
       [](CudaSpec &s) {
         s = convSpec();
         s.conv_pads = {fb::CudaConvPad(0, 0), fb::CudaConvPad(0, 0)};
       },
       "2 conv paddings for 1 convs"},
      {"negative padding",
       [](CudaSpec &s) {
         s = convSpec();
         s.conv_pads = {fb::CudaConvPad(-1, 0)};
       },
       "invalid shape"},
      {"padding that changes the output size",
       [](CudaSpec &s) {
         s = convSpec();
         s.conv_pads = {fb::CudaConvPad(2, 0)};
       },
       "invalid shape"},
  };
  std::vector<Case> all(std::begin(cases), std::end(cases));
  all.insert(all.end(), std::begin(gemmCases), std::end(gemmCases));
  all.insert(all.end(), std::begin(convCases), std::end(convCases));
  for (const Case &c : all) {
    CudaSpec spec;
    c.edit(spec);
    std::string message;
    EXPECT_EQ(readStatus(spec, message), KILN_STATUS_INVALID_ARTIFACT) << c.what;
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
    EXPECT_EQ(message.rfind("descriptor: ", 0), 0u) << message;
  }
}

// The generic API reads a CUDA model's signature but will not run it on the host.
TEST(CudaDescriptor, CpuRuntimeRefusesToRun) {
  std::vector<uint8_t> desc = build(CudaSpec());
  kiln_artifact_t artifact = artifactOf(desc);
  kiln_model_t *model = nullptr;
  ASSERT_EQ(kiln_model_open(&artifact, &model), KILN_STATUS_OK) << kiln_last_error();
  EXPECT_EQ(kiln_model_arena_bytes(model), 512u);
  EXPECT_TRUE(kiln_model_is_cuda(model));
  EXPECT_FALSE(kiln_model_is_cuda(nullptr));
  EXPECT_EQ(kiln_model_run(model, nullptr, 1, nullptr, 1, nullptr, 0), KILN_STATUS_UNAVAILABLE);
  EXPECT_NE(std::string(kiln_last_error()).find("kiln_cuda_model_run"), std::string::npos) << kiln_last_error();
  kiln_model_close(model);
}

#ifdef KILN_TEST_CUDA_RUNTIME

// Without a driver, opening fails cleanly: unavailable, a message, no handle.
TEST(CudaRuntime, NoDriverIsUnavailable) {
  if (void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    GTEST_SKIP() << "an NVIDIA driver is installed: this test covers machines without one";
  }
  std::vector<uint8_t> desc = build(CudaSpec());
  kiln_artifact_t artifact = artifactOf(desc);
  kiln_cuda_model_t *model = reinterpret_cast<kiln_cuda_model_t *>(&artifact);
  EXPECT_EQ(kiln_cuda_model_open(&artifact, 0, &model), KILN_STATUS_UNAVAILABLE);
  EXPECT_EQ(model, nullptr);
  std::string message = kiln_last_error();
  EXPECT_EQ(message.rfind("cuda: cannot load the NVIDIA driver library libcuda.so.1", 0), 0u) << message;
}

// Arguments and artifacts are checked before the driver is looked for.
// A vendor library that is missing, or lacks an entry point, is
// KILN_STATUS_UNAVAILABLE with a message naming it and who needs it; no
// slot is left filled.
TEST(CudaRuntime, MissingLibraryIsUnavailable) {
  void *slot = reinterpret_cast<void *>(0x1);
  const kiln_symbol_t symbols[] = {{&slot, "strlen"}};
  const char *missing[] = {"libkiln-no-such-library.so.9"};
  EXPECT_EQ(kiln_open_library(missing, 1, symbols, 1, "model 'm' calls it"), nullptr);
  EXPECT_EQ(slot, nullptr);
  EXPECT_NE(std::string(kiln_last_error())
                .find("cuda: model 'm' calls it, but libkiln-no-such-library.so.9 cannot be loaded"),
            std::string::npos)
      << kiln_last_error();
  const kiln_symbol_t lacking[] = {{&slot, "strlen"}, {&slot, "kiln_no_such_entry_point"}};
  const char *libc[] = {"libc.so.6"};
  EXPECT_EQ(kiln_open_library(libc, 1, lacking, 2, "model 'm' calls it"), nullptr);
  EXPECT_EQ(slot, nullptr);
  EXPECT_NE(std::string(kiln_last_error()).find("libc.so.6 lacks kiln_no_such_entry_point"), std::string::npos)
      << kiln_last_error();
  void *library = kiln_open_library(libc, 1, symbols, 1, "model 'm' calls it");
  ASSERT_NE(library, nullptr);
  EXPECT_EQ(slot, dlsym(library, "strlen"));
  dlclose(library);
}

// Beyond the library path, a vendor library is looked for in the folders of
// KILN_CUDA_LIBRARY_PATH and in NVIDIA's Python wheels
// (site-packages/nvidia/<package>/lib) of the environment whose bin folder
// is on PATH; a failure lists where it looked.
TEST(CudaRuntime, FindsLibrariesInWheelsAndNamedFolders) {
  // libc's file, found by a function sanitizers do not intercept (under ASan,
  // strlen is the test program's own).
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void *>(&gnu_get_libc_version), &info), 0);
  std::string libc = info.dli_fname;
  char tmpl[] = "/tmp/kiln-wheels-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string root = tmpl, wheel = root + "/venv/lib/python3.12/site-packages/nvidia/fakepkg/lib";
  ASSERT_EQ(std::system(("mkdir -p " + wheel + " " + root + "/named").c_str()), 0);
  ASSERT_EQ(symlink(libc.c_str(), (wheel + "/libkiln-wheel-test.so.1").c_str()), 0);
  ASSERT_EQ(symlink(libc.c_str(), (root + "/named/libkiln-named-test.so.1").c_str()), 0);
  std::string oldPath = getenv("PATH") ? getenv("PATH") : "";
  setenv("PATH", (root + "/venv/bin:" + oldPath).c_str(), 1);

  void *slot = nullptr;
  const kiln_symbol_t symbols[] = {{&slot, "strlen"}};
  const char *wheelName[] = {"libkiln-wheel-test.so.1"};
  void *library = kiln_open_library(wheelName, 1, symbols, 1, "model 'm' calls it");
  EXPECT_NE(library, nullptr) << kiln_last_error();
  EXPECT_NE(slot, nullptr);
  if (library)
    dlclose(library);

  const char *namedName[] = {"libkiln-named-test.so.1"};
  EXPECT_EQ(kiln_open_library(namedName, 1, symbols, 1, "model 'm' calls it"), nullptr);
  std::string message = kiln_last_error();
  EXPECT_NE(message.find("looked on the library path, /usr/local/cuda/lib64"), std::string::npos) << message;
  EXPECT_NE(message.find(wheel), std::string::npos) << message;
  setenv("KILN_CUDA_LIBRARY_PATH", (root + "/nothing-here:" + root + "/named").c_str(), 1);
  library = kiln_open_library(namedName, 1, symbols, 1, "model 'm' calls it");
  EXPECT_NE(library, nullptr) << kiln_last_error();
  if (library)
    dlclose(library);

  unsetenv("KILN_CUDA_LIBRARY_PATH");
  setenv("PATH", oldPath.c_str(), 1);
  std::system(("rm -rf " + root).c_str());
}

TEST(CudaRuntime, ChecksArgumentsFirst) {
  kiln_cuda_model_t *model = nullptr;
  EXPECT_EQ(kiln_cuda_model_open(nullptr, 0, &model), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_cuda_model_open(nullptr, 0, nullptr), KILN_STATUS_INVALID_ARGUMENT);

  CudaSpec cpu;
  cpu.target = "x86_64-unknown-linux-gnu";
  cpu.with_module = false;
  std::vector<uint8_t> cpuDesc = build(cpu);
  kiln_artifact_t cpuArtifact = artifactOf(cpuDesc);
  EXPECT_EQ(kiln_cuda_model_open(&cpuArtifact, 0, &model), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("not cuda"), std::string::npos) << kiln_last_error();

  CudaSpec broken;
  broken.steps[0] = fb::CudaStep(7, 1, 1, 0, 1);
  std::vector<uint8_t> brokenDesc = build(broken);
  kiln_artifact_t brokenArtifact = artifactOf(brokenDesc);
  EXPECT_EQ(kiln_cuda_model_open(&brokenArtifact, 0, &model), KILN_STATUS_INVALID_ARTIFACT);

  std::vector<uint8_t> desc = build(CudaSpec());
  kiln_artifact_t artifact = artifactOf(desc);
  EXPECT_EQ(kiln_cuda_model_open(&artifact, -1, &model), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);

  EXPECT_EQ(kiln_cuda_model_run(nullptr, nullptr, 0, nullptr, 0, nullptr, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_cuda_model_arena_bytes(nullptr), 0u);
  kiln_cuda_model_close(nullptr);
}

// --- Against the fake driver ----------------------------------------------
// The CudaFakeDriver tests run only in `unit.runtime-fake-driver`, which puts
// test/unit/runtime/FakeCudaDriver.c (built as libcuda.so.1) on
// LD_LIBRARY_PATH; they fail if the real driver or none is loaded instead.

struct FakeDriver {
  const char *(*log)();
  void (*reset)();
  void (*failInstantiate)(int);
  void (*callerCaptures)(void *);
  const unsigned char *(*constants)();
  void (*setArity)(const char *, int);
  void (*setCc)(int, int);
};

bool loadFake(FakeDriver &f) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    return false;
  f.log = reinterpret_cast<const char *(*)()>(dlsym(lib, "kiln_fake_cuda_log"));
  f.reset = reinterpret_cast<void (*)()>(dlsym(lib, "kiln_fake_cuda_reset"));
  f.failInstantiate = reinterpret_cast<void (*)(int)>(dlsym(lib, "kiln_fake_cuda_fail_instantiate"));
  f.callerCaptures = reinterpret_cast<void (*)(void *)>(dlsym(lib, "kiln_fake_cuda_caller_captures"));
  f.constants = reinterpret_cast<const unsigned char *(*)()>(dlsym(lib, "kiln_fake_cuda_constants"));
  f.setArity = reinterpret_cast<void (*)(const char *, int)>(dlsym(lib, "kiln_fake_cuda_set_arity"));
  f.setCc = reinterpret_cast<void (*)(int, int)>(dlsym(lib, "kiln_fake_cuda_set_cc"));
  return f.log && f.reset && f.failInstantiate && f.callerCaptures && f.constants && f.setArity && f.setCc;
}

// Step 0 launches a2 on 4 blocks of 256 with the input and arena + 256,
// step 1 b1 on one thread with the output (the fake is told their arities).
class CudaFakeDriver : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(loadFake(fake)) << "libcuda.so.1 on the library path is not the fake driver";
    fake.reset();
    fake.setArity("a2", 2);
    fake.setArity("b1", 1);
    spec.kernels = {"a2", "b1"};
    desc = build(spec);
    artifact = artifactOf(desc);
    ASSERT_EQ(kiln_cuda_model_open(&artifact, 0, &model), KILN_STATUS_OK) << kiln_last_error();
    fake.reset();
  }
  void TearDown() override { kiln_cuda_model_close(model); }

  // One run; returns what the driver saw, and clears it.
  std::string run(void *in, void *out, void *stream) {
    void *inputs[] = {in}, *outputs[] = {out};
    EXPECT_EQ(kiln_cuda_model_run(model, inputs, 1, outputs, 1, arena, stream), KILN_STATUS_OK) << kiln_last_error();
    std::string log = fake.log();
    fake.reset();
    return log;
  }

  FakeDriver fake;
  CudaSpec spec;
  std::vector<uint8_t> desc;
  kiln_artifact_t artifact;
  kiln_cuda_model_t *model = nullptr;
  void *in = reinterpret_cast<void *>(0x1000), *out = reinterpret_cast<void *>(0x2000);
  void *arena = reinterpret_cast<void *>(0x10000);
  void *stream = reinterpret_cast<void *>(0x77);
};

const char kDirect[] = "launch a2 4x256 0x1000 0x10100\nlaunch b1 1x1 0x2000\n";
const char kReplay[] = "graph launch a2 4x256 0x1000 0x10100;b1 1x1 0x2000;\n";

// Opening copies the constants; steps get base + offset for each argument.
TEST_F(CudaFakeDriver, LaunchesStepsWithTheirArguments) {
  EXPECT_EQ(std::vector<unsigned char>(fake.constants(), fake.constants() + 4),
            (std::vector<unsigned char>{1, 2, 3, 4}));
  EXPECT_EQ(run(in, out, nullptr), kDirect);
  // The default stream cannot be captured: every run launches step by step.
  EXPECT_EQ(run(in, out, nullptr), kDirect);
  EXPECT_EQ(run(in, out, reinterpret_cast<void *>(CU_STREAM_LEGACY)), kDirect);
  EXPECT_EQ(run(in, out, reinterpret_cast<void *>(CU_STREAM_PER_THREAD)), kDirect);
}

// The second run with the same pointers captures, later ones replay; other
// pointers launch directly and are captured when they come again.
TEST_F(CudaFakeDriver, CapturesTheSecondRunAndReplays) {
  EXPECT_EQ(run(in, out, stream), kDirect);
  EXPECT_EQ(run(in, out, stream), std::string("begin capture mode ") +
                                      std::to_string(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) +
                                      "\ncapture a2 4x256 0x1000 0x10100\ncapture b1 1x1 0x2000\nend "
                                      "capture\ninstantiate\n" +
                                      kReplay);
  EXPECT_EQ(run(in, out, stream), kReplay);
  EXPECT_EQ(run(in, out, stream), kReplay);

  void *out2 = reinterpret_cast<void *>(0x3000);
  EXPECT_EQ(run(in, out2, stream), "destroy exec\nlaunch a2 4x256 0x1000 0x10100\nlaunch b1 1x1 0x3000\n");
  std::string again = run(in, out2, stream);
  EXPECT_NE(again.find("capture b1 1x1 0x3000"), std::string::npos) << again;
  EXPECT_EQ(run(in, out2, stream), "graph launch a2 4x256 0x1000 0x10100;b1 1x1 0x3000;\n");
  // Another stream is another key.
  EXPECT_EQ(run(in, out2, reinterpret_cast<void *>(0x78)),
            "destroy exec\nlaunch a2 4x256 0x1000 0x10100\nlaunch b1 1x1 0x3000\n");
}

// A stream the caller is capturing takes the launches into the caller's graph.
TEST_F(CudaFakeDriver, LeavesTheCallersCaptureAlone) {
  fake.callerCaptures(stream);
  EXPECT_EQ(run(in, out, stream), kDirect);
  fake.callerCaptures(stream);
  EXPECT_EQ(run(in, out, stream), kDirect);
}

// A driver that cannot instantiate: the captured launches never ran, so they
// run directly, and the handle stops capturing.
TEST_F(CudaFakeDriver, FallsBackWhenInstantiateFails) {
  EXPECT_EQ(run(in, out, stream), kDirect);
  fake.failInstantiate(1);
  std::string second = run(in, out, stream);
  EXPECT_NE(second.find("instantiate failed\n"), std::string::npos) << second;
  EXPECT_EQ(second.substr(second.find("instantiate failed\n") + 19), kDirect);
  EXPECT_EQ(run(in, out, stream), kDirect);
}

// kiln_cuda_model_use_graphs(0) drops the graph and launches step by step.
TEST_F(CudaFakeDriver, GraphsCanBeTurnedOff) {
  run(in, out, stream);
  run(in, out, stream);
  EXPECT_EQ(run(in, out, stream), kReplay);
  EXPECT_EQ(kiln_cuda_model_use_graphs(model, 0), KILN_STATUS_OK);
  EXPECT_EQ(std::string(fake.log()), "destroy exec\n");
  fake.reset();
  EXPECT_EQ(run(in, out, stream), kDirect);
  EXPECT_EQ(run(in, out, stream), kDirect);
  EXPECT_EQ(kiln_cuda_model_use_graphs(model, 1), KILN_STATUS_OK);
  EXPECT_EQ(run(in, out, stream), std::string("begin capture mode ") +
                                      std::to_string(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) +
                                      "\ncapture a2 4x256 0x1000 0x10100\ncapture b1 1x1 0x2000\nend "
                                      "capture\ninstantiate\n" +
                                      kReplay);
  EXPECT_EQ(kiln_cuda_model_use_graphs(nullptr, 1), KILN_STATUS_INVALID_ARGUMENT);
}

// The NCCL timeout belongs to a model that uses NCCL: refused before
// kiln_cuda_model_use_nccl, and for a model that is no data-parallel step.
TEST_F(CudaFakeDriver, NcclTimeoutNeedsNccl) {
  EXPECT_EQ(kiln_cuda_model_set_nccl_timeout(nullptr, 1.0), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_cuda_model_set_nccl_timeout(model, 1.0), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("does not use NCCL"), std::string::npos) << kiln_last_error();
  EXPECT_EQ(kiln_cuda_model_use_nccl(model, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("not a data-parallel step"), std::string::npos) << kiln_last_error();
}

// With cubins for several architectures the device gets the newest cubin
// of its own major version that it can run, else the PTX (built for the
// lowest architecture), else a message naming all of them.
TEST(CudaFakeDriverArchitectures, PicksTheNewestCubinItRuns) {
  FakeDriver fake;
  ASSERT_TRUE(loadFake(fake)) << "libcuda.so.1 on the library path is not the fake driver";
  CudaSpec spec;
  spec.gpu_arch = "sm_80";
  spec.cubin = {0x7f, 'E', 'L', 'F', 80};
  spec.more = {{"sm_86", {0x7f, 'E', 'L', 'F', 86}}, {"sm_90", {0x7f, 'E', 'L', 'F', 90}}};
  std::vector<uint8_t> desc = build(spec);
  kiln_artifact_t artifact = artifactOf(desc);
  struct Case {
    int major, minor;
    const char *loads; // nullptr: refused
  };
  const Case cases[] = {{8, 0, "load cubin 80\n"}, {8, 6, "load cubin 86\n"}, {8, 9, "load cubin 86\n"},
                        {9, 0, "load cubin 90\n"}, {10, 0, "load ptx\n"},     {7, 5, nullptr}};
  for (const Case &c : cases) {
    fake.reset();
    fake.setCc(c.major, c.minor);
    kiln_cuda_model_t *model = nullptr;
    kiln_status_t st = kiln_cuda_model_open(&artifact, 0, &model);
    std::string where = "sm_" + std::to_string(c.major * 10 + c.minor);
    if (c.loads) {
      ASSERT_EQ(st, KILN_STATUS_OK) << where << ": " << kiln_last_error();
      EXPECT_EQ(std::string(fake.log()).substr(0, strlen(c.loads)), c.loads) << where;
      kiln_cuda_model_close(model);
    } else {
      EXPECT_EQ(st, KILN_STATUS_UNAVAILABLE) << where;
      EXPECT_NE(std::string(kiln_last_error()).find("has cubins for sm_80, sm_86, sm_90 and PTX for sm_80 and newer"),
                std::string::npos)
          << kiln_last_error();
    }
  }
  fake.setCc(9, 0);
}

// A model of a spec with kernels a2 and b1 opened on the fake driver (and
// the fake libraries beside it), run with the input at `in`, the output at
// 0x2000, the arena at 0x10000, on stream 0x77.
struct FakeModel {
  FakeDriver fake;
  std::vector<uint8_t> desc;
  kiln_artifact_t artifact{};
  kiln_cuda_model_t *model = nullptr;
  std::string openLog; ///< what opening did

  ~FakeModel() { kiln_cuda_model_close(model); }
  void open(CudaSpec spec) {
    kiln_cuda_model_close(model);
    model = nullptr;
    ASSERT_TRUE(loadFake(fake)) << "libcuda.so.1 on the library path is not the fake driver";
    fake.reset();
    fake.setArity("a2", 2);
    fake.setArity("b1", 1);
    spec.kernels = {"a2", "b1"};
    desc = build(spec);
    artifact = artifactOf(desc);
    ASSERT_EQ(kiln_cuda_model_open(&artifact, 0, &model), KILN_STATUS_OK) << kiln_last_error();
    openLog = fake.log();
  }
  kiln_status_t run(uintptr_t in, uintptr_t out = 0x2000) {
    fake.reset();
    void *inputs[] = {reinterpret_cast<void *>(in)}, *outputs[] = {reinterpret_cast<void *>(out)};
    return kiln_cuda_model_run(model, inputs, 1, outputs, 1, reinterpret_cast<void *>(0x10000),
                               reinterpret_cast<void *>(0x77));
  }
  // One successful run; what the driver saw.
  std::string log(uintptr_t in = 0x1000) {
    EXPECT_EQ(run(in), KILN_STATUS_OK) << kiln_last_error();
    return fake.log();
  }
  // Closes the model; what closing did.
  std::string close() {
    fake.reset();
    kiln_cuda_model_close(model);
    model = nullptr;
    return fake.log();
  }
  // The fake device address of the constants plus `offset`, as %p prints it.
  std::string constants(size_t offset = 0) {
    char text[32];
    snprintf(text, sizeof text, "%p", static_cast<const void *>(fake.constants() + offset));
    return text;
  }
};

const char kLaunches[] = "launch a2 4x256 0x1000 0x10100\nlaunch b1 1x1 0x2000\n";
const char kGraphOfLaunches[] = "graph launch a2 4x256 0x1000 0x10100;b1 1x1 0x2000;";

// A model whose kernels read and write the caller's buffers 16 bytes at a
// time (io_alignment 16) refuses less aligned ones, naming the buffer.
TEST(CudaFakeDriverAlignment, RefusesMisalignedBuffers) {
  CudaSpec spec;
  spec.io_alignment = 16;
  FakeModel m;
  ASSERT_NO_FATAL_FAILURE(m.open(spec));
  EXPECT_EQ(m.run(0x1004), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("input 0 at 0x1004 is null or not aligned to 16 bytes"),
            std::string::npos)
      << kiln_last_error();
  EXPECT_EQ(m.run(0x1000, 0x2008), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("output 0"), std::string::npos) << kiln_last_error();
  EXPECT_EQ(m.log(), kLaunches);
}

// A gemm step: opening creates the handle and asks the heuristic for the
// operands' alignments (the input 16, constants and arena 256) and the
// workspace; each run calls cublasLtMatmul on the stream with base + offset
// of each operand, which a capture records like a launch. Pointers less
// aligned than assumed get an algorithm of their own; closing frees all.
TEST(CudaFakeDriverGemm, CallsCublasLtOnTheStream) {
  FakeModel m;
  ASSERT_NO_FATAL_FAILURE(m.open(gemmSpec()));
  EXPECT_NE(m.openLog.find("cublasLt create\nheuristic align 16,256,256,256 workspace 256\n"), std::string::npos)
      << m.openLog;
  auto gemmLine = [&](const char *input, int algo) {
    return std::string("gemm f32->f32 2x2x2 batch 1 A ") + input + " ld 2 stride 0 B " + m.constants() +
           "^T ld 2 stride 0 D 0x10000 ld 2 stride 0 alpha 1 beta 0 epilogue " +
           std::to_string(6 /* CUBLASLT_EPILOGUE_RELU_BIAS */) + " bias " + m.constants(8) +
           " workspace 0x10100 256 algo " + std::to_string(algo);
  };
  EXPECT_EQ(m.log(), kLaunches + ("launch " + gemmLine("0x1000", 1) + "\n"));
  // The second run captures the gemm with the launches; the third replays.
  std::string second = m.log();
  EXPECT_NE(second.find("capture " + gemmLine("0x1000", 1) + "\nend capture\ninstantiate\n"), std::string::npos)
      << second;
  EXPECT_EQ(m.log(), kGraphOfLaunches + gemmLine("0x1000", 1) + ";\n");
  // An input only 4-byte aligned: the heuristic again, for this run.
  std::string unaligned = m.log(0x1004);
  EXPECT_NE(unaligned.find("heuristic align 4,256,256,256 workspace 256\nlaunch " + gemmLine("0x1004", 2)),
            std::string::npos)
      << unaligned;
  std::string closed = m.close();
  EXPECT_NE(closed.find("cublasLt destroy (0 objects left)"), std::string::npos) << closed;
}

// A conv step: opening creates the cuDNN handle and picks the first
// algorithm that fits the workspace (implicit GEMM; the fake's FFT wants
// 1 GiB); each run binds the stream and calls cudnnConvolutionForward with
// the descriptor's shape, unpadded, FMA math for f32, which a capture
// records like a launch; closing frees everything.
TEST(CudaFakeDriverConv, CallsCudnnOnTheStream) {
  FakeModel m;
  CudaSpec spec = convSpec();
  ASSERT_NO_FATAL_FAILURE(m.open(spec));
  EXPECT_NE(m.openLog.find("cudnn create\ncudnn algorithms\n"), std::string::npos) << m.openLog;
  std::string line = std::string("conv type ") + std::to_string(CUDNN_DATA_FLOAT) +
                     " x 0x10000 [1,1,4,4] strides [16,16,4,1] w " + m.constants() +
                     " [1,1,2,2] y 0x2000 [1,1,2,2] strides [4,4,2,1] pad 0,0 stride 2,2 dilation 1,1 mode " +
                     std::to_string(CUDNN_CROSS_CORRELATION) + " compute " + std::to_string(CUDNN_DATA_FLOAT) +
                     " groups 1 math " + std::to_string(CUDNN_FMA_MATH) + " algo " +
                     std::to_string(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) + " alpha 1 beta 0 workspace 0x10100 256";
  EXPECT_EQ(m.log(), kLaunches + ("launch " + line + "\n"));
  std::string second = m.log();
  EXPECT_NE(second.find("capture " + line + "\nend capture\n"), std::string::npos) << second;
  EXPECT_EQ(m.log(), kGraphOfLaunches + line + ";\n");
  std::string closed = m.close();
  EXPECT_NE(closed.find("cudnn destroy (0 objects left)"), std::string::npos) << closed;

  // Bias, residual and relu (epilogue 7): z, the sixth argument (the input
  // here), added with alpha2 1.
  {
    CudaSpec residual = convSpec();
    residual.convs[0].epilogue = 7;
    residual.steps[2] = fb::CudaStep(2, 1, 1, 3, 6);
    residual.args.insert(residual.args.end(), {fb::CudaArg(3, 0, 8), fb::CudaArg(0, 0, 0)});
    ASSERT_NO_FATAL_FAILURE(m.open(residual));
    std::string withZ = m.log();
    EXPECT_NE(withZ.find("activation " + std::to_string(CUDNN_ACTIVATION_RELU) + " nan " +
                         std::to_string(CUDNN_PROPAGATE_NAN) + " z apart alpha2 1 \nlaunch conv"),
              std::string::npos)
        << withZ;
  }

  // A padded conv: cuDNN's convolution descriptor has the padding.
  ASSERT_NO_FATAL_FAILURE(m.open(paddedConvSpec()));
  std::string padded = m.log();
  EXPECT_NE(padded.find("x 0x10000 [1,1,2,2] strides [4,4,2,1]"), std::string::npos) << padded;
  EXPECT_NE(padded.find(" pad 1,1 stride 2,2 "), std::string::npos) << padded;

  // With a bias (the constants + 8) and then relu: one call of
  // cudnnConvolutionBiasActivationForward, NaN propagated as ONNX's Relu;
  // a bias alone (identity) takes precomputed implicit GEMM, as cuDNN needs.
  spec.steps[2] = fb::CudaStep(2, 1, 1, 3, 5);
  spec.args.push_back(fb::CudaArg(3, 0, 8));
  for (uint8_t epilogue : {3, 1}) {
    spec.convs[0].epilogue = epilogue;
    ASSERT_NO_FATAL_FAILURE(m.open(spec));
    std::string expected = "bias " + m.constants(8) + " [1,1,1,1] activation " +
                           std::to_string(epilogue == 3 ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY) + " nan " +
                           std::to_string(CUDNN_PROPAGATE_NAN) + " z y alpha2 0 \nlaunch conv";
    std::string withBias = m.log();
    EXPECT_NE(withBias.find(expected), std::string::npos) << withBias;
    EXPECT_NE(withBias.find(" algo " +
                            std::to_string(epilogue == 3 ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
                                                         : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) +
                            " "),
              std::string::npos)
        << withBias;
  }

  // A bias alone whose precomputed implicit GEMM needs more workspace than
  // the model has (ResNet-18's residual convolutions at batch 32 on an
  // H200): the best algorithm that fits, then cudnnAddTensor adds the bias.
  void *cudnn = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cudnn, nullptr);
  auto setPrecomp = reinterpret_cast<void (*)(size_t)>(dlsym(cudnn, "kiln_fake_cudnn_set_precomp_bytes"));
  ASSERT_NE(setPrecomp, nullptr);
  setPrecomp(1 << 20);
  spec.convs[0].epilogue = 1;
  ASSERT_NO_FATAL_FAILURE(m.open(spec));
  std::string separate = m.log();
  setPrecomp(64);
  dlclose(cudnn);
  EXPECT_EQ(separate.find("bias "), std::string::npos) << separate;
  EXPECT_NE(separate.find(" algo " + std::to_string(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) +
                          " alpha 1 beta 0 workspace 0x10100 256\nlaunch add tensor b " + m.constants(8) +
                          " [1,1,1,1] y 0x2000 [1,1,2,2] alpha 1 beta 1\n"),
            std::string::npos)
      << separate;
}

// A training step's state buffer (space 4) is a kernel argument only in a
// model with state, and within its bytes.
TEST(CudaDescriptor, StateArgumentsNeedState) {
  CudaSpec spec;
  spec.args[2] = fb::CudaArg(4, 0, 0);
  std::string message;
  EXPECT_EQ(readStatus(spec, message), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(message.find("names space 4 index 0, which does not exist"), std::string::npos) << message;
  spec.with_state = true;
  EXPECT_EQ(readStatus(spec, message), KILN_STATUS_OK) << message;
  spec.args[2] = fb::CudaArg(4, 0, 65);
  EXPECT_EQ(readStatus(spec, message), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_NE(message.find("past its buffer of 64 bytes"), std::string::npos) << message;
}

// A training step runs only through kiln_cuda_model_run_with_state, which
// checks the device state and passes it (plus the argument's offset) to the
// kernels; graph replay needs the same state pointer too.
TEST(CudaFakeDriverState, RunsWithTheDeviceState) {
  CudaSpec spec;
  spec.with_state = true;
  spec.args[2] = fb::CudaArg(4, 0, 32); // b1 reads the state + 32
  FakeModel m;
  ASSERT_NO_FATAL_FAILURE(m.open(spec));
  EXPECT_EQ(kiln_cuda_model_state_bytes(m.model), 64u);
  EXPECT_EQ(kiln_cuda_model_state_alignment(m.model), 64u);
  EXPECT_EQ(m.run(0x1000), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error())
                .find("is a training step with state: run it with "
                      "kiln_cuda_model_run_with_state"),
            std::string::npos)
      << kiln_last_error();
  void *inputs[] = {reinterpret_cast<void *>(0x1000)}, *outputs[] = {reinterpret_cast<void *>(0x2000)};
  void *arena = reinterpret_cast<void *>(0x10000), *stream = reinterpret_cast<void *>(0x77);
  auto run = [&](uintptr_t state) {
    m.fake.reset();
    kiln_status_t st =
        kiln_cuda_model_run_with_state(m.model, inputs, 1, outputs, 1, arena, reinterpret_cast<void *>(state), stream);
    return std::make_pair(st, std::string(m.fake.log()));
  };
  EXPECT_EQ(run(0).first, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(run(0x30020).first, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("device state 0x30020 is null or not aligned to 64 bytes"),
            std::string::npos)
      << kiln_last_error();
  auto first = run(0x30000);
  EXPECT_EQ(first.first, KILN_STATUS_OK) << kiln_last_error();
  EXPECT_EQ(first.second, "launch a2 4x256 0x1000 0x10100\nlaunch b1 1x1 0x30020\n");
  EXPECT_NE(run(0x30000).second.find("end capture"), std::string::npos);
  EXPECT_EQ(run(0x30000).second, "graph launch a2 4x256 0x1000 0x10100;b1 1x1 0x30020;\n");
  // Another state: the kept graph goes, the steps launch directly.
  EXPECT_EQ(run(0x40000).second, "destroy exec\nlaunch a2 4x256 0x1000 0x10100\nlaunch b1 1x1 0x40020\n");

  // A model without state refuses the state entry point.
  ASSERT_NO_FATAL_FAILURE(m.open(CudaSpec()));
  EXPECT_EQ(run(0x30000).first, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("has no state: run it with kiln_cuda_model_run"), std::string::npos)
      << kiln_last_error();
  EXPECT_EQ(kiln_cuda_model_state_bytes(m.model), 0u);
}

// KILN_CUDNN_ALGO_SEARCH=measure ranks the algorithms by cuDNN's timing
// (cudnnFindConvolutionForwardAlgorithm) instead of its heuristic.
TEST(CudaFakeDriverConv, MeasuredAlgorithmSearch) {
  FakeModel m;
  setenv("KILN_CUDNN_ALGO_SEARCH", "measure", 1);
  ASSERT_NO_FATAL_FAILURE(m.open(convSpec()));
  unsetenv("KILN_CUDNN_ALGO_SEARCH");
  EXPECT_NE(m.openLog.find("cudnn create\ncudnn find\n"), std::string::npos) << m.openLog;
  std::string run = m.log();
  EXPECT_NE(run.find(" algo " + std::to_string(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) + " "),
            std::string::npos)
      << run;
}

// Symbolic dimensions: a kernel's size argument (space 5) is the run's size
// by value, the bound without one; a size outside the range is refused
// naming it; graph replay needs the same sizes.
TEST(CudaFakeDriverDims, PassesTheSizesByValue) {
  FakeDriver fake;
  ASSERT_TRUE(loadFake(fake)) << "libcuda.so.1 on the library path is not the fake driver";
  fake.reset();
  fake.setArity("a2", 3);
  fake.setArity("b1", 1);
  CudaSpec spec;
  spec.kernels = {"a2", "b1"};
  spec.dim_names = {"batch"};
  spec.dim_ranges = {1, 4};
  spec.args.insert(spec.args.begin() + 2, fb::CudaArg(5, 0, 0));
  spec.steps = {fb::CudaStep(0, 4, 256, 0, 3), fb::CudaStep(1, 1, 1, 3, 1)};
  std::vector<uint8_t> desc = build(spec);
  kiln_artifact_t artifact = artifactOf(desc);
  kiln_cuda_model_t *model = nullptr;
  ASSERT_EQ(kiln_cuda_model_open(&artifact, 0, &model), KILN_STATUS_OK) << kiln_last_error();
  void *inputs[] = {reinterpret_cast<void *>(0x1000)}, *outputs[] = {reinterpret_cast<void *>(0x2000)};
  void *arena = reinterpret_cast<void *>(0x10000), *stream = reinterpret_cast<void *>(0x77);
  auto run = [&](const int64_t *dims) {
    fake.reset();
    EXPECT_EQ(kiln_cuda_model_run_dims(model, inputs, 1, outputs, 1, arena, nullptr, dims, stream), KILN_STATUS_OK)
        << kiln_last_error();
    return std::string(fake.log());
  };
  int64_t three = 3, two = 2, five = 5, zero = 0;
  EXPECT_EQ(run(&three), "launch a2 4x256 0x1000 0x10100 0x3\nlaunch b1 1x1 0x2000\n");
  std::string second = run(&three);
  EXPECT_NE(second.find("capture a2 4x256 0x1000 0x10100 0x3"), std::string::npos) << second;
  EXPECT_EQ(run(&three), "graph launch a2 4x256 0x1000 0x10100 0x3;b1 1x1 0x2000;\n");
  EXPECT_EQ(run(&two), "destroy exec\nlaunch a2 4x256 0x1000 0x10100 0x2\nlaunch b1 1x1 0x2000\n");
  EXPECT_EQ(run(nullptr), "launch a2 4x256 0x1000 0x10100 0x4\nlaunch b1 1x1 0x2000\n");
  for (const int64_t *bad : {&five, &zero}) {
    EXPECT_EQ(kiln_cuda_model_run_dims(model, inputs, 1, outputs, 1, arena, nullptr, bad, stream),
              KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error())
                  .find("dimension 'batch' is " + std::to_string(*bad) + ", outside its range 1..4"),
              std::string::npos)
        << kiln_last_error();
  }
  kiln_cuda_model_close(model);
}

// Profiling: the steps are described, launched one by one between events
// (never captured), and each gets a time; a wrong count is refused.
TEST(CudaFakeDriverProfile, TimesEveryStep) {
  FakeModel m;
  ASSERT_NO_FATAL_FAILURE(m.open(convSpec()));
  ASSERT_EQ(kiln_cuda_model_num_steps(m.model), 3u);
  char what[128];
  ASSERT_EQ(kiln_cuda_model_step_description(m.model, 0, what, sizeof what), KILN_STATUS_OK);
  EXPECT_STREQ(what, "kernel a2<<<4, 256>>>");
  ASSERT_EQ(kiln_cuda_model_step_description(m.model, 2, what, sizeof what), KILN_STATUS_OK);
  EXPECT_STREQ(what, "cuDNN conv 0: f32 [1,1,4,4] -> [1,1,2,2] 2x2/2 groups 1");
  m.close();
  ASSERT_NO_FATAL_FAILURE(m.open(paddedConvSpec()));
  ASSERT_EQ(kiln_cuda_model_step_description(m.model, 2, what, sizeof what), KILN_STATUS_OK);
  EXPECT_STREQ(what, "cuDNN conv 0: f32 [1,1,2,2] -> [1,1,2,2] 2x2/2 pad 1,1 groups 1");
  EXPECT_EQ(kiln_cuda_model_step_description(m.model, 3, what, sizeof what), KILN_STATUS_INVALID_ARGUMENT);
  void *inputs[] = {reinterpret_cast<void *>(0x1000)}, *outputs[] = {reinterpret_cast<void *>(0x2000)};
  void *arena = reinterpret_cast<void *>(0x10000), *stream = reinterpret_cast<void *>(0x77);
  float ms[3] = {-1, -1, -1};
  EXPECT_EQ(kiln_cuda_model_profile(m.model, inputs, 1, outputs, 1, arena, nullptr, nullptr, stream, ms, 2),
            KILN_STATUS_INVALID_ARGUMENT);
  for (int round = 0; round < 2; ++round) {
    m.fake.reset();
    ASSERT_EQ(kiln_cuda_model_profile(m.model, inputs, 1, outputs, 1, arena, nullptr, nullptr, stream, ms, 3),
              KILN_STATUS_OK)
        << kiln_last_error();
    std::string log = m.fake.log();
    EXPECT_EQ(log.find("capture"), std::string::npos) << log;
    EXPECT_NE(log.find("launch event\nlaunch a2 4x256 0x1000 0x10100\nlaunch event\nlaunch b1 1x1 0x2000\n"
                       "launch event\nlaunch conv"),
              std::string::npos)
        << log;
    for (float t : ms)
      EXPECT_GE(t, 0.0f);
  }
}

#endif // KILN_TEST_CUDA_RUNTIME

} // namespace
