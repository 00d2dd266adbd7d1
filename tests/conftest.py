import os

import torch

# Test models are tiny: one thread is faster than two (no wake-up cost) and
# leaves the other core to CLI subprocesses started by the end-to-end tests.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")
