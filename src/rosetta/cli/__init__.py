"""``rosetta prepare | train | translate | distill | evaluate | average | export |
import | serve | plot | languages | score | demo | perplexity | generate | task``.

Each verb lives in its own module: its ``cmd_*`` function and the parser that
calls it. A parser imports only what it shows (``rosetta.cli.flags``), and a
command the code it runs, so that ``--help`` answers without PyTorch.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import json
import os
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

from rosetta.errors import RosettaError, Stopped, one_line, speaks_for_the_run

# the name it is installed by (``pip install rosetta-nmt``): "rosetta" on
# the package index is another project; the package and command stay rosetta
DISTRIBUTION = "rosetta-nmt"


def installed_version() -> str:
    """The installed package's version; a source tree run without installing
    (``PYTHONPATH=src``, as on a GPU machine with no network) has none."""
    # here, not at the top: it takes longer to import than the rest of this
    # module, and Ctrl-C while it loads would come before ``main`` notes it
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "(source tree, not installed)"


class VersionAction(argparse.Action):
    """``--version``, the installed version read only when asked for (the
    package metadata takes longer to read than the parser to build)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        parser.exit(0, f"rosetta {installed_version()}\n")


class DefaultsFormatter(argparse.HelpFormatter):
    """Ends an option's help with its default, unless the help names it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        unset = action.default in (None, False, [], argparse.SUPPRESS)
        if unset or "default" in text or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """Every parser, sub-commands' included, shows its defaults."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """Arguments no parser took are the chosen command's error, with the
        closest of its options (argparse would blame the top-level parser)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            chosen = chosen_parser(self, parsed)
            chosen.error(unrecognized(extras, chosen))
        return parsed

    def error(self, message: str) -> NoReturn:
        """A usage error in one line, with a suggestion for a mistyped
        command or choice and where to read more (argparse would print the
        whole usage first)."""
        said = one_line(with_suggestion(message, self.prog))
        self.exit(2, f"{self.prog}: error: {said}\n")


INVALID_CHOICE = re.compile(
    r"argument (?P<what>\S+): invalid choice: '(?P<given>[^']*)' "
    r"\(choose from (?P<choices>.*)\)"
)


def with_suggestion(message: str, prog: str) -> str:
    """argparse's message for an unknown choice, shortened, with the closest
    choice; other messages with where to read more."""
    found = INVALID_CHOICE.fullmatch(message)
    if found is None:
        return f"{message} (see {prog} --help)"
    choices = re.findall(r"'([^']*)'", found["choices"])
    what = "command" if found["what"] == "verb" else found["what"]
    close = difflib.get_close_matches(found["given"], choices, n=1)
    hint = (
        f"did you mean {close[0]!r}?"
        if close
        else "choose one of " + ", ".join(choices)
    )
    return f"unknown {what} {found['given']!r}: {hint}"


def chosen_parser(
    parser: argparse.ArgumentParser, parsed: argparse.Namespace
) -> argparse.ArgumentParser:
    """The innermost sub-command's parser that ``parsed`` went through."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(parsed, action.dest, None)
            if name in action.choices:
                return chosen_parser(action.choices[name], parsed)
    return parser


def unrecognized(extras: list[str], parser: argparse.ArgumentParser) -> str:
    """What no option of ``parser`` took, with the closest option name."""
    options = [o for a in parser._actions for o in a.option_strings]
    for extra in extras:
        if extra.startswith("-"):
            given = extra.split("=", 1)[0]
            close = difflib.get_close_matches(given, options, n=1, cutoff=0.6)
            if close:
                return f"unknown option {given}: did you mean {close[0]}?"
            return f"unknown option {given}"
    return f"unrecognized arguments: {' '.join(extras)}"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="rosetta", description="Sequence-to-sequence learning for translation."
    )
    parser.add_argument(
        "--version", action=VersionAction, help="show the version and exit"
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    # the verbs import PyTorch: not before a command needs them
    from rosetta.cli import (
        average,
        demo,
        distill,
        evaluate,
        export,
        import_run,
        language_model,
        languages,
        plot,
        score,
        serve,
        task,
        train,
        translate,
    )

    train.add_parsers(verbs)
    for verb in (
        translate,
        distill,
        evaluate,
        average,
        export,
        import_run,
        serve,
        plot,
        languages,
        score,
        demo,
    ):
        verb.add_parser(verbs)
    language_model.add_parsers(verbs)
    task.add_parser(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``rosetta ARGS``: the exit status. An error a user can cause is one
    line on standard error; so is Ctrl-C, at any moment (status 130)."""
    noted: list[bool] = []
    try:
        with interrupts_noted(noted):
            status = run_command(argv, noted)
        if not noted:
            return status
    except BaseException as error:
        # an error raised after Ctrl-C is one the interrupt set off (a module
        # whose import it cut short, then used): the interrupt is what happened
        if not (noted or isinstance(error, KeyboardInterrupt)):
            raise
    if speaks_for_the_run():  # one line for all of torchrun's processes
        print("interrupted", file=sys.stderr)
    return 130


