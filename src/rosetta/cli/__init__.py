"""``rosetta prepare | train | translate | distill | evaluate | average | export |
serve | plot | perplexity | generate | task``.

Each verb lives in its own module: its ``cmd_*`` function and the parser that
calls it.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import NoReturn

from rosetta.errors import RosettaError, Stopped


def installed_version() -> str:
    """The installed package's version; a source tree run without installing
    (``PYTHONPATH=src``, as on a GPU machine with no network) has none."""
    try:
        return version("rosetta")
    except PackageNotFoundError:
        return "(source tree, not installed)"


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
        self.exit(2, f"{self.prog}: error: {with_suggestion(message, self.prog)}\n")


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
        "--version", action="version", version=f"rosetta {installed_version()}"
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    # the verbs import PyTorch: not before a command needs them
    from rosetta.cli import (
        average,
        distill,
        evaluate,
        export,
        import_run,
        language_model,
        plot,
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
    ):
        verb.add_parser(verbs)
    language_model.add_parsers(verbs)
    task.add_parser(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(f"rosetta {installed_version()}")  # without importing the verbs
        return 0
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # a usage error (2), or --help and --version (0)
        return stop.code if isinstance(stop.code, int) else 2
    warnings.formatwarning = lambda message, category, *_: f"warning: {message}\n"
    try:
        args.run(args)
    except RosettaError as error:
        print(f"rosetta {args.verb}: error: {error}", file=sys.stderr)
        return 2
    except Stopped as stop:
        print(f"rosetta {args.verb}: {stop}", file=sys.stderr)
        return stop.status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): no traceback,
        # and none at exit either, when Python flushes standard output again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as the shell reports it
    return 0
