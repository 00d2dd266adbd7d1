"""Dynamic batching: concurrent requests share one model call.

Requests wait in a queue. While the model is busy with one batch, the next
requests gather; when it is free, the batcher takes every waiting request with
the same search options, up to a token budget, and, if the budget is not yet
full, waits at most ``max_wait_ms`` for more. So an idle server answers one
request at once, and a loaded one runs large batches, which is where a CPU or
GPU does most work per second.

The model runs in worker threads, one batch each at a time (one worker by
default; ``workers`` > 1 runs that many batches at once, which on a CPU with
as many cores serves more sentences per second than one batch on all of them,
as the load benchmark measures); the event loop only collects requests and
hands back results.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

# Runs a group of sentences that share options; returns one result per sentence.
# A sentence is whatever the server queues for it (its source token ids).
RunBatch = Callable[[list[Any], Any], list[Any]]


class QueueFull(Exception):
    """More sentences are waiting than the server accepts."""


@dataclass
class _Job:
    sentences: list[Any]
    options: Any
    key: tuple[str, Hashable]  # jobs with equal keys may share a model call
    cost: int  # source tokens × beam: what the batch budget counts
    future: asyncio.Future[list[Any]] = field(repr=False)


@dataclass
class BatcherStats:
    """What the batcher has done, for ``/info`` and the load benchmark."""

    requests: int = 0
    sentences: int = 0
    model_calls: int = 0
    largest_call: int = 0  # sentences in the largest model call


class DynamicBatcher:
    """Groups concurrent requests into model calls.

    Args:
        run: does the model work for one group (called in a worker thread).
        enabled: False runs every request alone (the baseline it is measured
            against).
        max_tokens: budget of one call, in source tokens × beam size; a single
            request larger than this still runs, alone.
        max_wait_ms: how long a call that is not full waits for more requests.
        max_queue: sentences allowed to wait; beyond it ``submit`` raises
            ``QueueFull`` (the server answers 503).
        workers: groups that may be in the model at once, each in its own
            thread.
    """

    def __init__(
        self,
        run: RunBatch,
        *,
        enabled: bool = True,
        max_tokens: int = 4096,
        max_wait_ms: float = 5.0,
        max_queue: int = 4096,
        workers: int = 1,
    ):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._run = run
        self.enabled = enabled
        self.max_tokens = max_tokens
        self.max_wait = max_wait_ms / 1000
        self.max_queue = max_queue
        self.stats = BatcherStats()
        self._waiting: list[_Job] = []
        self._arrived: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.workers = workers
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="rosetta-model")
        self._unique = itertools.count()
        self._running: set[asyncio.Task[None]] = set()  # groups in the model
        self._worker_free: asyncio.Event | None = None

    async def start(self) -> None:
        self._arrived = asyncio.Event()
        self._worker_free = asyncio.Event()
        self._task = asyncio.create_task(self._serve_forever())

    async def stop(self) -> None:
        """Finish every waiting and running request, then stop the worker."""
        while self._live_jobs() or self._running:
            await asyncio.sleep(0.01)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._executor.shutdown(wait=True)

    @property
    def waiting_sentences(self) -> int:
        return sum(len(job.sentences) for job in self._live_jobs())

    def _live_jobs(self) -> list[_Job]:
        """The waiting jobs, less those whose requester has gone: a cancelled
        ``submit`` (the client disconnected) never reaches the model."""
        self._waiting = [job for job in self._waiting if not job.future.done()]
        return self._waiting

    async def submit(
        self, sentences: list[Any], options: Any, key: Hashable | None, cost: int
    ) -> list[Any]:
        """Queue a request; its results, one per sentence, once its batch has run.

        ``key`` None means the request must run on its own (a seeded sample,
        whose draws depend on what else is in the batch).
        """
        if self._arrived is None:
            raise RuntimeError("the batcher has not been started")
        if self.waiting_sentences + len(sentences) > self.max_queue:
            raise QueueFull(f"{self.waiting_sentences} sentences already waiting")
        key = ("alone", next(self._unique)) if key is None else ("shared", key)
        if not self.enabled:
            key = ("alone", next(self._unique))
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(_Job(sentences, options, key, cost, future))
        self.stats.requests += 1
        self._arrived.set()
        return await future

    def _take_group(self) -> list[_Job]:
        """The oldest job and the waiting jobs that fit its call, in arrival
        order (none if every waiting job was cancelled)."""
        if not self._live_jobs():
            return []
        first = self._waiting[0]
        group, budget = [], self.max_tokens
        for job in self._waiting:
            if job.key != first.key:
                continue
            if group and job.cost > budget:
                break
            group.append(job)
            budget -= job.cost
        for job in group:
            self._waiting.remove(job)
        return group

    def _group_cost(self, first: _Job) -> int:
        return sum(job.cost for job in self._waiting if job.key == first.key)

    async def _serve_forever(self) -> None:
        assert self._arrived is not None and self._worker_free is not None
        loop = asyncio.get_running_loop()
        while True:
            while len(self._running) >= self.workers:  # every worker is busy
                self._worker_free.clear()
                await self._worker_free.wait()
            while not self._live_jobs():
                self._arrived.clear()
                await self._arrived.wait()
            first = self._waiting[0]
            deadline = loop.time() + self.max_wait
            # A call that is not full waits a moment for company.
            while (
                self.enabled
                and first.key[0] != "alone"
                and self._group_cost(first) < self.max_tokens
                and (remaining := deadline - loop.time()) > 0
            ):
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), remaining)
                except TimeoutError:
                    break
            group = self._take_group()
            if not group:
                continue
            task = asyncio.create_task(self._run_group(group))
            self._running.add(task)
            task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        assert self._worker_free is not None
        self._worker_free.set()

    async def _run_group(self, group: list[_Job]) -> None:
        sentences = [s for job in group for s in job.sentences]
        self.stats.model_calls += 1
        self.stats.sentences += len(sentences)
        self.stats.largest_call = max(self.stats.largest_call, len(sentences))
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(
                self._executor, self._run, sentences, group[0].options
            )
        except Exception as error:  # handed to each request; the server logs it
            for job in group:
                if not job.future.done():
                    job.future.set_exception(error)
            return
        start = 0
        for job in group:
            end = start + len(job.sentences)
            if not job.future.done():  # a client that went away is skipped
                job.future.set_result(results[start:end])
            start = end
