// liblowbit_runtime end to end through its C API on a GPU: plans on a kernel
// database compiled at build time (kernels/runtime-tests.db), results against
// an f64 CPU reference for several M, CUDA graph capture and replay, launches
// from several threads at once, the PTX JIT path, and the errors a bad call
// or a bad database must give with a real driver.
#include "tests/gpu/runtime/RuntimeGpuFixture.h"

namespace lowbit::testing {
namespace {

TEST_F(RuntimeGpu, MatchesTheReferenceForSeveralM) {
  ASSERT_NE(context, nullptr);
  SplitMix rng{20261129};
  const lowbit_problem problems[] = {
      hostExampleProblem(),
      makeProblem(2048, 4096, LOWBIT_DTYPE_F16, LOWBIT_WEIGHT_INT4, LOWBIT_GRANULARITY_GROUP, 64,
                  LOWBIT_ZERO_SUB_CODE),
      makeProblem(4096, 2048, LOWBIT_DTYPE_BF16, LOWBIT_WEIGHT_UINT4, LOWBIT_GRANULARITY_CHANNEL, 0,
                  LOWBIT_ZERO_NONE),
  };
  for (const lowbit_problem &problem : problems) {
    PreparedProblem p;
    prepare(*api, context, problem, rng, p);
    if (HasFatalFailure())
      return;
    std::printf("problem n=%lld k=%lld %s:\n", static_cast<long long>(problem.n),
                static_cast<long long>(problem.k), core::signature(p.model).c_str());
    for (int64_t m : {1, 7, 16, 64, 300})
      runAndCheck(p, m, rng);
  }
}

// A GPTQ act-order (desc_act) layer as `lowbit import` converts it: columns
// sorted by group, v1 zeros as uint8 codes, the permutation packed with the
// weights. y must be x · Wᵀ with W in the checkpoint's own column order (the
// formats library's dequantizeGptq), eagerly and replayed from a CUDA graph.
TEST_F(RuntimeGpu, ImportedActOrderGptqLayerMatchesTheCheckpoint) {
  ASSERT_NE(context, nullptr);
  constexpr int64_t n = 1024, k = 2048, group = 128;
  std::mt19937 rng(20261202);
  formats::GptqCheckpoint c;
  c.bits = 4;
  c.inFeatures = k;
  c.outFeatures = n;
  c.groupSize = int(group);
  c.qweight.resize(size_t(k / 8 * n));
  c.qzeros.resize(size_t(k / group * n / 8));
  for (int32_t &word : c.qweight)
    word = int32_t(rng());
  for (int32_t &word : c.qzeros)
    word = int32_t(rng());
  for (int64_t i = 0; i < k / group * n; ++i)
    c.scales.push_back(uint16_t(0x2000 + rng() % 0x1000)); // f16 in [2^-7, 2^-3)
  std::vector<int32_t> order(static_cast<size_t>(k));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  c.gIdx.resize(size_t(k));
  for (int64_t i = 0; i < k; ++i)
    c.gIdx[size_t(order[size_t(i)])] = int32_t(i / group);
  Expected<std::vector<double>> reference = formats::dequantizeGptq(c);
  ASSERT_TRUE(reference.ok()) << reference.error();
  Expected<formats::QuantizedMatrix> imported = formats::importGptq(c);
  ASSERT_TRUE(imported.ok()) << imported.error();
  Expected<checkpoint::KernelWeights> weights =
      checkpoint::toKernelWeights(std::move(*imported), core::Activation::F16);
  ASSERT_TRUE(weights.ok()) << weights.error();
  ASSERT_EQ(weights->permutation.size(), size_t(k));
  ASSERT_EQ(*weights->problem.scheme.zeroCodes, formats::DataFormat::unsignedInt(8));

  lowbit_problem problem = makeProblem(n, k, LOWBIT_DTYPE_F16, LOWBIT_WEIGHT_UINT4,
                                       LOWBIT_GRANULARITY_GROUP, group, LOWBIT_ZERO_UINT8_CODES);
  problem.act_order = 1;
  lowbit_plan *plan = nullptr;
  LOWBIT_OK(lowbit_plan_create(context, &problem, &plan));
  std::unique_ptr<lowbit_plan, lowbit_status (*)(lowbit_plan *)> owned(plan, lowbit_plan_destroy);
  size_t weightBytes = 0, scaleBytes = 0, zeroBytes = 0;
  LOWBIT_OK(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, &zeroBytes, nullptr));
  ASSERT_EQ(scaleBytes, weights->scales.size());
  DeviceBuffer packed(*api, weightBytes), scales(*api, scaleBytes), zeros(*api, zeroBytes);
  ASSERT_TRUE(packed.ok() && scales.ok() && zeros.ok());
  void *packedPtr = reinterpret_cast<void *>(packed.get());
  LOWBIT_OK(lowbit_pack_weights(plan, weights->codes.data(), packedPtr, weightBytes,
                                LOWBIT_MEMORY_DEVICE, nullptr));
  LOWBIT_OK(lowbit_pack_permutation(plan, weights->permutation.data(), packedPtr, weightBytes,
                                    LOWBIT_MEMORY_DEVICE, nullptr));
  LOWBIT_OK(lowbit_pack_zeros(plan, weights->zeros.data(), weights->zeros.size(),
                              reinterpret_cast<void *>(zeros.get()), zeroBytes,
                              LOWBIT_MEMORY_DEVICE, nullptr));
  LOWBIT_CU_ASSERT(api, scales.upload(weights->scales.data(), scaleBytes));
  lowbit_weights w{sizeof(w), packedPtr, weightBytes, 0};
  LOWBIT_OK(lowbit_plan_layout_id(plan, &w.layout_id));

