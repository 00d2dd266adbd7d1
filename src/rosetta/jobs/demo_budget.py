"""What ``rosetta demo`` trains by default, read without PyTorch (the
command's help shows it)."""

CPU_STEPS = 600  # test_2016 BLEU in the 20s: see docs/performance.md
DEFAULT_CONFIG = "configs/multi30k-de-en-transformer.yaml"
