"""torch.ops.lowbit.matmul on plans for s8 or e4m3 activations: int8 or
float8_e4m3fn x with its f32 x_scales (lowbit_matmul_quantized), or f16/bf16
x that lowbit quantizes per token or per tensor (lowbit_matmul_quantizing),
on the CPU reference path through the fake driver's plans and, with the
`gpu` marker, on a GPU. The plans' kernels are compiled here
(python-tests.toml has no quantized problem), so these tests need the lowbit
compiler (LOWBIT_CLI) and skip without it."""
import numpy as np
import pytest
import torch

import lowbit
import lowbit.compiler
import lowbit.ops

N, K = 128, 256
SETTINGS = {
    "token": dict(activation_scale="token", output="f16"),
    "tensor": dict(activation_scale="tensor", output="f32"),
    # W8A8 in fp8 (e4m3 x, e4m3fn weights, f32 per-channel scales).
    "fp8": dict(activation="e4m3", weight="e4m3fn", scale="f32", activation_scale="token",
                output="bf16"),
}
OUTPUTS = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def _problem(setting):
    fields = dict(weight="int8", activation="s8", scale="f16", granularity="channel",
                  zero="none")
    fields.update(SETTINGS[setting])
    return lowbit.Problem(N, K, **fields)


@pytest.fixture(scope="module")
def s8_database(tmp_path_factory):
    if not lowbit.compiler.available():
        pytest.skip("no lowbit compiler here (LOWBIT_CLI) to compile the s8 kernels")
    return lowbit.compiler.compile([_problem(s) for s in SETTINGS],
                                   tmp_path_factory.mktemp("s8") / "s8.db")


@pytest.fixture(scope="module")
def s8_plans(s8_database):
    """setting -> (handle, weights, scales) with packed int8 (or e4m3fn)
    weights, on the CPU."""
    context = lowbit.Context(system_db=s8_database)
    rng = np.random.default_rng(5)
    plans = {}
    for scale in SETTINGS:
        problem = _problem(scale)
        plan = lowbit.Plan(context, problem)
        # Buffers in the C ABI's form: int8 codes (or e4m3fn ones but NaN)
        # and f16 (f32) per-channel scales.
        codes = rng.integers(0, 256, (N, K), dtype=np.uint8)
        fp8 = problem.activation == "e4m3"
        if fp8:
            codes[(codes & 0x7F) == 0x7F] ^= 1
        channel_scales = rng.uniform(0.005, 0.01, N).astype(
            np.float32 if fp8 else np.float16).view(np.uint8)
        weights, scales, _ = plan.pack(lowbit.kernel_weights(problem, codes, channel_scales))
        plans[scale] = (lowbit.ops.register_plan(plan), torch.from_numpy(weights),
                        torch.from_numpy(scales))
    yield plans
    for handle, _, _ in plans.values():
        lowbit.ops.release_plan(handle)


def _x(m, dtype, seed=0):
    x = torch.randn(m, K, generator=torch.Generator().manual_seed(seed)) * 3
    x[0] = 0  # a row of zeros: scale 1, codes 0
    return x.to(dtype)


def _numpy_quantize(x, per_tensor):
    """lowbit.h's arithmetic in NumPy: f32 throughout, rint is half-even."""
    values = x.float().numpy()
    absmax = np.abs(values).max() if per_tensor else np.abs(values).max(axis=-1)
    absmax = np.asarray(absmax, np.float32)
    scale = np.where(absmax > 0, absmax / np.float32(127), np.float32(1)).astype(np.float32)
    codes = np.clip(np.rint(values / (scale if per_tensor else scale[:, None])), -127, 127)
    return codes.astype(np.int8), np.atleast_1d(scale)


