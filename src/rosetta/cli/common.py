"""What several verbs do when they run: input lines read, search options
and workers checked, the translator loaded. Verbs import it inside their
command (it loads PyTorch); their flags are in ``rosetta.cli.flags``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from rosetta.data.corpus import check_no_carriage_return, read_lines
from rosetta.errors import RosettaError, one_line
from rosetta.inference.text_translator import TextTranslator
from rosetta.jobs import loading
from rosetta.jobs.exports import export_format_of
from rosetta.runs import checkpoint as ckpt
from rosetta.runtime.threads import TORCH_DEFAULT, at_most_cores, use_threads
from rosetta.search.batched import Workers, check_workers
from rosetta.search.options import SearchOptions


def read_input_lines(paths: list[str]) -> list[str]:
    """The lines of ``paths``, or of standard input (none, or ``-``)."""
    if not paths or paths == ["-"]:
        try:
            data = sys.stdin.buffer.read()
        except (AttributeError, OSError):  # no standard input at all
            raise RosettaError(
                "<stdin>: standard input is closed; give the input with -i FILE"
            ) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RosettaError(
                f"<stdin>: invalid UTF-8 at byte {error.start}"
            ) from None
        # Only "\n" (and "\r\n") ends a line: str.splitlines() would also split
        # on U+2028, form feeds and others, breaking one-output-per-input-line.
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        lines = [line.removesuffix("\r") for line in lines]
        for number, line in enumerate(lines, start=1):
            check_no_carriage_return(line, "<stdin>", number)
        return lines
    return [line for path in paths for _, line in read_lines(Path(path))]


def search_options(args: argparse.Namespace, **extra: object) -> SearchOptions:
    """The ``SearchOptions`` of the search flags (``add_search_flags``) and
    ``extra``; a flag not given keeps the options' default. A bad value is a
    ``RosettaError`` (which the command line prefixes with the command),
    before any work."""
    given = {
        field.name: getattr(args, field.name)
        for field in fields(SearchOptions)
        if getattr(args, field.name, None) is not None
    }
    if "ban" in given:
        given["ban"] = tuple(given["ban"])
    try:
        return SearchOptions(**(given | extra))
    except ValueError as error:
        # the options' field names, as the command line spells them
        raise RosettaError(str(error).replace("beam_size", "--beam")) from None


def decoding_workers(
    args: argparse.Namespace, translator: TextTranslator, options: SearchOptions
) -> Workers:
    """``--workers``, checked against the search and the device.

    With ``--threads`` and ``--workers`` both ``auto``, a translator that
    decodes in workers gets one one-thread worker per core, whatever else the
    machine runs: workers never wait on each other, as the threads of one
    operation do, so they keep every core this process is given busy.
    """
    try:
        check_workers(args.workers, options, translator.device)
    except ValueError as error:
        raise RosettaError(str(error)) from None
    every_core = (
        args.workers == "auto"
        and args.threads is None
        and translator.decodes_in_workers
        and translator.device.type == "cpu"
        and not options.sample
    )
    if every_core:
        return TORCH_DEFAULT
    workers = args.workers
    return workers if workers == "auto" else at_most_cores(workers, "--workers")


def compile_setting(args: argparse.Namespace) -> bool | str:
    """``--compile``: auto, or true/false as booleans."""
    setting = getattr(args, "compiled", "auto")
    return setting if setting == "auto" else setting == "true"


def say_chosen(side: str, typed: str, chosen: str | None) -> None:
    """On stderr, the model's code a language as typed stood for, where the
    two differ: ``source language: de is deu_Latn (German)``."""
    from rosetta.inference.language_codes import name_of

    if chosen is not None and chosen != typed:
        name = name_of(chosen)
        named = f" ({name})" if name else ""
        print(f"{side} language: {typed} is {chosen}{named}", file=sys.stderr)


def load_translator(
    args: argparse.Namespace,
    paths: list[str],
    weights: list[float] | None = None,
) -> TextTranslator:
    """The translator of the model at ``paths`` (more than one: their
    ensemble, weighted by ``weights``) run by ``--engine`` (with ``--npd``
    and ``--teacher``: rescored by the teacher); says on stderr which
    checkpoint of a run it loads."""
    use_threads(args.threads)
    chosen = [chosen_model(Path(path), args.engine) for path in paths]
    engines = {engine for _, engine in chosen}
    engine = engines.pop() if len(engines) == 1 else "mixed"
    if len(chosen) > 1 or weights is not None:
        if engine != "rosetta":
            raise RosettaError(
                "an ensemble decodes in Rosetta's engine: give runs or "
                "checkpoints, with --engine rosetta"
            )
        where: Path | list[Path] = [model for model, _ in chosen]
    else:
        where = chosen[0][0]
    translator = loading.load_translator(
        where,
        device=args.device,
        precision=args.precision,
        engine=engine,
        compiled=compile_setting(args),
        **({} if weights is None else {"weights": weights}),
    )
    if (typed := getattr(args, "source_lang", None)) is not None:
        translator = translator.from_language(typed)
        say_chosen("source", typed, translator.source_language)
    if (typed := args.target_lang) is not None:
        translator = translator.for_language(typed)
        say_chosen("target", typed, translator.target_language)
    npd, teacher = getattr(args, "npd", 0), getattr(args, "teacher", None)
    if not (npd or teacher):
        return translator
    if not translator.one_pass:
        raise RosettaError("--npd and --teacher go with a NAT model (arch nat)")
    if not (npd and teacher):
        raise RosettaError("noisy parallel decoding needs both --npd and --teacher")
    teacher_folder, reason = ckpt.choose_checkpoint(Path(teacher))
    print(f"teacher: {teacher_folder} ({reason})", file=sys.stderr)
    scorer = loading.load_translator(
        teacher_folder,
        device=translator.device,
        precision=args.precision,
        compiled=compile_setting(args),
    )
    return translator.rescored_by(scorer, npd)


def chosen_model(model: Path, engine: str) -> tuple[Path, str]:
    """What ``-m`` names: a run's checkpoint (which one, said on stderr), or
    an export with the engine that runs it."""
    export = export_format_of(model)
    if export is None:  # a run or checkpoint, not an export
        model, reason = ckpt.choose_checkpoint(model)
        print(f"model: {one_line(model)} ({reason})", file=sys.stderr)
    elif engine == "rosetta":  # an export: its own engine, or none here
        if export.load is None:
            raise RosettaError(
                f"{model}: {export.kind}, which Rosetta does not decode; import "
                f"it first: rosetta import hf {model} -o RUN"
            )
        engine = export.name
        print(
            f"model: {one_line(model)} ({export.kind}: --engine {engine})",
            file=sys.stderr,
        )
    return model, engine
