import json

import pytest
import torch
from safetensors.torch import load_file

from rosetta.data.batching import Example, collate
from rosetta.data.vocab import PAD_ID
from rosetta.errors import RosettaError
from rosetta.families import build_model, family_of
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from rosetta.runtime.precision import autocast
from rosetta.train.loss import label_smoothed_cross_entropy
from rosetta.train.prepare import PreparedData, prepare_data
from rosetta.train.trainer import Trainer
from rosetta.train.translation_task import TranslationTask
from tests.support.toy import RNN_ATTENTION, TRANSFORMER, toy_config

CPU = torch.device("cpu")


def weights(folder):
    return load_file(str(folder / "model.safetensors"))


def latest(run_dir):
    index = json.loads((run_dir / "checkpoints.json").read_text())
    return run_dir / index["latest"], index


def test_resume_continues_exactly(tmp_path):
    config, _ = toy_config(tmp_path, "train.max_steps=40", "train.max_epochs=null")
    run_training(config, tmp_path / "straight")

    half, _ = toy_config(tmp_path, "train.max_steps=25", "train.max_epochs=null")
    run_training(half, tmp_path / "resumed")  # stops at 25, mid-epoch
    folder, _ = latest(tmp_path / "resumed")
    assert json.loads((folder / "checkpoint.json").read_text())["trainer"]["step"] == 25
    run_training(config, tmp_path / "resumed", resume=True)

    a, _ = latest(tmp_path / "straight")
    b, _ = latest(tmp_path / "resumed")
    assert a.name == b.name == "checkpoint-0000040"
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    opt_a = load_file(str(a / "optimizer.safetensors"))
    opt_b = load_file(str(b / "optimizer.safetensors"))
    assert all(torch.equal(opt_a[k], opt_b[k]) for k in opt_a)


def test_checkpoints_kept_best_and_metrics_logged(tmp_path):
    config, _ = toy_config(tmp_path, "train.max_epochs=2")
    run_dir = tmp_path / "run"
    run_training(config, run_dir)
    _, index = latest(run_dir)
    names = sorted(
        p.name for p in run_dir.iterdir() if p.name.startswith("checkpoint-")
    )
    assert set(names) == set(index["checkpoints"])
    assert len(names) <= 3 and index["best"] in names and index["latest"] in names
    assert not list(run_dir.glob("*.tmp"))
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    kinds = {r["kind"] for r in records}
    assert kinds == {"train", "valid"}
    assert all("bleu" in r for r in records if r["kind"] == "valid")


def test_an_existing_run_is_not_overwritten_without_resume(tmp_path):
    config, _ = toy_config(tmp_path, "train.max_steps=5", "train.max_epochs=null")
    run_training(config, tmp_path / "run")
    with pytest.raises(RosettaError, match="--resume"):
        run_training(config, tmp_path / "run")


def test_corrupted_checkpoint_is_refused(tmp_path):
    config, _ = toy_config(tmp_path, "train.max_steps=10", "train.max_epochs=null")
    run_training(config, tmp_path / "run")
    folder, _ = latest(tmp_path / "run")
    load_translator(folder)  # loads while intact
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(RosettaError, match="checksum mismatch"):
        load_translator(folder)


def test_translator_keeps_one_output_per_input(tmp_path):
    config, _ = toy_config(tmp_path, "train.max_steps=10", "train.max_epochs=null")
    run_training(config, tmp_path / "run")
    translator = load_translator(tmp_path / "run")
    inputs = ["alpha beta", "", "   ", "gamma " * 200, "😀 \u202eunknown\u0007", "eta"]
    with pytest.warns(UserWarning, match="truncated"):
        outputs = translator.translate(inputs)
    assert len(outputs) == len(inputs)
    assert outputs[1] == "" and outputs[2] == ""
    assert all("\n" not in line for line in outputs)


