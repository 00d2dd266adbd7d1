"""The server's routes: ``POST /translate``, ``GET /health``, ``GET /info``
and the page. Each reads what ``create_app`` set up (``Served``, the app's
``state.served``): the translator, the settings, the language check and the
batcher that every request's sentences go through."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from rosetta.config.reading import config_to_dict
from rosetta.errors import RosettaError
from rosetta.inference.language_check import LanguageCheck
from rosetta.inference.text_translator import TextTranslator
from rosetta.serve.batcher import DynamicBatcher, QueueFull
from rosetta.serve.schemas import Health, Info, TranslateRequest, TranslateResponse
from rosetta.serve.settings import ServerSettings
from rosetta.serve.translating import GroupItem, for_languages, request_constraints

DISCONNECT_POLL_S = 0.05  # how often a waiting request checks its client
STATIC = Path(str(resources.files("rosetta.serve") / "static"))

routes = APIRouter()


@dataclass(frozen=True)
class Served:
    """What the routes serve: one model, under the server's settings."""

    translator: TextTranslator
    settings: ServerSettings
    check: LanguageCheck
    batcher: DynamicBatcher
    model_name: str


def served(http: Request) -> Served:
    return http.app.state.served


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


@routes.post("/translate", response_model=TranslateResponse)
async def translate(request: TranslateRequest, http: Request) -> Any:
    """Translate sentences; each gets its n-best list, best first."""
    started = time.perf_counter()
    server = served(http)
    refused = _check_limits(request, server.settings)
    if refused is not None:
        return refused
    try:
        chosen = for_languages(server.translator, request)
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
        submitted = server.batcher.submit(items, asked, key, cost)
        results = await _unless_gone(http, submitted)
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
    detected = server.check.detected(request.sentences, chosen.chosen_source)
    translations = [
        {"source": source, "detected_language": found, "hypotheses": hypotheses}
        for source, found, hypotheses in zip(
            request.sentences, detected, results, strict=True
        )
    ]
    elapsed_ms = (time.perf_counter() - started) * 1000
    return {"translations": translations, "elapsed_ms": elapsed_ms}


@routes.get("/health", response_model=Health)
async def health() -> Any:
    """Liveness: the model is loaded and the server answers."""
    return {"status": "ok"}


@routes.get("/info", response_model=Info)
async def info(http: Request) -> Any:
    """The model, its languages and configuration, and the server's limits."""
    server = served(http)
    translator, settings = server.translator, server.settings
    config = translator.config
    saved = config_to_dict(config)
    stats = server.batcher.stats
    return {
        "model": server.model_name,
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


@routes.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(STATIC / "index.html")
