"""Copying, reversing and lengths never seen in training, measured.

Writes every synthetic task (``rosetta.data.synthetic``) with sources of lengths 1-40
for training (``--train-lengths``), and test sets at those lengths and at
41-80, 81-120 and 121-200 (``--bands``), written as ``--format`` says
(plain, padded additions, index hints; ``--operands`` for an addition's
lengths); trains every model on every task with the same budget (``--steps``
updates of the same token batch, or ``--minutes`` of training, whichever
ends first), once per ``--seeds`` seed, through the ordinary training run;
decodes every test set greedily and scores exact-sequence and per-token
accuracy, and per-token accuracy by output position. Prints a table (with
several seeds: the mean and the range over them), writes the results as JSON
and plots exact accuracy against source length, one panel per task, one
line per model. Run folders are kept: a second call reuses the finished runs
and evaluations (``--fresh`` starts over); ``--finished-only`` reports the
pairs finished so far without training any.

    python benchmarks/length_generalisation.py
    python benchmarks/length_generalisation.py --tasks copy reverse \\
        --models transformer transformer-randomized gru-attention
    python benchmarks/length_generalisation.py --tasks addition-lsb \\
        --train-lengths 1-20 --bands 21-40 41-60 61-100 --format hints \\
        --operands independent --minutes 60 --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import yaml

from length_models import MODELS, STUDIED
from length_report import band_label, plot, print_positions, print_table, split_names
from rosetta.config.sections import CorpusFiles
from rosetta.data.corpus import read_corpus
from rosetta.data.synthetic import (
    ARITHMETIC,
    TASKS,
    TaskSpec,
    accuracy,
    parse_band,
    write_task,
)
from rosetta.data.task_formats import FORMATS, is_hint
from rosetta.jobs.loading import load_translator
from rosetta.jobs.run_config import load_config
from rosetta.jobs.training import run_training
from rosetta.runs.checkpoint import read_index, read_meta, resolve_checkpoint
from rosetta.search.options import SearchOptions

TRAIN_LENGTHS = "1-40"
BANDS = ("41-80", "81-120", "121-200")


def data_name(task: str, args: argparse.Namespace) -> str:
    """The data folder's name: the task and how it is written."""
    bands = "_".join((args.train_lengths, *args.bands))
    return f"{task}-{args.format}-{args.operands}-{bands}"


def run_name(task: str, model: str, seed: int, args: argparse.Namespace) -> str:
    """``TASK-MODEL`` for the plain 1-40 study's first seed, as before."""
    name = f"{task}-{model}"
    if data_name(task, args) != data_name(task, DEFAULTS):
        name += "-" + data_name(task, args).removeprefix(task + "-")
    return name if seed == 1 else f"{name}-seed{seed}"


def write_data(task: str, folder: Path, args: argparse.Namespace) -> None:
    if (folder / "task.json").exists():
        return
    spec = TaskSpec(
        task,
        lengths=parse_band(args.train_lengths),
        count=args.count,
        valid=200,
        test=args.test,
        bands=tuple(parse_band(band) for band in args.bands),
        operands=args.operands,
        format=args.format,
        hint_range=args.hint_range,
    )
    write_task(spec, folder)


