"""Independent oracles for the tests: checkpoint packings written from the
formats' own descriptions (GPTQ, AutoAWQ, GGUF Q8_0), and their dequantized
weights, in NumPy."""
import numpy as np

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # AutoAWQ's nibble j holds column 8w + AWQ_ORDER[j]


def gptq_layer(rng, n, k, group, act_order=False, v1=True, force_zero=None):
    """Random GPTQ tensors and the weights W[n][k] they mean."""
    groups = k // group
    q = rng.integers(0, 16, size=(n, k), dtype=np.int64)
    z = rng.integers(0, 16, size=(groups, n), dtype=np.int64)
    if force_zero is not None:
        z[0, 0] = force_zero
    s = (rng.random((groups, n)) * 0.01 + 0.001).astype(np.float16)
    g_idx = np.arange(k) // group
    if act_order:
        g_idx = rng.permutation(g_idx)
    qweight = np.zeros((k // 8, n), dtype=np.int64)
    for j in range(8):
        qweight |= q[:, j::8].T << (4 * j)
    stored = z - 1 if v1 else z
    stored = np.where(stored < 0, stored + 16, stored)  # AutoGPTQ's wrap for z = 0
    qzeros = np.zeros((groups, n // 8), dtype=np.int64)
    for j in range(8):
        qzeros |= stored[:, j::8] << (4 * j)
    zeros = (stored + 1) if v1 else stored
    w = (q - zeros[g_idx, :].T) * s[g_idx, :].T.astype(np.float64)
    return dict(qweight=qweight.astype(np.uint32).view(np.int32),
                qzeros=qzeros.astype(np.uint32).view(np.int32), scales=s,
                g_idx=g_idx.astype(np.int32)), w


def awq_layer(rng, n, k, group):
    groups = k // group
    q = rng.integers(0, 16, size=(k, n), dtype=np.int64)
    z = rng.integers(0, 16, size=(groups, n), dtype=np.int64)
    s = (rng.random((groups, n)) * 0.01 + 0.001).astype(np.float16)
    qweight = np.zeros((k, n // 8), dtype=np.int64)
    qzeros = np.zeros((groups, n // 8), dtype=np.int64)
    for j in range(8):
        qweight |= q[:, AWQ_ORDER[j]::8] << (4 * j)
        qzeros |= z[:, AWQ_ORDER[j]::8] << (4 * j)
    g = np.arange(k) // group
    w = ((q - z[g, :]) * s[g, :].astype(np.float64)).T
    return dict(qweight=qweight.astype(np.uint32).view(np.int32),
                qzeros=qzeros.astype(np.uint32).view(np.int32), scales=s), w


def q8_0_tensor(rng, n, k):
    """GGUF Q8_0 blocks: per 32 weights an f16 d, then 32 int8 codes."""
    blocks = n * k // 32
    d = (rng.random(blocks) * 0.01 + 0.001).astype(np.float16)
    q = rng.integers(-127, 128, size=(blocks, 32), dtype=np.int64).astype(np.int8)
    data = np.zeros((blocks, 34), dtype=np.uint8)
    data[:, :2] = d.view(np.uint8).reshape(blocks, 2)
    data[:, 2:] = q.view(np.uint8)
    w = (q.astype(np.float64) * d.astype(np.float64)[:, None]).reshape(n, k)
    return data.reshape(-1), w
