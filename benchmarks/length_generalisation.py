"""Copying, reversing and lengths never seen in training, measured.

Writes every synthetic task (``rosetta.data.synthetic``) with sources of lengths 1-40
for training, and test sets at 1-40, 41-80, 81-120 and 121-200; trains every
model on every task with the same budget (updates of the same token batch),
through the ordinary training run; decodes every test set greedily and
scores exact-sequence and per-token accuracy. Prints a table, writes the
results as JSON and plots exact accuracy against source length, one panel
per task, one line per model. Run folders are kept: a second call reuses the
finished runs and evaluations (``--fresh`` starts over); ``--finished-only``
reports the pairs finished so far without training any.

    python benchmarks/length_generalisation.py
    python benchmarks/length_generalisation.py --tasks copy reverse \\
        --models transformer transformer-randomized gru-attention
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import yaml

from rosetta.cli.task import TASK_MODEL
from rosetta.config.reading import load_config
from rosetta.config.sections import CorpusFiles
from rosetta.data.corpus import read_corpus
from rosetta.data.synthetic import ARITHMETIC, TASKS, TaskSpec, accuracy, write_task
from rosetta.loading import load_translator
from rosetta.runs.checkpoint import read_index, read_meta, resolve_checkpoint
from rosetta.search.options import SearchOptions
from rosetta.train.run import run_training

TRAIN_LENGTHS = (1, 40)
BANDS = ((41, 80), (81, 120), (121, 200))

TRANSFORMER = {  # what rosetta task's config trains, with each scheme below
    **TASK_MODEL,
    "positions": "sinusoidal",
    "max_positions": 512,  # outputs of duplicate reach 401 tokens
}
MODELS = {
    "transformer": TRANSFORMER,
    "transformer-relative": {**TRANSFORMER, "positions": "relative"},
    "transformer-randomized": {**TRANSFORMER, "positions": "randomized"},
    "transformer-shifted": {**TRANSFORMER, "positions": "shifted"},
    "transformer-nope": {**TRANSFORMER, "positions": "nope"},
    "transformer-alibi": {**TRANSFORMER, "positions": "alibi"},
    "gru-attention": {
        "arch": "rnn",
        "cell": "gru",
        "d_model": 64,
        "hidden_size": 128,
        "bidirectional": True,
        "attention": "bahdanau",
        "encoder_layers": 1,
        "decoder_layers": 1,
        "dropout": 0.0,
    },
    "gru": {
        "arch": "rnn",
        "cell": "gru",
        "d_model": 64,
        "hidden_size": 256,
        "attention": "none",
        "encoder_layers": 2,
        "decoder_layers": 2,
        "dropout": 0.0,
    },
}


def split_names() -> list[str]:
    return ["test", *(f"test-{low}-{high}" for low, high in BANDS)]


def band_label(name: str) -> str:
    return "1-40" if name == "test" else name.removeprefix("test-")


def write_data(task: str, folder: Path, count: int, test: int) -> None:
    if (folder / "task.json").exists():
        return
    spec = TaskSpec(
        task, lengths=TRAIN_LENGTHS, count=count, valid=200, test=test, bands=BANDS
    )
    write_task(spec, folder)


def write_config(path: Path, data: Path, model: dict, args: argparse.Namespace) -> None:
    def pair(name: str) -> dict[str, str]:
        return {"src": str(data / f"{name}.src"), "tgt": str(data / f"{name}.tgt")}

    config = {
        "data": {"train": pair("train"), "valid": pair("valid"), "test": pair("test")},
        "tokenizer": {"kind": "word", "joint": True},
        "model": model,
        "train": {
            "seed": args.seed,
            "batch_tokens": args.batch_tokens,
            "lr": args.lr,
            "warmup_steps": args.steps // 10,
            "label_smoothing": 0.0,
            "max_epochs": None,
            "max_steps": args.steps,
            "validate_every": args.steps // 4,
            "log_every": max(args.steps // 20, 1),
            "threads": args.threads,
        },
        "decode": {"max_len_a": 2.2, "max_len_b": 10, "batch_size": 100},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def source_length(task: str, source: str) -> int:
    """Symbols of a source; for addition, the digits of each number."""
    symbols = len(source.split())
    return (symbols - 1) // 2 if task in ARITHMETIC else symbols


def evaluate(run_dir: Path, data: Path, task: str) -> dict:
    translator = load_translator(run_dir, device="cpu")
    bands, per_length = {}, {}
    started = time.perf_counter()
    for name in split_names():
        pairs = read_corpus_pairs(data, name)
        sources, references = [s for s, _ in pairs], [t for _, t in pairs]
        outputs = translator.translate(sources, SearchOptions())
        score = accuracy(outputs, references)
        bands[band_label(name)] = {
            "exact": round(score.exact, 4),
            "per_token": round(score.per_token, 4),
            "sentences": score.sentences,
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


def finished(task: str, model: str, args: argparse.Namespace) -> bool:
    return (Path(args.out) / f"{task}-{model}" / "length-results.json").exists()


def run_one(task: str, model: str, args: argparse.Namespace) -> dict:
    out = Path(args.out)
    data = out / "data" / task
    run_dir = out / f"{task}-{model}"
    results = run_dir / "length-results.json"
    if results.exists():
        return json.loads(results.read_text())
    write_data(task, data, args.count, args.test)
    run_dir.mkdir(parents=True, exist_ok=True)
    config_path = run_dir / "config.yaml"
    write_config(config_path, data.resolve(), MODELS[model], args)
    config = load_config(config_path)
    print(f"== {task} × {model}: training {args.steps} updates", flush=True)
    run_training(config, run_dir, resume=read_index(run_dir).get("latest") is not None)
    result = {"task": task, "model": model, **evaluate(run_dir, data, task)}
    results.write_text(json.dumps(result, indent=1) + "\n")
    return result


def print_table(results: list[dict]) -> None:
    labels = [band_label(name) for name in split_names()]
    print(
        "\nExact-sequence accuracy % (per-token % in brackets); training lengths 1-40"
    )
    print(f"\n| task | model | {' | '.join(labels)} | train min |")
    print("|---|---|" + "---|" * (len(labels) + 1))
    for row in results:
        cells = [
            "{:.1f} ({:.1f})".format(
                100 * row["bands"][b]["exact"], 100 * row["bands"][b]["per_token"]
            )
            for b in labels
        ]
        print(
            f"| {row['task']} | {row['model']} | {' | '.join(cells)} "
            f"| {row['train_minutes']:.1f} |"
        )


def plot(results: list[dict], path: Path, bin_width: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(row["task"] for row in results))
    # one colour per model in every panel, whichever models a panel has
    colours = {m: plt.get_cmap("tab10")(i) for i, m in enumerate(MODELS)}
    columns = min(3, len(tasks))
    rows = -(-len(tasks) // columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(4 * columns + 1.6, 3.2 * rows),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for axis in axes.flat[len(tasks) :]:
        axis.set_visible(False)
    for axis, task in zip(axes.flat, tasks, strict=False):
        for row in (r for r in results if r["task"] == task):
            bins: dict[int, list[int]] = {}
            for length, (right, count) in row["per_length"].items():
                start = (int(length) - 1) // bin_width * bin_width + 1
                total = bins.setdefault(start, [0, 0])
                total[0] += right
                total[1] += count
            starts = sorted(bins)
            axis.plot(
                [s + bin_width / 2 for s in starts],
                [100 * bins[s][0] / bins[s][1] for s in starts],
                marker=".",
                color=colours[row["model"]],
                label=row["model"],
            )
        axis.axvline(TRAIN_LENGTHS[1], color="grey", linestyle="--", linewidth=1)
        axis.set_title(task)
        axis.set_xlabel("source length" + (" (digits)" if task in ARITHMETIC else ""))
        axis.set_ylim(-3, 103)
    for row_axes in axes:
        row_axes[0].set_ylabel("exact-sequence accuracy %")
    shown = list(dict.fromkeys(row["model"] for row in results))
    handles = [plt.Line2D([], [], color=colours[m], marker=".", label=m) for m in shown]
    figure.legend(handles=handles, fontsize="small", loc="outside right center")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument(
        "--models", nargs="+", choices=list(MODELS), default=list(MODELS)
    )
    parser.add_argument("--steps", type=int, default=2000, help="updates per run")
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--count", type=int, default=20000, help="training pairs")
    parser.add_argument("--test", type=int, default=200, help="pairs per test set")
    parser.add_argument("--seed", type=int, default=1)
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
    args = parser.parse_args()
    if args.fresh and Path(args.out).exists():
        shutil.rmtree(args.out)
    pairs = [(task, model) for task in args.tasks for model in args.models]
    if args.finished_only:
        pairs = [(t, m) for t, m in pairs if finished(t, m, args)]
    results = [run_one(task, model, args) for task, model in pairs]
    print_table(results)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps({"settings": vars(args), "results": results}, indent=1) + "\n"
    )
    plot(results, Path(args.plot))


if __name__ == "__main__":
    main()
