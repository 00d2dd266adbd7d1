"""Model weights in checkpoints: shared storage, tied weights, clear errors."""

import pytest
import torch
from safetensors.torch import load_file, save_file, save_model

from rosetta.errors import RosettaError
from rosetta.families import build_model
from rosetta.runs import checkpoint as ckpt
from rosetta.runs import weights
from tests.support.toy import RNN_ATTENTION, toy_config
from tests.support.transformers import transformer

CPU = torch.device("cpu")


def rnn_model(tmp_path, seed):
    config, _ = toy_config(tmp_path, model=RNN_ATTENTION)
    torch.manual_seed(seed)
    return build_model(config.model, 20, 20)


def flatten_into_one_buffer(module):
    """What cuDNN does to a recurrent layer's weights on a GPU: every
    parameter becomes a view into one flat buffer."""
    parameters = list(module.parameters())
    flat = torch.cat([p.detach().flatten() for p in parameters])
    offset = 0
    for p in parameters:
        p.data = flat[offset : offset + p.numel()].view_as(p)
        offset += p.numel()
    return flat


def assert_same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


def save(folder, model):
    """A checkpoint of ``model`` alone, written as training writes one."""
    with ckpt.new_checkpoint_folder(folder) as written:
        ckpt.write_checkpoint_files(written, model, None, {})


def test_weights_that_share_one_buffer_are_saved_and_load_back_exactly(tmp_path):
    model = rnn_model(tmp_path, seed=1)
    flat = flatten_into_one_buffer(model.encoder.rnn)
    names = [n for n, _ in model.encoder.rnn.named_parameters()]
    assert len(names) > 1 and all(
        p.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr()
        for p in model.encoder.rnn.parameters()
    )
    save(tmp_path / "c", model)
    stored = load_file(str(tmp_path / "c" / ckpt.MODEL_FILE))
    assert {f"encoder.rnn.{n}" for n in names} <= stored.keys()
    fresh = rnn_model(tmp_path, seed=2)
    weights.load_weights(tmp_path / "c", fresh, CPU)
    assert_same_weights(model, fresh)
    # and loading into the flat-buffer layout writes through its views
    again = rnn_model(tmp_path, seed=3)
    flat = flatten_into_one_buffer(again.encoder.rnn)
    weights.load_weights(tmp_path / "c", again, CPU)
    assert_same_weights(model, again)
    assert torch.equal(
        flat[: model.encoder.rnn.weight_ih_l0.numel()],
        model.encoder.rnn.weight_ih_l0.flatten(),
    )


def tied_transformer(seed):
    torch.manual_seed(seed)
    return transformer(
        30, 30, d_model=16, heads=2, d_ff=32, share_embeddings=True, tie_output=True
    )


def test_tied_weights_are_stored_once_and_stay_tied(tmp_path):
    model = tied_transformer(1)
    save(tmp_path / "c", model)
    stored = load_file(str(tmp_path / "c" / ckpt.MODEL_FILE))
    tied = [
        "encoder.embedding.token.weight",
        "decoder.embedding.token.weight",
        "output_proj.weight",
    ]
    assert sum(name in stored for name in tied) == 1
    fresh = tied_transformer(2)
    weights.load_weights(tmp_path / "c", fresh, CPU)
    assert_same_weights(model, fresh)
    assert fresh.output_proj.weight is fresh.encoder.embedding.token.weight


def test_a_file_written_by_safetensors_save_model_loads(tmp_path):
    """Checkpoints written before (safetensors' own ``save_model``) still load."""
    model = tied_transformer(1)
    (tmp_path / "c").mkdir()
    save_model(model, str(tmp_path / "c" / ckpt.MODEL_FILE))
    fresh = tied_transformer(2)
    weights.load_weights(tmp_path / "c", fresh, CPU)
    assert_same_weights(model, fresh)


