"""The HTTP API: every endpoint, every limit, malformed input, and the CLI's answers."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import torch
from fastapi.testclient import TestClient

from rosetta.cli import main
from rosetta.jobs.loading import load_translator
from rosetta.serve.app import create_app
from rosetta.serve.settings import ServerSettings

SENTENCES = ["alpha beta gamma", "", "delta eps zeta eta", "kappa"]


@pytest.fixture(scope="module", params=["transformer", "rnn-attention"])
def served(request, toy_run):
    run = toy_run(request.param)
    translator = load_translator(run, device="cpu")
    with TestClient(create_app(translator, model_name=request.param)) as client:
        yield client, run, request.param


@pytest.fixture(scope="module")
def transformer(toy_run):
    return load_translator(toy_run("transformer"), device="cpu")


def client_with(translator, raise_server_exceptions=True, **settings):
    return TestClient(
        create_app(translator, ServerSettings(**settings)),
        raise_server_exceptions=raise_server_exceptions,
    )


def cli_jsonl(run, tmp_path, sentences, *flags):
    source = tmp_path / "input.txt"
    source.write_text("".join(s + "\n" for s in sentences))
    output = tmp_path / "output.jsonl"
    arguments = ["translate", "-m", str(run), "-i", str(source), "-o", str(output)]
    assert main([*arguments, "--format", "jsonl", *flags]) == 0
    return [json.loads(line) for line in output.read_text().splitlines()]


def test_health_info_and_openapi(served):
    client, _, kind = served
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/info").json()
    assert info["model"] == kind
    assert info["arch"] == ("transformer" if kind == "transformer" else "rnn")
    assert info["parameters"] > 0 and info["device"] == "cpu"
    assert info["precision"] == "fp32"
    assert info["limits"]["max_beam"] == ServerSettings().max_beam
    assert info["config"]["model"]["arch"] == info["arch"]
    assert "data" not in info["config"]  # no training paths leak out
    schema = client.get("/openapi.json").json()
    assert {"/translate", "/health", "/info"} <= set(schema["paths"])


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        ({}, []),
        ({"beam_size": 4, "nbest": 3}, ["--beam", "4", "--nbest", "3"]),
        (
            {"beam_size": 3, "alpha": 0.0, "penalty": "gnmt", "max_len_a": 1.0},
            ["--beam", "3", "--alpha", "0", "--penalty", "gnmt", "--max-len-a", "1"],
        ),
        (
            {"sample": True, "seed": 7, "top_k": 3},
            ["--sample", "--seed", "7", "--top-k", "3"],
        ),
    ],
)
def test_translations_equal_the_command_line(served, tmp_path, options, flags):
    client, run, _ = served
    response = client.post("/translate", json={"sentences": SENTENCES, **options})
    assert response.status_code == 200, response.text
    served_results = response.json()["translations"]
    expected = cli_jsonl(run, tmp_path, SENTENCES, *flags)
    assert [r["source"] for r in served_results] == SENTENCES
    for got, want in zip(served_results, expected, strict=True):
        assert [h["text"] for h in got["hypotheses"]] == [
            h["text"] for h in want["hypotheses"]
        ]
        assert [h["token_ids"] for h in got["hypotheses"]] == [
            h["token_ids"] for h in want["hypotheses"]
        ]
        for g, w in zip(got["hypotheses"], want["hypotheses"], strict=True):
            assert g["score"] == pytest.approx(w["score"], abs=1e-4)
    assert served_results[1]["hypotheses"] == []  # blank line, empty answer


def test_attention_comes_back_per_layer_and_head_and_sums_to_one(served):
    client, _, kind = served
    response = client.post(
        "/translate",
        json={"sentences": ["alpha beta gamma"], "beam_size": 2, "attention": True},
    )
    [best] = response.json()["translations"][0]["hypotheses"]
    attention = torch.tensor(best["attention"])  # (T, layers, heads, S)
    layers, heads = (1, 2) if kind == "transformer" else (1, 1)
    assert attention.shape[1:3] == (layers, heads)
    assert attention.shape[3] == len(best["source_tokens"]) == 4  # 3 words + </s>
    assert attention.shape[0] in (len(best["tokens"]), len(best["tokens"]) + 1)
    assert torch.allclose(attention.sum(-1), torch.ones(attention.shape[:3]), atol=1e-3)


def test_limits_get_clear_4xx_answers(transformer):
    client = client_with(
        transformer, max_sentences=3, max_chars=20, max_beam=4, max_body_bytes=600
    )
    with client:

        def refused(body, status=422):
            response = client.post("/translate", json=body)
            assert response.status_code == status, response.text
            return json.dumps(response.json()["detail"])

        assert "at most 3" in refused({"sentences": ["a"] * 4})
        assert "sentence 1 has 21 characters" in refused({"sentences": ["a", "b" * 21]})
        assert "at most 4" in refused({"sentences": ["a"], "beam_size": 5})
        assert "nbest" in refused({"sentences": ["a"], "beam_size": 2, "nbest": 3})
        assert "larger than 600 bytes" in refused({"sentences": ["a" * 700]}, 413)
        within = client.post("/translate", json={"sentences": ["a"] * 3})
        assert within.status_code == 200

        def chunks():  # no Content-Length: counted as it arrives
            yield b'{"sentences": ["'
            for _ in range(100):
                yield b"a" * 10
            yield b'"]}'

        response = client.post(
            "/translate", content=chunks(), headers={"content-type": "application/json"}
        )
        assert response.status_code == 413


@pytest.mark.parametrize(
    "body",
    [
        b'{"sentences": ["a"',  # broken JSON
        b"not json at all",
        b'{"sentences": "alpha"}',  # not a list
        b'{"sentences": []}',  # nothing to translate
        b'{"sentences": [1, 2]}',
        b'{"sentences": ["a"], "beam_size": 0}',
        b'{"sentences": ["a"], "beams": 5}',  # unknown field
        b'{"sentences": ["a"], "penalty": "none"}',
        b'{"sentences": ["a"], "top_p": 1.5}',
        b'{"sentences": ["a"], "sample": true, "beam_size": 2}',
        b'{"sentences": ["a"], "sample": true, "attention": true}',
        b"[]",
    ],
)
def test_malformed_requests_get_422_with_a_message(served, body):
    client, _, _ = served
    response = client.post(
        "/translate", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail and all(item["msg"] for item in detail)


def test_unexpected_errors_are_500_without_a_stack_trace(transformer, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internal state")

    with client_with(transformer, raise_server_exceptions=False) as client:
        monkeypatch.setattr(transformer, "translate_ids", broken)
        response = client.post("/translate", json={"sentences": ["alpha"]})
    assert response.status_code == 500
    assert response.json() == {"detail": "internal server error"}
    assert "secret" not in response.text and "Traceback" not in response.text


def test_a_full_queue_answers_503(transformer):
    with client_with(transformer, max_queue=1) as client:
        response = client.post("/translate", json={"sentences": ["alpha", "beta"]})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"


@pytest.mark.parametrize("workers", [1, 2])
def test_concurrent_requests_share_model_calls_and_get_their_own_answers(
    transformer, workers
):
    pairs = [("alpha", "eta"), ("beta", "iota"), ("gamma", "eta"), ("delta", "iota")]
    sentences = [f"{a} {b}" for a, b in pairs] + ["kappa", "zeta theta"]
    expected = transformer.translate(sentences)
    threads_before = torch.get_num_threads()
    with client_with(transformer, max_wait_ms=50, workers=workers) as client:
        assert torch.get_num_threads() == max(1, threads_before // workers)
        assert client.get("/info").json()["batching"]["workers"] == workers
        answers: dict[int, str] = {}

        def ask(i):
            response = client.post("/translate", json={"sentences": [sentences[i]]})
            answers[i] = response.json()["translations"][0]["hypotheses"][0]["text"]

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stats = client.get("/info").json()["batching"]
    assert [answers[i] for i in range(6)] == expected
    assert stats["requests"] == 6 and stats["model_calls"] < 6
    assert torch.get_num_threads() == threads_before  # restored at shutdown


def test_workers_on_a_gpu_or_below_one_are_refused(transformer, monkeypatch):
    with pytest.raises(ValueError, match="at least 1"):
        create_app(transformer, ServerSettings(workers=0))
    monkeypatch.setattr(transformer, "device", torch.device("cuda"))
    with pytest.raises(ValueError, match="parallel workers are for the CPU"):
        create_app(transformer, ServerSettings(workers=2))


def test_the_command_line_refuses_zero_workers_in_one_line(toy_run, capsys):
    run = toy_run("transformer")
    assert main(["serve", "-m", str(run), "--workers", "0"]) == 2
    error = capsys.readouterr().err
    assert "rosetta serve: error: argument --workers: must be greater" in error


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(run, *flags):
    """``rosetta serve`` as a subprocess; returns it and its address when ready."""
    port = free_port()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "rosetta.cli", "serve", "-m", str(run)),
            *("--port", str(port), "--threads", "1", "--log-level", "warning"),
            *flags,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    address = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{address}/health", timeout=1).status_code == 200:
                return process, address
        except httpx.TransportError:
            if process.poll() is not None:
                raise AssertionError(process.stdout.read().decode()) from None
            time.sleep(0.2)
    process.kill()
    raise AssertionError("the server did not start in 60 s")


@pytest.mark.slow
def test_shutdown_finishes_requests_in_flight(toy_run):
    # A batch that is not full waits 3 s for company: time to send SIGTERM.
    run = toy_run("transformer")
    process, address = start_server(run, "--max-wait-ms", "3000")
    outcome = {}

    def ask():
        outcome["response"] = httpx.post(
            f"{address}/translate", json={"sentences": ["alpha beta"]}, timeout=30
        )

    request = threading.Thread(target=ask)
    request.start()
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    request.join(30)
    output = process.communicate(timeout=30)[0].decode()
    response = outcome["response"]
    assert response.status_code == 200, output
    [expected] = load_translator(run, device="cpu").translate(["alpha beta"])
    assert response.json()["translations"][0]["hypotheses"][0]["text"] == expected
    # uvicorn finishes, then re-raises the signal it caught, as a server should
    assert process.returncode in (0, -signal.SIGTERM), output


@pytest.mark.slow
def test_requests_from_clients_that_disconnected_never_reach_the_model(toy_run):
    """Ten clients send a request and hang up while it waits for company (3 s);
    the server drops their work: the model's only call is the eleventh's."""
    process, address = start_server(toy_run("transformer"), "--max-wait-ms", "3000")
    try:
        port = int(address.rsplit(":", 1)[1])
        body = json.dumps({"sentences": ["alpha beta gamma"] * 8}).encode()
        head = (
            "POST /translate HTTP/1.1\r\nHost: localhost\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]
        for client in clients:
            client.sendall(head + body)
        time.sleep(0.5)
        for client in clients:
            client.close()
        time.sleep(0.5)
        response = httpx.post(
            f"{address}/translate", json={"sentences": ["zeta"]}, timeout=30
        )
        assert response.status_code == 200
        batching = httpx.get(f"{address}/info", timeout=5).json()["batching"]
        assert (batching["model_calls"], batching["sentences"]) == (1, 1), batching
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.mark.parametrize(
    "body, field",
    [
        ('{"sentences": ["a"], "max_len_a": Infinity}', "max_len_a"),
        ('{"sentences": ["a"], "max_len_a": NaN}', "max_len_a"),
        ('{"sentences": ["a"], "max_len_a": 1e300}', "max_len_a"),
        ('{"sentences": ["a"], "alpha": NaN, "beam_size": 3}', "alpha"),
        ('{"sentences": ["a"], "beam_size": true}', "beam_size"),
        ('{"sentences": ["a"], "temperature": 1e-300, "sample": true}', "temperature"),
        ('{"sentences": ["a"], "seed": 36893488147419103232}', "seed"),
        ('{"sentences": ["\\ud800"]}', "sentences"),
    ],
)
def test_values_no_search_can_use_are_a_422_naming_the_field(transformer, body, field):
    with client_with(transformer, raise_server_exceptions=False) as client:
        response = client.post(
            "/translate", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 422, response.text
    assert field in json.dumps(response.json()["detail"])


def test_options_the_engine_refuses_are_a_422_with_its_reason(toy_run):
    nat = load_translator(toy_run("nat"), device="cpu")
    with client_with(nat, raise_server_exceptions=False) as client:
        response = client.post("/translate", json={"sentences": ["a"], "beam_size": 3})
    assert response.status_code == 422, response.text
    assert "options" in json.dumps(response.json()["detail"])
