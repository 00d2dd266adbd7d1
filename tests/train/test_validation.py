"""What training reports is what its checkpoints give when loaded afresh;
and its validation bar, in a log file, holds no cursor movements."""

import json

import pytest
import torch

from rosetta.data.corpus import read_corpus
from rosetta.evaluate.corpus import sacrebleu_score
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from rosetta.train import validation
from tests.support.toy import RNN_ATTENTION, TRANSFORMER, toy_config

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.slow
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "model", [TRANSFORMER, RNN_ATTENTION], ids=["transformer", "rnn-attention"]
)
def test_every_validation_equals_its_checkpoint_loaded_afresh(
    tmp_path, monkeypatch, model, device
):
    """Six validations with the real trainer (fused Adam between them): the
    token ids each decoded, and the BLEU it recorded, are those of the
    checkpoint saved with it, loaded into a new process's worth of objects."""
    decoded: list[list[list[int]]] = []

    translate_shown = validation.translate_shown

    def recording(translator, sentences):
        results = translate_shown(translator, sentences)
        decoded.append([found[0].token_ids for found in results])
        return results

    monkeypatch.setattr(validation, "translate_shown", recording)
    config, _ = toy_config(
        tmp_path,
        "train.max_epochs=null",
        "train.max_steps=60",
        "train.validate_every=10",
        "train.keep_last=10",
        f"train.device={device}",
        model=model,
    )
    run_dir = tmp_path / "run"
    run_training(config, run_dir)
    monkeypatch.undo()  # what validation decoded is recorded; now load afresh

    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    validations = [r for r in records if r["kind"] == "valid"]
    assert [r["step"] for r in validations] == [10, 20, 30, 40, 50, 60]
    assert len(decoded) == len(validations)
    pairs = read_corpus(config.data.valid)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    for record, during_training in zip(validations, decoded, strict=True):
        folder = run_dir / f"checkpoint-{record['step']:07d}"
        fresh = load_translator(folder, device=device)
        found = fresh.translate_nbest(sources)
        assert [f[0].token_ids for f in found] == during_training, record["step"]
        hypotheses = [f[0].text for f in found]
        assert sacrebleu_score(hypotheses, references).value == record["bleu"]
    # the six validations did not all decode the same: the test can tell
    assert len({json.dumps(ids) for ids in decoded}) > 1


def test_a_redirected_training_log_holds_no_cursor_movements(tmp_path, capsys):
    """The validation bar sits beneath the training bar on a terminal only:
    in a log file (standard error not a terminal) it would leave the escape
    codes that move the cursor up."""
    from rosetta.cli import main
    from tests.support.toy import toy_config_file

    config = toy_config_file(tmp_path)
    overrides = ["train.max_epochs=null", "train.max_steps=4", "train.validate_every=2"]
    command = ["train", str(config), "-o", str(tmp_path / "run")]
    assert main([*command, *(f for o in overrides for f in ("--set", o))]) == 0
    log = capsys.readouterr().err
    assert "training" in log and "\x1b[A" not in log
