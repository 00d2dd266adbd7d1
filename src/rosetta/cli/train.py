"""``rosetta prepare`` and ``rosetta train``: a YAML config in, a run folder out."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from rosetta.cli.flags import add_threads_flag
from rosetta.errors import RosettaError, Stopped, speaks_for_the_run
from rosetta.runtime.limits import Count, number_flag


def default_run_dir(config_path: str) -> Path:
    return Path("runs") / Path(config_path).stem


def cmd_prepare(args: argparse.Namespace) -> None:
    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import prepare_run
    from rosetta.runtime.threads import at_most_cores

    config = load_config(args.config, args.set)
    run_dir = Path(args.output or default_run_dir(args.config))
    workers = args.workers and at_most_cores(args.workers, "--workers")
    prepare_run(config, run_dir, workers)
    print(f"prepared: {run_dir}")


def cmd_train(args: argparse.Namespace) -> int | None:
    from rosetta.jobs.processes import check_before_launch, end_worker, wait_for_rank_0
    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import check_start, run_training
    from rosetta.runtime.threads import at_most_cores

    if args.threads is not None:  # for every process torchrun starts, too
        args.set.append(f"train.threads={args.threads}")
    if args.init is not None:
        args.set.append(f"train.init={Path(args.init).resolve()}")
    config = load_config(args.config, args.set)
    check_start(config)  # a wrong train.init refused before any folder
    run_dir = Path(args.output or default_run_dir(args.config))
    if args.nproc > 1:
        args.nproc = at_most_cores(args.nproc, "--nproc")
    if args.nproc > 1:
        check_before_launch(config, run_dir, args.resume, args.nproc)
        return launch_processes(args, run_dir)  # rank 0 says where the model is
    try:
        run_training(config, run_dir, resume=args.resume)
    except Stopped as stop:
        again = resume_command(args, run_dir)
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # one of torchrun's
            if speaks_for_the_run():
                print(
                    f"rosetta train: {stop}; continue with:\n  {again}", file=sys.stderr
                )
            else:  # rank 0 ends first, having said how to continue
                wait_for_rank_0()
            end_worker(stop.status)
        raise Stopped(f"{stop}; continue with:\n  {again}", stop.status) from None
    if speaks_for_the_run():
        print(f"model: {run_dir}")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        end_worker()


def resume_command(args: argparse.Namespace, run_dir: Path) -> str:
    """The command line that continues this training where it stopped."""
    overrides = [flag for value in args.set for flag in ("--set", value)]
    nproc = int(os.environ.get("WORLD_SIZE", args.nproc))  # torchrun's, inside
    processes = ["--nproc", str(nproc)] if nproc > 1 else []
    command = ["rosetta", "train", args.config, "-o", str(run_dir), *overrides]
    return shlex.join([*command, *processes, "--resume"])


def launch_processes(args: argparse.Namespace, run_dir: Path) -> int:
    """``rosetta train --nproc N``: this command again in N processes on this
    machine, started by ``torchrun`` (PyTorch's launcher), which stops them
    all when one fails; the exit status."""
    if "WORLD_SIZE" in os.environ:
        raise RosettaError("--nproc: torchrun has already started the processes")
    overrides = [flag for value in args.set for flag in ("--set", value)]
    command = [
        sys.executable,
        "-m",
        "rosetta.train.distributed",  # torchrun, quiet where a process failed
        "--standalone",
        f"--nproc-per-node={args.nproc}",
        "-m",
        "rosetta.cli",
        "train",
        args.config,
        "-o",
        str(run_dir),
        *overrides,
        *(["--resume"] if args.resume else []),
    ]
    # A process killed by a signal (an abort in native code) then prints the
    # Python stack it was in; torchrun alone would report only the signal.
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    from rosetta.jobs.processes import STOPPED_BY_SIGNAL, signals_left_to

    process = subprocess.Popen(command, env=env)
    with signals_left_to(process):
        status = process.wait()
    if status == 2:  # a refusal, which the launcher has said once
        return 2
    if status in STOPPED_BY_SIGNAL:  # rank 0 said where it stopped, or
        return status  # "interrupted" if it had not started training
    if status:
        raise RosettaError(
            f"training in {args.nproc} processes stopped (exit status {status}); "
            "the checkpoints written so far are kept; continue with:\n  "
            + resume_command(args, run_dir)
        )
    return 0


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
        verbs,
        "prepare",
        "train the tokenizers and encode the corpora into the run's token store",
    )
    number_flag(
        prepare,
        "--workers",
        Count,
        "threads that encode the corpora (default: every core)",
    )
    prepare.set_defaults(run=cmd_prepare)
    train = add_config_verb(verbs, "train", "train a model")
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue from the run folder's latest checkpoint",
    )
    train.add_argument(
        "--init",
        metavar="RUN",
        help="start from RUN's weights and tokenizers (a run, a checkpoint or an "
        "imported model) with a fresh optimizer: fine-tuning (train.init)",
    )
    number_flag(
        train,
        "--nproc",
        Count,
        "training processes on this machine (data-parallel, through "
        "torchrun); each runs its share of every update's batches",
        default=1,
    )
    add_threads_flag(train)
    train.set_defaults(run=cmd_train)