def write_config(
    path: Path, data: Path, model: dict, seed: int, args: argparse.Namespace
) -> None:
    def pair(name: str) -> dict[str, str]:
        return {"src": str(data / f"{name}.src"), "tgt": str(data / f"{name}.tgt")}

    config = {
        "data": {
            "train": pair("train"),
            "valid": pair("valid"),
            "test": pair("test"),
            # keep every pair: index hints and duplicate outgrow the default
            "max_len": longest_line(data) + 1,
        },
        "tokenizer": {"kind": "word", "joint": True},
        "model": model,
        "train": {
            "seed": seed,
            "batch_tokens": args.batch_tokens,
            "lr": args.lr,
            # the 2,000-update study's warm-up and intervals, also under a
            # minutes budget with --steps far beyond what it reaches
            "warmup_steps": min(args.steps // 10, 200),
            "label_smoothing": 0.0,
            "max_epochs": None,
            "max_steps": args.steps,
            "max_minutes": args.minutes,
            "validate_every": min(args.steps // 4, 500),
            "log_every": max(min(args.steps // 20, 100), 1),
            "threads": args.threads,
        },
        "decode": {"max_len_a": 2.2, "max_len_b": 10, "batch_size": 100},
    }
    if model.get("max_positions"):  # index hints double every side
        longest = max(parse_band(band)[1] for band in (args.train_lengths, *args.bands))
        needed = 2 * (2 * longest + 2) + 2 if args.format == "hints" else 0
        config["model"]["max_positions"] = max(model["max_positions"], needed)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def longest_line(data: Path) -> int:
    """Symbols in the longest line of the splits training reads."""
    return max(
        len(line.split())
        for name in ("train", "valid", "test")
        for side in ("src", "tgt")
        for line in (data / f"{name}.{side}").read_text().splitlines()
    )


def source_length(task: str, source: str) -> int:
    """Symbols of a source, index hints left out; for addition, the digits
    of its longer number."""
    symbols = [s for s in source.split() if not is_hint(s)]
    if task not in ARITHMETIC:
        return len(symbols)
    plus = symbols.index("+")
    return max(plus, len(symbols) - plus - 1)


def position_accuracy(outputs: list[str], references: list[str]) -> list[list[int]]:
    """For every place of the references: [outputs right there, references
    that long]: where in a long output the mistakes start."""
    counts: list[list[int]] = []
    for output, reference in zip(outputs, references, strict=True):
        got, wanted = output.split(), reference.split()
        for place, symbol in enumerate(wanted):
            if place == len(counts):
                counts.append([0, 0])
            counts[place][0] += place < len(got) and got[place] == symbol
            counts[place][1] += 1
    return counts


def evaluate(run_dir: Path, data: Path, task: str, args: argparse.Namespace) -> dict:
    translator = load_translator(run_dir, device="cpu")
    bands, per_length = {}, {}
    started = time.perf_counter()
    for name in split_names(args):
        pairs = read_corpus_pairs(data, name)
        sources, references = [s for s, _ in pairs], [t for _, t in pairs]
        outputs = translator.translate(sources, SearchOptions())
        score = accuracy(outputs, references)
        bands[band_label(name, args)] = {
            "exact": round(score.exact, 4),
            "per_token": round(score.per_token, 4),
            "sentences": score.sentences,
            "by_position": position_accuracy(outputs, references),
        }
        for source, output, reference in zip(sources, outputs, references, strict=True):
            length = source_length(task, source)
            right, count = per_length.get(length, (0, 0))
            per_length[length] = (
                right + (output.split() == reference.split()),
                count + 1,
            )
    meta = read_meta(resolve_checkpoint(run_dir, "latest"))["trainer"]
    return {
        "bands": bands,
        "per_length": {str(k): v for k, v in sorted(per_length.items())},
        "parameters": translator.parameter_count,
        "steps": meta["step"],
        "best_step": read_meta(resolve_checkpoint(run_dir, "best"))["trainer"]["step"],
        "train_minutes": round(meta["elapsed_seconds"] / 60, 2),
        "decode_seconds": round(time.perf_counter() - started, 1),
    }


def read_corpus_pairs(data: Path, name: str) -> list[tuple[str, str]]:
    return read_corpus(CorpusFiles(src=data / f"{name}.src", tgt=data / f"{name}.tgt"))


def finished(task: str, model: str, seed: int, args: argparse.Namespace) -> bool:
    run_dir = Path(args.out) / run_name(task, model, seed, args)
    return (run_dir / "length-results.json").exists()


def run_one(task: str, model: str, seed: int, args: argparse.Namespace) -> dict:
    out = Path(args.out)
    data = out / "data" / data_name(task, args)
    if data_name(task, args) == data_name(task, DEFAULTS):
        data = out / "data" / task  # the plain study's folder, as before
    run_dir = out / run_name(task, model, seed, args)
    results = run_dir / "length-results.json"
    if results.exists():
        return json.loads(results.read_text())
    write_data(task, data, args)
    # beside the run folder: training refuses a new run's folder holding files
    config_path = out / f"{run_dir.name}.yaml"
    write_config(config_path, data.resolve(), MODELS[model], seed, args)
    config = load_config(config_path)
    budget = f"{args.steps} updates" + (
        f" or {args.minutes} minutes" if args.minutes else ""
    )
    print(f"== {task} × {model}, seed {seed}: training {budget}", flush=True)
    run_training(config, run_dir, resume=read_index(run_dir).get("latest") is not None)
    result = {
        "task": task,
        "model": model,
        "seed": seed,
        **evaluate(run_dir, data, task, args),
    }
    results.write_text(json.dumps(result, indent=1) + "\n")
    return result


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=TASKS,
        default=[t for t in TASKS if t != "addition-reversed"],  # the first study's
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=list(MODELS),
        default=list(STUDIED),
    )
    parser.add_argument("--steps", type=int, default=2000, help="updates per run")
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="training minutes per run (and --steps)",
    )
    parser.add_argument("--train-lengths", default=TRAIN_LENGTHS)
    parser.add_argument("--bands", nargs="+", default=list(BANDS))
    parser.add_argument("--format", choices=FORMATS, default="plain")
    parser.add_argument("--operands", choices=("equal", "independent"), default="equal")
    parser.add_argument("--hint-range", type=int, default=256)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--count", type=int, default=20000, help="training pairs")
    parser.add_argument("--test", type=int, default=200, help="pairs per test set")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 4))
    parser.add_argument("--out", default="runs/length-generalisation")
    parser.add_argument(
        "--json", default="benchmarks/results/length_generalisation.json"
    )
    parser.add_argument("--plot", default="docs/images/length-generalisation.png")
    parser.add_argument(
        "--fresh", action="store_true", help="delete earlier runs first"
    )
    parser.add_argument(
        "--finished-only",
        action="store_true",
        help="table, JSON and plot of the pairs finished so far; trains nothing",
    )
    return parser


DEFAULTS = parser().parse_args([])


def main() -> None:
    args = parser().parse_args()
    if args.fresh and Path(args.out).exists():
        shutil.rmtree(args.out)
    runs = [
        (task, model, seed)
        for task in args.tasks
        for model in args.models
        for seed in args.seeds
    ]
    if args.finished_only:
        runs = [run for run in runs if finished(*run, args)]
    results = [run_one(*run, args) for run in runs]
    print_table(results, args)
    print_positions(results, args)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps({"settings": vars(args), "results": results}, indent=1) + "\n"
    )
    plot(results, args, Path(args.plot), list(MODELS))


if __name__ == "__main__":
    main()
