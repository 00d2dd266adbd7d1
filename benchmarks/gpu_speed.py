"""Training throughput on one device, every shape and precision in one process:
Rosetta's trainer step against Hugging Face Marian of the same shape.

The measurement of ``benchmarks/train_speed.py`` (same batches, loss, clipping
and fused Adam; the same FLOP count and measured matrix-product ceiling), made
in one process so that a GPU check spends its minutes on training rather than
on starting processes: for each shape (with its batch tokens) and precision,
Rosetta and Marian are built, warmed up and timed in turn, then freed, and the
GPU's peak memory counter is reset between them. Prints one JSON object per
measurement, then a Markdown table.

    python benchmarks/gpu_speed.py --device cuda --shapes bundled:2500 base:25000
    python benchmarks/gpu_speed.py --device cpu --shapes bundled:400 --steps 2
"""

from __future__ import annotations

import argparse
import gc
import json

import torch

from harness import synchronize
from train_speed import (
    CONFIG,
    batch_work,
    load_batches,
    marian_step,
    matmul_ceiling,
    peak_memory_mib,
    rosetta_step,
    settings,
    timed_steps,
)

STEPS = {
    "rosetta": rosetta_step,
    "rosetta-compiled": rosetta_step,
    "marian": marian_step,
}


def have_transformers() -> bool:
    try:
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


def measure(engine, shape, tokens, precision, device, warmup, steps) -> dict:
    """One row; Rosetta's update eager (``rosetta``) or compiled, its
    warm-up steps holding the compile."""
    torch.manual_seed(0)
    compiled = "true" if engine == "rosetta-compiled" else "false"
    overrides = settings(shape, tokens, device, compiled)
    config, data, batches = load_batches(warmup + steps, precision, CONFIG, *overrides)
    target, _, flops = batch_work(config, data, batches[warmup:])
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    step = STEPS[engine](config, data, device)
    elapsed = timed_steps(step, batches, warmup, device)
    row = {
        "engine": engine,
        "shape": shape,
        "batch_tokens": tokens,
        "precision": precision,
        "steps": steps,
        "target_tokens_per_s": round(target / elapsed, 1),
        "tflops": round(flops / elapsed / 1e12, 3),
        "peak_mib": round(peak_memory_mib(device)),
        "seconds": round(elapsed, 3),
    }
    del step
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return row


def profile(shape, tokens, precision, device, steps: int = 4) -> str:
    """Where one Rosetta training step's time goes: the operators and kernels
    of ``steps`` steps, most device time first (host time where no GPU)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    overrides = settings(shape, tokens, device, "false")
    config, data, batches = load_batches(2 + steps, precision, CONFIG, *overrides)
    step = rosetta_step(config, data, device)
    for indices in batches[:2]:
        step(indices)
    synchronize(device)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profiler(activities=activities) as recorded:
        for indices in batches[2:]:
            step(indices)
        synchronize(device)
    averages = recorded.key_averages()
    if device.type != "cuda":
        return averages.table(sort_by="self_cpu_time_total", row_limit=25)
    for key in ("self_device_time_total", "self_cuda_time_total"):
        try:  # the name changed across PyTorch releases
            return averages.table(sort_by=key, row_limit=30)
        except (AttributeError, KeyError, ValueError):
            continue
    return averages.table(row_limit=30)


ENGINE_NAMES = {
    "rosetta": "Rosetta",
    "rosetta-compiled": "Rosetta compiled",
    "marian": "HF Marian",
}


def table(rows: list[dict]) -> str:
    lines = [
        "| shape | batch tokens | precision | engine | target tok/s | TFLOP/s "
        "| MFU | peak MiB | Rosetta ÷ HF |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = f"{row['vs_hf']:.2f}" if "vs_hf" in row else ""
        engine = ENGINE_NAMES[row["engine"]]
        lines.append(
            f"| {row['shape']} | {row['batch_tokens']} | {row['precision']} "
            f"| {engine} | {row['target_tokens_per_s']:.0f} | {row['tflops']:.1f} "
            f"| {row['mfu']:.0%} | {row['peak_mib']} | {ratio} |"
        )
    return "\n".join(lines)


def compare_with_hf(rows: list[dict]) -> None:
    """Each Rosetta row's speed ÷ Hugging Face's of its shape and precision."""
    for ours in rows:
        hf = [
            r
            for r in rows
            if r["engine"] == "marian"
            and (r["shape"], r["batch_tokens"], r["precision"])
            == (ours["shape"], ours["batch_tokens"], ours["precision"])
        ]
        if ours["engine"] != "marian" and hf:
            speed = ours["target_tokens_per_s"] / hf[0]["target_tokens_per_s"]
            ours["vs_hf"] = round(speed, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--shapes",
        nargs="+",
        default=["bundled:2500", "base:25000"],
        help="SHAPE:BATCH_TOKENS, shapes of benchmarks/train_speed.py",
    )
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument(
        "--compiled",
        nargs="*",
        default=[],
        metavar="SHAPE:BATCH_TOKENS",
        help="shapes measured with the update compiled, after --shapes",
    )
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--profile",
        nargs="*",
        default=[],
        metavar="SHAPE:TOKENS:PRECISION",
        help="also print where Rosetta's step spends its time, for these",
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 in both
    load_batches(1)  # the tokenizers, trained once outside the timings
    peer = ["marian"] if have_transformers() else []
    ceilings = {p: matmul_ceiling(device, p) for p in args.precisions}
    # eager and Hugging Face first, the compiled rows (each a cold compile)
    # after them: the table so far is written after every row, so a stage
    # stopped by its time limit keeps what it measured
    plan = [
        (spec, precision, engine)
        for spec in args.shapes
        for precision in args.precisions
        for engine in ["rosetta", *peer]
    ]
    plan += [
        (spec, precision, "rosetta-compiled")
        for spec in args.compiled
        for precision in args.precisions
    ]
    rows: list[dict] = []
    for spec, precision, engine in plan:
        shape, tokens = spec.split(":")
        row = measure(
            engine, shape, int(tokens), precision, device, args.warmup, args.steps
        )
        row["mfu"] = round(row["tflops"] * 1e3 / ceilings[precision], 4)
        rows.append(row)
        compare_with_hf(rows)
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "w") as file:
                json.dump({"ceilings_gflops": ceilings, "rows": rows}, file, indent=1)
    print(table(rows))
    text = ", ".join(f"{p} {c:.0f}" for p, c in ceilings.items())
    print(f"\nmeasured matrix-product ceiling, GFLOP/s: {text}")
    for spec in args.profile:
        shape, tokens, precision = spec.split(":")
        print(f"\nprofile of Rosetta's step: {spec}")
        print(profile(shape, int(tokens), precision, device), flush=True)


if __name__ == "__main__":
    main()
