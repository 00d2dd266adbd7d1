"""ATen operators the host issues per training update of a Transformer.

On a GPU a small model's training step is bound by the host: every ATen
operator is a Python-to-C++ dispatch, and most of them launch a kernel. This
counts them with ``torch.profiler`` around the real command,
``rosetta.cli.main(["train", ...])``, run once for ``N`` and once for ``M``
updates on the same prepared data: the difference over ``N - M`` is the cost
of one update, without the start, the first update's allocations or the
final checkpoint. Nested operators count (``aten::linear`` and the
``aten::addmm`` it calls are two): they are what the dispatcher runs.

The default is the measurement of docs/performance.md: the first 20,000
Multi30k pairs, an 8,000-piece SentencePiece vocabulary, d_model 64, 4 heads,
d_ff 128, 6+6 layers and 25,000-token batches. With two depths
(``--layers 2 6``) it also fits ``a + b × layers`` to the totals: the
operators of each encoder+decoder layer pair, and of everything else.

    python benchmarks/train_operators.py                  # 6+6, about 2 minutes
    python benchmarks/train_operators.py --layers 2 6 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

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


def operators(
    config: Path, prepared: Path, layers: int, updates: int, threads: int | None
) -> Counter[str]:
    """ATen operators of ``rosetta train`` for ``updates`` updates, by name."""
    run = prepared.parent / f"run-{layers}-{updates}"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(prepared, run)
    settings = [
        f"model.encoder_layers={layers}",
        f"model.decoder_layers={layers}",
        f"train.max_steps={updates}",
    ]
    if threads is not None:
        settings.append(f"train.threads={threads}")
    argv = ["train", str(config), "--output", str(run), "--resume"]
    for setting in settings:
        argv += ["--set", setting]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        quietly(argv)
    shutil.rmtree(run)
    return Counter(e.name for e in prof.events() if e.name.startswith("aten::"))


def per_update(
    config: Path, prepared: Path, layers: int, n: int, m: int, threads: int | None
) -> dict[str, float]:
    """Operators of one update by name: (count at n - count at m) / (n - m)."""
    more = operators(config, prepared, layers, n, threads)
    fewer = operators(config, prepared, layers, m, threads)
    names = set(more) | set(fewer)
    return {name: (more[name] - fewer[name]) / (n - m) for name in names}


def show(layers: int, counts: dict[str, float], top: int) -> None:
    total = sum(counts.values())
    syncs = counts.get("aten::_local_scalar_dense", 0.0)
    print(f"\n{layers}+{layers} layers: {total:,.0f} ATen operators per update")
    print(f"  of which .item() and the like (host syncs on a GPU): {syncs:,.0f}")
    print(f"  | {'operator':<36} | per update |")
    print(f"  |{'-' * 38}|{'-' * 12}|")
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    for name, count in ranked[:top]:
        print(f"  | {name:<36} | {count:>10,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--batch-tokens", type=int, default=25_000)
    parser.add_argument("--layers", type=int, nargs="+", default=[6])
    parser.add_argument("--updates", type=int, nargs=2, default=[6, 2])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--json", help="also write the counts here")
    args = parser.parse_args()
    n, m = args.updates
    if n <= m:
        parser.error("--updates N M needs N > M")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = write_corpus(folder, args.pairs, args.batch_tokens, args.device)
        prepared = folder / "prepared"
        quietly(["prepare", str(config), "--output", str(prepared)])
        results = {
            layers: per_update(config, prepared, layers, n, m, args.threads)
            for layers in args.layers
        }
    print(f"torch {torch.__version__}, {args.pairs:,} pairs, updates {n} - {m}")
    for layers, counts in results.items():
        show(layers, counts, args.top)
    totals = {layers: sum(counts.values()) for layers, counts in results.items()}
    if len(totals) > 1:
        low, high = min(totals), max(totals)
        slope = (totals[high] - totals[low]) / (high - low)
        print(
            f"\nper encoder+decoder layer pair: {slope:,.0f}; "
            f"the rest: {totals[low] - slope * low:,.0f}"
        )
    if args.json:
        write_json(args.json, {"totals": totals, "operators": results})


if __name__ == "__main__":
    main()
