"""HTTP requests to the server: generated values (booleans, huge or
non-finite numbers, text, null) in any field of a translation request, with
any sentences.

The promise: a request is answered, with one translation per sentence, or
refused with a 422 naming the field; never a 500. (The server's limits and
malformed bodies, endpoint by endpoint: ``tests/serve/test_app.py``.)
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from rosetta.jobs.loading import load_translator
from rosetta.serve.app import create_app
from rosetta.serve.schemas import TranslateRequest
from tests.support.generated_values import ANY_NUMBER, SETTINGS


@pytest.fixture(scope="module")
def server(toy_run):
    translator = load_translator(toy_run("transformer"), device="cpu")
    with TestClient(create_app(translator), raise_server_exceptions=False) as client:
        yield client


FIELDS = [name for name in TranslateRequest.model_fields if name != "sentences"]


@pytest.mark.slow
@settings(SETTINGS, max_examples=80)
@given(
    fields=st.dictionaries(st.sampled_from(FIELDS), ANY_NUMBER, max_size=3),
    sentences=st.lists(st.text(max_size=20), min_size=1, max_size=3),
)
def test_any_request_is_answered_or_refused_never_a_500(server, fields, sentences):
    if "beam_size" in fields and isinstance(fields["beam_size"], int):
        fields["beam_size"] = max(-1, min(fields["beam_size"], 4))  # keep it quick
    if isinstance(fields.get("max_len_b"), int):
        fields["max_len_b"] = min(fields["max_len_b"], 20)
    body = json.dumps({"sentences": sentences, **fields}, allow_nan=True)
    response = server.post(
        "/translate", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code in (200, 422), (body, response.text)
    if response.status_code == 200:
        assert len(response.json()["translations"]) == len(sentences)
    else:
        assert response.json()["detail"]
