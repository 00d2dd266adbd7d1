"""Corpora of any size: preparing, starting and memory against corpus size.

Builds parallel corpora of the given sizes from the bundled Multi30k
training set (Elliott et al. 2016): each pair joins two Multi30k pairs drawn
at random (German with German, English with English), so the text is not one
block repeated. For each size it measures, each in its own process:

- **in memory**: what ``rosetta train`` did at every start before the token
  store (read every line into Python strings, encode every pair into lists
  of Python ints), with the tokenizers already trained: seconds and peak
  resident memory; skipped above ``--in-memory-max`` pairs;
- **prepare**: ``rosetta prepare`` (SentencePiece trained on the streamed
  corpus, then encoded into the store): seconds and peak resident memory;
- **epoch batching**: seconds to sort and cut one seeded epoch of the
  stored pairs into batches (``make_batches`` on the length arrays);
- **store check by content**: seconds a training start spends
  fingerprinting the store's arrays and the corpora (part of the first
  update's seconds);
- **first update**: seconds from starting ``rosetta train`` on the prepared
  folder to its first logged update, and each training process's private
  memory (``Private_Clean + Private_Dirty`` of ``/proc/PID/smaps``, the
  pages no other process shares; the largest sample while it trains; in
  brackets, how much of it is pages of the mapped token store, which a
  second process shares),
  with 1 and 2 processes (``--nproc``); the median of ``--repeats`` starts,
  with the fastest and slowest.

    python benchmarks/data_scale.py --sizes 100000 1000000 4500000
    python benchmarks/data_scale.py --sizes 100000 1000000 --busy 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from harness import ROOT, competing_load

MULTI30K = ROOT / "data" / "multi30k"
CONFIG = ROOT / "configs" / "multi30k-de-en-transformer.yaml"
TINY_MODEL = [  # the data is measured, not the model: keep the update cheap
    "model.encoder_layers=1",
    "model.decoder_layers=1",
    "model.d_model=64",
    "model.heads=2",
    "model.d_ff=128",
    "train.batch_tokens=2000",
    "train.log_every=1",
    "train.threads=1",
    "train.valid_bleu=false",
]
MAPPING = re.compile(r"[0-9a-f]+-[0-9a-f]+ ")
IN_MEMORY = """
import sys, time
from pathlib import Path
from rosetta.jobs.run_config import load_config
from rosetta.data.batching import encode_pairs
from rosetta.data.corpus import read_corpus
from rosetta.train.prepare import load_or_train_tokenizers
config = load_config(sys.argv[1], sys.argv[3:])
began = time.perf_counter()
tokenizers = load_or_train_tokenizers(config, Path(sys.argv[2]), None, print)
pairs = read_corpus(config.data.train)
examples, _ = encode_pairs(pairs, tokenizers, config.data.max_len)
print(time.perf_counter() - began, len(examples))
"""


def build_corpus(folder: Path, pairs: int, seed: int = 0) -> list[str]:
    """``pairs`` pairs, each two random Multi30k pairs joined; the --set
    overrides that train on them."""
    sides = {}
    for lang in ("de", "en"):
        with gzip.open(MULTI30K / f"train.{lang}.gz", "rt", encoding="utf-8") as f:
            sides[lang] = np.array(f.read().splitlines(), dtype=object)
    paths = {lang: folder / f"pairs-{pairs}.{lang}" for lang in sides}
    if not all(path.is_file() for path in paths.values()):
        rng = np.random.default_rng(seed)
        count = len(sides["de"])
        partial = {
            lang: path.with_name(path.name + ".partial") for lang, path in paths.items()
        }
        with (
            open(partial["de"], "w", encoding="utf-8") as de,
            open(partial["en"], "w", encoding="utf-8") as en,
        ):
            for start in range(0, pairs, 100_000):
                n = min(100_000, pairs - start)
                first, second = rng.integers(0, count, n), rng.integers(0, count, n)
                for handle, lang in ((de, "de"), (en, "en")):
                    lines = sides[lang][first] + " " + sides[lang][second]
                    handle.write("\n".join(lines) + "\n")
        for lang, path in partial.items():  # complete, or not there at all
            path.rename(paths[lang])
    return [f"data.train.src={paths['de']}", f"data.train.tgt={paths['en']}"]


def run_measured(command: list[str]) -> tuple[float, float]:
    """Seconds and peak resident GB of a command (and its children)."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - began
    if status:
        error = process.stderr.read().decode()[-2000:] if process.stderr else ""
        raise SystemExit(f"{' '.join(command)} failed:\n{error}")
    return seconds, usage.ru_maxrss / 2**20  # KiB -> GiB


def private_kib(pid: int, run: Path) -> tuple[int, int]:
    """KiB of ``pid``'s private pages (``Private_Clean + Private_Dirty``), and
    how many of them are pages of ``run``'s mapped files (the token store):
    page cache that two processes share and the kernel may drop, but that
    a single process counts as its own."""
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return 0, 0
    total = mapped = 0
    in_run = False
    for line in text.splitlines():
        if MAPPING.match(line):  # a mapping's first line: addresses ... path
            in_run = str(run) in line
        elif line.startswith(("Private_Clean:", "Private_Dirty:")):
            kib = int(line.split()[1])
            total += kib
            mapped += kib if in_run else 0
    return total, mapped


