"""Dynamic batching: what shares a model call, what does not, and what comes back."""

import asyncio
import threading
import time

import pytest

from rosetta.serve.batcher import DynamicBatcher, QueueFull


class RecordingModel:
    """Stands in for the model: records each call; can hold the first one."""

    def __init__(self, hold_first: bool = False, fail: bool = False):
        self.calls: list[tuple[list[str], object]] = []
        self.release = threading.Event()
        if not hold_first:
            self.release.set()
        self.fail = fail

    def __call__(self, sentences, options):
        self.calls.append((list(sentences), options))
        self.release.wait(5)
        if self.fail:
            raise RuntimeError("model failed")
        return [f"{options}:{s.upper()}" for s in sentences]


def run(coroutine):
    return asyncio.run(coroutine)


async def started(model, **settings):
    batcher = DynamicBatcher(model, **settings)
    await batcher.start()
    return batcher


async def submit_while_busy(batcher, model, jobs):
    """Occupy the model with a first request, queue ``jobs``, then release it."""
    first = asyncio.create_task(batcher.submit(["first"], "greedy", "greedy", 1))
    while not model.calls:
        await asyncio.sleep(0.001)
    tasks = [
        asyncio.create_task(batcher.submit(sentences, options, key, cost))
        for sentences, options, key, cost in jobs
    ]
    await asyncio.sleep(0.05)  # all of them are waiting now
    model.release.set()
    results = await asyncio.gather(first, *tasks)
    await batcher.stop()
    return results[1:]


def test_requests_waiting_together_share_one_call_and_get_their_own_results():
    async def scenario():
        model = RecordingModel(hold_first=True)
        batcher = await started(model, max_wait_ms=0)
        jobs = [([f"s{i}", f"t{i}"], "greedy", "greedy", 4) for i in range(10)]
        results = await submit_while_busy(batcher, model, jobs)
        return model, batcher, results

    model, batcher, results = run(scenario())
    assert results == [[f"greedy:S{i}", f"greedy:T{i}"] for i in range(10)]
    assert [len(sentences) for sentences, _ in model.calls] == [1, 20]
    assert batcher.stats.model_calls == 2
    assert batcher.stats.largest_call == 20
    assert batcher.stats.requests == 11


def test_without_batching_every_request_runs_alone():
    async def scenario():
        model = RecordingModel(hold_first=True)
        batcher = await started(model, enabled=False)
        jobs = [([f"s{i}"], "greedy", "greedy", 2) for i in range(5)]
        return model, await submit_while_busy(batcher, model, jobs)

    model, results = run(scenario())
    assert results == [[f"greedy:S{i}"] for i in range(5)]
    assert [len(sentences) for sentences, _ in model.calls] == [1] * 6


def test_different_options_never_share_a_call():
    async def scenario():
        model = RecordingModel(hold_first=True)
        batcher = await started(model, max_wait_ms=0)
        jobs = [
            (["a"], "greedy", "greedy", 1),
            (["b"], "beam5", "beam5", 5),
            (["c"], "greedy", "greedy", 1),
            (["d"], "beam5", "beam5", 5),
        ]
        return model, await submit_while_busy(batcher, model, jobs)

    model, results = run(scenario())
    assert results == [["greedy:A"], ["beam5:B"], ["greedy:C"], ["beam5:D"]]
    calls = [(sentences, options) for sentences, options in model.calls[1:]]
    assert sorted(calls) == [(["a", "c"], "greedy"), (["b", "d"], "beam5")]


def test_the_token_budget_splits_calls_and_a_large_request_still_runs():
    async def scenario():
        model = RecordingModel(hold_first=True)
        batcher = await started(model, max_tokens=10, max_wait_ms=0)
        jobs = [([f"s{i}"], "g", "g", 4) for i in range(5)] + [(["big"], "g", "g", 50)]
        return model, await submit_while_busy(batcher, model, jobs)

    model, results = run(scenario())
    assert results[-1] == ["g:BIG"]
    assert [sentences for sentences, _ in model.calls[1:]] == [
        ["s0", "s1"],
        ["s2", "s3"],
        ["s4"],
        ["big"],
    ]


def test_a_request_without_key_runs_alone():
    async def scenario():
        model = RecordingModel(hold_first=True)
        batcher = await started(model, max_wait_ms=0)
        jobs = [(["a"], "seeded", None, 1), (["b"], "seeded", None, 1)]
        return model, await submit_while_busy(batcher, model, jobs)

    model, results = run(scenario())
    assert results == [["seeded:A"], ["seeded:B"]]
    assert [sentences for sentences, _ in model.calls[1:]] == [["a"], ["b"]]