def test_flush_denormals_is_set_for_training(tmp_path):
    """In a fresh process, as `rosetta train` runs: a denormal float reads as 0."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from rosetta.jobs.run_config import config_from_dict\n"
        "from rosetta.jobs.training import configure_torch\n"
        "tiny = torch.tensor([1e-39])\n"
        "before = float(tiny * 1.0)\n"
        "config = config_from_dict({'data': {'train': {'src': 'a', 'tgt': 'b'}}})\n"
        "configure_torch(config)\n"
        "print(before > 0, float(tiny * 1.0) == 0.0)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True"]


@pytest.mark.reference
@pytest.mark.parametrize(
    "model", [TRANSFORMER, RNN_ATTENTION], ids=["transformer", "rnn"]
)
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_the_training_loss_equals_the_loss_of_the_models_logits(
    tmp_path, model, precision
):
    """The trainer projects inside the loss; value and gradients are those of
    the model's logits under the plain loss (bf16: to bf16 rounding)."""
    config, _ = toy_config(tmp_path, f"train.precision={precision}", model=model)
    torch.manual_seed(0)
    model = build_model(config.model, 40, 40)
    translator = family_of(config.model).inference
    nothing = PreparedData(None, [], [], [])  # type: ignore[arg-type]
    task = TranslationTask(config, model, nothing, CPU, translator)
    model.eval()  # no dropout: both paths see the same network
    examples = [
        Example([5, 6, 7, 8], [9, 10, 11]),
        Example([12, 13], [14, 15, 16, 17, 18]),
    ]
    batch = collate(examples)

    with autocast(CPU, precision):
        loss = task.loss_sum(model, batch)
    tokens = batch.num_tgt_tokens
    ours = torch.autograd.grad(loss, list(model.parameters()))
    with autocast(CPU, precision):
        features = model(
            batch.src, batch.src_mask, batch.tgt_in, batch.tgt_in != PAD_ID
        )
        logits = model.output_proj(features)
    expected, _, expected_tokens = label_smoothed_cross_entropy(
        logits, batch.tgt_out, config.train.label_smoothing, PAD_ID
    )
    plain = torch.autograd.grad(expected, list(model.parameters()))

    assert tokens == expected_tokens == 10
    tolerance = 1e-5 if precision == "fp32" else 2e-2
    assert loss.item() == pytest.approx(expected.item(), rel=tolerance)
    # a parameter whose gradient cancels to almost zero is compared at 1% of
    # the largest gradient: float rounding is relative to the terms, not the sum
    largest = max(theirs.abs().max().item() for theirs in plain)
    for mine, theirs in zip(ours, plain, strict=True):
        scale = max(theirs.abs().max().item(), 0.01 * largest)
        assert (mine - theirs).abs().max().item() <= tolerance * scale


def test_fp16_training_scales_the_loss_and_skips_overflowing_updates(tmp_path):
    """fp16 with a gradient scaler: an update whose scaled gradients overflow
    is skipped while the scale shrinks, without counting as a bad step; the
    scale is saved with the checkpoint and restored on resume."""
    steps = ("train.max_epochs=null", "train.max_steps=12", "train.validate_every=6")
    config, _ = toy_config(tmp_path, "train.precision=fp16", *steps)
    data = prepare_data(config, tmp_path / "run", log=lambda *_: None)
    torch.manual_seed(0)
    model = build_model(
        config.model, len(data.tokenizers.src), len(data.tokenizers.tgt)
    )
    translator = family_of(config.model).inference
    task = TranslationTask(config, model, data, CPU, translator)
    trainer = Trainer(config, tmp_path / "run", model, task, CPU)
    trainer.updater.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**40)
    state = trainer.train()
    assert state.step == 12 and state.overflow_steps > 0
    assert state.skipped_steps == 0
    assert trainer.updater.scaler.get_scale() < 2.0**40
    folder = tmp_path / "run" / "checkpoint-0000012"
    meta = json.loads((folder / "checkpoint.json").read_text())
    assert meta["grad_scaler"]["scale"] == trainer.updater.scaler.get_scale()
    assert all(
        t.isfinite().all()
        for t in load_file(str(folder / "model.safetensors")).values()
    )


def test_a_run_without_validation_says_so_and_its_latest_is_chosen(tmp_path, capsys):
    from rosetta.runs.checkpoint import choose_checkpoint

    config, _ = toy_config(
        tmp_path, "data.valid=null", "train.max_epochs=null", "train.max_steps=6"
    )
    run_training(config, tmp_path / "run")
    out = capsys.readouterr().out
    assert "warning: no validation set (data.valid)" in out
    assert "no validation: the latest checkpoint is the one to use" in out
    folder, reason = choose_checkpoint(tmp_path / "run")
    assert folder == tmp_path / "run" / "checkpoint-0000006"
    assert reason == "the run's latest: it has no validation scores"
    assert choose_checkpoint(folder) == (folder, "the checkpoint named")


