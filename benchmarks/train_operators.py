"""ATen operators the host issues per training update of a Transformer.

On a GPU a small model's training step is bound by the host: every ATen
operator is a Python-to-C++ dispatch, and most of them launch a kernel. This
counts them with ``torch.profiler`` inside the real command,
``rosetta.cli.main(["train", ...])``: the profiler records ``--count K``
updates after ``--skip S`` (the first update's allocations, and compiling),
and the count over K is the cost of one update, without the start or the
final checkpoint. A compiled run that compiled a graph inside the window is
refused: raise ``--skip``. Nested operators count (``aten::linear`` and the
``aten::addmm`` it calls are two): they are what the dispatcher runs.

The default is the measurement of docs/performance.md: the first 20,000
Multi30k pairs, an 8,000-piece SentencePiece vocabulary, d_model 64, 4 heads,
d_ff 128, 6+6 layers and 25,000-token batches. With two depths
(``--layers 2 6``) it also fits ``a + b × layers`` to the totals: the
operators of each encoder+decoder layer pair, and of everything else.

``--compile`` counts the compiled update (``train.compile``) beside the
eager one. Three counts for each: nested ATen operators (all dispatches),
top-level ones (those no other ATen operator called: what the host issues
itself, the compiled graphs' matrix products among them) and the kernels
the compiler generated that ran.

    python benchmarks/train_operators.py                  # 6+6, about 2 minutes
    python benchmarks/train_operators.py --layers 2 6 --json out.json
    python benchmarks/train_operators.py --layers 2 6 --compile   # cold: minutes
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from unittest import mock

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from harness import ROOT, write_json

DATA = ROOT / "data/multi30k"
CONFIG = """\
data:
  train: {{src: train.de, tgt: train.en}}
  src_lang: de
  tgt_lang: en
  max_len: 100
tokenizer: {{kind: sentencepiece, model_type: unigram, vocab_size: 8000, joint: true}}
model:
  arch: transformer
  d_model: 64
  heads: 4
  d_ff: 128
  dropout: 0.1
  share_embeddings: true
  tie_output: true
train:
  seed: 1
  batch_tokens: {batch_tokens}
  warmup_steps: 400
  label_smoothing: 0.1
  clip_norm: 1.0
  validate_every: 100000
  device: {device}
