"""lowbit: tuned low-bit matmul kernels, dispatched from a kernel database.

The extension lowbit._lowbit binds lowbit's C ABI (Context, Plan) and its
formats library (Problem, KernelWeights, quantize and the checkpoint
importers); nothing in Python packs, quantizes or decodes weights itself.
lowbit.ops registers the PyTorch op torch.ops.lowbit.matmul and lowbit.nn
the nn.Linear replacement; both need torch, the rest does not.

Plans read kernels from a database `lowbit compile` wrote (the system
database) and one `lowbit tune` wrote (the user database). Name them with
set_databases() or the environment (LOWBIT_SYSTEM_DB, LOWBIT_USER_DB).
"""
import atexit
import os
import threading

from ._lowbit import (
    Context,
    KernelWeights,
    LowbitError,
    Plan,
    Problem,
    __version__,
    import_awq,
    import_gguf,
    import_gptq,
    kernel_set_spec,
    kernel_weights,
    quantize,
)

__all__ = [
    "Context", "KernelWeights", "LowbitError", "Plan", "Problem", "__version__", "context",
    "import_awq", "import_gguf", "import_gptq", "kernel_set_spec", "kernel_weights", "quantize",
    "set_databases",
]

_lock = threading.Lock()
_databases = {
    "system_db": os.environ.get("LOWBIT_SYSTEM_DB"),
    "user_db": os.environ.get("LOWBIT_USER_DB"),
}
_contexts = {}


def set_databases(system_db=None, user_db=None):
    """The kernel databases that context() opens from now on."""
    with _lock:
        _databases["system_db"] = os.fspath(system_db) if system_db is not None else None
        _databases["user_db"] = os.fspath(user_db) if user_db is not None else None
        _contexts.clear()


def context(device=0):
    """The shared Context of a CUDA device, on the databases set_databases
    (or LOWBIT_SYSTEM_DB / LOWBIT_USER_DB) names."""
    with _lock:
        found = _contexts.get(device)
        if found is None:
            if _databases["system_db"] is None and _databases["user_db"] is None:
                raise LowbitError(
                    "no kernel database: call lowbit.set_databases(system_db=...) or set "
                    "LOWBIT_SYSTEM_DB to a database `lowbit compile` wrote")
            found = Context(_databases["system_db"], _databases["user_db"], device)
            _contexts[device] = found
        return found


@atexit.register
def _release_contexts():
    with _lock:
        _contexts.clear()
