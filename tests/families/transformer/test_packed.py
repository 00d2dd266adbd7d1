"""``pack_for_inference``: a snapshot that decodes as the model it was packed
from, after every kind of weight change, and a model that never decodes with
anything but its own weights."""

import pytest
import torch

from rosetta.errors import RosettaError
from rosetta.families.transformer.fast.packed import pack_for_inference
from tests.families.transformer.test_model import random_batch, tiny_model
from tests.families.transformer.test_step import step_log_probs

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def train_steps(model, optimizer, steps=5):
    """A few real updates on a next-token loss."""
    src, src_mask, tgt = (t.to(model_device(model)) for t in random_batch())
    model.train()
    for _ in range(steps):
        logits = model.output_proj(model(src, src_mask, tgt[:, :-1]))
        loss = torch.nn.functional.cross_entropy(
            logits.flatten(0, 1).float(), tgt[:, 1:].flatten()
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


def model_device(model):
    return next(model.parameters()).device


def adam(**options):
    def update(model):
        try:
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, **options)
        except (RuntimeError, TypeError, ValueError) as error:
            pytest.skip(f"this PyTorch has no such Adam ({error})")
        train_steps(model, optimizer)

    return update


def sgd(model):
    train_steps(model, torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9))


def load_other_weights(model):
    other = tiny_model(norm_first=False)
    torch.manual_seed(11)
    for p in other.parameters():
        torch.nn.init.normal_(p, std=0.3)
    model.load_state_dict(other.state_dict())


def copy_in_place(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p * 1.5 + 0.05)


def assign_data(model):
    for p in model.parameters():
        p.data = p.data * 0.5 - 0.05  # new storage, nothing in place


def to_float64(model):
    model.to(torch.float64)
    copy_in_place(model)


def to_other_device(model):
    if not torch.cuda.is_available():
        pytest.skip("moving between devices needs CUDA")
    model.to("cpu" if model_device(model).type == "cuda" else "cuda")
    copy_in_place(model)


CHANGES = {
    "fused Adam": adam(fused=True),
    "foreach Adam": adam(foreach=True),
    "plain Adam": adam(foreach=False),
    "SGD with momentum": sgd,
    "load_state_dict": load_other_weights,
    "copy_ under no_grad": copy_in_place,
    ".data assignment": assign_data,
    ".to(float64)": to_float64,
    ".to(another device)": to_other_device,
}


def fresh_load(model):
    """A new model holding ``model``'s weights: what a checkpoint loads into."""
    fresh = tiny_model().to(model_device(model), next(model.parameters()).dtype)
    fresh.load_state_dict(model.state_dict())
    return fresh.eval()


def log_probs(model):
    src, src_mask, tgt = (t.to(model_device(model)) for t in random_batch())
    return step_log_probs(model, src, src_mask, tgt)[0]


@pytest.mark.reference
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_decoding_follows_every_kind_of_weight_change(change, device):
    model = tiny_model().to(device)
    old_pack = pack_for_inference(model)
    old = log_probs(old_pack)

    CHANGES[change](model)

    reference = log_probs(fresh_load(model))
    assert (reference - old.to(reference)).abs().max() > 1e-3, "nothing changed"
    # the model decodes with its weights as they are now, never a stale copy
    assert torch.equal(log_probs(model), reference)
    # packing again decodes as the fresh load does
    tolerance = 1e-5 if device == "cpu" else 1e-4
    assert (log_probs(pack_for_inference(model)) - reference).abs().max() <= tolerance
    # and the earlier pack, a snapshot, was not touched by the change
    assert torch.equal(log_probs(old_pack), old)


def test_the_snapshot_refuses_what_would_make_it_disagree_with_itself():
    model = tiny_model()
    packed = pack_for_inference(model)
    assert not any(p.requires_grad for p in packed.parameters())
    for attempt in (
        packed.train,
        lambda: packed.load_state_dict(packed.state_dict()),
        lambda: packed.to(torch.float64),
    ):
        with pytest.raises(RosettaError, match="pack it again"):
            attempt()
    packed.eval()  # allowed: it is in eval mode already
    assert model.training is False and all(p.requires_grad for p in model.parameters())
