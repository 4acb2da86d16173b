"""torch.ops.lowbit.matmul: y[..., N] = x[..., K] · dequant(W)ᵀ.

    torch.ops.lowbit.matmul(x, weights, scales, zeros, plan, x_scales=None) -> y

`weights`, `scales` and `zeros` are the uint8 buffers Plan.pack made (zeros
None without zero points), `plan` the handle register_plan gave. A plan for
s8 (or e4m3) activations takes either int8 (float8_e4m3fn) x with its f32
x_scales (x.shape[:-1] of them per token, one per tensor;
lowbit_matmul_quantized), or f16 or bf16 x without them, which lowbit
quantizes on the GPU first
(lowbit_matmul_quantizing); y then has the plan's output dtype. On CUDA
tensors the op is lowbit_matmul on the current stream: no synchronization,
and no allocation but the output (and a workspace, only for plans that need
one), both from PyTorch's caching allocator, so it is safe inside CUDA
graph capture. On CPU tensors it is the reference: the plan unpacks the
buffers and the formats library dequantizes them (slow; for tests). The
fake implementation gives the output's shape and dtype, so torch.compile
traces the op without running it.
"""
import atexit
import itertools
import threading
from typing import Optional

import torch

from . import _lowbit

_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
           "s8": torch.int8, "e4m3": torch.float8_e4m3fn}
_QUANTIZED_X = {torch.int8: "int8", torch.float8_e4m3fn: "float8_e4m3fn"}
_FLOAT_X = {torch.float16: "f16", torch.bfloat16: "bf16"}
_lock = threading.Lock()
_next_handle = itertools.count(1)


class _Registered:
    """A plan with what every call reads of it, read once (a Problem
    property crosses into C++ and copies the problem)."""

    __slots__ = ("plan", "n", "k", "dtype", "output_dtype", "activation", "per_tensor",
                 "weight_bytes", "scale_bytes", "zero_bytes", "zero", "device", "needs_workspace")

    def __init__(self, plan):
        problem = plan.problem
        self.plan = plan
        self.n, self.k = problem.n, problem.k
        self.activation = problem.activation
        if problem.activation not in _DTYPES:
            raise ValueError(f"lowbit.matmul: the op does not take {problem.activation} "
                             "activations")
        self.dtype = _DTYPES[problem.activation]
        self.output_dtype = _DTYPES[problem.output]
        self.per_tensor = problem.activation_scale == "tensor"
        self.weight_bytes, self.scale_bytes = plan.weight_bytes, plan.scale_bytes
        self.zero_bytes, self.zero = plan.zero_bytes, problem.zero
        self.device = plan.device
        # The dense path's workspace is there at every M and the act-order
        # gather's at every M > 0, so a plan that needs none at M = 1 needs
        # none at all. (A quantized plan's is the quantizer's, which only
        # lowbit_matmul_quantizing takes.)
        self.needs_workspace = not self.quantized and plan.workspace_bytes(1) > 0

    @property
    def quantized(self):
        return self.dtype in _QUANTIZED_X


_plans = {}


def register_plan(plan: _lowbit.Plan) -> int:
    """A handle for `plan` that the op takes (an int, so graphs can hold it)."""
    registered = _Registered(plan)
    with _lock:
        handle = next(_next_handle)
        _plans[handle] = registered
        return handle


def release_plan(handle: int) -> None:
    with _lock:
        _plans.pop(handle, None)


def _registered(handle: int) -> _Registered:
    try:
        return _plans[handle]
    except KeyError:
        raise ValueError(f"lowbit.matmul: {handle} is not a registered plan handle") from None


def plan_of(handle: int) -> _lowbit.Plan:
    return _registered(handle).plan