  for (int64_t m : {1, 7, 64, 300}) {
    SCOPED_TRACE("M = " + std::to_string(m));
    const F16Activations xs = uniformF16(size_t(m * k), 2.0, rng);
    const std::vector<uint16_t> &xBits = xs.bits;
    size_t workspaceBytes = 0;
    LOWBIT_OK(lowbit_plan_workspace_bytes(plan, m, &workspaceBytes));
    ASSERT_GE(workspaceBytes, size_t(m * k * 2));
    DeviceBuffer x(*api, xBits.size() * 2), y(*api, size_t(m * n * 2)),
        workspace(*api, workspaceBytes);
    ASSERT_TRUE(x.ok() && y.ok() && workspace.ok());
    LOWBIT_CU_ASSERT(api, x.upload(xBits.data(), xBits.size() * 2));
    auto check = [&](const char *how) {
      std::vector<uint16_t> out(size_t(m * n));
      LOWBIT_CU_ASSERT(api, y.download(out.data(), out.size() * 2));
      const double error = f16RelativeError(out, xs.values, *reference, m, n, k);
      EXPECT_LT(error, measure::defaultTolerance(core::Activation::F16)) << how;
      std::printf("  act-order M = %-4lld %s: relative error %.3g\n", static_cast<long long>(m),
                  how, error);
    };
    LOWBIT_CU_ASSERT(api, y.poison(0xFF));
    LOWBIT_OK(lowbit_matmul(
        plan, m, reinterpret_cast<void *>(x.get()), &w, reinterpret_cast<void *>(scales.get()),
        reinterpret_cast<void *>(zeros.get()), reinterpret_cast<void *>(y.get()),
        reinterpret_cast<void *>(workspace.get()), workspaceBytes, nullptr));
    LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize());
    check("eager");
    if (HasFatalFailure())
      return;

