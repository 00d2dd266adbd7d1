import math

import pytest
import torch
import torch.nn.functional as F

from rosetta.train import label_smoothed_cross_entropy

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