def _check(x, weights, scales, zeros, p: _Registered, x_scales=None):
    if p.quantized and x.dtype in _FLOAT_X:
        if x_scales is not None:
            raise ValueError(f"lowbit.matmul: x is {x.dtype}, which lowbit quantizes itself; "
                             f"x_scales go with {_QUANTIZED_X[p.dtype]} x only")
    elif x.dtype != p.dtype:
        raise TypeError(f"lowbit.matmul: x is {x.dtype}, the plan's activations are "
                        f"{p.activation}" + (" (or f16 or bf16, which lowbit quantizes)"
                                             if p.quantized else ""))
    elif p.quantized:
        _check_x_scales(x, x_scales, p)
    elif x_scales is not None:
        raise ValueError(f"lowbit.matmul: the plan's activations are {p.activation}, which "
                         "have no x_scales")
    if x.dim() < 1 or x.shape[-1] != p.k:
        raise ValueError(f"lowbit.matmul: x has shape {tuple(x.shape)}, its last dimension must "
                         f"be K = {p.k}")
    for name, buffer, needed in (("weights", weights, p.weight_bytes),
                                 ("scales", scales, p.scale_bytes)):
        if buffer.dtype != torch.uint8 or buffer.dim() != 1 or buffer.numel() < needed:
            raise ValueError(f"lowbit.matmul: {name} must be a uint8 vector of at least "
                             f"{needed} bytes (Plan.pack's), got {buffer.dtype} "
                             f"{tuple(buffer.shape)}")
    if (zeros is None) != (p.zero_bytes == 0):
        raise ValueError(f"lowbit.matmul: the problem's zero points are '{p.zero}', "
                         f"zeros is {'None' if zeros is None else 'given'}")
    for name, buffer in (("weights", weights), ("scales", scales), ("zeros", zeros)):
        if buffer is not None and buffer.device != x.device:
            raise ValueError(f"lowbit.matmul: {name} is on {buffer.device}, x on {x.device}")


def _check_x_scales(x, x_scales, p: _Registered):
    rows = x.numel() // p.k if p.k else 0
    count = 1 if p.per_tensor else rows
    if x_scales is None:
        raise ValueError(f"lowbit.matmul: {_QUANTIZED_X[p.dtype]} x needs x_scales, f32, "
                         f"{'one for the tensor' if p.per_tensor else 'one per row of x'}")
    if x_scales.dtype != torch.float32 or x_scales.numel() != count:
        raise ValueError(f"lowbit.matmul: x_scales must be {count} f32 values "
                         f"({'per tensor' if p.per_tensor else 'one per row of x'}), got "
                         f"{x_scales.dtype} {tuple(x_scales.shape)}")
    if x_scales.device != x.device:
        raise ValueError(f"lowbit.matmul: x_scales is on {x_scales.device}, x on {x.device}")


def _matmul_cuda(x, weights, scales, zeros, p: _Registered, x_scales=None):
    if x.device.index != p.device:
        raise ValueError(f"lowbit.matmul: x is on {x.device}, the plan's kernels on "
                         f"cuda:{p.device}")
    # The kernels read x row-major; a strided view (a transposed attention
    # output, say) is copied, as torch.nn.functional.linear would.
    x = x.contiguous()
    y = torch.empty(x.shape[:-1] + (p.n,), dtype=p.output_dtype, device=x.device)
    m = x.numel() // p.k
    if m == 0:
        return y
    quantizing = p.quantized and x.dtype in _FLOAT_X
    workspace_bytes = p.plan.workspace_bytes(m) if p.needs_workspace or quantizing else 0
    workspace = (torch.empty(workspace_bytes, dtype=torch.uint8, device=x.device)
                 if workspace_bytes else None)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    zero_pointer = zeros.data_ptr() if zeros is not None else 0
    workspace_pointer = workspace.data_ptr() if workspace is not None else 0
    if quantizing:
        p.plan.matmul_quantizing(m, x.data_ptr(), _FLOAT_X[x.dtype], weights.data_ptr(),
                                 weights.numel(), scales.data_ptr(), zero_pointer, y.data_ptr(),
                                 workspace_pointer, workspace_bytes, stream)
        return y
    p.plan.matmul(m, x.data_ptr(), weights.data_ptr(), weights.numel(), scales.data_ptr(),
                  zero_pointer, y.data_ptr(), workspace_pointer, workspace_bytes, stream,
                  x_scales=x_scales.contiguous().data_ptr() if x_scales is not None else None)
    return y


