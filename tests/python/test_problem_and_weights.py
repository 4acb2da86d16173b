"""The typed model and the formats library through the bindings: one parse
and one print of a problem, the quantizer, and the checkpoint importers
against independent NumPy oracles (tests/python/reference.py)."""
import numpy as np
import pytest

import lowbit
import reference


def test_a_problem_prints_its_signature_and_parses_back():
    p = lowbit.Problem(1024, 2048, weight="uint4", zero="quantized", zero_codes="uint8",
                       act_order=True, name="layer")
    assert p.signature == ("lowbit.qmatmul.v1;n=1024;k=2048;act=f16;weight=uint4;scale=f16;"
                           "granularity=group;group=128;zero=quantized;zero_codes=uint8;"
                           "act_order=1")
    back = lowbit.Problem.from_signature(p.signature)
    assert back == p and back.name == "" and p.name == "layer"
    assert hash(back) == hash(p)
    assert (p.n, p.k, p.bits, p.zero, p.zero_codes, p.act_order) == (
        1024, 2048, 4, "quantized", "uint8", True)
    assert "sm_90a" in p.kernel_archs


def test_quantized_activations_name_their_scale_and_output_and_s8_has_kernels():
    p = lowbit.Problem(4096, 4096, weight="int8", granularity="channel", activation="s8",
                       activation_scale="token", output="bf16")
    assert p.signature.endswith(";act_scale=token;out=bf16")
    assert (p.activation, p.activation_scale, p.output) == ("s8", "token", "bf16")
    assert lowbit.Problem.from_signature(p.signature) == p
    # The split-K mma multiplies s8 activations on every arch; e4m3 ones take
    # e4m3fn weights on the fp8 tensor cores, from sm_89 on.
    assert p.kernel_archs == ["sm_80", "sm_86", "sm_89", "sm_90a"]
    e4m3 = lowbit.Problem(4096, 4096, weight="int8", granularity="channel", activation="e4m3",
                          activation_scale="token", output="f16")
    assert e4m3.kernel_archs == []
    fp8 = lowbit.Problem(4096, 4096, weight="e4m3fn", granularity="channel", activation="e4m3",
                         activation_scale="token", output="f16")
    assert fp8.kernel_archs == ["sm_89", "sm_90a"]
    # f16 naming its own output is the f16 problem.
    assert lowbit.Problem(64, 128, output="f16") == lowbit.Problem(64, 128)
    assert lowbit.Problem(64, 128).output == "f16"


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=100, k=100), "divide K = 100"),
    (dict(n=64, k=128, activation="s8", output="f16"), "need an activation scale"),
    (dict(n=64, k=128, activation="e4m3", activation_scale="tensor"), "need an output type"),
    (dict(n=64, k=128, activation_scale="token"), "f16 activations have none"),
    (dict(n=64, k=128, output="s32"), "output 's32'"),
    (dict(n=64, k=128, weight="uint9"), "1..8 bits"),
    (dict(n=64, k=128, activation="f32"), "f32"),
    (dict(n=64, k=128, zero="quantized"), "zero_codes"),
    (dict(n=0, k=128), "N"),
])
def test_invalid_problems_are_value_errors_that_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        lowbit.Problem(**kwargs)


def test_quantize_is_the_formats_librarys_round_to_nearest():
    rng = np.random.default_rng(1)
    w = rng.normal(0, 0.02, size=(64, 256)).astype(np.float32)
    p = lowbit.Problem(64, 256, weight="uint4", group_size=64, zero="quantized",
                       zero_codes="uint8")
    kw = lowbit.quantize(w, p)
    assert kw.problem == p
    codes, scales = kw.codes, kw.scales.view(np.float16).astype(np.float64).reshape(64, 4)
    zeros = kw.zeros.reshape(64, 4).astype(np.float64)
    g = np.arange(256) // 64
    ours = (codes - zeros[:, g]) * scales[:, g]
    np.testing.assert_array_equal(kw.dequantize(), ours)
    # Round to nearest: no weight is off by more than half a step.
    assert np.all(np.abs(ours - w) <= scales[:, g] / 2 + 1e-7)


@pytest.mark.parametrize("activation, settings", [
    ("s8", dict(activation_scale="token", output="f16")),
    ("e4m3", dict(activation_scale="tensor", output="f32")),
])
def test_quantize_for_quantized_activations_gives_the_same_weights(activation, settings):
    # The weights do not depend on x's type; the problem names x's scales
    # and y's type, which s8 and e4m3 need.
    rng = np.random.default_rng(6)
    w = rng.normal(0, 0.02, size=(64, 256)).astype(np.float32)
    weight = "int8" if activation == "s8" else "e4m3fn"
    p = lowbit.Problem(64, 256, weight=weight, granularity="channel", activation=activation,
                       **settings)
    kw = lowbit.quantize(w, p)
    assert kw.problem == p
    f16 = lowbit.quantize(w, lowbit.Problem(64, 256, weight=weight, granularity="channel"))
    np.testing.assert_array_equal(kw.codes, f16.codes)
    np.testing.assert_array_equal(kw.scales, f16.scales)
    np.testing.assert_array_equal(kw.dequantize(), f16.dequantize())


