"""A CTC NAT with annealed glancing through the ordinary run: it learns,
resumes exactly (the glancing ratio included) and serves; validation equal
to a fresh load and bf16 beside fp32 are in ``test_training``."""

import json

import pytest

from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from tests.support.toy import NAT_CTC_GLANCING, assert_resume_is_exact


def records(run, kind):
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


@pytest.mark.slow
def test_a_ctc_run_learns_and_refuses_noisy_parallel_decoding(toy_run):
    run = toy_run("nat-ctc")
    losses = [r["loss"] for r in records(run, "train")]
    assert losses[-1] < 0.8 * losses[0]
    translator = load_translator(run, which="latest", device="cpu")
    with pytest.raises(RosettaError, match="translate without --npd"):
        translator.with_teacher(translator, 4)


@pytest.mark.slow
def test_a_resumed_ctc_run_glances_as_the_uninterrupted_one(tmp_path):
    """The ratio anneals over 15 updates: a resumed run that restarted its
    count would reveal more tokens after the break and end elsewhere."""
    assert_resume_is_exact(tmp_path, NAT_CTC_GLANCING)


@pytest.mark.slow
def test_the_server_translates_with_a_ctc_nat_and_shows_its_attention(toy_run):
    from tests.serve.test_app import client_with

    nat = load_translator(toy_run("nat-ctc"), device="cpu")
    with client_with(nat) as client:
        assert client.get("/info").json()["one_pass"] is True
        response = client.post(
            "/translate", json={"sentences": ["alpha beta", ""], "attention": True}
        )
    assert response.status_code == 200, response.text
    first, empty = response.json()["translations"]
    best = first["hypotheses"][0]
    assert best.get("fertilities") is None
    assert len(best["attention"]) == len(best["tokens"])
    assert empty["hypotheses"] == []
