import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from rosetta.train import label_smoothed_cross_entropy
from rosetta.train.loss import block_elements, projected_label_smoothed_cross_entropy

PAD = 0


@pytest.mark.reference
def test_without_smoothing_equals_torch_cross_entropy_ignoring_pad():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 7)
    target = torch.randint(1, 7, (3, 5))
    target[1, 3:] = PAD
    target[2, 1:] = PAD
    loss, nll, count = label_smoothed_cross_entropy(logits, target, 0.0, PAD)
    expected = F.cross_entropy(
        logits.reshape(-1, 7), target.reshape(-1), ignore_index=PAD, reduction="sum"
    )
    assert count == int((target != PAD).sum())
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert nll.item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.reference
def test_smoothing_puts_one_minus_eps_on_gold_and_spreads_eps_over_the_others():
    logits = torch.tensor([[[0.5, -1.0, 2.0, 0.0]]])
    target = torch.tensor([[2]])
    eps = 0.2
    log_p = torch.log_softmax(logits[0, 0], -1).tolist()
    expected = -(1 - eps) * log_p[2] - eps / 3 * (log_p[0] + log_p[1] + log_p[3])
    loss, nll, _ = label_smoothed_cross_entropy(logits, target, eps, pad_id=99)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert nll.item() == pytest.approx(-log_p[2], rel=1e-6)


def test_padding_positions_do_not_change_the_loss():
    torch.manual_seed(1)
    logits = torch.randn(2, 4, 6)
    target = torch.tensor([[1, 2, 3, PAD], [4, PAD, PAD, PAD]])
    base = label_smoothed_cross_entropy(logits, target, 0.1, PAD)[0]
    noisy = logits.clone()
    noisy[target == PAD] = torch.randn(int((target == PAD).sum()), 6) * 100
    assert label_smoothed_cross_entropy(noisy, target, 0.1, PAD)[0] == base


def test_loss_of_uniform_prediction_is_log_vocab():
    logits = torch.zeros(1, 1, 10)
    loss, _, _ = label_smoothed_cross_entropy(logits, torch.tensor([[3]]), 0.1, 0)
    assert loss.item() == pytest.approx(math.log(10), rel=1e-6)


def plain_smoothed_loss(logits, target, epsilon, pad_id):
    """The formula term by term on the (n, T, V) log-probabilities."""
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = -log_probs.sum(dim=-1) - nll
    vocab = logits.size(-1)
    loss = (1 - epsilon) * nll + epsilon / (vocab - 1) * others
    mask = target != pad_id
    return loss[mask].sum(), nll[mask].sum()


@pytest.mark.reference
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_values_and_gradients_equal_the_plain_formula(epsilon):
    torch.manual_seed(3)
    logits = (torch.randn(3, 6, 50, dtype=torch.float64) * 3).requires_grad_()
    target = torch.randint(1, 50, (3, 6))
    target[0, 4:] = PAD
    target[2, 1:] = PAD
    loss, nll, _ = label_smoothed_cross_entropy(logits, target, epsilon, PAD)
    expected_loss, expected_nll = plain_smoothed_loss(logits, target, epsilon, PAD)
    assert loss.item() == pytest.approx(expected_loss.item(), rel=1e-12)
    assert nll.item() == pytest.approx(expected_nll.item(), rel=1e-12)
    for weights in [(1.0, 0.0), (0.0, 1.0), (0.7, -0.4)]:  # loss, nll, or both
        ours = torch.autograd.grad(
            weights[0] * loss + weights[1] * nll, logits, retain_graph=True
        )[0]
        plain = torch.autograd.grad(
            weights[0] * expected_loss + weights[1] * expected_nll,
            logits,
            retain_graph=True,
        )[0]
        assert torch.allclose(ours, plain, atol=1e-12)
        assert ours[target == PAD].abs().max() == 0  # padding gets no gradient


@pytest.mark.reference
def test_gradcheck():
    torch.manual_seed(4)
    logits = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([[1, 2, PAD], [4, PAD, PAD]])
    torch.autograd.gradcheck(
        lambda x: label_smoothed_cross_entropy(x, target, 0.2, PAD)[:2], (logits,)
    )


def test_bfloat16_logits_give_a_float32_loss_and_bfloat16_gradient():
    logits = torch.randn(2, 3, 70).bfloat16().requires_grad_()
    target = torch.randint(1, 70, (2, 3))
    loss, _, _ = label_smoothed_cross_entropy(logits, target, 0.1, PAD)
    assert loss.dtype == torch.float32
    loss.backward()
    assert logits.grad.dtype == torch.bfloat16


# ---- the projection inside the loss --------------------------------------


def projection_case(bias: bool, dtype=torch.float64):
    torch.manual_seed(5)
    proj = torch.nn.Linear(16, 50, bias=bias).to(dtype)
    features = torch.randn(3, 7, 16, dtype=dtype, requires_grad=True)
    target = torch.randint(1, 50, (3, 7))
    target[0, 5:] = PAD
    target[2, 2:] = PAD
    return proj, features, target


