"""Training in several processes on one machine (``rosetta train --nproc
N``, started by ``torchrun``): what is refused once before they start, how
the launcher hands signals on, and how each process ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from rosetta.config.schema import Config
from rosetta.runtime.atomic import SWAP_SUFFIX

# how torchrun's processes end after a signal stopped them (128 + SIGINT,
# SIGTERM): having saved and said where, or said "interrupted"
STOPPED_BY_SIGNAL = (130, 143)


def wait_for_rank_0() -> None:
    """A process other than rank 0, stopped: rank 0 ends first, having said
    how to continue, and torchrun stops the others when one ends."""
    from rosetta.train.distributed import PEERS_GRACE_S

    time.sleep(PEERS_GRACE_S)


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
    check_resumed_config(meta, config, str(folder))
    training_ranks(meta, folder, processes)


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
