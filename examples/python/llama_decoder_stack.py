#!/usr/bin/env python3
"""A stack of Llama-3-8B decoder layers' linear layers, W4A16 through lowbit
against torch.nn.functional.linear in f16, at M = 1 and 16 (decode).

Each layer runs Llama-3-8B's linear shapes (the built-in spec,
examples/specs/llama3-8b-w4a16.toml: qkv 6144x4096, o 4096x4096, gate and
up 14336x4096, down 4096x14336) with the elementwise work between them
(SiLU-gated MLP, residual adds); attention itself is left out, so the time
is the linears'. Weights are random uint4 codes with random f16 scales per
128 (lowbit.kernel_weights), and random f16 for the baseline. Both stacks
are timed eagerly and replayed from a CUDA graph (CUDA events, warm-up
first, the median of --repeats runs of --iterations each).

    python3 examples/python/llama_decoder_stack.py --db llama3-8b.db

The database: `lowbit compile --builtin -o llama3-8b.db` (or `lowbit tune`
on the builtin spec for tuned kernels).
"""
import argparse
import statistics
import sys

import numpy as np
import torch
import torch.nn.functional as F

import lowbit
import lowbit.nn
import lowbit.ops

HIDDEN, INTERMEDIATE, QKV = 4096, 14336, 6144
SHAPES = {"qkv": (QKV, HIDDEN), "o": (HIDDEN, HIDDEN), "gate": (INTERMEDIATE, HIDDEN),
          "up": (INTERMEDIATE, HIDDEN), "down": (HIDDEN, INTERMEDIATE)}


def random_w4(n, k, rng, device):
    problem = lowbit.Problem(n, k, weight="uint4", group_size=128)
    codes = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    scales = (rng.random((n, k // 128)) * 0.002 + 0.0005).astype(np.float16)
    weights = lowbit.kernel_weights(problem, codes, scales.view(np.uint8).reshape(-1))
    return lowbit.nn.Linear(weights, device=device)


def layer_forward(x, linear):
    qkv = linear["qkv"](x)
    attention = qkv[:, :HIDDEN]  # stands in for attention's output
    h = x + linear["o"](attention.contiguous())
    mlp = F.silu(linear["gate"](h)) * linear["up"](h)
    return h + linear["down"](mlp)


def stack_forward(x, layers):
    for linear in layers:
        x = layer_forward(x, linear)
    return x


def time_us(fn, iterations, repeats):
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / iterations)
    return statistics.median(samples)


def graphed(fn):
    fn()  # warm up plans and the caching allocator outside capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph.replay


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="kernel database with the builtin spec")
    parser.add_argument("--user-db", help="a tuned database (lowbit tune)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--m", default="1,16")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lowbit.set_databases(system_db=args.db, user_db=args.user_db)
    device = torch.device("cuda", 0)
    rng = np.random.default_rng(0)

    lowbit_layers = [{name: random_w4(n, k, rng, device) for name, (n, k) in SHAPES.items()}
                     for _ in range(args.layers)]
    dense_layers = []
    for _ in range(args.layers):
        dense = {}
        for name, (n, k) in SHAPES.items():
            weight = torch.randn(n, k, device=device, dtype=torch.float16) * 0.01
            dense[name] = lambda x, w=weight: F.linear(x, w)
        dense_layers.append(dense)

    # The kernels against the f64 reference of the same weights, once.
    check = lowbit_layers[0]["down"]
    x = torch.randn(16, INTERMEDIATE, device=device, dtype=torch.float16)
    w = lowbit.ops.reference_weights(check.plan_of_cpu(), check.packed_weights,
                                     check.packed_scales, None).to(device)
    expected = x.double() @ w.T
    error = ((check(x).double() - expected).abs().max() / expected.abs().max()).item()
    print(f"down_proj at M = 16 against the f64 reference: worst relative error {error:.2e}")

    print(f"\n{args.layers} Llama-3-8B decoder layers (linears + SiLU gate + residuals), "
          f"{torch.cuda.get_device_name()}, µs per layer")
    print("| M | lowbit W4 eager | lowbit W4 graph | f16 F.linear eager | f16 F.linear graph | "
          "speedup (graph) |")
    print("|---|---|---|---|---|---|")
    for m in (int(v) for v in args.m.split(",")):
        x = torch.randn(m, HIDDEN, device=device, dtype=torch.float16) * 0.1
        times = []
        for layers in (lowbit_layers, dense_layers):
            run = lambda layers=layers: stack_forward(x, layers)
            eager = time_us(run, args.iterations, args.repeats) / args.layers
            replay = time_us(graphed(run), args.iterations, args.repeats) / args.layers
            times += [eager, replay]
        print(f"| {m} | {times[0]:.1f} | {times[1]:.1f} | {times[2]:.1f} | {times[3]:.1f} | "
              f"{times[3] / times[1]:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