"""


def write_corpus(folder: Path, pairs: int, batch_tokens: int, device: str) -> Path:
    """The first ``pairs`` Multi30k pairs and the config that trains on them."""
    for language in ("de", "en"):
        with gzip.open(DATA / f"train.{language}.gz", "rt", encoding="utf-8") as f:
            lines = [line for _, line in zip(range(pairs), f, strict=False)]
        (folder / f"train.{language}").write_text("".join(lines), encoding="utf-8")
    config = folder / "config.yaml"
    config.write_text(CONFIG.format(batch_tokens=batch_tokens, device=device))
    return config


def quietly(argv: list[str]) -> None:
    """``rosetta ARGV``, its progress lines kept off the table."""
    from rosetta.cli import main

    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()) as err,
    ):
        status = main(argv)
    if status:
        raise SystemExit(f"rosetta {argv[0]} failed ({status}):\n{err.getvalue()}")


GENERATED_KERNEL = re.compile(r"cpp_fused|triton_")


def counted_events(events) -> Counter[str]:
    """ATen operators by name, with two totals: ``<top-level>``, those no
    other ATen operator called, and ``<kernels>``, the generated kernels."""
    counts: Counter[str] = Counter()
    for event in events:
        if GENERATED_KERNEL.search(event.name):
            counts["<kernels>"] += 1
        if not event.name.startswith("aten::"):
            continue
        counts[event.name] += 1
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        counts["<top-level>"] += parent is None
    return counts


def operators(
    config: Path,
    prepared: Path,
    layers: int,
    window: tuple[int, int],
    threads: int | None,
    compiled: bool,
) -> dict[str, float]:
    """ATen operators of one update of ``rosetta train`` by name: those of
    ``count`` updates after ``skip`` (``window``), over ``count``."""
    from rosetta.runtime.compiled import graphs_compiled
    from rosetta.train.trainer import Trainer

    skip, count = window
    run = prepared.parent / f"run-{layers}"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(prepared, run)
    settings = [
        f"model.encoder_layers={layers}",
        f"model.decoder_layers={layers}",
        f"train.max_steps={skip + count}",
        f"train.compile={str(compiled).lower()}",
    ]
    if threads is not None:
        settings.append(f"train.threads={threads}")
    argv = ["train", str(config), "--output", str(run), "--resume"]
    for setting in settings:
        argv += ["--set", setting]
    if compiled:
        import torch._inductor.config

        torch._inductor.config.cpp.enable_kernel_profile = True  # kernels as events
    plan = schedule(wait=skip - 1, warmup=1, active=count, repeat=1)
    graphs: list[int] = []
    original = Trainer.train_step

    with profile(activities=[ProfilerActivity.CPU], schedule=plan) as prof:

        def train_step(trainer: Trainer, group: list) -> object:
            outcome = original(trainer, group)
            if trainer.state.step in (skip, skip + count):
                graphs.append(graphs_compiled())
            prof.step()  # the update ends: the profiler's next step
            return outcome

        with mock.patch.object(Trainer, "train_step", train_step):
            quietly(argv)
    shutil.rmtree(run)
    if len(graphs) != 2 or graphs[1] != graphs[0]:
        raise SystemExit(
            f"{layers}+{layers}: graphs compiled inside the counted updates "
            f"({graphs}): raise --skip"
        )
    counts = counted_events(prof.events())
    return {name: total / count for name, total in counts.items()}


def nested(counts: dict[str, float]) -> float:
    return sum(v for name, v in counts.items() if name.startswith("aten::"))


def show(layers: int, counts: dict[str, float], top: int) -> None:
    total = nested(counts)
    syncs = counts.get("aten::_local_scalar_dense", 0.0)
    print(f"\n{layers}+{layers} layers: {total:,.0f} ATen operators per update")
    print(f"  of which .item() and the like (host syncs on a GPU): {syncs:,.0f}")
    print(f"  | {'operator':<36} | per update |")
    print(f"  |{'-' * 38}|{'-' * 12}|")
    ranked = sorted(
        ((k, v) for k, v in counts.items() if k.startswith("aten::")),
        key=lambda item: -item[1],
    )
    for name, count in ranked[:top]:
        print(f"  | {name:<36} | {count:>10,.0f} |")


def side_by_side(eager: dict, compiled: dict) -> dict[int, dict[str, float]]:
    """One row per depth and way: nested, top-level, kernels, host reads."""
    print(
        "\n| layers | update   | nested ATen | top-level ATen | generated kernels "
        "| top-level + kernels | .item() |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = {}
    for layers in eager:
        for name, counts in (("eager", eager[layers]), ("compiled", compiled[layers])):
            row = {
                "nested": nested(counts),
                "top_level": counts.get("<top-level>", 0.0),
                "kernels": counts.get("<kernels>", 0.0),
                "syncs": counts.get("aten::_local_scalar_dense", 0.0),
            }
            rows.setdefault(layers, {})[name] = row
            print(
                f"| {layers}+{layers} | {name} | {row['nested']:,.0f} "
                f"| {row['top_level']:,.0f} | {row['kernels']:,.0f} "
                f"| {row['top_level'] + row['kernels']:,.0f} | {row['syncs']:,.0f} |"
            )
    return rows


def fit(totals: dict[int, float], what: str) -> None:
    """``a + b × layers`` through the lowest and highest depth."""
    if len(totals) < 2:
        return
    low, high = min(totals), max(totals)
    slope = (totals[high] - totals[low]) / (high - low)
    print(
        f"{what}: per encoder+decoder layer pair {slope:,.0f}; "
        f"the rest {totals[low] - slope * low:,.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--batch-tokens", type=int, default=25_000)
    parser.add_argument("--layers", type=int, nargs="+", default=[6])
    parser.add_argument(
        "--skip", type=int, default=3, help="updates before the counted ones"
    )
    parser.add_argument("--count", type=int, default=3, help="updates counted")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument(
        "--compile", action="store_true", help="also count the compiled update"
    )
    parser.add_argument("--json", help="also write the counts here")
    args = parser.parse_args()
    if args.skip < 1 or args.count < 1:
        parser.error("--skip and --count must be at least 1")
    window = (args.skip, args.count)

    compiled: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = write_corpus(folder, args.pairs, args.batch_tokens, args.device)
        prepared = folder / "prepared"
        quietly(["prepare", str(config), "--output", str(prepared)])
        results = {
            layers: operators(config, prepared, layers, window, args.threads, False)
            for layers in args.layers
        }
        if args.compile:
            compiled = {
                layers: operators(config, prepared, layers, window, args.threads, True)
                for layers in args.layers
            }
    print(
        f"torch {torch.__version__}, {args.pairs:,} pairs, "
        f"{args.count} updates counted after {args.skip}"
    )
    for layers, counts in results.items():
        show(layers, counts, args.top)
    print()
    fit({layers: nested(counts) for layers, counts in results.items()}, "eager")
    summary: dict = {"totals": {k: nested(v) for k, v in results.items()}}
    if compiled:
        rows = side_by_side(results, compiled)
        print()
        for name in ("nested", "top_level", "kernels"):
            fit({k: rows[k]["compiled"][name] for k in rows}, f"compiled, {name}")
        summary["compiled"] = rows
    if args.json:
        write_json(
            args.json, summary | {"operators": results, "compiled_ops": compiled}
        )


if __name__ == "__main__":
    main()
