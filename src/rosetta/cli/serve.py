"""``rosetta serve``: the HTTP API and web page on uvicorn."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rosetta.cli.flags import add_engine_flags, add_models_flags, add_npd_flags
from rosetta.errors import RosettaError
from rosetta.runtime.limits import Count, NonNegative, Port, Size, number_flag
from rosetta.serve.settings import ServerSettings


def cmd_serve(args: argparse.Namespace) -> None:
    import uvicorn

    from rosetta.cli.common import load_translator
    from rosetta.runtime.threads import at_most_cores
    from rosetta.serve.app import create_app

    translator = load_translator(args, args.models, args.ensemble_weights)
    settings = ServerSettings(
        max_body_bytes=args.max_body_bytes,
        max_sentences=args.max_sentences,
        max_chars=args.max_chars,
        max_beam=args.max_beam,
        batching=not args.no_batching,
        max_batch_tokens=args.max_batch_tokens,
        max_wait_ms=args.max_wait_ms,
        max_queue=args.max_queue,
        workers=at_most_cores(args.workers, "--workers"),
        language_check=not args.no_language_check,
    )
    try:
        app = create_app(
            translator,
            settings,
            model_name=" + ".join(Path(m).name for m in args.models),
        )
    except ValueError as error:
        raise RosettaError(str(error)) from None
    print(
        f"serving {' + '.join(args.models)} on http://{args.host}:{args.port}/",
        flush=True,
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=args.graceful_seconds,
    )


def add_setting_flag(
    group: argparse._ArgumentGroup, name: str, kind: Any, meaning: str
) -> None:
    """``--NAME`` for the ``ServerSettings`` field ``name``, with its default."""
    number_flag(
        group,
        f"--{name.replace('_', '-')}",
        kind,
        meaning,
        default=getattr(ServerSettings(), name),
    )


def add_parser(verbs: argparse._SubParsersAction) -> None:
    serve = verbs.add_parser(
        "serve", help="HTTP API and web page (POST /translate, GET /)"
    )
    add_models_flags(serve, "run or checkpoint folder")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (0.0.0.0: all)"
    )
    number_flag(serve, "--port", Port, "TCP port", default=8000)
    add_engine_flags(serve)
    add_npd_flags(serve)
    serve.add_argument(
        "--no-language-check",
        action="store_true",
        help='no "detected_language" for sources that look like another '
        "language than the model's source language",
    )
    limits = serve.add_argument_group("limits (answered with 4xx)")
    for name, meaning in (
        ("max_body_bytes", "largest request body"),
        ("max_sentences", "per request"),
        ("max_chars", "per sentence"),
        ("max_beam", "largest beam size"),
        ("max_queue", "sentences waiting before 503"),
    ):
        add_setting_flag(limits, name, Count, meaning)
    batching = serve.add_argument_group("dynamic batching")
    batching.add_argument(
        "--no-batching", action="store_true", help="run every request alone"
    )
    add_setting_flag(
        batching, "max_batch_tokens", Count, "source tokens × beam in one model call"
    )
    add_setting_flag(
        batching,
        "max_wait_ms",
        NonNegative,
        "how long a batch that is not full waits for more requests",
    )
    add_setting_flag(
        batching,
        "workers",
        Count,
        "batches decoded at once on the CPU, each with threads / N",
    )
    number_flag(
        serve,
        "--graceful-seconds",
        Size,
        "on shutdown, how long requests in flight may take to finish",
        default=30,
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the server log's threshold",
    )
    serve.set_defaults(run=cmd_serve)
