// lowbit.h: plans (creation, explain, sizes, layout id).
#include "lowbit/lowbit.h"
#include "runtime/api/LoadedPlan.h"
#include "runtime/api/PlanRanges.h"
#include "runtime/api/Problem.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

using namespace lowbit::api;

namespace {
// Older headers' lowbit_problem: up to tensor_scale (before the table), up
// to the table (before act_order), up to act_order (before super_block), up
// to super_step (before activation_scale), and up to output (before
// weight_float).
constexpr size_t kProblemBeforeTable = offsetof(lowbit_problem, table);
constexpr size_t kProblemBeforeActOrder = offsetof(lowbit_problem, act_order);
constexpr size_t kProblemBeforeSuperBlock = offsetof(lowbit_problem, super_block);
constexpr size_t kProblemBeforeActivationScale = offsetof(lowbit_problem, activation_scale);
constexpr size_t kProblemBeforeWeightFloat = offsetof(lowbit_problem, weight_float);
} // namespace

extern "C" {

lowbit_status lowbit_plan_create(lowbit_context *context, const lowbit_problem *problem,
                                 lowbit_plan **out_plan) {
  return guardEntryPoint("lowbit_plan_create", [&]() -> lowbit_status {
    if (!out_plan)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_plan_create: out_plan is NULL");
    *out_plan = nullptr;
    if (!context || !context->state)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_plan_create: context is NULL");
    if (!problem)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_plan_create: problem is NULL");
    if (ApiStatus s = checkInputStructSize(
            problem, problem->struct_size, sizeof(lowbit_problem), "lowbit_problem",
            {kProblemBeforeTable, kProblemBeforeActOrder, kProblemBeforeSuperBlock,
             kProblemBeforeActivationScale, kProblemBeforeWeightFloat});
        !s)
      return recordFailure(s.error());
    // An older header's struct lacks the later fields: they read as zero.
    lowbit_problem known{};
    std::memcpy(&known, problem, std::min(problem->struct_size, sizeof known));
    Result<lowbit::core::Problem> desc = problemFromApi(known);
    if (!desc)
      return recordFailure(desc.error());
    if (known.act_order != 0 && known.act_order != 1)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_problem: act_order must be 0 or 1, got " +
                               std::to_string(known.act_order));

    ContextState &state = *context->state;
    auto plan = std::make_unique<lowbit_plan>();
    plan->context = context->state;
    {
      std::lock_guard<std::mutex> lock(state.planCreation);
      Result<PlanSpec> spec = buildPlanSpec(state.databases.view(), *desc, state.fingerprint);
      if (!spec)
        return recordFailure(spec.error().status, "lowbit_plan_create: " + spec.error().message);
      plan->spec = std::move(*spec);
      if (plan->spec.hasDenseRange()) {
        Result<std::shared_ptr<const lowbit::cuda::CublasLt>> lt = state.loadCublasLt();
        if (lt)
          plan->cublasLt = *lt;
        else if (ApiStatus dropped = dropDenseRanges(plan->spec, lt.error().message); !dropped)
          return recordFailure(dropped.error().status,
                               "lowbit_plan_create: " + dropped.error().message);
      }
    }
    // The kernels are the plain problem's: s8 and e4m3 activations add their
    // quantizer (for lowbit_matmul_quantizing), act-order the gather.
    addActivationQuantizer(plan->spec);
    if (known.act_order)
      if (ApiStatus permuted = addColumnPermutation(plan->spec); !permuted)
        return recordFailure(permuted.error().status,
                             "lowbit_plan_create: " + permuted.error().message);
    for (const std::string &note : state.databases.notes)
      plan->spec.notesText += (plan->spec.notesText.empty() ? "" : "\n") + note;
    Result<std::vector<CUmodule>> modules = loadModules(state, plan->spec, &plan->functions);
    if (!modules)
      return recordFailure(modules.error().status,
                           "lowbit_plan_create: " + modules.error().message);
    plan->modules = std::move(*modules);
    *out_plan = plan.release();
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_plan_destroy(lowbit_plan *plan) {
  return guardEntryPoint("lowbit_plan_destroy", [&]() -> lowbit_status {
    delete plan;
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_plan_explain(const lowbit_plan *plan, int64_t m, lowbit_choice *out_choice) {
  return guardEntryPoint("lowbit_plan_explain", [&]() -> lowbit_status {
    if (!plan || !out_choice)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, std::string("lowbit_plan_explain: ") +
                                                               (!plan ? "plan" : "out_choice") +
                                                               " is NULL");
    if (ApiStatus s =
            checkOutputStructSize(out_choice->struct_size, sizeof(lowbit_choice), "lowbit_choice");
        !s)
      return recordFailure(s.error());
    if (m <= 0)
      return recordFailure(LOWBIT_STATUS_INVALID_SHAPE,
                           "lowbit_plan_explain: M = " + std::to_string(m) +
                               ": M must be at least 1");
    const PlanSpec &spec = plan->spec;
    int index = spec.rangeIndex(m);
    if (index < 0)
      return recordFailure(LOWBIT_STATUS_INTERNAL_ERROR,
                           "lowbit_plan_explain: no range covers M = " + std::to_string(m));
    const PlannedRange &range = spec.ranges[static_cast<size_t>(index)];
    const PlannedKernel &kernel = spec.kernels[range.kernel];
    lowbit_choice choice;
    std::memset(&choice, 0, sizeof(choice));
    choice.struct_size = out_choice->struct_size; // the caller's, kept as is
    choice.kernel_name = kernel.name.c_str();
    choice.kernel_id = kernel.id.c_str();
    choice.family = kernel.family.c_str();
    choice.arch = kernel.arch.c_str();
    choice.m_lo = range.mLo;
    choice.m_hi = range.mHi;
    choice.tier = lowbit::db::tierName(spec.tier);
    choice.heuristic = spec.tier == lowbit::db::Tier::Heuristic ? 1 : 0;
    choice.jit_from_ptx = kernel.fromPtx ? 1 : 0;
    choice.database_path = range.databasePath.c_str();
    choice.notes = spec.notesText.c_str();
    std::memcpy(out_choice, &choice, sizeof(choice));
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_plan_packed_sizes(const lowbit_plan *plan, size_t *weight_bytes,
                                       size_t *scale_bytes, size_t *zero_bytes,
                                       size_t *workspace_bytes) {
  return guardEntryPoint("lowbit_plan_packed_sizes", [&]() -> lowbit_status {
    if (!plan)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_plan_packed_sizes: plan is NULL");
    const PlanSpec &spec = plan->spec;
    if (weight_bytes)
      *weight_bytes = static_cast<size_t>(spec.packedWeightBytes());
    if (scale_bytes)
      *scale_bytes = static_cast<size_t>(spec.scaleBytes);
    if (zero_bytes)
      *zero_bytes = static_cast<size_t>(spec.zeroBytes);
    if (workspace_bytes)
      *workspace_bytes = static_cast<size_t>(spec.workspaceBytes);
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_plan_workspace_bytes(const lowbit_plan *plan, int64_t m, size_t *out_bytes) {
  return guardEntryPoint("lowbit_plan_workspace_bytes", [&]() -> lowbit_status {
    if (!plan || !out_bytes)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           std::string("lowbit_plan_workspace_bytes: ") +
                               (!plan ? "plan" : "out_bytes") + " is NULL");
    const PlanSpec &spec = plan->spec;
    // M beyond 2^31 rows would overflow the product below long before any
    // kernel could serve it.
    if (m <= 0 || m > (int64_t{1} << 31))
      return recordFailure(LOWBIT_STATUS_INVALID_SHAPE,
                           "lowbit_plan_workspace_bytes: M = " + std::to_string(m) +
                               " must be in [1, 2^31]");
    *out_bytes = static_cast<size_t>(spec.permutedActivationBytes(m) +
                                     spec.quantizedActivationBytes(m) + spec.workspaceBytes);
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_plan_layout_id(const lowbit_plan *plan, uint64_t *out_layout_id) {
  return guardEntryPoint("lowbit_plan_layout_id", [&]() -> lowbit_status {
    if (!plan || !out_layout_id)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, std::string("lowbit_plan_layout_id: ") +
                                                               (!plan ? "plan" : "out_layout_id") +
                                                               " is NULL");
    *out_layout_id = plan->spec.layoutId;
    return LOWBIT_STATUS_SUCCESS;
  });
}

} // extern "C"
