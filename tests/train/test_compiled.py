"""The compiled training update (``train.compile``) against the eager one.

A cold compile costs a minute on a 2-core CPU: one compiled training (1+1
layers, width 16) is shared by the tests of this file, the kernels cached in
one folder for the session. The graph checks need no kernels, only tracing.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter

import numpy as np
import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from rosetta.data.vocab import PAD_ID
from rosetta.families import FAMILIES, build_model, family_of
from rosetta.jobs.training import configure_torch, process_settings_kept, run_training
from rosetta.runtime import compiled as compiled_module
from rosetta.runtime.compiled import (
    CompiledOrEager,
    cannot_compile,
    compile_wanted,
    graphs_compiled,
)
from rosetta.train.dense_loss import (
    dense_projected_label_smoothed_cross_entropy,
    vocabulary_slices,
)
from rosetta.train.loss import (
    label_smoothed_cross_entropy,
    projected_label_smoothed_cross_entropy,
)
from rosetta.train.prepare import PreparedData
from rosetta.train.trainer import Trainer
from rosetta.train.translation_task import TranslationTask
from tests.support.toy import toy_config
from tests.train.test_train_operators import sentence_pairs

CPU = torch.device("cpu")
VOCAB = 64
UPDATES = 16  # batches of varying sentences and lengths


def tiny_model(positions: str = "sinusoidal", dropout: float = 0.0) -> str:
    return (
        "{encoder_layers: 1, decoder_layers: 1, d_model: 16, heads: 2, d_ff: 32, "
        f"dropout: {dropout}, share_embeddings: false, max_positions: 64, "
        f"positions: {positions}}}"
    )


def batch_groups() -> list[list[np.ndarray]]:
    """UPDATES batches of 4 to 15 pairs, each at its own place in the corpus."""
    rng = np.random.default_rng(1)
    sizes = rng.integers(4, 16, UPDATES)
    return [[np.arange(16 * i, 16 * i + int(n))] for i, n in enumerate(sizes)]


def make_trainer(tmp_path, compile_setting: str, *overrides: str, model=None):
    config, _ = toy_config(
        tmp_path,
        "train.threads=1",
        f"train.compile={compile_setting}",
        *overrides,
        model=model or tiny_model(),
    )
    configure_torch(config)
    torch.manual_seed(0)
    data = PreparedData(None, sentence_pairs(16 * UPDATES), [], [])  # type: ignore[arg-type]
    net = build_model(config.model, VOCAB, VOCAB)
    task = TranslationTask(config, net, data, CPU, family_of(config.model).inference)
    return Trainer(config, tmp_path / "run", net, task, CPU)


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory):
    """One folder of compiled kernels for this file's compiles."""
    with pytest.MonkeyPatch.context() as patch:
        folder = tmp_path_factory.mktemp("torch-compile")
        patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory, compile_cache):
    """The same 16 updates eager and compiled (dropout 0): losses, the graphs
    compiled after each update, and the operators of the last update."""
    results = {}
    for setting in ("false", "true"):
        folder = tmp_path_factory.mktemp(f"compile-{setting}")
        with process_settings_kept():
            trainer = make_trainer(folder, setting)
            losses, graphs = [], [graphs_compiled()]
            for group in batch_groups()[:-1]:
                outcome = trainer.train_step(group)
                assert outcome is not None
                losses.append(outcome[0])
                graphs.append(graphs_compiled())
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                outcome = trainer.train_step(batch_groups()[-1])
            assert outcome is not None
            losses.append(outcome[0])
            graphs.append(graphs_compiled())
        operators = Counter(
            e.name for e in prof.events() if e.name.startswith("aten::")
        )
        results[setting] = {
            "trainer": trainer,
            "losses": losses,
            "graphs": graphs,
            "operators": operators,
        }
    return results