    // The gather and the matmul, captured together and replayed.
    CUstream stream = nullptr;
    LOWBIT_CU_ASSERT(api, api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    LOWBIT_CU_ASSERT(api, api->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    lowbit_status captured = lowbit_matmul(
        plan, m, reinterpret_cast<void *>(x.get()), &w, reinterpret_cast<void *>(scales.get()),
        reinterpret_cast<void *>(zeros.get()), reinterpret_cast<void *>(y.get()),
        reinterpret_cast<void *>(workspace.get()), workspaceBytes, stream);
    CUgraph graph = nullptr;
    CUresult ended = api->cuStreamEndCapture(stream, &graph);
    ASSERT_EQ(captured, LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
    LOWBIT_CU_ASSERT(api, ended);
    CUgraphExec exec = nullptr;
    LOWBIT_CU_ASSERT(api, api->cuGraphInstantiate(&exec, graph, 0));
    LOWBIT_CU_ASSERT(api, y.poison(0xFF));
    LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize());
    LOWBIT_CU_ASSERT(api, api->cuGraphLaunch(exec, stream));
    LOWBIT_CU_ASSERT(api, api->cuStreamSynchronize(stream));
    check("graph replay");
    api->cuGraphExecDestroy(exec);
    api->cuGraphDestroy(graph);
    api->cuStreamDestroy(stream);
  }
}

// What act-order costs: the same 4096 x 4096 W4 g128 plan with and without
// the gather, 200 back-to-back launches each (weights warm in L2: this is the
// gather's cost on top of the kernel, not a cold-L2 kernel time).
TEST_F(RuntimeGpu, ActOrderGatherCost) {
  ASSERT_NE(context, nullptr);
  constexpr int64_t n = 4096, k = 4096;
  std::vector<int32_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(5));
  std::vector<uint8_t> codes(size_t(n * k), 5);
  std::printf("  act-order gather cost, %lld x %lld W4 g128 f16:\n", static_cast<long long>(n),
              static_cast<long long>(k));
  for (int64_t m : {1, 16, 256}) {
    double us[2] = {0, 0};
    for (int actOrder : {0, 1}) {
      lowbit_problem problem = hostExampleProblem();
      problem.act_order = actOrder;
      lowbit_plan *plan = nullptr;
      LOWBIT_OK(lowbit_plan_create(context, &problem, &plan));
      std::unique_ptr<lowbit_plan, lowbit_status (*)(lowbit_plan *)> owned(plan,
                                                                           lowbit_plan_destroy);
      size_t weightBytes = 0, scaleBytes = 0, workspaceBytes = 0;
      LOWBIT_OK(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, nullptr, nullptr));
      LOWBIT_OK(lowbit_plan_workspace_bytes(plan, m, &workspaceBytes));
      DeviceBuffer packed(*api, weightBytes), scales(*api, scaleBytes), x(*api, size_t(m * k * 2)),
          y(*api, size_t(m * n * 2)), workspace(*api, std::max<size_t>(workspaceBytes, 16));
      ASSERT_TRUE(packed.ok() && scales.ok() && x.ok() && y.ok() && workspace.ok());
      void *packedPtr = reinterpret_cast<void *>(packed.get());
      LOWBIT_OK(lowbit_pack_weights(plan, codes.data(), packedPtr, weightBytes,
                                    LOWBIT_MEMORY_DEVICE, nullptr));
      if (actOrder)
        LOWBIT_OK(lowbit_pack_permutation(plan, perm.data(), packedPtr, weightBytes,
                                          LOWBIT_MEMORY_DEVICE, nullptr));
      LOWBIT_CU_ASSERT(api, scales.poison(0x10));
      LOWBIT_CU_ASSERT(api, x.poison(0x20));
      lowbit_weights w{sizeof(w), packedPtr, weightBytes, 0};
      LOWBIT_OK(lowbit_plan_layout_id(plan, &w.layout_id));
      auto launch = [&] {
        return lowbit_matmul(plan, m, reinterpret_cast<void *>(x.get()), &w,
                             reinterpret_cast<void *>(scales.get()), nullptr,
                             reinterpret_cast<void *>(y.get()),
                             reinterpret_cast<void *>(workspace.get()), workspaceBytes, nullptr);
      };
      for (int i = 0; i < 20; ++i)
        LOWBIT_OK(launch());
      CUevent start = nullptr, stop = nullptr;
      LOWBIT_CU_ASSERT(api, api->cuEventCreate(&start, 0));
      LOWBIT_CU_ASSERT(api, api->cuEventCreate(&stop, 0));
      constexpr int kLaunches = 200;
      LOWBIT_CU_ASSERT(api, api->cuEventRecord(start, nullptr));
      for (int i = 0; i < kLaunches; ++i)
        LOWBIT_OK(launch());
      LOWBIT_CU_ASSERT(api, api->cuEventRecord(stop, nullptr));
      LOWBIT_CU_ASSERT(api, api->cuEventSynchronize(stop));
      float ms = 0;
      LOWBIT_CU_ASSERT(api, api->cuEventElapsedTime(&ms, start, stop));
      us[actOrder] = 1000.0 * ms / kLaunches;
      api->cuEventDestroy(start);
      api->cuEventDestroy(stop);
    }
    std::printf("    M = %-4lld plain %7.2f us, act-order %7.2f us (+%.2f us)\n",
                static_cast<long long>(m), us[0], us[1], us[1] - us[0]);
  }
}

