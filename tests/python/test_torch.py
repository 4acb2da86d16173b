"""torch.ops.lowbit.matmul and lowbit.nn on the CPU (the op's reference
path, through the fake driver's plans): the layers compute x · dequant(W)ᵀ
of the weights they were given, the fake implementation lets torch.compile
trace them, and quantize_model swaps exactly the layers it should."""
import numpy as np
import pytest
import torch

import lowbit
import lowbit.compiler
import lowbit.nn
import reference


def _expect_close(y, expected):
    expected = torch.as_tensor(expected, dtype=torch.float64)
    error = (y.double() - expected).abs().max().item()
    scale = expected.abs().max().item()
    assert error <= 1e-2 * scale + 1e-3, f"max error {error} against max |y| {scale}"


def _x(m, k, dtype=torch.float16, seed=0):
    return torch.randn(m, k, generator=torch.Generator().manual_seed(seed)).to(dtype)


def test_from_float_computes_with_the_quantized_weights(context):
    linear = torch.nn.Linear(384, 1536).half()
    q = lowbit.nn.Linear.from_float(linear, group_size=64)
    kw = lowbit.quantize(linear.weight.detach().float().numpy(), q.problem)
    x = _x(5, 384)
    _expect_close(q(x), x.double() @ torch.from_numpy(kw.dequantize()).T + linear.bias.double())
    assert q.packed_weights.dtype == torch.uint8 and q.bias.dtype == torch.float16


def test_from_gptq_with_act_order_matches_the_checkpoint(context):
    tensors, w = reference.gptq_layer(np.random.default_rng(9), 256, 1024, 128, act_order=True,
                                      force_zero=0)
    q = lowbit.nn.Linear.from_gptq(*(torch.from_numpy(tensors[name]) for name in
                                     ("qweight", "qzeros", "scales", "g_idx")))
    assert q.problem.act_order
    x = _x(3, 1024)
    _expect_close(q(x), x.double() @ torch.from_numpy(w).T)


def test_from_awq_and_from_gguf_match_the_checkpoint(context):
    tensors, w = reference.awq_layer(np.random.default_rng(10), 256, 512, 128)
    q = lowbit.nn.Linear.from_awq(*(torch.from_numpy(tensors[n]) for n in
                                    ("qweight", "qzeros", "scales")))
    x = _x(2, 512)
    _expect_close(q(x), x.double() @ torch.from_numpy(w).T)
    data, w = reference.q8_0_tensor(np.random.default_rng(11), 256, 512)
    q = lowbit.nn.Linear.from_gguf(data.tobytes(), "Q8_0", 256, 512)
    _expect_close(q(x), x.double() @ torch.from_numpy(w).T)


def test_the_op_checks_its_inputs(context):
    q = lowbit.nn.Linear.from_float(torch.nn.Linear(384, 384).half(), group_size=64)
    with pytest.raises(TypeError, match="the plan's activations are f16"):
        q(_x(2, 384, torch.bfloat16))
    with pytest.raises(ValueError, match="K = 384"):
        q(_x(2, 383))
    with pytest.raises(ValueError, match="not a registered plan handle"):
        torch.ops.lowbit.matmul(_x(2, 384), q.packed_weights, q.packed_scales, None, 10**9)
    with pytest.raises(ValueError, match="scales must be a uint8 vector"):
        torch.ops.lowbit.matmul(_x(2, 384), q.packed_weights, q.packed_scales[:-1], None,
                                q.plan_handle(torch.device("cpu")))


def test_leading_dimensions_and_empty_inputs(context):
    q = lowbit.nn.Linear.from_float(torch.nn.Linear(384, 384, bias=False).half(), group_size=64)
    x = _x(6, 384).reshape(2, 3, 384)
    assert q(x).shape == (2, 3, 384)
    _expect_close(q(x).reshape(6, 384), q(x.reshape(6, 384)))
    assert q(_x(0, 384)).shape == (0, 384)
    strided = _x(384, 6).T  # a transposed view, as attention layers pass
    _expect_close(q(strided), q(strided.contiguous()))


def test_torch_compile_traces_the_op_with_its_fake_implementation(context):
    q = lowbit.nn.Linear.from_float(torch.nn.Linear(384, 1536).half(), group_size=64)
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(q, backend=capture, fullgraph=True, dynamic=True)
    for m in (3, 5):
        x = _x(m, 384)
        y = compiled(x)
        assert y.shape == (m, 1536) and y.dtype == torch.float16
        torch.testing.assert_close(y, q(x))
    code = "\n".join(str(g.graph) for g in graphs)
    assert "lowbit.matmul" in code, code
    assert len(graphs) == 1, "one graph for every M (dynamic shapes)"

    # The fake implementation alone: shapes and dtypes, no data.
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        x = mode.from_tensor(_x(7, 384))
        w, s = mode.from_tensor(q.packed_weights), mode.from_tensor(q.packed_scales)
        y = torch.ops.lowbit.matmul(x, w, s, None, q.plan_handle(torch.device("cpu")))
        assert y.shape == (7, 1536) and y.dtype == torch.float16


