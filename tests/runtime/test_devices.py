import pytest
import torch

from rosetta.errors import RosettaError
from rosetta.runtime.devices import pick_device


def test_auto_picks_a_gpu_when_there_is_one_and_names_pass_through():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device().type == expected
    assert pick_device(None).type == expected
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
@pytest.mark.parametrize("name", ["cuda", "cuda:1"])
def test_cuda_without_a_gpu_is_a_clear_error(name):
    with pytest.raises(RosettaError, match="no CUDA GPU"):
        pick_device(name)
