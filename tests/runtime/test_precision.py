"""bf16 and fp16 precision: autocast where asked, float32 everywhere else, and
it trains; int8 inference."""

import json

import pytest
import torch

from rosetta.data import Example, collate
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from rosetta.nn import MultiHeadAttention
from rosetta.runtime.precision import autocast, autocast_active, current_autocast
from rosetta.search.options import SearchOptions
from tests.support.toy import (
    RNN_ATTENTION,
    TRANSFORMER,
    TRANSFORMER_RELATIVE,
    toy_config,
)

CPU = torch.device("cpu")


def test_fp32_is_no_autocast_and_bf16_fp16_are_autocast():
    with autocast(CPU, "fp32"):
        assert not torch.is_autocast_enabled("cpu")
    with autocast(CPU, "bf16"):
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    with autocast(CPU, "fp16"):
        assert torch.get_autocast_dtype("cpu") == torch.float16
    with pytest.raises(RosettaError, match="one of fp32, bf16, fp16, int8"):
        autocast(CPU, "fp8")


@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_under_bf16_computes_its_softmax_in_float32(need_weights):
    torch.manual_seed(0)
    attention = MultiHeadAttention(32, 4).eval()
    x = torch.randn(3, 7, 32)
    mask = torch.ones(3, 1, 1, 7, dtype=torch.bool)
    mask[1, ..., 5:] = False
    reference, reference_weights = attention(x, x, x, mask, need_weights)
    with autocast(CPU, "fp32"):  # exactly the plain float32 computation
        same, _ = attention(x, x, x, mask, need_weights)
    assert torch.equal(same, reference)
    with autocast(CPU, "bf16"):
        output, weights = attention(x, x, x, mask, need_weights)
    assert output.dtype == torch.bfloat16  # W^O ran in bf16 ...
    assert torch.allclose(output.float(), reference, atol=5e-2)
    if need_weights:  # ... but the attention weights are float32
        assert weights.dtype == torch.float32
        assert torch.allclose(weights, reference_weights, atol=2e-2)


def train_losses(run):
    records = (run / "metrics.jsonl").read_text().splitlines()
    return [r["loss"] for r in map(json.loads, records) if r["kind"] == "train"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "model"),
    [
        ("transformer", TRANSFORMER),
        ("transformer-relative", TRANSFORMER_RELATIVE),
        ("rnn-attention", RNN_ATTENTION),
    ],
)
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_training_learns_as_fp32_does_and_decodes_alike(
    tmp_path, toy_run, kind, model, precision
):
    config, _ = toy_config(
        tmp_path,
        "train.max_epochs=null",
        "train.max_steps=60",
        "train.validate_every=30",
        f"train.precision={precision}",
        model=model,
    )
    run_training(config, tmp_path / "run")
    losses = train_losses(tmp_path / "run")
    assert losses[-1] < 0.8 * losses[0]
    # The same run in float32 (same seed, data and steps) ends where this does.
    fp32_losses = train_losses(toy_run(kind))
    assert losses[-1] == pytest.approx(fp32_losses[-1], rel=0.1)

    fp32 = load_translator(tmp_path / "run", device="cpu")
    half = load_translator(tmp_path / "run", device="cpu", precision=precision)
    assert half.config.train.precision == precision  # saved with the run
    sentences = ["alpha beta gamma", "delta eps", "kappa iota theta zeta"]
    examples = [Example(fp32.tokenizers.src.encode(s), []) for s in sentences]
    batch = collate(examples)
    model_ = fp32.model
    with torch.no_grad():
        state = model_.init_state(
            model_.encode(batch.src, batch.src_mask), batch.src_mask
        )
        exact, _ = model_.step(torch.full((3,), 2), state)
        with autocast(CPU, precision):
            state = model_.init_state(
                model_.encode(batch.src, batch.src_mask), batch.src_mask
            )
            approximate, _ = model_.step(torch.full((3,), 2), state)
    assert approximate.dtype == torch.float32  # log-probabilities stay float32
    assert torch.allclose(approximate, exact, atol=0.15)
    assert len(half.translate(sentences)) == 3


@pytest.mark.parametrize(
    "kind", ["transformer", "transformer-relative", "rnn-attention"]
)
def test_int8_inference_quantizes_linear_layers_and_stays_close(toy_run, kind):
    fp32 = load_translator(toy_run(kind), device="cpu")
    int8 = load_translator(toy_run(kind), device="cpu", precision="int8")
    quantized = [m for m in int8.model.modules() if "quantized" in type(m).__module__]
    assert quantized, "no layer was quantized"
    assert not any("quantized" in type(m).__module__ for m in fp32.model.modules())
    sentences = ["alpha beta gamma", "delta eps", "kappa iota theta zeta"]
    batch = collate([Example(fp32.tokenizers.src.encode(s), []) for s in sentences])
    with torch.no_grad():
        steps = []
        for model in (fp32.model, int8.model):
            state = model.init_state(
                model.encode(batch.src, batch.src_mask), batch.src_mask
            )
            steps.append(model.step(torch.full((3,), 2), state)[0])
    assert torch.allclose(steps[0], steps[1], atol=0.3)
    assert len(int8.translate(sentences, SearchOptions(beam_size=3))) == 3


def test_int8_refuses_a_gpu(toy_run):
    with pytest.raises(RosettaError, match="runs on the CPU"):
        load_translator(toy_run("transformer"), device="cuda", precision="int8")


def test_current_autocast_is_entered_again_in_another_thread():
    import contextlib
    import threading

    seen = []
    with torch.autocast("cpu", dtype=torch.bfloat16):
        make = current_autocast("cpu")

        def worker(enter: bool) -> None:
            with make() if enter else contextlib.nullcontext():
                dtype = torch.get_autocast_dtype("cpu")
                seen.append((autocast_active("cpu"), dtype))

        for enter in (False, True):
            thread = threading.Thread(target=worker, args=(enter,))
            thread.start()
            thread.join()
    assert seen[0][0] is False  # autocast does not follow a thread by itself
    assert seen[1] == (True, torch.bfloat16)
    assert not autocast_active("cpu")
    assert current_autocast("cpu") is contextlib.nullcontext
