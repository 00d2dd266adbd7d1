"""``rosetta prepare`` and ``rosetta train``: a YAML config in, a run folder out."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.config import load_config
from rosetta.train.prepare import prepare_data
from rosetta.train.run import run_training


def default_run_dir(config_path: str) -> Path:
    return Path("runs") / Path(config_path).stem


def cmd_prepare(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.set)
    run_dir = Path(args.output or default_run_dir(args.config))
    prepare_data(config, run_dir)
    print(f"prepared: {run_dir}")


def cmd_train(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.set)
    run_dir = Path(args.output or default_run_dir(args.config))
    run_training(config, run_dir, resume=args.resume)
    print(f"model: {run_dir}")


def add_config_verb(
    verbs: argparse._SubParsersAction, name: str, help_text: str
) -> argparse.ArgumentParser:
    verb = verbs.add_parser(name, help=help_text)
    verb.add_argument("config", help="YAML configuration file")
    verb.add_argument("-o", "--output", help="run folder (default runs/CONFIG_NAME)")
    verb.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. train.lr=3e-4",
    )
    return verb


def add_parsers(verbs: argparse._SubParsersAction) -> None:
    prepare = add_config_verb(
        verbs, "prepare", "read the corpora and train the tokenizers"
    )
    prepare.set_defaults(run=cmd_prepare)
    train = add_config_verb(verbs, "train", "train a model")
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue from the run folder's latest checkpoint",
    )
    train.set_defaults(run=cmd_train)
