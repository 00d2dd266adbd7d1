"""The HTTP server: ``POST /translate``, ``GET /health``, ``GET /info`` and a page.

``create_app(translator)`` builds a FastAPI application around one loaded
model; ``rosetta serve`` runs it on uvicorn. Every request's sentences go
through the ``DynamicBatcher``, so concurrent requests share model calls.
Clients see JSON errors with a message, never a stack trace: 413 for a body
over the limit, 422 for malformed JSON or a value out of range, 503 when the
queue is full, 500 (logged on the server) for anything unexpected. A search
whose controls cannot be met is a 422 where that is known before it runs;
otherwise its hypotheses are marked ``"complete": false``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rosetta import __version__
from rosetta.config.reading import config_to_dict
from rosetta.errors import RosettaError
from rosetta.inference.language_check import LanguageCheck
from rosetta.inference.text_translator import TextTranslator
from rosetta.search.batched import threads_per_worker
from rosetta.serve.batcher import DynamicBatcher, QueueFull
from rosetta.serve.schemas import (
    Health,
    Info,
    TranslateRequest,
    TranslateResponse,
    request_error,
)
from rosetta.serve.settings import ServerSettings
from rosetta.serve.translating import (
    GroupItem,
    for_languages,
    request_constraints,
    translate_group,
)

log = logging.getLogger("rosetta.serve")
DISCONNECT_POLL_S = 0.05  # how often a waiting request checks its client
STATIC = Path(str(resources.files("rosetta.serve") / "static"))


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` gets 413.

    It checks the declared Content-Length first, then reads the body itself,
    counting what actually arrives, so a chunked upload cannot slip past the
    limit; a body within it is handed on unchanged.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await self._too_large(send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # waits for a disconnect
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        response = JSONResponse(
            {"detail": f"request body larger than {self.max_bytes} bytes"}, 413
        )
        await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def _unprocessable(field: str, message: str) -> JSONResponse:
    """A 422 shaped like FastAPI's own validation errors."""
    detail = [{"loc": ["body", field], "msg": message, "type": "value_error"}]
    return JSONResponse({"detail": detail}, status_code=422)


def _check_limits(
    request: TranslateRequest, limits: ServerSettings
) -> JSONResponse | None:
    if len(request.sentences) > limits.max_sentences:
        return _unprocessable(
            "sentences",
            f"{len(request.sentences)} sentences; at most {limits.max_sentences} "
            "per request",
        )
    for number, sentence in enumerate(request.sentences):
        if len(sentence) > limits.max_chars:
            return _unprocessable(
                "sentences",
                f"sentence {number} has {len(sentence)} characters; at most "
                f"{limits.max_chars}",
            )
    if request.beam_size > limits.max_beam:
        return _unprocessable(
            "beam_size", f"beam size {request.beam_size}; at most {limits.max_beam}"
        )
    return None


class ClientGone(Exception):
    """The client disconnected before its translations were ready."""


