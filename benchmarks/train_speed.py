"""Training throughput: Rosetta's trainer step against Hugging Face Marian.

Both engines train the same shape (``--shape bundled``: the bundled Transformer
config, d=256, 3+3 layers, 4 heads, FFN 1024; ``--shape base``: Transformer-base,
d=512, 6+6 layers, 8 heads, FFN 2048; both with the 8k shared SentencePiece
vocabulary and tied output) on the same Multi30k batches (the config's
2,500-token budget unless ``--batch-tokens``, one shuffled order),
with the same loss (Rosetta's label-smoothed cross-entropy on the logits),
gradient clipping at 1.0 and fused Adam. Rosetta runs its real
``Trainer.train_step``; Hugging Face a ``MarianMTModel`` built from a
``MarianConfig`` of identical shape (random init).

Each measurement is its own process, so its peak memory is its own; engines are
interleaved (Rosetta, HF, Rosetta, HF, ...), each thread count in turn. The
table gives median target tokens/s and source+target tokens/s with the spread,
peak memory (resident on the CPU, allocated on a GPU), and the model FLOPs
utilisation: the fraction of the device's matrix-product rate, measured in the
same run and precision, that the step reaches (model FLOPs from the padded
batch shapes, 3× the forward pass). On a GPU the clocks are read after
``torch.cuda.synchronize()``.

    python benchmarks/train_speed.py --threads 1 2 --repeats 3
    python benchmarks/train_speed.py --device cuda --shape base --precision bf16 \
        --batch-tokens 25000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from harness import ROOT, synchronize
from rosetta.families import family_of

CONFIG = ROOT / "configs/multi30k-de-en-transformer.yaml"
CACHE = ROOT / "runs/bench-train-speed"  # the tokenizers, trained once
SHAPES = {
    "bundled": [],
    # one layer a side: what a dry run compiles in a minute on a CPU
    "tiny": [
        "model.encoder_layers=1",
        "model.decoder_layers=1",
        "model.d_model=64",
        "model.heads=2",
        "model.d_ff=128",
    ],
    "base": [
        "model.encoder_layers=6",
        "model.decoder_layers=6",
        "model.d_model=512",
        "model.heads=8",
        "model.d_ff=2048",
    ],
}


def load_batches(
    steps: int, precision: str = "fp32", config_path: Path = CONFIG, *overrides: str
):
    """Config, prepared data and the example indices of ``steps`` batches.

    Every bundled config shares the tokenizer settings, so one cached pair of
    tokenizers serves them all.
    """
    from rosetta.data.batching import make_batches
    from rosetta.jobs.run_config import load_config
    from rosetta.train.prepare import PrepareOptions, prepare_data

    config = load_config(config_path, [f"train.precision={precision}", *overrides])
    data = prepare_data(config, CACHE, lambda _: None, PrepareOptions(refresh=True))
    rng = np.random.default_rng(0)
    lengths = data.train.src_lengths, data.train.tgt_lengths
    batches = make_batches(*lengths, config.train.batch_tokens, rng)
    return config, data, batches[:steps]


def step_flops(batch, d: int, ffn: int, layers: int, vocab: int) -> float:
    """Matrix-product FLOPs of one training step (forward × 3) on padded shapes."""
    b, s = batch.src.shape
    t = batch.tgt_in.shape[1]
    ns, nt = b * s, b * t
    encoder = 8 * ns * d * d + 4 * ns * d * ffn + 4 * b * s * s * d
    decoder = (
        8 * nt * d * d
        + 4 * b * t * t * d  # self-attention
        + 4 * nt * d * d
        + 4 * ns * d * d
        + 4 * b * t * s * d  # cross-attention
        + 4 * nt * d * ffn
    )
    output = 2 * nt * d * vocab
    return 3.0 * (layers * (encoder + decoder) + output)


def settings(
    shape: str, batch_tokens: int | None, device: torch.device, compile: str = "auto"
) -> list[str]:
    budget = [f"train.batch_tokens={batch_tokens}"] if batch_tokens else []
    return [
        *SHAPES[shape],
        *budget,
        f"train.device={device.type}",
        f"train.compile={compile}",
    ]


def rosetta_step(config, data, device: torch.device):
    from rosetta.families import build_model
    from rosetta.train.trainer import Trainer
    from rosetta.train.translation_task import TranslationTask

    vocab = len(data.tokenizers.tgt)
    model = build_model(config.model, len(data.tokenizers.src), vocab)
    folder = Path(tempfile.mkdtemp())
    task = TranslationTask(
        config,
        model,
        replace(data, valid=[], valid_pairs=[]),
        device,
        family_of(config.model).inference,
    )
    trainer = Trainer(config, folder, model, task, device)

    # one batch per update; train_step collates it, as in training
    return lambda indices: trainer.train_step([indices])


def marian_step(config, data, device: torch.device):
    from transformers import MarianMTModel

    from peers import marian_config
    from rosetta.data.batching import collate
    from rosetta.data.vocab import PAD_ID
    from rosetta.runtime.precision import autocast
    from rosetta.train.loss import label_smoothed_cross_entropy
    from rosetta.train.trainer import make_adam

    m = config.model
    vocab = len(data.tokenizers.tgt)
    marian = MarianMTModel(
        marian_config(
            vocab=vocab,
            d_model=m.d_model,
            encoder_layers=m.encoder_layers,
            decoder_layers=m.decoder_layers,
            heads=m.heads,
            d_ff=m.d_ff,
            max_positions=m.max_positions,
            dropout=m.dropout,
            attention_dropout=m.attention_dropout,
        )
    )
    marian.to(device).train()
    optimizer = make_adam(marian, config.train)
    cfg = config.train

    def step(indices):
        batch = collate([data.train[i] for i in indices]).to(device)
        with autocast(device, cfg.precision):
            logits = marian(
                input_ids=batch.src,
                attention_mask=batch.src_mask.long(),
                decoder_input_ids=batch.tgt_in,
                decoder_attention_mask=(batch.tgt_in != PAD_ID).long(),
            ).logits
        loss_sum, _, tokens = label_smoothed_cross_entropy(
            logits, batch.tgt_out, cfg.label_smoothing, PAD_ID
        )
        optimizer.zero_grad(set_to_none=True)
        (loss_sum / tokens).backward()
        torch.nn.utils.clip_grad_norm_(marian.parameters(), cfg.clip_norm)
        optimizer.step()

    return step


def batch_work(config, data, batches) -> tuple[int, int, float]:
    """Target tokens, source tokens and model FLOPs of ``batches``: what the
    timed steps compute."""
    from rosetta.data.batching import collate

    m, vocab = config.model, len(data.tokenizers.tgt)
    target = source = 0
    flops = 0.0
    for indices in batches:
        batch = collate([data.train[i] for i in indices])
        target += batch.num_tgt_tokens
        source += int(batch.src_mask.sum())
        flops += step_flops(batch, m.d_model, m.d_ff, m.encoder_layers, vocab)
    return target, source, flops


def timed_steps(step, batches: list, warmup: int, device: torch.device) -> float:
    """Seconds the steps after the first ``warmup`` take, the device's queued
    work included."""
    for indices in batches[:warmup]:
        step(indices)
    synchronize(device)
    began = time.perf_counter()
    for indices in batches[warmup:]:
        step(indices)
    synchronize(device)
    return time.perf_counter() - began


def matmul_ceiling(device: torch.device, precision: str, seconds: float = 2.0) -> float:
    """Best GFLOP/s of square matrix products on ``device`` in the precision
    the step computes in (at this thread count on the CPU)."""
    n, count = (2048, 1) if device.type == "cpu" else (8192, 4)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    torch.mm(a, b)
    synchronize(device)
    best, stop = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < stop:
        began = time.perf_counter()
        for _ in range(count):  # a GPU product is too short to time alone
            torch.mm(a, b)
        synchronize(device)
        best = max(best, count * 2 * n**3 / (time.perf_counter() - began) / 1e9)
    return best


def peak_memory_mib(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(engine: str, threads: int, args) -> None:
    torch.set_num_threads(threads)
    torch.manual_seed(0)

    device = torch.device(args.device)
    warmup, steps = args.warmup, args.steps
    overrides = settings(args.shape, args.batch_tokens, device, args.compile)
    config, data, batches = load_batches(
        warmup + steps, args.precision, CONFIG, *overrides
    )
    make_step = rosetta_step if engine == "rosetta" else marian_step
    step = make_step(config, data, device)
    target, source, flops = batch_work(config, data, batches[warmup:])
    elapsed = timed_steps(step, batches, warmup, device)
    peak_mib = peak_memory_mib(device)
    print(
        json.dumps(
            {
                "engine": engine,
                "threads": threads,
                "target_tokens_per_s": target / elapsed,
                "tokens_per_s": (source + target) / elapsed,
                "gflops": flops / elapsed / 1e9,
                "peak_mib": peak_mib,
                "seconds": elapsed,
            }
        )
    )


def run_worker(engine: str, threads: int, args) -> dict:
    command = [
        sys.executable,
        __file__,
        "--worker",
        engine,
        "--threads",
        str(threads),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
        "--precision",
        args.precision,
        "--device",
        args.device,
        "--shape",
        args.shape,
        *(["--batch-tokens", str(args.batch_tokens)] if args.batch_tokens else []),
        "--compile",
        args.compile,
    ]
    env = os.environ | {"OMP_NUM_THREADS": str(threads)}
    if args.preload:
        env["LD_PRELOAD"] = args.preload
    output = subprocess.run(
        command, env=env, capture_output=True, text=True, check=False
    )
    if output.returncode != 0:
        raise SystemExit(f"{engine} worker failed:\n{output.stderr[-3000:]}")
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--preload", default=None, help="LD_PRELOAD for both, e.g. jemalloc"
    )
    parser.add_argument(
        "--worker", choices=["rosetta", "marian"], help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--precision",
        choices=["fp32", "bf16"],
        default="fp32",
        help="both engines: bf16 runs the forward pass under torch.autocast",
    )
    parser.add_argument(
        "--device", default="cpu", help="cpu or cuda (one GPU: --threads is moot)"
    )
    parser.add_argument("--shape", choices=list(SHAPES), default="bundled")
    parser.add_argument(
        "--batch-tokens", type=int, default=None, help="default: the config's"
    )
    parser.add_argument(
        "--compile",
        choices=["auto", "true", "false"],
        default="auto",
        help="Rosetta's train.compile (auto: compiled on a GPU); the warm-up "
        "steps hold the compile",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this PyTorch sees no CUDA GPU")
    if device.type != "cpu":
        args.threads = args.threads[:1]  # the host threads barely matter
    if args.worker:
        worker(args.worker, args.threads[0], args)
        return

    from quality_multi30k import device_name

    load_batches(1)  # trains the tokenizers once, outside the timed runs
    results: dict[int, dict[str, list[dict]]] = {}
    ceilings: dict[int, float] = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        ceilings[threads] = matmul_ceiling(device, args.precision)
        results[threads] = {"rosetta": [], "marian": []}
        for repeat in range(args.repeats):
            for engine in ("rosetta", "marian"):
                result = run_worker(engine, threads, args)
                results[threads][engine].append(result)
                print(
                    f"threads {threads}, repeat {repeat + 1}, {engine}: "
                    f"{result['target_tokens_per_s']:.0f} target tokens/s",
                    file=sys.stderr,
                    flush=True,
                )

    print(
        f"\n{device_name(device)}; shape {args.shape}, "
        f"{args.batch_tokens or 'config'} batch tokens; {args.steps} timed steps "
        f"after {args.warmup} warm-up, median of {args.repeats} (spread); "
        f"allocator: {args.preload or 'glibc'}; precision {args.precision}\n"
    )
    print(
        "| threads | engine | target tok/s | src+tgt tok/s | peak MiB "
        "| GFLOP/s | MFU | Rosetta ÷ HF |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for threads, by_engine in results.items():
        medians = {
            engine: statistics.median(r["target_tokens_per_s"] for r in runs)
            for engine, runs in by_engine.items()
        }
        for engine, runs in by_engine.items():
            rates = [r["target_tokens_per_s"] for r in runs]
            gflops = statistics.median(r["gflops"] for r in runs)
            ratio = (
                f"{medians['rosetta'] / medians['marian']:.2f}"
                if engine == "rosetta"
                else ""
            )
            print(
                f"| {threads} | {'Rosetta' if engine == 'rosetta' else 'HF Marian'} "
                f"| {medians[engine]:.0f} ({min(rates):.0f}–{max(rates):.0f}) "
                f"| {statistics.median(r['tokens_per_s'] for r in runs):.0f} "
                f"| {statistics.median(r['peak_mib'] for r in runs):.0f} "
                f"| {gflops:.1f} | {gflops / ceilings[threads]:.0%} | {ratio} |"
            )
    ceiling_text = ", ".join(f"{t} thread(s) {c:.0f}" for t, c in ceilings.items())
    print(
        f"\nmeasured {args.precision} matrix-product rate on {args.device}, "
        f"GFLOP/s: {ceiling_text}"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        settings_used = {k: v for k, v in vars(args).items() if k != "json"}
        args.json.write_text(
            json.dumps(
                {"settings": settings_used, "ceilings": ceilings, "results": results},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