def test_without_validation_bleu_the_best_checkpoint_is_chosen_by_loss(tmp_path):
    config, _ = toy_config(
        tmp_path,
        "train.valid_bleu=false",
        "train.max_epochs=null",
        "train.max_steps=10",
        "train.validate_every=5",
    )
    run_training(config, tmp_path / "run")
    _, index = latest(tmp_path / "run")
    assert index["metric"] == "loss" and index["best_score"] < 0  # negated loss


def test_resume_never_trains_the_tokenizers_again(toy_run, tmp_path):
    """Tokenizers trained again (on whatever data the config names now) could
    number the pieces otherwise than the checkpoint's embeddings."""
    import shutil

    from rosetta.jobs.run_config import load_config

    run = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), run)
    (run / "tokenizers.json").unlink()
    config = load_config(toy_run("transformer").parent / "toy.yaml")
    with pytest.raises(RosettaError, match="--resume needs the run's tokenizers"):
        run_training(config, run, resume=True)


def test_training_gives_the_caller_its_process_settings_back(tmp_path):
    """Threads, deterministic kernels and denormal flushing are process-wide:
    a notebook that trains keeps computing as it did before."""
    from rosetta.jobs.training import _flushes_denormals
    from tests.support.toy import toy_config

    config, _ = toy_config(
        tmp_path, "train.max_epochs=null", "train.max_steps=2", "train.threads=2"
    )

    def settings():
        return (
            torch.get_num_threads(),
            torch.are_deterministic_algorithms_enabled(),
            torch.utils.deterministic.fill_uninitialized_memory,
        )

    before = settings()
    assert config.train.flush_denormals and not _flushes_denormals()
    run_training(config, tmp_path / "run")
    assert settings() == before and not _flushes_denormals()


def test_deterministic_training_without_filling_new_memory_trains_the_same(
    tmp_path,
):
    """Deterministic mode would fill every new tensor with NaN; training turns
    that off. No kernel of an update reads memory it did not write, so the
    weights after some updates are those of a run that fills."""
    from rosetta.jobs.training import configure_torch, process_settings_kept

    config, _ = toy_config(tmp_path, "train.threads=1")
    data = prepare_data(config, tmp_path / "run", log=lambda *_: None)
    translator = family_of(config.model).inference
    vocab = len(data.tokenizers.src), len(data.tokenizers.tgt)

    def train(fill: bool) -> dict[str, torch.Tensor]:
        with process_settings_kept():
            configure_torch(config)
            assert not torch.utils.deterministic.fill_uninitialized_memory
            torch.utils.deterministic.fill_uninitialized_memory = fill
            model = build_model(config.model, *vocab)
            task = TranslationTask(config, model, data, CPU, translator)
            trainer = Trainer(config, tmp_path / f"run-{fill}", model, task, CPU)
            for batch in task.epoch_batches(0)[:4]:
                assert trainer.train_step([batch]) is not None
        return model.state_dict()

    filled, unfilled = train(True), train(False)
    assert all(torch.equal(filled[name], unfilled[name]) for name in filled)


def test_a_tie_of_the_best_metric_goes_to_the_lower_validation_loss():
    """Two validations with the same exact-match score: the later one, whose
    loss is lower, is the best; an equal score is still no gain for early
    stopping, and a higher loss at that score does not move the best."""
    from types import SimpleNamespace

    from rosetta.train.trainer import Trainer, TrainerState

    fake = SimpleNamespace(
        cfg=SimpleNamespace(early_stopping=SimpleNamespace(patience=None)),
        best_metric="exact",
        state=TrainerState(),
        record=lambda *a, **k: None,
        is_main=False,
        task=SimpleNamespace(examples=[]),
        log=lambda *a: None,
    )
    for step, loss in ((272, 1.9), (500, 1.2), (700, 1.5)):
        fake.state.step = step
        Trainer.after_validation(fake, {"exact": 0.0, "loss": loss})
    assert fake.state.best_step == 500
    assert fake.state.best_loss == 1.2
    assert fake.state.validations_without_gain == 2