def test_the_output_projection_loads_from_its_earlier_name(tmp_path):
    """Earlier checkpoints kept an untied output projection in the decoder:
    the family's ``upgrade_weights`` names it as it is now (without it, the
    names do not match)."""
    from rosetta.families.transformer import FAMILY

    torch.manual_seed(1)
    model = transformer(30, 30, d_model=16, heads=2, d_ff=32, tie_output=False)
    tensors = ckpt.model_tensors(model)
    tensors["decoder.output_proj.weight"] = tensors.pop("output_proj.weight")
    (tmp_path / "c").mkdir()
    save_file(tensors, str(tmp_path / "c" / ckpt.MODEL_FILE))
    torch.manual_seed(2)
    fresh = transformer(30, 30, d_model=16, heads=2, d_ff=32, tie_output=False)
    with pytest.raises(RosettaError, match=r"unexpected: decoder\.output_proj"):
        weights.load_weights(tmp_path / "c", fresh, CPU)
    weights.load_weights(tmp_path / "c", fresh, CPU, FAMILY.upgrade_weights)
    assert_same_weights(model, fresh)


def test_weights_of_another_model_are_a_clear_error(tmp_path):
    model = tied_transformer(1)
    save(tmp_path / "c", model)
    path = tmp_path / "c" / ckpt.MODEL_FILE
    stored = load_file(str(path))
    stored.pop("decoder.layers.0.ffn.linear1.weight")
    stored["decoder.extra"] = torch.zeros(1)
    save_file(stored, str(path))
    with pytest.raises(RosettaError, match=r"missing: decoder\.layers\.0\.ffn") as e:
        weights.load_weights(tmp_path / "c", tied_transformer(2), CPU)
    assert "unexpected: decoder.extra" in str(e.value)
    bigger = transformer(30, 30, d_model=32, heads=2, d_ff=32, share_embeddings=True)
    save(tmp_path / "d", bigger)
    with pytest.raises(RosettaError, match=r"is \(\d+, 32\) in the file") as e:
        weights.load_weights(tmp_path / "d", tied_transformer(2), CPU)
    assert "\n" not in str(e.value)  # one line, not torch's list


def test_the_chosen_checkpoint_says_why(tmp_path):
    from rosetta.runs.checkpoint import choose_checkpoint, write_json_atomic

    for name in ("checkpoint-0000010", "checkpoint-0000020"):
        (tmp_path / name).mkdir()
    index = {
        "checkpoints": ["checkpoint-0000010", "checkpoint-0000020"],
        "latest": "checkpoint-0000020",
        "best": "checkpoint-0000010",
        "best_score": -2.5,  # a loss, kept negated
        "metric": "loss",
    }
    write_json_atomic(tmp_path / "checkpoints.json", index)
    assert choose_checkpoint(tmp_path) == (
        tmp_path / "checkpoint-0000010",
        "the run's best by validation loss 2.50",
    )
    assert choose_checkpoint(tmp_path, "latest") == (
        tmp_path / "checkpoint-0000020",
        "the run's latest",
    )


def test_pruning_removes_a_checkpoints_files_and_leaves_a_users(tmp_path, capsys):
    run = tmp_path / "run"
    for step in (1, 2, 3):
        folder = run / f"checkpoint-{step:07d}"
        folder.mkdir(parents=True)
        (folder / ckpt.MODEL_FILE).write_bytes(b"w")
        (folder / ckpt.META_FILE).write_text("{}")
    (run / "checkpoint-0000001" / "notes.txt").write_text("a user's")
    for step in (1, 2, 3):
        name = f"checkpoint-{step:07d}"
        ckpt.record_checkpoint(
            run, name, is_best=step == 3, best_score=1.0, metric="bleu", keep_last=1
        )
    assert not (run / "checkpoint-0000002").exists()  # Rosetta's alone: gone
    kept = run / "checkpoint-0000001"
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]
    assert "holds files that are not Rosetta's" in capsys.readouterr().out
    assert ckpt.read_index(run)["checkpoints"] == ["checkpoint-0000003"]
