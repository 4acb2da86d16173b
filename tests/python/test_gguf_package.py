"""GGUF against the `gguf` package from PyPI (python/requirements-test.txt),
an implementation lowbit shares no code with: its NumPy dequantize of every
block type lowbit imports, and files its GGUFWriter wrote, read by
`lowbit import gguf`."""
import json
import struct
import subprocess

import numpy as np
import pytest

import lowbit
import lowbit.compiler

gguf = pytest.importorskip("gguf")

# Byte offsets of each block's f16 d (and dmin): random bytes there could be
# Inf or NaN, which lowbit rejects by design (the weights would be NaN).
HALF_FIELDS = {"Q4_0": (0,), "Q8_0": (0,), "Q2_K": (80, 82), "Q3_K": (108,),
               "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}


def random_blocks(rng, type_name, n, k):
    """Random block bytes for an n x k tensor, every d finite, as [n, row bytes]."""
    block_weights, block_bytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[type_name]]
    count = n * k // block_weights
    data = rng.integers(0, 256, (count, block_bytes), dtype=np.uint8)
    for offset in HALF_FIELDS[type_name]:
        halves = (rng.integers(0, 1 << 16, count) & 0x83FF) | (rng.integers(0, 30, count) << 10)
        data[:, offset:offset + 2] = halves.astype(np.uint16).view(np.uint8).reshape(count, 2)
    return data.reshape(n, -1)


def reference(type_name, data):
    return gguf.quants.dequantize(data, gguf.GGMLQuantizationType[type_name])


@pytest.mark.parametrize("type_name", sorted(HALF_FIELDS))
def test_import_dequantizes_bit_identically_to_the_gguf_package(type_name):
    rng = np.random.default_rng(list(HALF_FIELDS).index(type_name))
    n, k = 64, 1024
    data = random_blocks(rng, type_name, n, k)
    weights = lowbit.import_gguf(type_name, data.reshape(-1), n, k)
    ours = weights.dequantize().astype(np.float32)
    np.testing.assert_array_equal(ours.view(np.uint32), reference(type_name, data).view(np.uint32))


def read_safetensors(path):
    """{name: raw bytes}, and the metadata: the layout is an 8-byte header
    length, a JSON header, then the tensors' bytes."""
    blob = path.read_bytes()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    metadata = header.pop("__metadata__", {})
    base = 8 + length
    tensors = {name: np.frombuffer(blob[base + entry["data_offsets"][0]:
                                        base + entry["data_offsets"][1]], np.uint8).copy()
               for name, entry in header.items()}
    return tensors, metadata


def test_lowbit_import_reads_a_file_the_gguf_package_wrote(tmp_path):
    if not lowbit.compiler.available():
        pytest.skip("no lowbit CLI here (LOWBIT_CLI)")
    rng = np.random.default_rng(7)
    n, k = 64, 512
    layers = {f"blk.{i}.ffn_up": (type_name, random_blocks(rng, type_name, n, k))
              for i, type_name in enumerate(sorted(HALF_FIELDS))}
    writer = gguf.GGUFWriter(tmp_path / "model.gguf", arch="llama")
    writer.add_string("general.name", "lowbit cross-check")
    writer.add_uint32("llama.block_count", len(layers))
    for name, (type_name, data) in layers.items():
        writer.add_tensor(name + ".weight", data,
                          raw_dtype=gguf.GGMLQuantizationType[type_name])
    writer.add_tensor("output_norm.weight", np.ones(k, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    out = tmp_path / "imported"
    subprocess.run([lowbit.compiler.cli(), "import", "gguf", str(tmp_path / "model.gguf"),
                    "-o", str(out)], check=True, capture_output=True, text=True)
    tensors, metadata = read_safetensors(out / "weights.safetensors")
    report = (out / "import.txt").read_text()
    assert "output_norm.weight" in report
    for name, (type_name, data) in layers.items():
        problem = lowbit.Problem.from_signature(metadata[name])
        assert (problem.n, problem.k) == (n, k), name
        weights = lowbit.kernel_weights(problem, tensors[name + ".codes"].reshape(n, k),
                                        tensors[name + ".scales"], tensors.get(name + ".zeros"))
        ours = weights.dequantize().astype(np.float32)
        np.testing.assert_array_equal(ours.view(np.uint32),
                                      reference(type_name, data).view(np.uint32), err_msg=name)
