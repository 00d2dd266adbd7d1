"""The HTTP server: ``POST /translate``, ``GET /health``, ``GET /info`` and a page.

``create_app(translator)`` builds a FastAPI application around one loaded
model (the routes, ``rosetta.serve.routes``, read it from the app's state);
``rosetta serve`` runs it on uvicorn. Every request's sentences go
through the ``DynamicBatcher``, so concurrent requests share model calls.
Clients see JSON errors with a message, never a stack trace: 413 for a body
over the limit, 422 for malformed JSON or a value out of range, 503 when the
queue is full, 500 (logged on the server) for anything unexpected. A search
whose controls cannot be met is a 422 where that is known before it runs;
otherwise its hypotheses are marked ``"complete": false``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rosetta import __version__
from rosetta.inference.language_check import LanguageCheck
from rosetta.inference.text_translator import TextTranslator
from rosetta.search.batched import threads_per_worker
from rosetta.serve.batcher import DynamicBatcher
from rosetta.serve.routes import STATIC, Served, routes
from rosetta.serve.schemas import request_error
from rosetta.serve.settings import ServerSettings
from rosetta.serve.translating import translate_group

log = logging.getLogger("rosetta.serve")


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
    app.state.served = Served(translator, settings, check, batcher, model_name)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError):
        detail = [request_error(e) for e in error.errors()]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        log.exception("error while serving %s", request.url.path)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    app.include_router(routes)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