async def _unless_gone(http: Request, work: Awaitable[Any]) -> Any:
    """``work``'s result; if the client disconnects first, ``work`` is
    cancelled (a request still waiting never reaches the model) and
    ``ClientGone`` raised."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
        if done:
            return task.result()
        if await http.is_disconnected():
            task.cancel()
            raise ClientGone


def create_app(
    translator: TextTranslator,
    settings: ServerSettings | None = None,
    model_name: str = "model",
) -> FastAPI:
    """A FastAPI application serving ``translator``."""
    settings = settings or ServerSettings()
    check = LanguageCheck(settings.language_check)
    check.expect(translator.expected_source)
    if note := check.off_note():
        log.warning(note)
    if settings.workers > 1 and translator.device.type != "cpu":
        raise ValueError("parallel workers are for the CPU; a GPU runs one batch")
    if settings.workers > 1 and not translator.decodes_in_workers:
        raise ValueError("a compiled decoding step runs one batch at a time: workers 1")
    batcher = DynamicBatcher(
        lambda items, options: translate_group(translator, items, options),
        enabled=settings.batching,
        max_tokens=settings.max_batch_tokens,
        max_wait_ms=settings.max_wait_ms,
        max_queue=settings.max_queue,
        workers=settings.workers,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with threads_per_worker(settings.workers):  # torch's threads shared out
            await batcher.start()
            yield
            await batcher.stop()  # uvicorn has let requests in flight finish

    app = FastAPI(
        title="Rosetta translation server",
        version=__version__,
        description="Neural machine translation with a Rosetta model.",
        lifespan=lifespan,
    )
    app.state.batcher = batcher
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError):
        detail = [request_error(e) for e in error.errors()]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        log.exception("error while serving %s", request.url.path)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    @app.post("/translate", response_model=TranslateResponse)
    async def translate(request: TranslateRequest, http: Request) -> Any:
        """Translate sentences; each gets its n-best list, best first."""
        started = time.perf_counter()
        refused = _check_limits(request, settings)
        if refused is not None:
            return refused
        try:
            chosen = for_languages(translator, request)
        except RosettaError as error:
            return _unprocessable("languages", str(error))
        try:
            options = chosen.complete(request.search_options())
            sources = [chosen.encode(sentence) for sentence in request.sentences]
            chosen.check_meetable(sources, options)  # this request's alone
        except (ValueError, RosettaError) as error:
            return _unprocessable("options", str(error))
        try:
            wanted = request_constraints(chosen, request, sources, options)
        except (ValueError, RosettaError) as error:
            return _unprocessable("constraints", str(error))
        cost = sum(len(ids) + 1 for ids in sources) * options.beam_size
        asked = (options, request.alignment)  # what a shared model call runs
        key = None if options.sample and options.seed is not None else asked
        target = chosen.chosen_target if chosen.tags_both_sides else None
        items = [
            GroupItem(ids, constraint, text, target)
            for ids, constraint, text in zip(
                sources, wanted, request.sentences, strict=True
            )
        ]
        try:
            results = await _unless_gone(http, batcher.submit(items, asked, key, cost))
        except ClientGone:
            return Response(status_code=499)  # nginx's "client closed request"
        except QueueFull as error:
            return JSONResponse(
                {"detail": f"server busy ({error}); retry later"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
        except (RosettaError, ValueError) as error:  # options the engine refuses
            return _unprocessable("options", str(error))
        detected = check.detected(request.sentences, chosen.chosen_source)
        translations = [
            {"source": source, "detected_language": found, "hypotheses": hypotheses}
            for source, found, hypotheses in zip(
                request.sentences, detected, results, strict=True
            )
        ]
        elapsed_ms = (time.perf_counter() - started) * 1000
        return {"translations": translations, "elapsed_ms": elapsed_ms}

    @app.get("/health", response_model=Health)
    async def health() -> Any:
        """Liveness: the model is loaded and the server answers."""
        return {"status": "ok"}

    @app.get("/info", response_model=Info)
    async def info() -> Any:
        """The model, its languages and configuration, and the server's limits."""
        config = translator.config
        saved = config_to_dict(config)
        stats = batcher.stats
        return {
            "model": model_name,
            "engine": translator.engine,
            "arch": config.model.arch,
            "one_pass": translator.one_pass,
            "src_lang": config.data.src_lang,
            "tgt_lang": config.data.tgt_lang,
            "src_label": translator.language_label("source"),
            "tgt_label": translator.language_label("target"),
            "languages": {
                "source": translator.source_languages,
                "target": translator.target_languages,
                "source_default": translator.chosen_source,
                "target_default": translator.chosen_target,
            },
            "parameters": translator.parameter_count,
            "vocabulary": {
                "src": len(translator.tokenizers.src),
                "tgt": len(translator.tokenizers.tgt),
            },
            "device": str(translator.device),
            "precision": translator.precision,
            "config": {key: saved[key] for key in ("model", "tokenizer", "decode")},
            "limits": {
                "max_body_bytes": settings.max_body_bytes,
                "max_sentences": settings.max_sentences,
                "max_chars": settings.max_chars,
                "max_beam": settings.max_beam,
                "max_queue": settings.max_queue,
            },
            "batching": {
                "enabled": settings.batching,
                "max_batch_tokens": settings.max_batch_tokens,
                "max_wait_ms": settings.max_wait_ms,
                "workers": settings.workers,
                "requests": stats.requests,
                "sentences": stats.sentences,
                "model_calls": stats.model_calls,
                "largest_call": stats.largest_call,
            },
        }

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
