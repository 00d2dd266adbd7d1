"""Training a language model: the streams and the memory carried between
segments, validation equal to a fresh load, exact resume with the memory,
and the commands that score and continue text."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from rosetta.cli import main
from rosetta.data.text import decode_text, encode_text
from rosetta.data.tokenizer import train_tokenizer
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_language_model, load_translator
from rosetta.jobs.run_config import load_config
from rosetta.jobs.training import run_training
from rosetta.runs.integrity import seal_meta
from tests.support.toy import toy_config, toy_lm_config


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    config, _ = toy_lm_config(folder)
    run_training(config, folder / "run")
    return folder


def test_a_language_model_trains_validates_and_saves_its_memory(lm_run):
    records = [json.loads(line) for line in (lm_run / "run" / "metrics.jsonl").open()]
    valid = [r for r in records if r["kind"] == "valid"]
    assert [r["step"] for r in valid] == [6, 12]
    assert valid[-1]["loss"] < math.log(40)  # better than uniform characters
    assert valid[-1]["bpc"] == pytest.approx(valid[-1]["loss"] / math.log(2))
    state = load_file(str(lm_run / "run" / "checkpoint-0000012" / "state.safetensors"))
    assert int(state["rank0.memory_after"]) == 11  # 12 updates, one segment each
    assert [state[f"rank0.memory.{i}"].shape for i in range(2)] == [(8, 16, 32)] * 2


def test_the_validation_loss_training_recorded_is_that_of_a_fresh_load(lm_run):
    config = load_config(lm_run / "lm.yaml")
    recorded = [
        json.loads(line)
        for line in (lm_run / "run" / "metrics.jsonl").open()
        if '"valid"' in line
    ][-1]
    model = load_language_model(lm_run / "run", device="cpu", which="latest")
    text = (lm_run / "valid.txt").read_text()
    score = model.score(text, streams=config.model.eval_streams)
    assert score.loss == pytest.approx(recorded["loss"], rel=1e-6)


def test_resuming_after_a_stop_continues_with_the_same_memory(tmp_path, lm_run):
    """Stopped at step 6 and resumed, training ends with the weights and the
    memory of the uninterrupted run; resuming without the memory would not."""
    config, _ = toy_lm_config(tmp_path, "train.max_steps=6")
    run_training(config, tmp_path / "run")
    config, _ = toy_lm_config(tmp_path)
    run_training(config, tmp_path / "run", resume=True)
    for name in ("model.safetensors", "state.safetensors"):
        straight = load_file(str(lm_run / "run" / "checkpoint-0000012" / name))
        resumed = load_file(str(tmp_path / "run" / "checkpoint-0000012" / name))
        assert straight.keys() == resumed.keys()
        for key in straight:
            assert torch.equal(straight[key], resumed[key]), (name, key)
    # the memory mattered: without it step 7 reads segment 6 alone
    (tmp_path / "run" / "checkpoint-0000006" / "state.safetensors").unlink()
    meta_path = tmp_path / "run" / "checkpoint-0000006" / "checkpoint.json"
    meta = json.loads(meta_path.read_text())
    del meta["sha256"]["state.safetensors"]
    meta_path.write_text(json.dumps(seal_meta(meta)))
    index_path = tmp_path / "run" / "checkpoints.json"
    index = json.loads(index_path.read_text())
    index["latest"] = "checkpoint-0000006"
    index_path.write_text(json.dumps(index))
    run_training(config, tmp_path / "run", resume=True)
    forgetful = load_file(
        str(tmp_path / "run" / "checkpoint-0000012" / "model.safetensors")
    )
    straight = load_file(
        str(lm_run / "run" / "checkpoint-0000012" / "model.safetensors")
    )
    assert any(not torch.equal(forgetful[k], straight[k]) for k in straight)


@pytest.mark.reference
def test_greedy_generation_with_the_cache_is_the_argmax_of_full_passes(lm_run):
    """Each generated token is one step over the cached memory; it must be
    the token a pass over the whole text so far ranks first."""
    model = load_language_model(lm_run / "run", device="cpu")
    prompt = "KING:"
    text = model.generate(prompt, tokens=12, top_k=1)
    ids = model.tokenizer.encode(prompt)
    with torch.no_grad():
        for _ in range(12):
            features, _ = model.model(torch.tensor([ids]))
            ids.append(int(model.model.output_proj(features[0, -1]).argmax()))
    assert text == model.tokenizer.decode(ids)


def test_sampling_is_seeded_and_the_commands_print_one_line(lm_run, capsys):
    run = str(lm_run / "run")
    text = str(lm_run / "valid.txt")
    assert main(["perplexity", "-m", run, "--text", text, "--memory", "32"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("loss = ") and " nats/token  ppl = " in line
    loss = float(line.split()[2])
    bpc = float(line.split("bpc = ")[1])
    assert bpc == pytest.approx(loss / math.log(2), abs=1e-3)
    flags = ["--prompt", "To be", "--tokens", "30", "--seed", "3", "--top-k", "5"]
    outputs = []
    for _ in range(2):
        assert main(["generate", "-m", run, *flags]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].startswith("To be")
    assert len(outputs[0]) == len("To be") + 30 + 1  # characters, then "\n"


def test_memory_changes_what_the_model_sees(lm_run):
    model = load_language_model(lm_run / "run", device="cpu")
    text = (lm_run / "valid.txt").read_text()
    alone, remembered = model.score(text, 0), model.score(text, 48)
    assert alone.tokens == remembered.tokens
    assert alone.loss != remembered.loss


def test_each_model_kind_refuses_the_other_kinds_commands(lm_run, tmp_path, capsys):
    with pytest.raises(RosettaError, match="a language model, not a translation"):
        load_translator(lm_run / "run")
    config, _ = toy_config(tmp_path, "train.max_steps=1", "train.max_epochs=null")
    run_training(config, tmp_path / "mt")
    with pytest.raises(RosettaError, match="a translation model, not a language"):
        load_language_model(tmp_path / "mt")
    assert main(["generate", "-m", str(tmp_path / "mt"), "--prompt", "a"]) == 2
    assert "not a language model" in capsys.readouterr().err


def test_configs_pair_the_task_with_its_model_and_data(tmp_path):
    _, path = toy_lm_config(tmp_path)
    with pytest.raises(RosettaError, match=r"task translate goes with model\.arch"):
        load_config(path, ["task=translate"])
    with pytest.raises(RosettaError, match=r"task lm goes with model\.arch"):
        load_config(path, ["model={arch: transformer}"])
    _, mt = toy_config(tmp_path)
    with pytest.raises(RosettaError, match=r"data\.train: task translate reads"):
        load_config(mt, ["data.train={text: a.txt}"])
    with pytest.raises(RosettaError, match="unknown key for arch 'transformer-xl'"):
        load_config(path, ["model.encoder_layers=2"])


def test_too_short_a_text_for_the_batch_is_a_clear_error(tmp_path):
    config, _ = toy_lm_config(tmp_path, "train.batch_tokens=8192")
    with pytest.raises(RosettaError, match="too few for 512 streams"):
        run_training(config, tmp_path / "run")


def test_subword_text_keeps_its_line_breaks():
    from rosetta.config.sections import TokenizerConfig

    lines = ["the cat sat", "on the mat", "", "the end"]
    tokenizer = train_tokenizer(lines, TokenizerConfig(kind="word"))
    text = "\n".join(lines) + "\n"
    ids = encode_text(tokenizer, text)
    assert decode_text(tokenizer, ids) == text
    assert decode_text(tokenizer, ids[:-1]) == text[:-1]


def test_text_the_model_cannot_read_is_counted_and_said(lm_run, tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("To be, or not to be: 日本語 ☃\n" * 4)
    argv = ["perplexity", "-m", str(lm_run / "run"), "--text", str(text)]
    with pytest.warns(UserWarning, match=r"16 of 108 characters \(14.8%\) are unknown"):
        assert main(argv) == 0
    assert "ppl =" in capsys.readouterr().out
    model = load_language_model(lm_run / "run", device="cpu")
    assert model.unknown_tokens("To be") == (0, 5)


@pytest.mark.parametrize("kind", ["word", "sentencepiece"])
def test_generation_gives_the_prompt_back_as_written(tmp_path, kind):
    """Every tokenizer: a word the vocabulary lacks stays in the prompt."""
    overrides = ["train.max_steps=2", f"tokenizer.kind={kind}"]
    if kind == "sentencepiece":
        overrides.append("tokenizer.vocab_size=200")
    config, _ = toy_lm_config(tmp_path, *overrides)
    run_training(config, tmp_path / "run")
    model = load_language_model(tmp_path / "run", device="cpu")
    for prompt in ("Qwertzuiop ROMEO speaks", "ROMEO:\n", "thee"):
        text = model.generate(prompt, tokens=5, seed=1)
        assert text.startswith(prompt), (prompt, text)
        assert len(text) > len(prompt)