def matmul_eager(x, weights, scales, zeros, plan: int, x_scales=None) -> torch.Tensor:
    """The op's CUDA path called directly, without the dispatcher (which
    costs more than the launch at small M): what lowbit.nn.Linear runs
    outside torch.compile on CUDA tensors."""
    p = _registered(plan)
    _check(x, weights, scales, zeros, p, x_scales)
    return _matmul_cuda(x, weights, scales, zeros, p, x_scales)


def reference_weights(plan, weights, scales, zeros) -> torch.Tensor:
    """dequant(W) [N, K] in f64, the columns in the checkpoint's order, from
    the packed buffers (host copies): what the kernels compute with."""
    unpacked = plan.unpack(weights.cpu().numpy(), scales.cpu().numpy(),
                           zeros.cpu().numpy() if zeros is not None else None)
    w = torch.from_numpy(unpacked.dequantize())
    if unpacked.permutation is not None:
        # Column j of the packed matrix is the checkpoint's column perm[j].
        original = torch.empty_like(w)
        original[:, torch.from_numpy(unpacked.permutation).long()] = w
        w = original
    return w


def quantize_activations(x: torch.Tensor, per_tensor: bool = False, activation: str = "s8"):
    """(codes, scales): f16 or bf16 x as lowbit_matmul_quantizing quantizes it
    on the GPU, step for step in f32 (lowbit.h), for a plan's `activation`,
    "s8" or "e4m3": scale = absmax / qmax (1 for an all-zero absmax) per row
    of x (or for all of it), qmax 127 or 448; s8 codes =
    round-half-even(x / scale) clamped to [-127, 127], int8; e4m3 codes = x /
    scale to the nearest float8_e4m3fn, ties to even, saturating at 448."""
    if activation not in ("s8", "e4m3"):
        raise ValueError(f"quantize_activations: activation must be 's8' or 'e4m3', got "
                         f"{activation!r}")
    e4m3 = activation == "e4m3"
    values = x.float()
    absmax = values.abs().amax() if per_tensor else values.abs().amax(dim=-1)
    # f32 tensor division is IEEE, as the kernel's; no reciprocal.
    scale = torch.where(absmax > 0, absmax / (448.0 if e4m3 else 127.0), torch.ones_like(absmax))
    per_row = scale if per_tensor else scale.unsqueeze(-1)
    if e4m3:
        # The cast rounds to nearest even; clamping first makes it saturate
        # (past 448 it would give NaN), as cvt.rn.satfinite does.
        codes = (values / per_row).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    else:
        codes = torch.round(values / per_row).clamp(-127, 127).to(torch.int8)
    return codes, scale.reshape(1) if per_tensor else scale


def _matmul_reference(x, weights, scales, zeros, p: _Registered, x_scales=None):
    w = reference_weights(p.plan, weights, scales, zeros)
    if p.quantized:
        if x.dtype != p.dtype:
            x, x_scales = quantize_activations(x, p.per_tensor, p.activation)
        s = x_scales.double()
        x = x.double() * (s.reshape(()) if p.per_tensor else s.reshape(x.shape[:-1] + (1,)))
    return (x.double() @ w.T).to(p.output_dtype)


@torch.library.custom_op("lowbit::matmul", mutates_args=())
def matmul(x: torch.Tensor, weights: torch.Tensor, scales: torch.Tensor,
           zeros: Optional[torch.Tensor], plan: int,
           x_scales: Optional[torch.Tensor] = None) -> torch.Tensor:
    p = _registered(plan)
    _check(x, weights, scales, zeros, p, x_scales)
    if x.is_cuda:
        return _matmul_cuda(x, weights, scales, zeros, p, x_scales)
    if x.device.type == "cpu":
        return _matmul_reference(x, weights, scales, zeros, p, x_scales)
    raise ValueError(f"lowbit.matmul: x is on {x.device}; lowbit runs on CUDA (and on the CPU "
                     "as a reference)")


@matmul.register_fake
def _matmul_fake(x, weights, scales, zeros, plan, x_scales=None):
    p = _registered(plan)
    _check(x, weights, scales, zeros, p, x_scales)
    return x.new_empty(x.shape[:-1] + (p.n,), dtype=p.output_dtype)


@atexit.register
def _release_plans():
    # Plans (and their kernels) go before the interpreter tears down the
    # extension's types.
    with _lock:
        _plans.clear()