# ---- the loss without data-dependent shapes ---------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("chunks", [1, 3, 11, 40])
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
def test_the_dense_loss_equals_the_reference(chunks, epsilon):
    torch.manual_seed(0)
    projection = nn.Linear(8, 11).double()
    features = torch.randn(3, 5, 8, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 11, (3, 5))
    target[0, 3:], target[2, 1:] = 0, 0  # padding
    loss, nll, count = label_smoothed_cross_entropy(
        projection(features), target, epsilon, 0
    )
    wrt = [features, projection.weight, projection.bias]
    expected = torch.autograd.grad(loss, wrt)
    dense_loss, dense_nll, dense_count = dense_projected_label_smoothed_cross_entropy(
        features, projection, target, epsilon, 0, chunks
    )
    got = torch.autograd.grad(dense_loss * 1.0, wrt)
    assert int(dense_count) == count
    torch.testing.assert_close(dense_loss, loss)
    torch.testing.assert_close(dense_nll, nll)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b)


def test_the_dense_loss_under_bf16_is_the_selected_one():
    """Both forms make the logits' products in bfloat16 and the rest in
    float32: equal to float rounding."""
    torch.manual_seed(0)
    projection = nn.Linear(16, 50)
    features = torch.randn(4, 7, 16, requires_grad=True)
    target = torch.randint(1, 50, (4, 7))
    target[1, 4:] = PAD_ID
    wrt = [features, projection.weight, projection.bias]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        selected = projected_label_smoothed_cross_entropy(
            features, projection, target, 0.1, PAD_ID
        )[0]
        dense = dense_projected_label_smoothed_cross_entropy(
            features, projection, target, 0.1, PAD_ID, 4
        )[0]
    torch.testing.assert_close(dense, selected, rtol=1e-4, atol=1e-3)
    same_gradients(dense, selected, wrt, rtol=2e-2, atol=2e-3)  # bf16 products


def same_gradients(dense, selected, wrt, **tolerance) -> None:
    """Both losses' gradients of ``wrt``: finite and equal."""
    got = torch.autograd.grad(dense, wrt)
    for a, b in zip(got, torch.autograd.grad(selected, wrt), strict=True):
        assert a.isfinite().all()
        torch.testing.assert_close(a, b, **tolerance)


def test_what_padding_holds_never_reaches_the_dense_loss():
    """Features at padding positions are not read: even infinite ones leave
    the loss and every gradient finite and as the selected form's."""
    torch.manual_seed(0)
    projection = nn.Linear(8, 11)
    features = torch.randn(2, 4, 8)
    target = torch.randint(1, 11, (2, 4))
    target[1, 2:] = PAD_ID
    features[1, 2:] = float("inf")
    features.requires_grad_(True)
    wrt = [features, projection.weight, projection.bias]
    selected = projected_label_smoothed_cross_entropy(
        features, projection, target, 0.1, PAD_ID
    )[0]
    dense = dense_projected_label_smoothed_cross_entropy(
        features, projection, target, 0.1, PAD_ID, 3
    )[0]
    torch.testing.assert_close(dense, selected)
    same_gradients(dense, selected, wrt)


def test_vocabulary_slices_cover_it_once():
    for vocab, chunks in [(11, 1), (11, 3), (11, 11), (11, 40), (8000, 7)]:
        slices = vocabulary_slices(vocab, chunks)
        covered = [i for start, stop in slices for i in range(start, stop)]
        assert covered == list(range(vocab))
        assert len(slices) <= chunks


# ---- one graph ----------------------------------------------------------------


@pytest.mark.parametrize("positions", ["sinusoidal", "relative"])
def test_forward_and_loss_trace_as_one_graph(tmp_path, positions):
    """Dropout on, padding in the batch: no graph break (AOTAutograd makes
    the backward of that one graph)."""
    with process_settings_kept():
        trainer = make_trainer(
            tmp_path, "false", model=tiny_model(positions, dropout=0.1)
        )
    task, model = trainer.task, trainer.model
    model.train()
    batch = task.share(batch_groups()[0], 0, 1)[0][0]
    explained = torch._dynamo.explain(task.loss_sum)(model, batch)
    reasons = [reason.reason for reason in explained.break_reasons]
    assert explained.graph_break_count == 0, reasons
    assert explained.graph_count == 1