@pytest.mark.parametrize("per_tensor", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_quantize_activations_is_lowbit_h_arithmetic(per_tensor, dtype):
    x = _x(9, dtype)
    x[1, :6] = torch.tensor([127.0, 2.5, 3.5, -0.5, 126.5, -1.5])  # row 1: scale 1, ties
    x[1, 6:] = 0
    codes, scales = lowbit.ops.quantize_activations(x, per_tensor)
    want_codes, want_scales = _numpy_quantize(x, per_tensor)
    assert codes.dtype == torch.int8 and scales.dtype == torch.float32
    np.testing.assert_array_equal(codes.numpy(), want_codes)
    np.testing.assert_array_equal(scales.numpy(), want_scales)
    if not per_tensor:
        assert scales[0] == 1 and not codes[0].any()
        assert codes[1, :6].tolist() == [127, 2, 4, 0, 126, -2]


def _numpy_e4m3(values):
    """The nearest finite E4M3FN value to each of `values` by search, ties to
    the even code, saturating at 448: the bytes lowbit.h promises."""
    codes = np.arange(0x7F)
    exponent, mantissa = codes >> 3, codes & 7
    magnitudes = np.where(exponent == 0, np.ldexp(mantissa.astype(np.float64), -9),
                          np.ldexp((8 + mantissa).astype(np.float64), exponent - 10))
    a = np.abs(values.astype(np.float64)).ravel()
    gaps = np.abs(magnitudes[None, :] - a[:, None])
    best = gaps.min(axis=1, keepdims=True)
    tied = gaps == best
    # Of the (at most two) nearest codes, the even one; else the only one.
    even = tied & (codes[None, :] % 2 == 0)
    chosen = np.where(even.any(axis=1), even.argmax(axis=1), tied.argmax(axis=1))
    sign = np.signbit(values).ravel().astype(np.uint8) << 7
    return (chosen.astype(np.uint8) | sign).reshape(values.shape)


@pytest.mark.parametrize("per_tensor", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_quantize_activations_to_e4m3_is_lowbit_h_arithmetic(per_tensor, dtype):
    x = _x(9, dtype)
    # Row 1: absmax 448 (scale 1) and ties: 1.0625 -> 1, 1.1875 -> 1.25,
    # -2^-10 -> -0, 3 * 2^-10 -> 2^-8, 432 -> 448.
    x[1, :7] = torch.tensor([448.0, -448.0, 1.0625, 1.1875, -2.0**-10, 3 * 2.0**-10, 432.0])
    x[1, 7:] = 0
    codes, scales = lowbit.ops.quantize_activations(x, per_tensor, "e4m3")
    assert codes.dtype == torch.float8_e4m3fn and scales.dtype == torch.float32
    values = x.float().numpy()
    absmax = np.asarray(np.abs(values).max() if per_tensor else np.abs(values).max(axis=-1),
                        np.float32)
    want_scales = np.where(absmax > 0, absmax / np.float32(448), np.float32(1)).astype(np.float32)
    np.testing.assert_array_equal(scales.numpy(), np.atleast_1d(want_scales))
    scaled = (values / (want_scales if per_tensor else want_scales[:, None])).astype(np.float32)
    np.testing.assert_array_equal(codes.view(torch.uint8).numpy(), _numpy_e4m3(scaled))
    if not per_tensor:
        assert codes.view(torch.uint8)[1, :7].tolist() == [0x7E, 0xFE, 0x38, 0x3A, 0x80, 0x02, 0x7E]
    with pytest.raises(ValueError, match="'s8' or 'e4m3'"):
        lowbit.ops.quantize_activations(x, per_tensor, "f16")


@pytest.mark.parametrize("scale", list(SETTINGS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_float_x_is_quantized_then_multiplied(s8_plans, scale, dtype):
    handle, weights, scales = s8_plans[scale]
    activation = SETTINGS[scale].get("activation", "s8")
    x = _x(7, dtype)
    y = torch.ops.lowbit.matmul(x, weights, scales, None, handle)
    assert y.dtype == OUTPUTS[SETTINGS[scale]["output"]]
    codes, x_scales = lowbit.ops.quantize_activations(x, scale == "tensor", activation)
    quantized = torch.ops.lowbit.matmul(codes, weights, scales, None, handle, x_scales)
    assert torch.equal(y, quantized)
    w = lowbit.ops.reference_weights(lowbit.ops.plan_of(handle), weights, scales, None)
    exact = x.double() @ w.T
    error = (y.double() - exact).abs().max().item()
    # s8 x: each value within 1/254 of absmax; e4m3 x: within 1/16 of itself.
    bound = 0.08 if activation == "e4m3" else 0.02
    assert error <= bound * exact.abs().max().item(), error


def test_the_op_checks_x_and_x_scales(s8_plans):
    handle, weights, scales = s8_plans["token"]
    codes = torch.zeros(3, K, dtype=torch.int8)
    with pytest.raises(ValueError, match="int8 x needs x_scales"):
        torch.ops.lowbit.matmul(codes, weights, scales, None, handle)
    with pytest.raises(ValueError, match="x_scales must be 3 f32"):
        torch.ops.lowbit.matmul(codes, weights, scales, None, handle, torch.ones(2))
    with pytest.raises(ValueError, match="x_scales go with int8 x only"):
        torch.ops.lowbit.matmul(_x(3, torch.float16), weights, scales, None, handle,
                                torch.ones(3))
    with pytest.raises(TypeError, match="or f16 or bf16, which lowbit quantizes"):
        torch.ops.lowbit.matmul(_x(3, torch.float32), weights, scales, None, handle)
    handle, weights, scales = s8_plans["tensor"]
    with pytest.raises(ValueError, match="x_scales must be 1 f32 values"):
        torch.ops.lowbit.matmul(codes, weights, scales, None, handle, torch.ones(3))


def test_e4m3_plans_take_float8_x_with_x_scales(s8_plans):
    handle, weights, scales = s8_plans["fp8"]
    codes = torch.zeros(3, K, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="float8_e4m3fn x needs x_scales"):
        torch.ops.lowbit.matmul(codes, weights, scales, None, handle)
    with pytest.raises(TypeError, match="activations are e4m3"):
        torch.ops.lowbit.matmul(torch.zeros(3, K, dtype=torch.int8), weights, scales, None,
                                handle, torch.ones(3))
    with pytest.raises(ValueError, match="x_scales go with float8_e4m3fn x only"):
        torch.ops.lowbit.matmul(_x(3, torch.float16), weights, scales, None, handle,
                                torch.ones(3))


def test_the_fake_implementation_gives_the_output_dtype(s8_plans):
    from torch._subclasses.fake_tensor import FakeTensorMode
    handle, weights, scales = s8_plans["tensor"]
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = torch.ops.lowbit.matmul(torch.empty(2, 5, K, dtype=torch.bfloat16), weights, scales,
                                    None, handle)
    assert y.shape == (2, 5, N) and y.dtype == torch.float32


def test_matmul_quantizing_binding_checks_its_arguments(s8_plans, context):
    plan = lowbit.ops.plan_of(s8_plans["token"][0])
    needed = plan.workspace_bytes(1)
    assert needed == 256 + 256  # K codes, then one f32 scale, each rounded up to 256 bytes
    with pytest.raises(ValueError, match="x_dtype must be 'f16' or 'bf16'"):
        plan.matmul_quantizing(1, 256, "s8", 512, plan.weight_bytes, 768, 0, 1024, 4096, needed,
                               0)
    with pytest.raises(lowbit.LowbitError, match="lowbit_plan_workspace_bytes") as raised:
        plan.matmul_quantizing(1, 256, "f16", 512, plan.weight_bytes, 768, 0, 1024, 4096,
                               needed - 1, 0)
    assert raised.value.status == 13  # LOWBIT_STATUS_BUFFER_TOO_SMALL
    f16_plan = lowbit.Plan(context, lowbit.Problem(384, 384, weight="int4", group_size=64))
    with pytest.raises(lowbit.LowbitError, match="call lowbit_matmul$") as raised:
        f16_plan.matmul_quantizing(1, 256, "f16", 512, f16_plan.weight_bytes, 768, 0, 1024,
                                   4096, 4096, 0)
    assert raised.value.status == 1  # LOWBIT_STATUS_INVALID_ARGUMENT


@pytest.mark.gpu
@pytest.mark.parametrize("scale", list(SETTINGS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_quantizing_equals_quantized_on_the_same_codes(s8_plans, scale, dtype):
    handle, weights, scales = s8_plans[scale]
    device = torch.device("cuda", 0)
    weights, scales = weights.to(device), scales.to(device)
    for m in (1, 7, 64, 300):
        x = _x(m, dtype, seed=m).to(device)
        y = torch.ops.lowbit.matmul(x, weights, scales, None, handle)
        codes, x_scales = lowbit.ops.quantize_activations(
            x, scale == "tensor", SETTINGS[scale].get("activation", "s8"))
        quantized = torch.ops.lowbit.matmul(codes, weights, scales, None, handle, x_scales)
        assert torch.equal(y, quantized), m
