"""``rosetta prepare`` and ``rosetta train``: a YAML config in, a run folder out."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from rosetta.cli.flags import add_threads_flag
from rosetta.config.schema import Config
from rosetta.errors import RosettaError, Stopped, speaks_for_the_run
from rosetta.families import family_of
from rosetta.runs.lock import run_lock
from rosetta.runtime.atomic import SWAP_SUFFIX
from rosetta.runtime.limits import Count, number_flag

# how torchrun's processes end after a signal stopped them (128 + SIGINT,
# SIGTERM): having saved and said where, or said "interrupted"
STOPPED_BY_SIGNAL = (130, 143)


def default_run_dir(config_path: str) -> Path:
    return Path("runs") / Path(config_path).stem


def cmd_prepare(args: argparse.Namespace) -> None:
    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import check_new_run_folder
    from rosetta.runtime.threads import at_most_cores
    from rosetta.train.init import starting_checkpoint, write_starting_tokenizers
    from rosetta.train.prepare import PrepareOptions, require_corpus

    config = load_config(args.config, args.set)
    run_dir = Path(args.output or default_run_dir(args.config))
    check_new_run_folder(run_dir)
    workers = args.workers and at_most_cores(args.workers, "--workers")
    options = PrepareOptions(workers=workers, refresh=True)
    require_corpus(config)
    start = starting_checkpoint(config)
    with run_lock(run_dir):
        check_new_run_folder(run_dir)
        if start is not None:
            write_starting_tokenizers(config, run_dir, *start)
        family_of(config.model).prepare(config, run_dir, print, options)
    print(f"prepared: {run_dir}")


def cmd_train(args: argparse.Namespace) -> int | None:
    from rosetta.jobs.run_config import load_config
    from rosetta.jobs.training import run_training
    from rosetta.runtime.threads import at_most_cores
    from rosetta.train.distributed import PEERS_GRACE_S
    from rosetta.train.init import starting_checkpoint

    if args.threads is not None:  # for every process torchrun starts, too
        args.set.append(f"train.threads={args.threads}")
    if args.init is not None:
        args.set.append(f"train.init={Path(args.init).resolve()}")
    config = load_config(args.config, args.set)
    starting_checkpoint(config)  # a wrong train.init refused before any folder
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
            else:  # rank 0 ends first, having said how to continue: torchrun
                time.sleep(PEERS_GRACE_S)  # stops the others when one ends
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


def end_worker(status: int = 0) -> NoReturn:
    """End a process ``torchrun`` started, once its run is on disk.

    Python's own shutdown after a Gloo group has been used sometimes aborts
    the process (SIGABRT, "terminate called without an active exception",
    raised in native code with no Python frame left, after the group was
    destroyed), which fails a run that has finished. Every file the run
    wrote is already in place (atomic, fsynced), so the process skips that
    shutdown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def check_before_launch(
    config: Config, run_dir: Path, resume: bool, processes: int
) -> None:
    """What each of the processes would refuse, refused once here, before
    torchrun starts them: the run folder, and a resumed run's configuration
    and number of processes; and the corpora, which rank 0 alone reads first."""
    from rosetta.config.reading import config_to_dict
    from rosetta.jobs.training import check_run_folder
    from rosetta.runs import checkpoint as ckpt
    from rosetta.runs.checkpoint import read_index
    from rosetta.train.prepare import require_corpus
    from rosetta.train.resume import check_resumed_config, training_ranks

    check_run_folder(run_dir, resume)
    require_corpus(config)
    latest = resume and read_index(run_dir).get("latest")
    if not latest or any(run_dir.glob(f".*{SWAP_SUFFIX}")):
        return  # a swap stopped midway: rank 0 finishes it, then checks
    folder = ckpt.inside_run(run_dir, latest)
    meta = ckpt.read_meta(folder)
    check_resumed_config(meta, config_to_dict(config), str(folder))
    training_ranks(meta, folder, processes)


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


@contextmanager
def signals_left_to(process: subprocess.Popen) -> Iterator[None]:
    """While torchrun's processes train: Ctrl-C, which the terminal sends to
    every process, is theirs to act on (each saves its update), and SIGTERM
    sent to this process alone is passed on to them."""
    from rosetta.train.interrupt import SIGNALS

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in SIGNALS}
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: process.send_signal(signal.SIGTERM))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


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
