"""Context and Plan over the C ABI, with the fake driver: packing and
unpacking, the checks lowbit.h makes, and the errors they raise."""
import numpy as np
import pytest

import lowbit


def test_a_context_needs_a_database():
    with pytest.raises(ValueError, match="needs a kernel database"):
        lowbit.Context()


def test_a_problem_without_kernels_is_a_lowbit_error(context):
    with pytest.raises(lowbit.LowbitError, match="lowbit_plan_create") as raised:
        lowbit.Plan(context, lowbit.Problem(4096, 4096))
    assert raised.value.status == 8  # LOWBIT_STATUS_UNKNOWN_PROBLEM


# Keyword arguments, not Problems: pytest keeps parameters until it exits.
@pytest.mark.parametrize("settings", [
    dict(n=384, k=1536, weight="int4", group_size=64),
    dict(n=256, k=512, zero="quantized", zero_codes="uint4"),
    dict(n=512, k=256, weight="int4", activation="bf16", scale="bf16", group_size=64,
         zero="sub_code"),
])
def test_pack_then_unpack_gives_the_weights_back(context, settings):
    problem = lowbit.Problem(**settings)
    rng = np.random.default_rng(7)
    w = rng.normal(0, 0.02, size=(problem.n, problem.k))
    kw = lowbit.quantize(w, problem)
    plan = lowbit.Plan(context, problem)
    weights, scales, zeros = plan.pack(kw)
    assert weights.dtype == np.uint8 and weights.size == plan.weight_bytes
    assert scales.size == plan.scale_bytes
    assert (zeros is None) == (plan.zero_bytes == 0)
    back = plan.unpack(weights, scales, zeros)
    np.testing.assert_array_equal(back.codes, kw.codes)
    np.testing.assert_array_equal(back.dequantize(), kw.dequantize())
    choice = plan.explain(1)
    assert choice["m_lo"] <= 1 and choice["arch"] == "sm_90a"


def test_act_order_permutation_travels_in_the_packed_weights(context):
    import reference
    tensors, _ = reference.gptq_layer(np.random.default_rng(8), 256, 1024, 128, act_order=True,
                                      force_zero=0)
    kw = lowbit.import_gptq(**tensors)
    plan = lowbit.Plan(context, kw.problem)
    weights, scales, zeros = plan.pack(kw)
    back = plan.unpack(weights, scales, zeros)
    np.testing.assert_array_equal(back.permutation, kw.permutation)
    assert plan.workspace_bytes(7) >= 7 * 1024 * 2


def test_pack_refuses_weights_of_another_problem(context):
    plan = lowbit.Plan(context, lowbit.Problem(384, 384, weight="int4", group_size=64))
    other = lowbit.quantize(np.zeros((384, 1536)),
                           lowbit.Problem(384, 1536, weight="int4", group_size=64))
    with pytest.raises(ValueError, match="the plan is for"):
        plan.pack(other)


def test_unpack_checks_the_buffers(context):
    plan = lowbit.Plan(context, lowbit.Problem(384, 384, weight="int4", group_size=64))
    weights = np.zeros(plan.weight_bytes - 1, np.uint8)
    with pytest.raises(lowbit.LowbitError, match="packed_bytes") as raised:
        plan.unpack(weights, np.zeros(plan.scale_bytes, np.uint8))
    assert raised.value.status == 13  # LOWBIT_STATUS_BUFFER_TOO_SMALL
    with pytest.raises(ValueError, match="weights must be uint8"):
        plan.unpack(np.zeros(plan.weight_bytes, np.int8), np.zeros(plan.scale_bytes, np.uint8))


def test_matmul_with_x_scales_is_the_quantized_entry_point(context):
    # An f16 plan takes no x scales: lowbit_matmul_quantized refuses it, naming
    # the entry point it takes, before it reads any other pointer.
    plan = lowbit.Plan(context, lowbit.Problem(384, 384, weight="int4", group_size=64))
    with pytest.raises(lowbit.LowbitError, match="call lowbit_matmul$") as raised:
        plan.matmul(1, 256, 512, plan.weight_bytes, 768, 0, 1024, 0, 0, 0, x_scales=1280)
    assert raised.value.status == 1  # LOWBIT_STATUS_INVALID_ARGUMENT
    assert "lowbit_matmul_quantized" in str(raised.value)