@pytest.mark.reference
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
@pytest.mark.parametrize("block_rows", [1, 4, 100])  # 14 real rows: 14, 4, 1 blocks
def test_projected_loss_equals_the_loss_of_the_projected_logits(
    bias, epsilon, block_rows
):
    proj, features, target = projection_case(bias)
    params = [features, *proj.parameters()]
    loss, nll, count = projected_label_smoothed_cross_entropy(
        features, proj, target, epsilon, PAD, block_rows=block_rows
    )
    expected_loss, expected_nll, expected_count = label_smoothed_cross_entropy(
        proj(features), target, epsilon, PAD
    )
    assert count == expected_count == 14
    assert loss.item() == pytest.approx(expected_loss.item(), rel=1e-12)
    assert nll.item() == pytest.approx(expected_nll.item(), rel=1e-12)
    ours = torch.autograd.grad(0.3 * loss, params)
    plain = torch.autograd.grad(0.3 * expected_loss, params)
    for mine, theirs in zip(ours, plain, strict=True):
        assert torch.allclose(mine, theirs, atol=1e-12)
    assert ours[0][target == PAD].abs().max() == 0  # padding gets no gradient
    assert not nll.requires_grad


@pytest.mark.reference
def test_projected_loss_gradcheck():
    proj, features, target = projection_case(bias=True)

    inputs = (features, proj.weight.detach().clone(), proj.bias.detach().clone())
    torch.autograd.gradcheck(
        lambda x, w, b: projected_label_smoothed_cross_entropy(
            x, _linear(w, b), target, 0.2, PAD, block_rows=3
        )[0],
        tuple(t.requires_grad_() for t in inputs),
    )


def _linear(weight: torch.Tensor, bias: torch.Tensor) -> torch.nn.Linear:
    """An nn.Linear whose parameters are these tensors (gradients flow to them)."""
    linear = torch.nn.Linear(weight.size(1), weight.size(0))
    del linear.weight, linear.bias
    linear.weight, linear.bias = weight, bias
    return linear


def test_projected_loss_under_bf16_autocast_is_close_to_autocasts_own():
    proj, features, target = projection_case(bias=True, dtype=torch.float32)
    params = [features, *proj.parameters()]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = proj(features)
        loss = projected_label_smoothed_cross_entropy(
            features, proj, target, 0.1, PAD, block_rows=4
        )[0]
    expected = label_smoothed_cross_entropy(logits, target, 0.1, PAD)[0]
    assert logits.dtype == torch.bfloat16
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected.item(), rel=1e-3)
    ours = torch.autograd.grad(loss, params)
    plain = torch.autograd.grad(expected, params)
    for mine, theirs in zip(ours, plain, strict=True):
        assert mine.dtype == torch.float32
        assert (mine - theirs).abs().max() <= 2e-2 * theirs.abs().max()
    exact = label_smoothed_cross_entropy(proj(features), target, 0.1, PAD)[0]
    assert loss.item() != exact.item()  # it did compute in bfloat16


def test_float32_blocks_sum_to_the_loss_and_gradients_of_one_block():
    """Blocks change only the order of float32 sums: the loss and every
    gradient equal those of one block, and of the plain loss, to rounding."""
    proj, features, target = projection_case(bias=True, dtype=torch.float32)
    params = [features, *proj.parameters()]
    results = []
    for block_rows in (1, 3, 100):  # 14, 5 and 1 blocks
        loss, nll, _ = projected_label_smoothed_cross_entropy(
            features, proj, target, 0.1, PAD, block_rows=block_rows
        )
        results.append((loss, nll, torch.autograd.grad(loss, params)))
    plain, plain_nll, _ = label_smoothed_cross_entropy(proj(features), target, 0.1, PAD)
    plain_grads = torch.autograd.grad(plain, params)
    for loss, nll, grads in results:
        assert loss.item() == pytest.approx(plain.item(), rel=1e-6)
        assert nll.item() == pytest.approx(plain_nll.item(), rel=1e-6)
        for mine, theirs in zip(grads, plain_grads, strict=True):
            assert torch.allclose(mine, theirs, rtol=1e-5, atol=1e-7)


def test_a_gpu_projects_a_token_budget_batch_in_one_block(monkeypatch):
    """A CPU keeps 16 MB blocks (4M logits); a GPU's blocks follow its total
    memory, so a 25,000-token batch over 32,000 words is one block on an
    80 GB GPU, and several on a small one, never fewer logits than a CPU's."""
    memory = {"total_memory": 80 * 2**30}
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda _: SimpleNamespace(**memory)
    )
    assert block_elements(torch.device("cpu")) == 4 * 1024 * 1024
    assert block_elements(torch.device("cuda")) >= 25_000 * 32_000
    memory["total_memory"] = 8 * 2**30
    assert 4 * 1024 * 1024 < block_elements(torch.device("cuda")) < 25_000 * 32_000
    memory["total_memory"] = 2**20
    assert block_elements(torch.device("cuda")) == 4 * 1024 * 1024
