"""lowbit.nn.Linear, a drop-in for torch.nn.Linear whose weights are
low-bit, and quantize_model, which swaps a model's nn.Linear modules for it.

A Linear holds the buffers Plan.pack made (uint8; they move with .to() and
.cuda() like any buffer) and a plan per CUDA device, created from
lowbit.context(device) the first time the module runs there.
"""
import fnmatch
from typing import Callable, Dict, Iterable, Optional, Union

import torch

from . import _lowbit, context as _context
from .ops import matmul, matmul_eager, register_plan, release_plan

_ACTIVATIONS = {torch.float16: "f16", torch.bfloat16: "bf16"}


def _numpy(tensor):
    return tensor.detach().cpu().contiguous().numpy()


class Linear(torch.nn.Module):
    """y = x · dequant(W)ᵀ + bias through lowbit's kernels."""

    def __init__(self, weights: _lowbit.KernelWeights, bias: Optional[torch.Tensor] = None,
                 device: Union[torch.device, str, None] = None,
                 context: Optional[_lowbit.Context] = None,
                 plan: Optional[_lowbit.Plan] = None):
        super().__init__()
        problem = weights.problem
        self.problem = problem
        self.in_features = problem.k
        self.out_features = problem.n
        device = torch.device(device) if device is not None else torch.device("cpu")
        plan = plan or _lowbit.Plan(context or _context(device.index or 0), problem)
        self.layout_id = plan.layout_id
        self._handles = {plan.device: register_plan(plan)}
        packed, scales, zeros = plan.pack(weights)
        self.register_buffer("packed_weights", torch.from_numpy(packed).to(device))
        self.register_buffer("packed_scales", torch.from_numpy(scales).to(device))
        self.register_buffer("packed_zeros",
                             torch.from_numpy(zeros).to(device) if zeros is not None else None)
        if bias is not None:
            dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[problem.activation]
            bias = bias.detach().to(device=device, dtype=dtype).clone()
        self.register_buffer("bias", bias)
        self.notes = list(weights.notes)

    def __del__(self):
        for handle in getattr(self, "_handles", {}).values():
            release_plan(handle)

    def plan_handle(self, device: torch.device) -> int:
        """The op's plan handle for a device (CPU: any plan; they share a layout)."""
        index = device.index if device.type == "cuda" else None
        if index is None and device.type == "cuda":
            index = torch.cuda.current_device()
        if index is None:
            return next(iter(self._handles.values()))
        handle = self._handles.get(index)
        if handle is None:
            plan = _lowbit.Plan(_context(index), self.problem)
            if plan.layout_id != self.layout_id:
                raise _lowbit.LowbitError(
                    f"cuda:{index}'s kernels read weight layout {plan.layout_id:#x}, these "
                    f"weights were packed for {self.layout_id:#x}: build the Linear there")
            handle = self._handles[index] = register_plan(plan)
        return handle

    def plan_of_cpu(self) -> _lowbit.Plan:
        """A plan of this layer's problem (for the CPU reference and unpacking)."""
        from .ops import plan_of
        return plan_of(self.plan_handle(torch.device("cpu")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Eager CUDA calls skip the dispatcher; torch.compile and the CPU
        # reference go through the registered op.
        op = matmul_eager if x.is_cuda and not torch.compiler.is_compiling() else matmul
        y = op(x, self.packed_weights, self.packed_scales, self.packed_zeros,
               self.plan_handle(x.device))
        if self.bias is not None:
            y = y + self.bias
        return y

    def extra_repr(self) -> str:
        return f"{self.problem.signature}, bias={self.bias is not None}"

    # -- constructors ------------------------------------------------------
    @classmethod
    def from_float(cls, linear: torch.nn.Linear, weight: str = "int4", group_size: int = 128,
                   granularity: str = "group", scale: Optional[str] = None, zero: str = "none",
                   zero_codes: Optional[str] = None, activation: Optional[str] = None,
                   context: Optional[_lowbit.Context] = None,
                   plan: Optional[_lowbit.Plan] = None,
                   hessian: Optional[torch.Tensor] = None, damping: float = 0.01,
                   clip_ratios: Optional[Iterable[float]] = None) -> "Linear":
        """Quantizes linear.weight with the formats library: round to nearest,
        or GPTQ when `hessian` (the layer's [K, K] sum of xᵀx over
        calibration inputs, collect_hessians) is given; `plan`, when given, is
        a plan of the same problem to reuse."""
        problem = problem_for(linear, weight=weight, group_size=group_size,
                              granularity=granularity, scale=scale, zero=zero,
                              zero_codes=zero_codes, activation=activation)
        weights = _lowbit.quantize(
            _numpy(linear.weight.float()), problem,
            hessian=_numpy(hessian.double()) if hessian is not None else None, damping=damping,
            clip_ratios=list(clip_ratios) if clip_ratios is not None else None)
        return cls(weights, linear.bias, device=linear.weight.device, context=context, plan=plan)

    @classmethod
    def from_gptq(cls, qweight, qzeros, scales, g_idx=None, bias=None, v2: bool = False,
                  activation: str = "f16", device=None, context=None) -> "Linear":
        """A GPTQ layer: qweight [K·bits/32, N], qzeros, scales [G, N] f16 and
        g_idx (act-order, desc_act); v2 for GPTQModel's zero convention."""
        weights = _lowbit.import_gptq(_numpy(qweight), _numpy(qzeros), _numpy(scales),
                                      _numpy(g_idx) if g_idx is not None else None, v2,
                                      activation)
        return cls(weights, bias, device=device or qweight.device, context=context)

    @classmethod
    def from_awq(cls, qweight, qzeros, scales, bias=None, activation: str = "f16", device=None,
                 context=None) -> "Linear":
        """An AutoAWQ GEMM layer: qweight [K, N/8], qzeros, scales [K/g, N] f16."""
        weights = _lowbit.import_awq(_numpy(qweight), _numpy(qzeros), _numpy(scales),
                                     activation)
        return cls(weights, bias, device=device or qweight.device, context=context)

    @classmethod
    def from_gguf(cls, data, ggml_type: Union[str, int], out_features: int, in_features: int,
                  bias=None, activation: str = "f16", device=None, context=None) -> "Linear":
        """A GGUF tensor's blocks (Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K) as W[out][in]."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        weights = _lowbit.import_gguf(ggml_type, _numpy(data), out_features, in_features,
                                      activation)
        return cls(weights, bias, device=device or "cpu", context=context)


def problem_for(linear: torch.nn.Linear, weight: str = "int4", group_size: int = 128,
                granularity: str = "group", scale: Optional[str] = None, zero: str = "none",
                zero_codes: Optional[str] = None, activation: Optional[str] = None,
                name: str = "") -> _lowbit.Problem:
    """The problem Linear.from_float gives `linear` with these settings."""
    if activation is None:
        activation = _ACTIVATIONS.get(linear.weight.dtype)
        if activation is None:
            raise TypeError(f"{linear.weight.dtype} weights: lowbit's activations are f16 or "
                            "bf16; pass activation= or convert the model first")
    return _lowbit.Problem(linear.out_features, linear.in_features, weight=weight,
                           activation=activation, scale=scale or activation,
                           granularity=granularity, group_size=group_size, zero=zero,
                           zero_codes=zero_codes, name=name)


Skip = Union[Iterable[str], Callable[[str, torch.nn.Linear], bool], None]


def _linears(model: torch.nn.Module, skip: Skip):
    patterns = [] if skip is None or callable(skip) else list(skip)
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        if callable(skip) and skip(name, module):
            continue
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            continue
        yield name, module


def model_problems(model: torch.nn.Module, skip: Skip = None, **settings):
    """The distinct problems quantize_model would need kernels for, named
    after the first layer of each: what a kernel-set spec for the model holds
    (lowbit.kernel_set_spec, lowbit.compiler.compile)."""
    problems = {}
    for name, linear in _linears(model, skip):
        problem = problem_for(linear, name=name, **settings)
        problems.setdefault(problem.signature, problem)
    return list(problems.values())


def collect_hessians(model: torch.nn.Module, calibrate: Callable[[torch.nn.Module], object],
                     skip: Skip = None) -> Dict[str, torch.Tensor]:
    """Runs calibrate(model) once with a hook on every nn.Linear (but those
    `skip` names) and returns, per module name, H = Σ xᵀx over every input
    row x the layer saw ([K, K] float64, on the layer's device). Rows are
    every position the model computes: feed unpadded batches (batch size 1,
    or packed sequences), or padding tokens count as inputs. Every H is held
    until the end (K² doubles per layer): for a large model, quantize it a
    block at a time (quantize_model(model.layers[i], calibrate=...), the
    callable still running the whole model)."""
    sums: Dict[str, torch.Tensor] = {}

    def hook(name):
        def accumulate(module, inputs, output):
            x = inputs[0].detach().reshape(-1, module.in_features).double()
            sums[name] = sums.get(name, 0) + x.t() @ x
        return accumulate

    handles = [linear.register_forward_hook(hook(name)) for name, linear in _linears(model, skip)]
    try:
        with torch.inference_mode():
            calibrate(model)
    finally:
        for handle in handles:
            handle.remove()
    missing = [name for name, _ in _linears(model, skip) if name not in sums]
    if missing:
        raise ValueError("calibrate(model) never ran these layers: " + ", ".join(missing) +
                         " (skip= them, or calibrate with inputs that reach them)")
    return sums


def quantize_model(model: torch.nn.Module, weight: str = "int4", skip: Skip = None,
                   context: Optional[_lowbit.Context] = None,
                   calibrate: Optional[Callable[[torch.nn.Module], object]] = None,
                   damping: float = 0.01, clip_ratios: Optional[Iterable[float]] = None,
                   **settings) -> torch.nn.Module:
    """Replaces every nn.Linear of `model` (but those `skip` names, as
    fnmatch patterns over module names, or a predicate (name, module)) by a
    lowbit Linear quantized with from_float; returns the model.

    Without `calibrate` the weights are rounded to nearest. With it,
    calibrate(model) runs first on the float model (collect_hessians) and
    every layer is quantized with GPTQ under its inputs' Hessian; damping and
    clip_ratios go to the formats library's quantizer (lowbit.quantize).

    Plans are made, one per problem and device, before any module is
    replaced (the layers share them), so a problem without
    kernels is one error that lists every such problem and leaves the model
    as it was."""
    targets = list(_linears(model, skip))
    plans, missing = {}, []
    for name, linear in targets:
        problem = problem_for(linear, weight=weight, name=name, **settings)
        key = (problem.signature, linear.weight.device.index or 0)
        if key in plans:
            continue
        try:
            plans[key] = _lowbit.Plan(context or _context(key[1]), problem)
        except _lowbit.LowbitError as error:
            missing.append(f"  {name}: {problem.signature}: {error}")
    if missing:
        raise _lowbit.LowbitError(
            "quantize_model: no kernels for these layers (compile them with "
            "lowbit.compiler.compile(lowbit.nn.model_problems(model, ...), out_dir)):\n" +
            "\n".join(missing))
    hessians = collect_hessians(model, calibrate, skip) if calibrate is not None else {}
    for name, linear in targets:
        problem = problem_for(linear, weight=weight, **settings)
        plan = plans[(problem.signature, linear.weight.device.index or 0)]
        replacement = Linear.from_float(linear, weight=weight, context=context, plan=plan,
                                        hessian=hessians.pop(name, None), damping=damping,
                                        clip_ratios=clip_ratios, **settings)
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, replacement)
    return model
