"""Inference engines other than Rosetta's own PyTorch search."""