TEST_F(RuntimeGpu, ExplainSaysTheUntunedDeviceUsesTheHeuristic) {
  ASSERT_NE(context, nullptr);
  lowbit_problem problem = hostExampleProblem();
  lowbit_plan *plan = nullptr;
  LOWBIT_OK(lowbit_plan_create(context, &problem, &plan));
  lowbit_choice choice;
  std::memset(&choice, 0, sizeof(choice));
  choice.struct_size = sizeof(choice);
  for (int64_t m : {int64_t{1}, int64_t{300}, int64_t{100000}}) {
    LOWBIT_OK(lowbit_plan_explain(plan, m, &choice));
    // `lowbit compile` writes no dispatch tables: nothing was tuned.
    EXPECT_EQ(choice.heuristic, 1);
    EXPECT_STREQ(choice.tier, "built-in heuristic");
    EXPECT_EQ(std::string(choice.database_path), database);
    EXPECT_LE(choice.m_lo, m);
    EXPECT_TRUE(choice.m_hi < 0 || m < choice.m_hi);
    EXPECT_EQ(std::strlen(choice.kernel_id), 64u);
    EXPECT_EQ(choice.jit_from_ptx, 0) << "the test set has cubins for every arch in scope";
  }
  EXPECT_EQ(lowbit_plan_explain(plan, 0, &choice), LOWBIT_STATUS_INVALID_SHAPE);
  lowbit_plan_destroy(plan);
}

