"""``rosetta task NAME -o DIR``: a synthetic task as parallel files, and a
configuration ready to train on them."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.flags import add_overwrite_flag
from rosetta.data.synthetic import (
    ARITHMETIC,
    TASKS,
    TaskSpec,
    parse_band,
    write_task,
)
from rosetta.data.task_formats import FORMATS
from rosetta.runtime.atomic import atomic_folder
from rosetta.runtime.limits import Count, Seed, Size, number_flag
from rosetta.runtime.outputs import claim_folder
from rosetta.runtime.resources import refuse_beyond_disk, refuse_beyond_memory

TASK_KIND = "a task written by rosetta task"  # what the folder records it holds


def cmd_task(args: argparse.Namespace) -> None:
    spec = TaskSpec(
        task=args.name,
        lengths=parse_band(args.lengths),
        count=args.count,
        valid=args.valid,
        test=args.test,
        bands=tuple(parse_band(band) for band in args.bands),
        alphabet=list(args.alphabet),
        seed=args.seed,
        operands=args.operands,
        format=args.format,
        hint_range=args.hint_range,
    )
    check_task_fits(spec, Path(args.output))
    output = claim_folder(
        args.output,
        overwrite=args.overwrite,
        what=TASK_KIND,
    )
    with atomic_folder(output, kind=TASK_KIND) as folder:
        counts = write_task(spec, folder)
        (folder / CONFIG_FILE).write_text(ready_config(spec), encoding="utf-8")
    for name, pairs in counts.items():
        print(f"{Path(args.output) / name}.src/.tgt: {pairs} pairs")
    config = Path(args.output) / CONFIG_FILE
    print(f"{config}: train with  rosetta train {config} -o runs/{spec.task}")


def check_task_fits(spec: TaskSpec, output: Path) -> None:
    """Refuse counts whose drawing (every source is held, to keep the
    splits apart) or whose files would not fit, before drawing any."""
    bands = [spec.lengths, spec.lengths, spec.lengths, *spec.bands]
    counts = [spec.count, spec.valid, *[spec.test] * (1 + len(spec.bands))]
    symbols = sum(
        count * side_symbols(spec, (low + high) // 2)
        for count, (low, high) in zip(counts, bands, strict=True)
    )
    pairs = sum(counts)
    # a held source: a tuple (56 bytes, 8 per symbol) and its set entry
    refuse_beyond_memory(120 * pairs + 8 * symbols, f"drawing {pairs:,} pairs")
    # both sides, each symbol and a space, the target about as long
    refuse_beyond_disk(
        4 * symbols + 2 * pairs, output.parent, f"writing {pairs:,} pairs"
    )


CONFIG_FILE = "config.yaml"
# the model the written config trains: small, and ALiBi, the position scheme
# that held on copy and reverse at five times the training length
# how far digit places are shifted in training (abacus positions), written
# into the configuration so that its position table is sized for it here
NUMBER_OFFSET = 100
TASK_MODEL = {
    "arch": "transformer",
    "encoder_layers": 2,
    "decoder_layers": 2,
    "d_model": 128,
    "heads": 4,
    "d_ff": 512,
    "dropout": 0.0,
    "norm": "pre",
    "positions": "alibi",
}


def side_symbols(spec: TaskSpec, length: int) -> int:
    """At most how many symbols one side of a pair of source length
    ``length`` holds: an addition's source two numbers and a sign, a
    duplicate's target twice the source, and index hints double every side."""
    symbols = 2 * length + 1 if spec.task in ARITHMETIC else 2 * length
    return 2 * symbols + 2 if spec.format == "hints" else symbols


def task_model(spec: TaskSpec, longest: int) -> dict:
    """``TASK_MODEL`` with a position table for the longest test pair; for
    ``addition-lsb``, whose digit places are significances, ``abacus-alibi``
    (measured to add at five times the training digits), its table holding
    the longest sum at the largest training offset."""
    model = {**TASK_MODEL, "max_positions": side_symbols(spec, longest) + 2}
    if spec.task == "addition-lsb":
        longest_sum = max(model["max_positions"], NUMBER_OFFSET + longest + 2)
        model |= {
            "positions": "abacus-alibi",
            "number_offset": NUMBER_OFFSET,
            "max_positions": longest_sum,
        }
    return model


def ready_config(spec: TaskSpec) -> str:
    """A configuration that trains on the task as it was written:
    ``TASK_MODEL``, symbols as words, and validation scored by exact-sequence
    accuracy, which also picks the best checkpoint."""
    import yaml

    longest = max(high for _, high in (spec.lengths, *spec.bands))
    config = {
        "data": {
            **{
                split: {"src": f"{split}.src", "tgt": f"{split}.tgt"}
                for split in ("train", "valid", "test")
            },
            # training keeps every pair it was written (with <eos>)
            "max_len": side_symbols(spec, spec.lengths[1]) + 1,
        },
        "tokenizer": {"kind": "word", "joint": True},
        "model": task_model(spec, longest),
        "train": {
            "seed": spec.seed,
            "batch_tokens": 2048,
            "lr": 1e-3,
            "warmup_steps": 200,
            "label_smoothing": 0.0,
            "max_epochs": None,
            "max_steps": 2000,
            "validate_every": 500,
            "log_every": 100,
            "valid_bleu": False,
            "valid_exact": True,
            "early_stopping": {"metric": "exact"},
        },
        "decode": {"max_len_a": 2.2, "max_len_b": 10, "batch_size": 100},
    }
    head = (
        f"# {spec.task}, written by rosetta task: the data beside this file; "
        "test-LOW-HIGH.src/.tgt hold the longer test bands\n"
    )
    return head + yaml.safe_dump(config, sort_keys=False)


def add_parser(verbs: argparse._SubParsersAction) -> None:
    task = verbs.add_parser(
        "task",
        help="write a synthetic task (copy, reverse, sort, duplicate, addition, "
        "addition-lsb, addition-reversed) as train/valid/test parallel files",
    )
    task.add_argument("name", choices=TASKS, help="the task")
    task.add_argument("-o", "--output", required=True, help="folder to write")
    task.add_argument(
        "--lengths", default="1-40", help="source lengths of train, valid and test"
    )
    number_flag(task, "--count", Count, "training pairs", default=10000)
    number_flag(task, "--valid", Size, "validation pairs", default=500)
    number_flag(task, "--test", Size, "pairs per test set", default=500)
    task.add_argument(
        "--bands",
        nargs="*",
        default=["41-80", "81-120", "121-200"],
        help="further test sets at these lengths (none: only the training range)",
    )
    task.add_argument(
        "--alphabet",
        default="abcdefghij",
        help="the symbols, one character each (addition uses digits)",
    )
    number_flag(task, "--seed", Seed, "seed of the draws", default=1)
    task.add_argument(
        "--format",
        choices=FORMATS,
        default="plain",
        help="plain (default); padded: an addition's numbers with leading zeros "
        "to one length, the sum one digit longer; hints: every symbol after an "
        "index hint hK (its place K, or a digit's significance)",
    )
    task.add_argument(
        "--operands",
        choices=("equal", "independent"),
        default="equal",
        help="an addition's two numbers: of one length (default), or each of "
        "its own length in the range",
    )
    number_flag(
        task,
        "--hint-range",
        Count,
        "hints h0 .. hN-1 that training pairs are written with, from a random "
        "offset, so that longer test pairs meet none new",
        default=256,
    )
    add_overwrite_flag(task, "a task written before")
    task.set_defaults(run=cmd_task)