# ---- compiled equals eager ------------------------------------------------------


def test_compiled_updates_equal_eager_ones(trained):
    eager, compiled = trained["false"]["losses"], trained["true"]["losses"]
    assert len(eager) == len(compiled) == UPDATES
    for a, b in zip(eager, compiled, strict=True):
        assert abs(a - b) <= 1e-5 * abs(a)


def test_variable_lengths_do_not_recompile(trained):
    """The loss, clipping and Adam compile at the first update; 15 batches
    of other sizes and lengths compile at most one graph more."""
    before, first, *_, last = trained["true"]["graphs"]
    assert first - before >= 3  # forward and loss, clipping, Adam
    assert last - first <= 1, trained["true"]["graphs"]
    updater = trained["true"]["trainer"].updater
    assert not (updater.batch_loss.eager or updater.clip.eager)
    assert not updater.adam_step.eager
    assert trained["false"]["graphs"][-1] == trained["false"]["graphs"][0]


def test_the_host_reads_the_device_once_per_update(trained):
    """One ``.item()``-like read per update, outside Adam: the token count
    of the batch, a CPU tensor; the loss and the norm are read with a copy."""
    compiled = trained["true"]["operators"]
    assert compiled["aten::_local_scalar_dense"] <= 1, compiled
    eager = trained["false"]["operators"]
    assert sum(compiled.values()) < sum(eager.values()) / 2


def test_a_checkpoint_holds_adams_settings_as_eager_training_writes_them(trained):
    """While a checkpoint is written, a compiled update's Adam shows the
    settings it was made with: a float rate, not ``capturable``."""
    eager = trained["false"]["trainer"].optimizer.state_dict()["param_groups"]
    updater = trained["true"]["trainer"].updater
    with updater.as_made():
        (group,) = updater.optimizer.state_dict()["param_groups"]
    assert isinstance(group["lr"], float)
    assert {k: v for k, v in group.items() if k not in ("lr", "params")} == {
        k: v for k, v in eager[0].items() if k not in ("lr", "params")
    }
    assert isinstance(updater.optimizer.param_groups[0]["lr"], torch.Tensor)
    assert updater.optimizer.param_groups[0]["capturable"] is True


def test_a_run_moves_between_eager_and_compiled_through_checkpoints(
    tmp_path, compile_cache, capsys
):
    """Eager 4 updates, compiled to 8, eager to 12: the losses of a run
    trained eagerly throughout, to 1e-5."""
    steps = ("train.max_epochs=null", "train.log_every=1", "train.validate_every=4")

    def losses(run):
        records = [json.loads(line) for line in (run / "metrics.jsonl").open()]
        return [r["loss"] for r in records if r.get("kind") == "train"]

    straight, _ = toy_config(tmp_path, *steps, "train.max_steps=12", model=tiny_model())
    run_training(straight, tmp_path / "straight")
    mixed = tmp_path / "mixed"
    for stop, setting in [(4, "false"), (8, "true"), (12, "false")]:
        config, _ = toy_config(
            tmp_path,
            *steps,
            f"train.max_steps={stop}",
            f"train.compile={setting}",
            model=tiny_model(),
        )
        run_training(config, mixed, resume=stop > 4)
        said = capsys.readouterr().out
        assert ("compiling the update" in said) == (setting == "true")
        assert "not compiled" not in said
    expected, got = losses(tmp_path / "straight"), losses(mixed)
    assert len(expected) == len(got) == 12
    for a, b in zip(expected, got, strict=True):
        assert abs(a - b) <= 1e-5 * abs(a)


# ---- compile as a user meets it ---------------------------------------------------


