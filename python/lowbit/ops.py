"""torch.ops.lowbit.matmul: y[..., N] = x[..., K] · dequant(W)ᵀ.

    torch.ops.lowbit.matmul(x, weights, scales, zeros, plan) -> y

`weights`, `scales` and `zeros` are the uint8 buffers Plan.pack made (zeros
None without zero points), `plan` the handle register_plan gave. On CUDA
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

_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
_lock = threading.Lock()
_next_handle = itertools.count(1)


class _Registered:
    """A plan with what every call reads of it, read once (a Problem
    property crosses into C++ and copies the problem)."""

    __slots__ = ("plan", "n", "k", "dtype", "activation", "weight_bytes", "scale_bytes",
                 "zero_bytes", "zero", "device", "needs_workspace")

    def __init__(self, plan):
        problem = plan.problem
        self.plan = plan
        self.n, self.k = problem.n, problem.k
        self.activation = problem.activation
        self.dtype = _DTYPES[problem.activation]
        self.weight_bytes, self.scale_bytes = plan.weight_bytes, plan.scale_bytes
        self.zero_bytes, self.zero = plan.zero_bytes, problem.zero
        self.device = plan.device
        # The dense path's workspace is there at every M and the act-order
        # gather's at every M > 0, so a plan that needs none at M = 1 needs
        # none at all.
        self.needs_workspace = plan.workspace_bytes(1) > 0


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


def _check(x, weights, scales, zeros, p: _Registered):
    if x.dtype != p.dtype:
        raise TypeError(f"lowbit.matmul: x is {x.dtype}, the plan's activations are "
                        f"{p.activation}")
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


def _matmul_cuda(x, weights, scales, zeros, p: _Registered):
    if x.device.index != p.device:
        raise ValueError(f"lowbit.matmul: x is on {x.device}, the plan's kernels on "
                         f"cuda:{p.device}")
    # The kernels read x row-major; a strided view (a transposed attention
    # output, say) is copied, as torch.nn.functional.linear would.
    x = x.contiguous()
    y = torch.empty(x.shape[:-1] + (p.n,), dtype=x.dtype, device=x.device)
    m = x.numel() // p.k
    if m == 0:
        return y
    workspace_bytes = p.plan.workspace_bytes(m) if p.needs_workspace else 0
    workspace = (torch.empty(workspace_bytes, dtype=torch.uint8, device=x.device)
                 if workspace_bytes else None)
    p.plan.matmul(m, x.data_ptr(), weights.data_ptr(), weights.numel(), scales.data_ptr(),
                  zeros.data_ptr() if zeros is not None else 0, y.data_ptr(),
                  workspace.data_ptr() if workspace is not None else 0, workspace_bytes,
                  torch.cuda.current_stream(x.device).cuda_stream)
    return y


def matmul_eager(x, weights, scales, zeros, plan: int) -> torch.Tensor:
    """The op's CUDA path called directly, without the dispatcher (which
    costs more than the launch at small M): what lowbit.nn.Linear runs
    outside torch.compile on CUDA tensors."""
    p = _registered(plan)
    _check(x, weights, scales, zeros, p)
    return _matmul_cuda(x, weights, scales, zeros, p)


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


def _matmul_reference(x, weights, scales, zeros, plan):
    w = reference_weights(plan, weights, scales, zeros)
    return (x.double() @ w.T).to(x.dtype)


@torch.library.custom_op("lowbit::matmul", mutates_args=())
def matmul(x: torch.Tensor, weights: torch.Tensor, scales: torch.Tensor,
           zeros: Optional[torch.Tensor], plan: int) -> torch.Tensor:
    p = _registered(plan)
    _check(x, weights, scales, zeros, p)
    if x.is_cuda:
        return _matmul_cuda(x, weights, scales, zeros, p)
    if x.device.type == "cpu":
        return _matmul_reference(x, weights, scales, zeros, p.plan)
    raise ValueError(f"lowbit.matmul: x is on {x.device}; lowbit runs on CUDA (and on the CPU "
                     "as a reference)")


@matmul.register_fake
def _matmul_fake(x, weights, scales, zeros, plan):
    p = _registered(plan)
    _check(x, weights, scales, zeros, p)
    return x.new_empty(x.shape[:-1] + (p.n,))


@atexit.register
def _release_plans():
    # Plans (and their kernels) go before the interpreter tears down the
    # extension's types.
    with _lock:
        _plans.clear()