@contextmanager
def interrupts_noted(noted: list[bool]) -> Iterator[None]:
    """Ctrl-C raises ``KeyboardInterrupt`` as Python's own handler does, and
    is noted in ``noted``: where a callback swallowed it, the command ends
    as interrupted all the same. A command that handles signals itself
    (training) puts its handler in place of this one while it runs."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield  # Python's handler is not in place: not ours to replace
        return

    def interrupt(number: int, frame: FrameType | None) -> None:
        noted.append(True)
        if torch_importing():  # raised in PyTorch's C++ import, it aborts
            threading.Thread(target=interrupt_after_import, daemon=True).start()
            return
        raise KeyboardInterrupt

    previous_hook = sys.unraisablehook

    def unraisable(failure: Any) -> None:
        # Ctrl-C that came while Python ran a callback (a module lock's, as
        # an import ends), which cannot raise it: noted, and said at the end
        if not isinstance(failure.exc_value, KeyboardInterrupt):
            previous_hook(failure)

    signal.signal(signal.SIGINT, interrupt)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = previous_hook


def torch_importing() -> bool:
    """Whether a PyTorch module is being imported: a ``KeyboardInterrupt``
    raised in the Python code its C++ calls then ends the process with
    SIGABRT instead of an exception."""
    return any(
        getattr(getattr(module, "__spec__", None), "_initializing", False)
        for name, module in list(sys.modules.items())
        if name == "torch" or name.startswith("torch.")
    )


def interrupt_after_import() -> None:
    """Ctrl-C again, once the import under way has ended."""
    while torch_importing():
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)


def run_command(argv: list[str] | None, noted: list[bool]) -> int:
    """The command ``argv`` names, run; its exit status."""
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(f"rosetta {installed_version()}")  # without importing the verbs
        return 0
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # a usage error (2), or --help and --version (0)
        return stop.code if isinstance(stop.code, int) else 2
    warnings.formatwarning = lambda message, category, *_: f"warning: {message}\n"
    try:
        status = args.run(args)
    except RosettaError as error:
        if noted:  # what the interrupt set off (see main)
            raise
        if not told_the_launcher(str(error)):
            print(f"rosetta {args.verb}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except Stopped as stop:
        print(f"rosetta {args.verb}: {stop}", file=sys.stderr)
        return stop.status
    except BrokenPipeError:  # the reader went away (``| head``): no traceback,
        # and none at exit either, when Python flushes standard output again
        # (an OSError, so caught before the clause below)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as the shell reports it
    except OSError as error:
        if error.errno != errno.ENAMETOOLONG:
            raise
        # a name the file system cannot take, met wherever a path is first
        # looked at: what the user named is wrong, not Rosetta
        name = str(error.filename or "")[-60:]
        print(
            f"rosetta {args.verb}: error: ...{name}: {error.strerror}; choose a "
            "shorter name",
            file=sys.stderr,
        )
        return 2
    return status or 0  # a command returns its status where it said why itself


def told_the_launcher(message: str) -> bool:
    """In one of the processes ``torchrun`` started: ``message`` written to
    the file torchrun reads a failed process's error from, for the launcher
    to say once for all of them (``rosetta.train.distributed.launch``)."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path or int(os.environ.get("WORLD_SIZE", "1")) < 2:
        return False
    record = {"message": message, "timestamp": int(time.time())}
    try:
        with open(path, "w", encoding="utf-8") as file:
            json.dump(record, file)
    except OSError:
        return False
    return True


def command_line() -> NoReturn:
    """``python -m rosetta``: ``main``, then Python's shutdown, where Ctrl-C
    ends the process at once, in one line, as it does in the command."""
    status = main()
    signal.signal(signal.SIGINT, end_at_once)
    sys.exit(status)


def end_at_once(number: int, frame: FrameType | None) -> None:
    if speaks_for_the_run():
        print("interrupted", file=sys.stderr, flush=True)
    os._exit(130)
