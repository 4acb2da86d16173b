// The dialect's types and attributes as the core model: every code type the
// compiler can decode maps to the formats library's descriptor of the same
// name, and the schedule and scheme keep every field.
#include "ir/CoreConversion.h"
#include "ir/LbDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <string>

namespace lowbit::lb {
namespace {

class CoreConversion : public ::testing::Test {
protected:
  CoreConversion() { context_.loadDialect<LbDialect>(); }
  mlir::Type type(const char *text) { return mlir::parseType(text, &context_); }
  mlir::Attribute attr(const char *text) { return mlir::parseAttribute(text, &context_); }
  mlir::MLIRContext context_;
};

TEST_F(CoreConversion, StorageTypesBecomeTheFormatsOfTheSameName) {
  struct Case {
    const char *type, *format;
  };
  for (Case c : {Case{"ui1", "uint1"}, Case{"ui2", "uint2"}, Case{"ui4", "uint4"},
                 Case{"ui8", "uint8"}, Case{"si2", "int2"}, Case{"si4", "int4"},
                 Case{"si8", "int8"}, Case{"f16", "f16"}, Case{"bf16", "bf16"}, Case{"f32", "f32"},
                 Case{"f8E4M3FN", "e4m3fn"}, Case{"f8E5M2", "e5m2"},
                 Case{"!lb.float<e2m1, finite>", "e2m1"}, Case{"!lb.float<ue8m0, fn>", "e8m0"}}) {
    mlir::Type t = type(c.type);
    ASSERT_TRUE(t) << c.type;
    Expected<formats::DataFormat> format = dataFormat(t);
    ASSERT_TRUE(format.ok()) << c.type << ": " << format.error();
    Expected<formats::DataFormat> expected = formats::parseFormat(c.format);
    ASSERT_TRUE(expected.ok()) << c.format;
    EXPECT_EQ(*format, *expected) << c.type << " is " << format->name();
  }
  Expected<formats::DataFormat> signless = dataFormat(type("i4"));
  ASSERT_FALSE(signless.ok());
  EXPECT_EQ(signless.error(), "integer codes must say their signedness (ui<N> or si<N>), got 'i4'");
  EXPECT_FALSE(dataFormat(type("!lb.lut<4>")).ok());
  Expected<formats::DataFormat> nf4 =
      dataFormat(codeType(context_, formats::DataFormat::nf4()).value());
  ASSERT_TRUE(nf4.ok()) << nf4.error();
  EXPECT_EQ(nf4->name(), "nf4");
}

// Weight codes go to the IR and back unchanged: every built-in element
// format with an IR type, and a table by its values.
TEST_F(CoreConversion, CodeTypesRoundTrip) {
  std::vector<formats::DataFormat> codes = formats::builtinElementFormats();
  codes.push_back(formats::parseFormat("lut<4,[-7,-6,-5,-4,-3,-2,-1,0,1,2,3,4,5,6,7,0.5]>").value());
  codes.push_back(formats::parseFormat("float<2,2,1,unsigned>").value());
  for (const formats::DataFormat &code : codes) {
    Expected<mlir::Type> t = codeType(context_, code);
    ASSERT_TRUE(t.ok()) << code.name() << ": " << t.error();
    Expected<formats::DataFormat> back = dataFormat(*t);
    ASSERT_TRUE(back.ok()) << code.name() << ": " << back.error();
    EXPECT_EQ(*back, code) << code.name();
    EXPECT_EQ(back->name(), code.name());
  }
  Expected<mlir::Type> fixedPoint = codeType(context_, formats::DataFormat::mxInt8());
  ASSERT_FALSE(fixedPoint.ok());
  EXPECT_NE(fixedPoint.error().find("fixed-point"), std::string::npos) << fixedPoint.error();
}

// Every scheduler of the attribute is the core schedule's own, so the core
// rules judge the schedule the kernel is built from (stream_k read as grid
// once, and escaped the rules that keep it off the 8-bit operands).
TEST_F(CoreConversion, EverySchedulerKeepsItsName) {
  for (const char *name : {"grid", "persistent", "stream_k"}) {
    std::string text = std::string("#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = "
                                   "[1, 8], stages = 8, split_k = 1, scheduler = ") +
                       name + ">";
    auto schedule = mlir::cast<ScheduleAttr>(attr(text.c_str()));
    core::Schedule converted = coreSchedule(schedule);
    EXPECT_EQ(core::tileSchedulerName(converted.scheduler), std::string(name));
    Expected<core::Schedule> parsed = core::parseSchedule(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(converted, *parsed) << text;
  }
}

TEST_F(CoreConversion, TheSchemeAndTheScheduleKeepEveryField) {
  auto quant = mlir::cast<QuantAttr>(
      attr("#lb.quant<granularity = group, group_size = 64, scale = bf16, zero = sub_value>"));
  Expected<core::Problem> p = coreProblem(4096, 1024, type("bf16"), type("si2"), quant);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(core::signature(*p), "lowbit.qmatmul.v1;n=4096;k=1024;act=bf16;weight=int2;"
                                 "scale=bf16;granularity=group;group=64;zero=sub_value");

  auto gptq = mlir::cast<QuantAttr>(
      attr("#lb.quant<granularity = group, group_size = 128, scale = f16, zero = quantized>"));
  Expected<core::Problem> q = coreProblem(64, 256, type("f16"), type("ui4"), gptq, type("ui4"));
  ASSERT_TRUE(q.ok()) << q.error();
  ASSERT_TRUE(q->scheme.zeroCodes.has_value());
  EXPECT_EQ(q->scheme.zeroCodes->name(), "uint4");
  EXPECT_FALSE(coreProblem(64, 256, type("f16"), type("ui4"), gptq).ok());

  Expected<core::Problem> f32 = coreProblem(64, 256, type("f32"), type("ui4"), quant);
  ASSERT_FALSE(f32.ok());
  EXPECT_EQ(f32.error(), "activations must be f16, bf16, si8 or f8E4M3FN, got 'f32'");

  // s8 activations: the x_scales' shape is the scale's granularity, y's type
  // the output; either missing, or x_scales on f16, is an error.
  auto channel = mlir::cast<QuantAttr>(attr("#lb.quant<granularity = channel, scale = f16>"));
  Expected<core::Problem> w8a8 = coreProblem(64, 256, type("si8"), type("si8"), channel, {},
                                             type("bf16"), type("tensor<?xf32>"));
  ASSERT_TRUE(w8a8.ok()) << w8a8.error();
  EXPECT_EQ(w8a8->activation, core::Activation::S8);
  EXPECT_EQ(w8a8->activationScale, core::ActivationScale::PerToken);
  EXPECT_EQ(w8a8->output, core::Output::BF16);
  Expected<core::Problem> perTensor = coreProblem(64, 256, type("si8"), type("si4"), channel, {},
                                                  type("f32"), type("tensor<1xf32>"));
  ASSERT_TRUE(perTensor.ok()) << perTensor.error();
  EXPECT_EQ(perTensor->activationScale, core::ActivationScale::PerTensor);
  EXPECT_EQ(perTensor->output, core::Output::F32);
  Expected<core::Problem> noScales =
      coreProblem(64, 256, type("si8"), type("si8"), channel, {}, type("f16"));
  ASSERT_FALSE(noScales.ok());
  EXPECT_EQ(noScales.error(),
            "s8 activations need f32 x_scales, [M] per token or [1] per tensor");
  Expected<core::Problem> badOutput = coreProblem(64, 256, type("si8"), type("si8"), channel, {},
                                                  type("si32"), type("tensor<?xf32>"));
  ASSERT_FALSE(badOutput.ok());
  EXPECT_EQ(badOutput.error(), "y must be f16, bf16 or f32, got 'si32'");
  Expected<core::Problem> f16Scales = coreProblem(64, 256, type("f16"), type("si8"), channel, {},
                                                  type("f16"), type("tensor<?xf32>"));
  ASSERT_FALSE(f16Scales.ok());
  EXPECT_EQ(f16Scales.error(), "f16 activations take no x_scales");

  // Block scales and NVFP4's tensor scale.
  auto nvfp4 = mlir::cast<QuantAttr>(attr("#lb.quant<granularity = group, group_size = 16, "
                                          "scale = f8E4M3FN, tensor_scale = f32>"));
  Expected<core::Problem> nv = coreProblem(64, 256, type("f16"), type("si4"), nvfp4);
  ASSERT_TRUE(nv.ok()) << nv.error();
  EXPECT_EQ(core::signature(*nv), "lowbit.qmatmul.v1;n=64;k=256;act=f16;weight=int4;"
                                  "scale=e4m3fn;granularity=group;group=16;zero=none;"
                                  "tensor_scale=f32");
  auto mx = mlir::cast<QuantAttr>(
      attr("#lb.quant<granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>>"));
  Expected<core::Problem> m = coreProblem(64, 256, type("bf16"), type("ui4"), mx);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->scheme.scale, formats::DataFormat::e8m0());
  EXPECT_FALSE(m->scheme.tensorScale.has_value());

  const char *text = "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], "
                     "stages = 2, split_k = 8>";
  core::Schedule s = coreSchedule(mlir::cast<ScheduleAttr>(attr(text)));
  EXPECT_EQ(s.text(), text);
  EXPECT_EQ(coreFamily(KernelFamily::wgmma), core::Family::Wgmma);
  EXPECT_EQ(coreSchedule(KernelFamily::gemv, {1, 4}, {1}, 1, 1).tileM, 0);
}

} // namespace
} // namespace lowbit::lb