def children_of(pid: int) -> list[int]:
    try:
        return [
            int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except OSError:
        return []


def trainers(root: int, nproc: int) -> list[int]:
    """The training processes: the command itself, or the workers torchrun
    (its child) started."""
    if nproc == 1:
        return [root]
    return [
        worker for launcher in children_of(root) for worker in children_of(launcher)
    ]


def first_update(
    run: Path, corpus: list[str], nproc: int
) -> tuple[float, float, float]:
    """Seconds to the first logged update, the largest private GB of one
    training process while it trains, and the GB of mapped store pages in
    that sample."""
    command = [
        sys.executable, "-m", "rosetta", "train", str(CONFIG), "-o", str(run),
        "--nproc", str(nproc), "--set", "train.max_steps=30",
        "--set", "train.max_epochs=null",
    ]  # fmt: skip
    for override in [*TINY_MODEL, *corpus]:
        command += ["--set", override]
    metrics = run / "metrics.jsonl"
    metrics.unlink(missing_ok=True)
    began = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    seconds, peak = None, (0, 0)
    while process.poll() is None:
        if seconds is None and metrics.is_file() and metrics.stat().st_size:
            seconds = time.perf_counter() - began
        samples = [private_kib(p, run) for p in trainers(process.pid, nproc)]
        peak = max([peak, *samples])
        time.sleep(0.1)
    if process.returncode:
        raise SystemExit(
            process.stderr.read().decode()[-2000:] if process.stderr else ""
        )
    return seconds or float("nan"), peak[0] / 2**20, peak[1] / 2**20


def epoch_batching_seconds(run: Path) -> float:
    """Seconds to cut one seeded epoch of the stored pairs into batches."""
    from rosetta.data.batching import make_batches
    from rosetta.data.encoded_pairs import EncodedPairs

    manifest = json.loads((run / "store" / "manifest.json").read_text())
    pairs = EncodedPairs.open(run / "store", "train", np.dtype(manifest["token_type"]))
    began = time.perf_counter()
    make_batches(pairs.src_lengths, pairs.tgt_lengths, 2500, np.random.default_rng(1))
    return time.perf_counter() - began


def store_check_seconds(run: Path, repeats: int = 3) -> float:
    """Seconds (median of ``repeats``) that a start spends checking the store
    by content: the fingerprint of every array and every corpus file the
    manifest records, as ``stale_reason`` computes them."""
    from rosetta.runtime.fingerprint import fingerprint

    manifest = json.loads((run / "store" / "manifest.json").read_text())
    files = [run / "store" / name for name in manifest["arrays"]]
    files += [Path(r["path"]) for rs in manifest["corpora"].values() for r in rs]
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        for path in files:
            fingerprint(path)
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


def measure(
    size: int, work: Path, nprocs: list[int], in_memory_max: int, repeats: int
) -> dict:
    corpus = build_corpus(work, size)
    run = work / f"run-{size}"
    if run.exists():
        subprocess.run(["rm", "-rf", str(run)], check=True)
    sets = [arg for o in [*TINY_MODEL, *corpus] for arg in ("--set", o)]
    prepare = [sys.executable, "-m", "rosetta", "prepare", str(CONFIG), "-o", str(run)]
    row: dict = {"pairs": size}
    row["prepare_s"], row["prepare_gb"] = run_measured(prepare + sets)
    if size <= in_memory_max:
        script = [sys.executable, "-c", IN_MEMORY, str(CONFIG), str(run)]
        row["in_memory_s"], row["in_memory_gb"] = run_measured(
            [*script, *TINY_MODEL, *corpus]
        )
    row["batching_s"] = epoch_batching_seconds(run)
    row["store_check_s"] = store_check_seconds(run)
    for nproc in nprocs:
        runs = []
        for _ in range(repeats):
            for leftover in [*run.glob("checkpoint*"), run / "checkpoints.json"]:
                subprocess.run(["rm", "-rf", str(leftover)], check=True)
            runs.append(first_update(run, corpus, nproc))
        seconds = [s for s, _, _ in runs]
        row[f"first_update_s_{nproc}"] = statistics.median(seconds)
        row[f"first_update_range_{nproc}"] = [min(seconds), max(seconds)]
        _, private, mapped = max(runs, key=lambda run: run[1])
        row[f"private_gb_{nproc}"], row[f"mapped_gb_{nproc}"] = private, mapped
    return row


def table(rows: list[dict], nprocs: list[int]) -> str:
    head = ["pairs", "in memory s", "in memory GB", "prepare s", "prepare GB"]
    head += ["epoch batching s", "store check by content s"]
    for n in nprocs:
        head += [
            f"first update s ({n} proc)",
            f"private GB/proc (store pages) ({n} proc)",
        ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [f"{row['pairs']:,}"]
        for key, form in (("in_memory_s", ".1f"), ("in_memory_gb", ".2f")):
            cells.append(format(row[key], form) if key in row else "-")
        cells += [f"{row['prepare_s']:.1f}", f"{row['prepare_gb']:.2f}"]
        cells += [f"{row['batching_s']:.2f}", f"{row['store_check_s']:.2f}"]
        for n in nprocs:
            low, high = row[f"first_update_range_{n}"]
            cells += [
                f"{row[f'first_update_s_{n}']:.1f} ({low:.1f}-{high:.1f})",
                f"{row[f'private_gb_{n}']:.2f} ({row[f'mapped_gb_{n}']:.2f})",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--nproc", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--in-memory-max", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bench-data-scale")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--busy", type=int, default=0, help="CPU-bound processes running beside"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="training starts per size (median)"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in args.sizes:
        build_corpus(args.work, size)  # not measured, never under load
        with competing_load(args.busy):
            rows.append(
                measure(size, args.work, args.nproc, args.in_memory_max, args.repeats)
            )
        print(json.dumps(rows[-1]), flush=True)
    if args.busy:
        print(f"measured beside {args.busy} CPU-bound processes")
    print(table(rows, args.nproc))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