def test_auto_compiles_on_a_gpu_only_the_families_that_compile():
    gpu = torch.device("cuda")
    assert compile_wanted("auto", gpu)
    assert not compile_wanted("auto", gpu, family_compiles=False)
    assert not compile_wanted("auto", CPU)
    assert compile_wanted(True, CPU) and not compile_wanted(False, gpu)
    compiles = {family.arch: family.compiles for family in FAMILIES}
    assert compiles["transformer"] and not (compiles["rnn"] or compiles["nat"])


def test_a_compile_that_cannot_happen_is_one_warning_then_eager(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(
        "rosetta.train.update.cannot_compile", lambda device: "no C++ compiler (g++)"
    )
    with process_settings_kept():
        trainer = make_trainer(tmp_path, "true")
        assert trainer.train_step(batch_groups()[0]) is not None
    assert not trainer.updater.compiled
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if "compiled" in line]
    assert lines == [
        "warning: training is not compiled (no C++ compiler (g++)); it runs eagerly"
    ]


def test_reasons_not_to_compile(monkeypatch):
    if shutil.which(os.environ.get("CXX", "g++")) is not None:
        assert cannot_compile(CPU) is None
    monkeypatch.setenv("CXX", "no-such-compiler")
    monkeypatch.setenv("PATH", "")
    assert "no C++ compiler" in cannot_compile(CPU)
    monkeypatch.setattr(torch, "__version__", "2.1.0")
    assert "older than" in cannot_compile(CPU)


def test_an_operator_the_compiler_cannot_trace_is_one_warning_then_eager():
    said: list[str] = []

    def untraceable(x):
        torch._dynamo.graph_break()
        return x + 1

    function = CompiledOrEager(untraceable, "the step", said.append, fullgraph=True)
    assert function(torch.ones(2)).tolist() == [2.0, 2.0]
    assert function(torch.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert function.eager
    assert len(said) == 1 and said[0].startswith("warning: the step not compiled (")


def test_more_recompiles_than_allowed_are_one_warning_then_eager():
    said: list[str] = []

    def double(x):
        return x * 2

    function = CompiledOrEager(
        double, "the step", said.append, backend="eager", dynamic=False
    )
    limits = {"recompile_limit": 1, "fail_on_recompile_limit_hit": True}
    with torch._dynamo.config.patch(**limits):
        assert function(torch.ones(2)).tolist() == [2.0, 2.0]
        assert function(torch.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert function.eager
    assert len(said) == 1 and "Recompile" in said[0]


def test_the_kernels_are_kept_in_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiled_module.cache_folder() == tmp_path / "rosetta" / "torch-compile"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert compiled_module.cache_folder() == tmp_path / "mine"
    # what torch writes there itself once it has compiled is not a choice
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", compiled_module.torch_default_cache())
    assert compiled_module.cache_folder() == tmp_path / "rosetta" / "torch-compile"


def test_an_update_that_compiled_is_left_out_of_the_pace(monkeypatch):
    """The bar says "compiling" through the first compiled update, and its
    rate starts after it."""
    from types import SimpleNamespace

    from rosetta.config.sections import TrainConfig
    from rosetta.train import budget as budget_module

    graphs = iter([0, 3])
    monkeypatch.setattr(budget_module, "graphs_compiled", lambda: next(graphs))
    state = SimpleNamespace(step=0, epoch=0, elapsed_seconds=0.0)
    budget = budget_module.Budget(TrainConfig(max_steps=10), state, show=True)
    budget.open_bar(10, 1)
    started, printed = budget.bar.start_t, budget.bar.last_print_t
    shown = []
    with budget.updating(compiled=True, first=True):
        shown.append(budget.bar.desc)
        time.sleep(0.01)  # the compile
    assert shown[0].startswith("compiling")
    assert budget.bar.desc.startswith("training")
    assert budget.bar.last_print_t >= printed + 0.01  # the pace starts after it
    assert budget.bar.start_t == started  # the elapsed time holds it
    budget.close()
