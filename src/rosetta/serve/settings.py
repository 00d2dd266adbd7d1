"""The server's limits and batching (``rosetta serve`` flags show their
defaults, so this module imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSettings:
    """Limits and batching of ``rosetta serve``; each limit answers a clear 4xx."""

    max_body_bytes: int = 1_000_000  # 413 beyond
    max_sentences: int = 64  # per request; 422 beyond
    max_chars: int = 2_000  # per sentence; 422 beyond
    max_beam: int = 16  # 422 beyond
    batching: bool = True
    max_batch_tokens: int = 4096  # source tokens × beam in one model call
    max_wait_ms: float = 5.0
    max_queue: int = 4096  # sentences waiting; 503 beyond
    workers: int = 1  # batches in the model at once (CPU), each with threads / N
    language_check: bool = True  # say which sources look like another language
