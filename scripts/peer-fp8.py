#!/usr/bin/env python3
"""cuBLASLt fp8 W8A8 (torch._scaled_mm, e4m3 x e4m3 -> f16), timed as PERF.md
says: a CUDA graph over weight copies rotating through more than 512 MB (L2
cold), events around each replay, the median of 7. M below 16 is padded to 16
(cuBLASLt's fp8 kernels need it), as PERF.md's peer table did. The weight
format issue's comparison for W8A16 fp8 (lowbit bench's e4m3 rows).
Usage: python3 scripts/peer-fp8.py [N,K ...]   (default 28672,8192 8192,8192)"""
import sys
import torch

shapes = [tuple(map(int, a.split(","))) for a in sys.argv[1:]] or [(28672, 8192), (8192, 8192)]
ms = [1, 16, 64, 256]
dev = torch.device("cuda")
print("shape        M   cuBLASLt fp8 us")
for n, k in shapes:
    copies = max(2, -(-(512 << 20) // (n * k)) + 1)
    ws = [torch.randn(n, k, device=dev).div(8).to(torch.float8_e4m3fn) for _ in range(copies)]
    one = torch.ones((), device=dev)
    for m in ms:
        x = torch.randn(max(m, 16), k, device=dev).to(torch.float8_e4m3fn)
        run = lambda w: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.float16)
        for w in ws:
            run(w)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for w in ws:
                run(w)
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(7):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1000 / len(ws))
        times.sort()
        print(f"{n}x{k:<6} {m:4d} {times[3]:10.1f}")