def test_imported_checkpoints_serve_quantized_activations():
    # W4A8 from a GPTQ layer: the same weights, for s8 x with per-token scales.
    rng = np.random.default_rng(7)
    tensors, w = reference.gptq_layer(rng, 256, 1024, 128, act_order=False, force_zero=0)
    kw = lowbit.import_gptq(**tensors, activation="s8", activation_scale="token", output="bf16")
    p = kw.problem
    assert (p.activation, p.activation_scale, p.output) == ("s8", "token", "bf16")
    np.testing.assert_array_equal(kw.dequantize(), w)
    with pytest.raises(ValueError, match="activation scale"):
        lowbit.import_gptq(**tensors, activation="s8")


def test_two_level_scales_quantize_to_the_buffers_kernels_read():
    # The compact int4 encoding: uint8 scale and min codes per 32 times f16
    # steps per 256, each buffer's steps after its codes (16-byte aligned).
    rng = np.random.default_rng(4)
    w = rng.normal(0, 0.02, size=(8, 512)).astype(np.float32)
    p = lowbit.Problem(8, 512, weight="uint4", scale="uint8", group_size=32, zero="sub_value",
                       super_block=256, super_step="f16")
    assert p.super_block == 256 and p.super_step == "f16"
    assert lowbit.Problem.from_signature(p.signature) == p
    kw = lowbit.quantize(w, p)
    assert kw.problem == p
    codes_bytes = 8 * 16
    scale_codes = kw.scales[:codes_bytes].astype(np.float64).reshape(8, 16)
    scale_steps = kw.scales[codes_bytes:].view(np.float16).astype(np.float64).reshape(8, 2)
    min_codes = kw.zeros[:codes_bytes].astype(np.float64).reshape(8, 16)
    min_steps = kw.zeros[codes_bytes:].view(np.float16).astype(np.float64).reshape(8, 2)
    g, b = np.arange(512) // 32, np.arange(512) // 256
    ours = (kw.codes * (scale_codes[:, g] * scale_steps[:, b])
            - min_codes[:, g] * min_steps[:, b])
    np.testing.assert_array_equal(kw.dequantize(), ours)
    assert np.max(np.abs(ours - w)) < 0.02
    with pytest.raises(ValueError, match="super_step"):
        lowbit.Problem(8, 512, scale="uint8", group_size=32, super_block=256)