def test_opcheck(context):
    q = lowbit.nn.Linear.from_float(torch.nn.Linear(384, 384).half(), group_size=64)
    torch.library.opcheck(torch.ops.lowbit.matmul.default,
                          (_x(4, 384), q.packed_weights, q.packed_scales, None,
                           q.plan_handle(torch.device("cpu"))))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.query = torch.nn.Linear(384, 384)
        self.up = torch.nn.Linear(384, 1536)
        self.down = torch.nn.Linear(1536, 384)
        self.head = torch.nn.Linear(384, 128)

    def forward(self, x):
        return self.head(self.down(torch.relu(self.up(self.query(x)))))


def test_quantize_model_replaces_the_linears_it_has_kernels_for(context):
    model = Block().half()
    x = _x(4, 384)
    problems = lowbit.nn.model_problems(model, skip=["head"], group_size=64)
    assert [p.name for p in problems] == ["query", "up", "down"]
    lowbit.nn.quantize_model(model, skip=["head"], group_size=64)
    assert isinstance(model.query, lowbit.nn.Linear) and isinstance(model.down, lowbit.nn.Linear)
    assert type(model.head) is torch.nn.Linear
    assert model(x).shape == (4, 128)


def test_quantize_model_without_kernels_names_the_layers_and_changes_nothing(context):
    model = Block().half()
    with pytest.raises(lowbit.LowbitError, match=r"head: lowbit\.qmatmul\.v1;n=128;k=384"):
        lowbit.nn.quantize_model(model, group_size=64)
    assert all(type(m) is torch.nn.Linear for m in (model.query, model.up, model.down))


def test_collect_hessians_sums_every_input_row_of_each_layer():
    model = Block().double()
    xs = [torch.randn(3, 384, dtype=torch.float64), torch.randn(2, 5, 384, dtype=torch.float64)]
    seen = []
    model.query.register_forward_hook(lambda m, i, o: seen.append(i[0].reshape(-1, 384)))
    hessians = lowbit.nn.collect_hessians(model, lambda m: [m(x) for x in xs], skip=["head"])
    assert sorted(hessians) == ["down", "query", "up"]
    rows = torch.cat(seen)
    torch.testing.assert_close(hessians["query"], rows.T @ rows)
    assert hessians["down"].shape == (1536, 1536)
    # The hooks are gone afterwards.
    assert not model.up._forward_hooks
    with pytest.raises(ValueError, match="never ran these layers: query, up, down, head"):
        lowbit.nn.collect_hessians(model, lambda m: None)


def test_quantize_model_with_calibration_uses_gptq(context):
    torch.manual_seed(0)
    model = Block().half()
    reference_model = Block().half()
    reference_model.load_state_dict(model.state_dict())

    def activations(seed):  # loud channels and correlated neighbours, as real ones have
        z = _x(256, 384, dtype=torch.float32, seed=seed)
        x = z + 0.8 * z.roll(-1, 1) + 0.5 * z.roll(-3, 1)
        return (x * (1 + 8 * (torch.arange(384) % 17 == 0))).half()

    calibration = [activations(seed) for seed in range(8)]
    held_out = activations(99)
    hessian = lowbit.nn.collect_hessians(model, lambda m: [m(x) for x in calibration],
                                         skip=["head"])["query"]
    lowbit.nn.quantize_model(model, skip=["head"], group_size=64,
                             calibrate=lambda m: [m(x) for x in calibration])
    expected = lowbit.quantize(reference_model.query.weight.detach().float().numpy(),
                               model.query.problem,
                               hessian=hessian.numpy())
    unpacked = model.query.plan_of_cpu().unpack(model.query.packed_weights.numpy(),
                                               model.query.packed_scales.numpy(), None)
    np.testing.assert_array_equal(unpacked.codes, expected.codes)
    # GPTQ's point: the query layer's output on held-out inputs is closer
    # than round to nearest gets.
    rtn = lowbit.nn.Linear.from_float(reference_model.query, group_size=64)
    with torch.no_grad():
        exact = reference_model.query(held_out).double()
        gptq_error = (model.query(held_out).double() - exact).norm()
        rtn_error = (rtn(held_out).double() - exact).norm()
    assert gptq_error < 0.9 * rtn_error, (gptq_error, rtn_error)


def test_compile_entry_point_builds_a_database_plans_read(tmp_path, monkeypatch):
    if not lowbit.compiler.available():
        pytest.skip("no lowbit compiler here (LOWBIT_CLI)")
    problem = lowbit.Problem(128, 256, weight="int4", group_size=64)
    database = lowbit.compiler.compile([problem], tmp_path / "one.db")
    plan = lowbit.Plan(lowbit.Context(system_db=database), problem)
    assert plan.explain(1)["database_path"] == database
    monkeypatch.setenv("LOWBIT_CLI", str(tmp_path / "missing"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(lowbit.compiler.CompilerNotInstalled, match="not installed here"):
        lowbit.compiler.compile([problem], tmp_path / "two.db")
