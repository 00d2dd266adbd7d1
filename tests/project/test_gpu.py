"""Every family and every training feature, once on each device: a few updates,
saved, loaded back and decoding there.

Parametrized over ``cpu`` and ``cuda`` (skipped without a GPU, required with
``ROSETTA_REQUIRE_CUDA``); ``make gpu-check`` runs the ``cuda`` cases (``-k
cuda``) on a GPU machine, the suite runs the ``cpu`` ones everywhere so that
the cases themselves cannot rot between GPU loans.
"""

from __future__ import annotations

import math
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from safetensors.torch import load_file

from rosetta.jobs.loading import load_language_model, load_translator
from rosetta.jobs.training import run_training
from rosetta.runs.checkpoint import resolve_checkpoint
from tests.support.toy import TOY_MODELS, toy_config, toy_lm_config

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(
            not torch.cuda.is_available(), reason="no CUDA GPU visible"
        ),
    ),
]
SENTENCES = ["alpha beta gamma", "delta eps zeta eta"]


def few_updates(device: str, steps: int = 6) -> tuple[str, ...]:
    return (
        f"train.device={device}",
        "train.max_epochs=null",
        f"train.max_steps={steps}",
        f"train.validate_every={steps // 2}",
    )


def weights_of(run: Path) -> dict[str, torch.Tensor]:
    return load_file(resolve_checkpoint(run, "latest") / "model.safetensors")


def device_of(module: torch.nn.Module) -> str:
    return next(module.parameters()).device.type


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("family", list(TOY_MODELS))
def test_a_family_trains_saves_loads_and_decodes_on_the_device(
    tmp_path, device, family
):
    if family == "nat":
        pytest.importorskip("eflomal", reason="the fertility NAT aligns with eflomal")
    config, _ = toy_config(tmp_path, *few_updates(device), model=TOY_MODELS[family])
    state = run_training(config, tmp_path / "run")
    assert state.step == 6
    translator = load_translator(tmp_path / "run", device=device)
    assert device_of(translator.model) == device
    outputs = translator.translate(SENTENCES)
    assert len(outputs) == len(SENTENCES)
    assert all(isinstance(text, str) for text in outputs)


@pytest.mark.parametrize("device", DEVICES)
def test_the_language_model_trains_scores_and_generates_on_the_device(tmp_path, device):
    config, _ = toy_lm_config(tmp_path, f"train.device={device}", "train.max_steps=6")
    run_training(config, tmp_path / "run")
    model = load_language_model(tmp_path / "run", device=device)
    assert device_of(model.model) == device
    score = model.score((tmp_path / "valid.txt").read_text()[:400])
    assert math.isfinite(score.loss) and score.loss > 0
    assert len(model.generate("ROMEO:", tokens=20, seed=1)) > len("ROMEO:")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_trains_and_decodes_on_the_device(tmp_path, device, precision):
    if device == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16 arithmetic")
    config, _ = toy_config(
        tmp_path, *few_updates(device), f"train.precision={precision}"
    )
    run_training(config, tmp_path / "run")
    weights = weights_of(tmp_path / "run")
    # the weights stay float32 and finite: the loss scale skipped no update
    # into infinities (fp16) and autocast only changed the arithmetic
    assert all(w.dtype == torch.float32 for w in weights.values())
    assert all(torch.isfinite(w).all() for w in weights.values())
    translator = load_translator(tmp_path / "run", device=device, precision=precision)
    assert len(translator.translate(SENTENCES)) == len(SENTENCES)


@pytest.mark.parametrize("device", DEVICES)
def test_a_resumed_run_ends_as_an_uninterrupted_one_on_the_device(tmp_path, device):
    """Ten updates in one run, twice, and in two runs (five, then resumed).
    Where the device repeats itself exactly (the CPU; a GPU whose kernels are
    deterministic) the resumed weights must be identical; otherwise no further
    from the first run than its own repeat is (a lost random state or
    optimizer moment would put them far off)."""
    ten, five = few_updates(device, 10), few_updates(device, 5)
    whole, _ = toy_config(tmp_path, *ten)
    run_training(whole, tmp_path / "whole")
    run_training(whole, tmp_path / "again")
    half, _ = toy_config(tmp_path, *five)
    run_training(half, tmp_path / "split")
    run_training(whole, tmp_path / "split", resume=True)
    first, again, resumed = (
        weights_of(tmp_path / name) for name in ("whole", "again", "split")
    )

    def furthest(a, b):
        return max((a[k] - b[k]).abs().max().item() for k in a)

    repeat = furthest(first, again)
    if device == "cpu":
        assert repeat == 0.0
    if repeat == 0.0:
        assert furthest(first, resumed) == 0.0
    else:
        assert furthest(first, resumed) <= 4 * repeat


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("device", DEVICES)
def test_training_joins_a_process_group_on_the_devices_backend(
    tmp_path, device, monkeypatch
):
    """The backend torchrun's processes use there (NCCL on a GPU, Gloo on the
    CPU), one process: a reduction over the device's tensors, then a training
    that finds the group and leaves it."""
    backend = "nccl" if device == "cuda" else "gloo"
    if not dist.is_available() or not dist.is_backend_available(backend):
        pytest.skip(f"this PyTorch has no {backend}")
    monkeypatch.setitem(os.environ, "MASTER_ADDR", "127.0.0.1")
    monkeypatch.setitem(os.environ, "MASTER_PORT", str(free_port()))
    dist.init_process_group(backend, rank=0, world_size=1)
    try:
        total = torch.ones(3, device=device)
        dist.all_reduce(total)
        assert total.tolist() == [1.0, 1.0, 1.0]
        config, _ = toy_config(tmp_path, *few_updates(device))
        state = run_training(config, tmp_path / "run")
        assert state.step == 6
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    assert load_translator(tmp_path / "run", device=device).translate(SENTENCES)


@pytest.mark.parametrize("device", DEVICES)
def test_fused_attention_is_the_formula_without_a_cudnn_plan(device):
    """The attention kernels a GPU runs compute what the formula says, in
    bf16 too, and cuDNN's (a plan built per shape) is not among them."""
    from torch.profiler import ProfilerActivity, profile

    from rosetta.nn.attention import fused_attention, scaled_dot_product_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 7, 16, device=device) for _ in range(3))
    mask = torch.rand(2, 1, 7, 7, device=device) > 0.3
    mask[..., 0] = True  # every query may attend somewhere
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as recorded:
        exact = fused_attention(q, k, v, mask)
        half = fused_attention(*(t.bfloat16() for t in (q, k, v)), mask)
    names = [event.key.lower() for event in recorded.key_averages()]
    assert not [name for name in names if "cudnn" in name]
    assert torch.allclose(exact, expected, atol=1e-5)
    assert torch.allclose(half.float(), expected, atol=5e-2)