def test_an_idle_batcher_waits_at_most_max_wait_for_company():
    async def scenario():
        batcher = await started(RecordingModel(), max_wait_ms=200)
        began = time.perf_counter()
        await batcher.submit(["a"], "g", "g", 1)
        waited = time.perf_counter() - began
        await batcher.stop()
        return waited

    assert 0.15 < run(scenario()) < 2.0


def test_a_full_budget_does_not_wait():
    async def scenario():
        batcher = await started(RecordingModel(), max_tokens=4, max_wait_ms=5000)
        began = time.perf_counter()
        await batcher.submit(["a"], "g", "g", 4)
        waited = time.perf_counter() - began
        await batcher.stop()
        return waited

    assert run(scenario()) < 2.0


def test_a_model_error_reaches_every_request_of_its_call():
    async def scenario():
        model = RecordingModel(hold_first=True, fail=True)
        batcher = await started(model, max_wait_ms=0)
        first = asyncio.create_task(batcher.submit(["x"], "g", "g", 1))
        while not model.calls:
            await asyncio.sleep(0.001)
        second = asyncio.create_task(batcher.submit(["y"], "g", "g", 1))
        await asyncio.sleep(0.02)
        model.release.set()
        outcomes = await asyncio.gather(first, second, return_exceptions=True)
        await batcher.stop()
        return outcomes

    outcomes = run(scenario())
    assert all(isinstance(o, RuntimeError) for o in outcomes)


def test_a_full_queue_refuses_and_stop_finishes_waiting_requests():
    async def scenario():
        model = RecordingModel(hold_first=True)
        batcher = await started(model, max_queue=3, max_wait_ms=0)
        first = asyncio.create_task(batcher.submit(["a"], "g", "g", 1))
        while not model.calls:
            await asyncio.sleep(0.001)
        waiting = asyncio.create_task(batcher.submit(["b", "c", "d"], "g", "g", 3))
        await asyncio.sleep(0.01)
        with pytest.raises(QueueFull):
            await batcher.submit(["e"], "g", "g", 1)
        model.release.set()
        stopping = asyncio.create_task(batcher.stop())
        return await first, await waiting, await stopping

    assert run(scenario()) == (["g:A"], ["g:B", "g:C", "g:D"], None)


class BlockingModel:
    """Each call waits until released; records how many calls run at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.most_at_once = 0
        self.calls: list[list[str]] = []
        self.release = threading.Event()

    def __call__(self, sentences, options):
        with self.lock:
            self.calls.append(list(sentences))
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.release.wait(5)
        with self.lock:
            self.running -= 1
        return [s.upper() for s in sentences]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_run_that_many_calls_at_once_and_no_more(workers):
    async def scenario():
        model = BlockingModel()
        batcher = await started(model, workers=workers, max_tokens=1, max_wait_ms=0)
        # budget 1: each request is a call of its own
        tasks = [
            asyncio.create_task(batcher.submit([f"s{i}"], "g", "g", 1))
            for i in range(5)
        ]
        deadline = time.monotonic() + 5
        while len(model.calls) < workers and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)  # room for a call too many to start
        in_the_model = len(model.calls)
        still_queued = batcher.waiting_sentences  # free to join a later call
        model.release.set()
        results = await asyncio.gather(*tasks)
        await batcher.stop()
        return model, in_the_model, still_queued, results

    model, in_the_model, still_queued, results = run(scenario())
    assert in_the_model == workers
    assert still_queued == 5 - workers
    assert model.most_at_once == workers
    assert results == [[f"S{i}"] for i in range(5)]
    assert sorted(s for call in model.calls for s in call) == [
        f"s{i}" for i in range(5)
    ]


def test_a_worker_count_below_one_is_refused():
    with pytest.raises(ValueError, match="workers must be at least 1"):
        DynamicBatcher(lambda sentences, options: sentences, workers=0)


def test_a_request_whose_client_has_gone_never_reaches_the_model():
    """Cancelled while waiting (the server cancels it when the client
    disconnects): its sentences are dropped, the next request runs at once."""

    async def scenario():
        model = RecordingModel(hold_first=True)
        batcher = await started(model, enabled=False)
        first = asyncio.create_task(batcher.submit(["first"], "greedy", "greedy", 1))
        while not model.calls:
            await asyncio.sleep(0.001)
        gone = [
            asyncio.create_task(batcher.submit([f"gone{i}"], "beam", "beam", 1))
            for i in range(10)
        ]
        await asyncio.sleep(0.01)
        assert batcher.waiting_sentences == 10
        for task in gone:
            task.cancel()
        await asyncio.sleep(0.01)
        assert batcher.waiting_sentences == 0
        last = asyncio.create_task(batcher.submit(["last"], "greedy", "greedy", 1))
        model.release.set()
        assert await last == ["greedy:LAST"]
        await first
        await batcher.stop()
        return [sentences for sentences, _ in model.calls]

    assert run(scenario()) == [["first"], ["last"]]