TEST_F(RuntimeGpu, GraphCaptureAndReplay) {
  ASSERT_NE(context, nullptr);
  SplitMix rng{7};
  PreparedProblem p;
  prepare(*api, context, hostExampleProblem(), rng, p);
  if (HasFatalFailure())
    return;
  const int64_t m = 7;
  Activations x = randomActivations(p, m, rng);
  DeviceBuffer xDevice(*api, x.bits.size() * 2), yDevice(*api, static_cast<size_t>(m * 4096 * 2));
  LOWBIT_CU_ASSERT(api, xDevice.upload(x.bits.data(), x.bits.size() * 2));
  CUstream stream = nullptr;
  LOWBIT_CU_ASSERT(api, api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  // Global mode: any call that is illegal during capture, from any thread,
  // would invalidate the capture; lowbit_matmul must make none.
  LOWBIT_CU_ASSERT(api, api->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  lowbit_status captured =
      lowbit_matmul(p.plan, m, reinterpret_cast<void *>(xDevice.get()), &p.w,
                    reinterpret_cast<void *>(p.scales->get()), nullptr,
                    reinterpret_cast<void *>(yDevice.get()), nullptr, 0, stream);
  CUgraph graph = nullptr;
  CUresult ended = api->cuStreamEndCapture(stream, &graph);
  ASSERT_EQ(captured, LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  LOWBIT_CU_ASSERT(api, ended);
  CUgraphExec exec = nullptr;
  LOWBIT_CU_ASSERT(api, api->cuGraphInstantiate(&exec, graph, 0));
  std::vector<uint16_t> y(static_cast<size_t>(m * 4096));
  for (int replay = 0; replay < 3; ++replay) {
    LOWBIT_CU_ASSERT(api, yDevice.poison(0xFF));
    // The memset runs on the legacy stream, which a non-blocking stream does
    // not wait for.
    LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize());
    LOWBIT_CU_ASSERT(api, api->cuGraphLaunch(exec, stream));
    LOWBIT_CU_ASSERT(api, api->cuStreamSynchronize(stream));
    LOWBIT_CU_ASSERT(api, yDevice.download(y.data(), y.size() * 2));
    EXPECT_LT(relativeError(p, m, x, y, rng), tolerance(p)) << "replay " << replay;
  }
  api->cuGraphExecDestroy(exec);
  api->cuGraphDestroy(graph);
  api->cuStreamDestroy(stream);
}

TEST_F(RuntimeGpu, ConcurrentLaunchesFromSeveralThreads) {
  ASSERT_NE(context, nullptr);
  SplitMix rng{99};
  PreparedProblem p;
  prepare(*api, context, hostExampleProblem(), rng, p);
  if (HasFatalFailure())
    return;
  constexpr int kThreads = 4, kLaunchesPerThread = 50;
  const int64_t rowsOf[kThreads] = {1, 7, 64, 300}; // different kernels and grids at once
  struct Lane {
    Activations x;
    std::unique_ptr<DeviceBuffer> xDevice, yDevice;
    CUstream stream = nullptr;
    lowbit_status status = LOWBIT_STATUS_SUCCESS;
    std::string error;
  } lanes[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    Lane &lane = lanes[t];
    lane.x = randomActivations(p, rowsOf[t], rng);
    lane.xDevice = std::make_unique<DeviceBuffer>(*api, lane.x.bits.size() * 2);
    lane.yDevice = std::make_unique<DeviceBuffer>(*api, static_cast<size_t>(rowsOf[t] * 4096 * 2));
    LOWBIT_CU_ASSERT(api, lane.xDevice->upload(lane.x.bits.data(), lane.x.bits.size() * 2));
    LOWBIT_CU_ASSERT(api, lane.yDevice->poison(0xFF));
    LOWBIT_CU_ASSERT(api, api->cuStreamCreate(&lane.stream, CU_STREAM_NON_BLOCKING));
  }
  LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize()); // the poison, before the non-blocking streams
  // The worker threads have no current context: lowbit_matmul sets its own.
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Lane &lane = lanes[t];
      for (int i = 0; i < kLaunchesPerThread && lane.status == LOWBIT_STATUS_SUCCESS; ++i) {
        lane.status =
            lowbit_matmul(p.plan, rowsOf[t], reinterpret_cast<void *>(lane.xDevice->get()), &p.w,
                          reinterpret_cast<void *>(p.scales->get()), nullptr,
                          reinterpret_cast<void *>(lane.yDevice->get()), nullptr, 0, lane.stream);
        if (lane.status != LOWBIT_STATUS_SUCCESS)
          lane.error = lowbit_last_error();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    Lane &lane = lanes[t];
    SCOPED_TRACE("thread " + std::to_string(t) + ", M = " + std::to_string(rowsOf[t]));
    EXPECT_EQ(lane.status, LOWBIT_STATUS_SUCCESS) << lane.error;
    LOWBIT_CU_ASSERT(api, api->cuStreamSynchronize(lane.stream));
    std::vector<uint16_t> y(static_cast<size_t>(rowsOf[t] * 4096));
    LOWBIT_CU_ASSERT(api, lane.yDevice->download(y.data(), y.size() * 2));
    EXPECT_LT(relativeError(p, rowsOf[t], lane.x, y, rng), tolerance(p));
    api->cuStreamDestroy(lane.stream);
  }
}

TEST_F(RuntimeGpu, JitsPtxWhenNoCubinFits) {
  std::string path = jitDatabase();
  ASSERT_TRUE(std::filesystem::exists(path)) << "no JIT test database at " << path;
  if (deviceArchName(*api).rfind("sm_8", 0) == 0)
    GTEST_SKIP() << "the JIT set is compiled for sm_80; on an sm_8x device its cubin fits";
  lowbit_context *jitContext = openContext(path);
  ASSERT_NE(jitContext, nullptr);
  SplitMix rng{3};
  {
    PreparedProblem p;
    prepare(*api, jitContext, hostExampleProblem(), rng, p);
    if (!HasFatalFailure()) {
      lowbit_choice choice;
      std::memset(&choice, 0, sizeof(choice));
      choice.struct_size = sizeof(choice);
      LOWBIT_OK(lowbit_plan_explain(p.plan, 1, &choice));
      EXPECT_EQ(choice.jit_from_ptx, 1);
      EXPECT_STREQ(choice.arch, "sm_80");
      for (int64_t m : {1, 64})
        runAndCheck(p, m, rng);
    }
  }
  lowbit_context_destroy(jitContext);
}

} // namespace
} // namespace lowbit::testing
