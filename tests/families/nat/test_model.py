import pytest
import torch

from rosetta.families.nat.config import NATConfig
from rosetta.families.nat.model import build_nat, copy_by_fertility, uniform_copy


def vectors(rows, length):
    """Source vectors whose value names their (row, position)."""
    values = torch.arange(rows * length, dtype=torch.float).view(rows, length, 1)
    return values.expand(-1, -1, 2).clone()


def test_fertility_copy_repeats_each_source_vector_in_order():
    embedded = vectors(2, 4)
    fertilities = torch.tensor([[2, 0, 1, 0], [1, 1, 1, 3]])
    copied, mask = copy_by_fertility(embedded, fertilities, max_fertility=8)
    assert copied.shape == (2, 6, 2)
    assert copied[0, :, 0].tolist() == [0, 0, 2, 0, 0, 0]  # a a c, then zeros
    assert mask[0].tolist() == [True, True, True, False, False, False]
    assert copied[1, :, 0].tolist() == [4, 5, 6, 7, 7, 7]
    assert bool(mask[1].all())


def test_fertility_copy_caps_fertilities_and_keeps_an_empty_target_one_wide():
    embedded = vectors(2, 3)
    capped, mask = copy_by_fertility(embedded, torch.tensor([[5, 1, 0], [0, 0, 0]]), 2)
    assert capped[0, :, 0].tolist() == [0, 0, 1]
    assert mask.tolist() == [[True] * 3, [False] * 3]
    empty, mask = copy_by_fertility(
        embedded[1:], torch.zeros(1, 3, dtype=torch.long), 2
    )
    assert empty.shape == (1, 1, 2) and not bool(mask.any())
    with pytest.raises(ValueError, match="non-negative"):
        copy_by_fertility(embedded, torch.tensor([[1, -1, 0], [0, 0, 0]]), 2)


def test_uniform_copy_spreads_the_real_source_over_the_target():
    embedded = vectors(2, 4)
    src_mask = torch.tensor([[True] * 4, [True, True, False, False]])
    copied, mask = uniform_copy(embedded, src_mask, torch.tensor([8, 3]))
    assert copied[0, :, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert copied[1, :3, 0].tolist() == [4, 4, 5]  # padding (6, 7) never copied
    assert mask[1].tolist() == [True] * 3 + [False] * 5


def tiny_nat(vocabulary=12, seed=0, **overrides):
    torch.manual_seed(seed)
    options = dict(
        arch="nat",
        share_embeddings=False,
        encoder_layers=1,
        decoder_layers=1,
        d_model=16,
        heads=2,
        d_ff=32,
        dropout=0.0,
        max_positions=32,
        max_fertility=3,
    )
    options.update(overrides)
    return build_nat(NATConfig(**options), vocabulary, vocabulary).eval()


def test_padding_has_fertility_zero_and_never_changes_real_outputs():
    model = tiny_nat()
    src = torch.tensor([[5, 6, 7, 3], [8, 3, 0, 0]])
    src_mask = src > 0
    fertilities = torch.tensor([[1, 2, 0, 1], [2, 1, 0, 0]])
    with torch.no_grad():
        features, tgt_mask, logits = model(src, src_mask, fertilities)
        noisy = torch.where(src_mask, src, torch.tensor(9))
        # fertilities at padding are ignored, whatever they say
        at_padding = torch.where(src_mask, fertilities, torch.tensor(3))
        again, again_mask, _ = model(noisy, src_mask, at_padding)
    assert tgt_mask.tolist() == [[True] * 4, [True] * 3 + [False]]
    assert logits[1, 2:].argmax(-1).tolist() == [0, 0]
    assert torch.equal(tgt_mask, again_mask)
    assert (features - again)[tgt_mask].abs().max() <= 1e-5


def test_a_tiny_nat_learns_to_copy():
    """Fertility 1 everywhere but <eos>: the decoder input is the source, and
    the model must learn to emit each position's own token, in one pass."""
    torch.manual_seed(0)
    model = tiny_nat(d_model=32, d_ff=64, max_fertility=2).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(1)

    def batch():
        words = torch.randint(4, 12, (32, 6), generator=generator)
        src = torch.cat([words, torch.full((32, 1), 3)], dim=1)
        fertilities = torch.ones_like(src)
        fertilities[:, -1] = 0
        return src, words, fertilities

    for _ in range(150):
        src, words, fertilities = batch()
        features, _, logits = model(src, src > 0, fertilities)
        loss = torch.nn.functional.cross_entropy(
            model.output_proj(features).flatten(0, 1), words.flatten()
        ) + torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), fertilities.flatten()
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    src, words, fertilities = batch()
    with torch.no_grad():
        memory, logits = model.encode(src, src > 0)
        predicted = logits.argmax(-1)
        features, _, _ = model.decode(src, src > 0, memory, predicted)
    assert torch.equal(predicted, fertilities)
    assert (model.output_proj(features).argmax(-1) == words).float().mean() >= 0.99


def test_a_decoder_without_positional_attention_has_none_of_its_weights():
    plain = tiny_nat(length_model="ctc", upsample=2)
    lean = tiny_nat(length_model="ctc", upsample=2, positional_attention=False)
    names = {name for name, _ in lean.named_parameters()}
    assert not any("positional" in name for name in names)
    assert names < {name for name, _ in plain.named_parameters()}
    src = torch.tensor([[5, 6, 3]])
    features, mask, _ = lean(src, src > 0, None)
    assert features.shape == (1, 6, 16) and bool(mask.all())


CONTROLS = {  # each control, as the command line and the server spell it
    "min_length": (["--min-len", "2"], {"min_length": 2}),
    "no_repeat_ngram": (["--no-repeat-ngram", "1"], {"no_repeat_ngram": 1}),
    "ban": (["--ban", "alpha"], {"ban": ["alpha"]}),
}


@pytest.mark.parametrize("control", CONTROLS)
def test_one_pass_refuses_every_control_it_cannot_honour(
    toy_run, tmp_path, capsys, control
):
    """Not ignored: translate, evaluate, noisy parallel decoding and the
    server each refuse it in one line."""
    from fastapi.testclient import TestClient

    from rosetta.cli import main
    from rosetta.jobs.loading import load_translator
    from rosetta.serve.app import create_app

    nat, teacher = toy_run("nat"), toy_run("transformer")
    capsys.readouterr()  # the runs' training logs
    source = tmp_path / "in.txt"
    source.write_text("alpha beta gamma\n")
    flags, fields = CONTROLS[control]
    model = ["-m", str(nat), *flags]
    for command in [
        ["translate", *model, "-i", str(source)],
        [
            "translate",
            *model,
            "-i",
            str(source),
            "--npd",
            "2",
            "--teacher",
            str(teacher),
        ],
        ["evaluate", *model, "--src", str(source), "--ref", str(source)],
    ]:
        assert main(command) == 2, command
        captured = capsys.readouterr()
        assert captured.out == ""
        error = captured.err.strip().splitlines()[-1]
        assert "a NAT model decodes in one pass: no minimum length" in error
    with TestClient(create_app(load_translator(nat, device="cpu"))) as client:
        body = {"sentences": ["alpha beta"], **fields}
        answer = client.post("/translate", json=body)
        assert answer.status_code == 422, answer.text
        assert "no minimum length, n-gram blocking or banned" in answer.text
        assert client.post("/translate", json={"sentences": ["alpha"]}).is_success