def _correlated_inputs(rows, k, seed):
    """Activations with loud channels and correlated neighbours."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(rows, k))
    x = z + 0.8 * np.roll(z, -1, axis=1) + 0.5 * np.roll(z, -3, axis=1)
    x[:, ::17] *= 9
    return x


@pytest.mark.parametrize("weight, zero", [("nf4", "none"), ("uint4", "quantized"), ("int4", "none")])
def test_quantize_with_a_hessian_lowers_the_output_error(weight, zero):
    rng = np.random.default_rng(2)
    w = rng.normal(0, 0.05, size=(32, 256))
    x = _correlated_inputs(512, 256, 3)
    p = lowbit.Problem(32, 256, weight=weight, group_size=64, zero=zero,
                       zero_codes="uint4" if zero == "quantized" else None)
    rtn = lowbit.quantize(w, p)
    gptq = lowbit.quantize(w, p, hessian=x.T @ x)
    assert gptq.problem == p

    def output_error(kw):
        return np.sum((x @ (w - kw.dequantize()).T) ** 2)

    assert output_error(gptq) < 0.8 * output_error(rtn)
    # Static groups: an ordinary grouped matrix, no act-order permutation.
    assert gptq.permutation is None


def test_quantize_with_an_identity_hessian_and_no_clipping_is_round_to_nearest():
    rng = np.random.default_rng(4)
    w = rng.normal(0, 0.05, size=(16, 128))
    p = lowbit.Problem(16, 128, weight="nf4", group_size=64)
    gptq = lowbit.quantize(w, p, hessian=np.eye(128), damping=0, clip_ratios=[1.0])
    np.testing.assert_array_equal(gptq.codes, lowbit.quantize(w, p).codes)


def test_quantize_checks_its_hessian():
    p = lowbit.Problem(16, 128, group_size=64)
    w = np.zeros((16, 128))
    with pytest.raises(ValueError, match=r"hessian is \[64, 64\], it must be K x K = 128 x 128"):
        lowbit.quantize(w, p, hessian=np.eye(64))
    bad = np.eye(128)
    bad[2, 2] = np.nan
    with pytest.raises(ValueError, match=r"H\[2\]\[2\] is not finite"):
        lowbit.quantize(w, p, hessian=bad)
    with pytest.raises(ValueError, match=r"clipping ratio 1.5 is outside"):
        lowbit.quantize(w, p, hessian=np.eye(128), clip_ratios=[1.5])
    with pytest.raises(ValueError, match="clip_ratios need a hessian"):
        lowbit.quantize(w, p, clip_ratios=[1.0])


def test_quantize_checks_its_input():
    p = lowbit.Problem(64, 256)
    with pytest.raises(ValueError, match=r"weights are \[64, 128\]"):
        lowbit.quantize(np.zeros((64, 128), np.float32), p)
    with pytest.raises(ValueError, match="float32 or float64"):
        lowbit.quantize(np.zeros((64, 256), np.int32), p)
    with pytest.raises(ValueError, match="contiguous"):
        lowbit.quantize(np.zeros((256, 64), np.float32).T, p)


@pytest.mark.parametrize("act_order", [False, True])
def test_gptq_import_keeps_every_weight(act_order):
    rng = np.random.default_rng(2)
    tensors, w = reference.gptq_layer(rng, 256, 1024, 128, act_order=act_order, force_zero=0)
    kw = lowbit.import_gptq(**tensors)
    p = kw.problem
    assert (p.n, p.k, p.group_size, p.zero_codes, p.act_order) == (256, 1024, 128, "uint8",
                                                                    act_order)
    d = kw.dequantize()
    if act_order:
        perm = kw.permutation
        assert sorted(perm.tolist()) == list(range(1024))
        np.testing.assert_array_equal(d, w[:, perm])
    else:
        assert kw.permutation is None
        np.testing.assert_array_equal(d, w)


def test_gptq_v2_zeros_are_stored_as_they_are():
    rng = np.random.default_rng(3)
    tensors, w = reference.gptq_layer(rng, 256, 512, 128, v1=False)
    tensors.pop("g_idx")
    kw = lowbit.import_gptq(**tensors, v2=True)
    assert kw.problem.zero_codes == "uint4"
    np.testing.assert_array_equal(kw.dequantize(), w)


def test_gptq_tensors_that_do_not_fit_together_are_refused():
    rng = np.random.default_rng(4)
    tensors, _ = reference.gptq_layer(rng, 256, 512, 128)
    tensors["scales"] = np.ascontiguousarray(tensors["scales"][:, :128])
    with pytest.raises(ValueError, match="do not fit together"):
        lowbit.import_gptq(**tensors)
    tensors, _ = reference.gptq_layer(rng, 256, 512, 128)
    tensors["qweight"] = tensors["qweight"].astype(np.int64)
    with pytest.raises(ValueError, match="qweight must be int32"):
        lowbit.import_gptq(**tensors)


def test_awq_import_reads_its_nibble_order():
    rng = np.random.default_rng(5)
    tensors, w = reference.awq_layer(rng, 256, 512, 128)
    kw = lowbit.import_awq(**tensors)
    assert kw.problem.zero_codes == "uint4"
    np.testing.assert_array_equal(kw.dequantize(), w)


def test_gguf_q8_0_import():
    rng = np.random.default_rng(6)
    data, w = reference.q8_0_tensor(rng, 256, 512)
    kw = lowbit.import_gguf("Q8_0", data, 256, 512)
    assert (kw.problem.weight, kw.problem.group_size) == ("int8", 32)
    np.testing.assert_array_equal(kw.dequantize(), w)
    with pytest.raises(ValueError, match="Q5_1.*not one lowbit imports"):
        lowbit.import_gguf("Q5_1", data, 256, 512)
    with pytest.raises(ValueError):
        lowbit.import_gguf("Q8_0", data[:-1], 256, 512)


def test_kernel_weights_from_buffers_are_checked():
    p = lowbit.Problem(64, 128, group_size=64)
    codes = np.full((64, 128), 3, np.uint8)
    scales = np.ones(128, np.float16).view(np.uint8)
    kw = lowbit.kernel_weights(p, codes, scales)
    assert np.all(kw.dequantize() == 3.0)
    codes[5, 7] = 16
    with pytest.raises(ValueError):
        lowbit.kernel_weights(p, codes, scales)
    with pytest.raises(ValueError, match="codes must be"):
        lowbit.kernel_weights(p, codes[:32], scales)
