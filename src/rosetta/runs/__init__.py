"""A run folder's checkpoints: writing and reading them atomically
(``checkpoint``, ``schemas``), their checksums (``integrity``), weights and
optimizer state loaded into a model (``weights``), random-number state
(``rng``), averaging them (``average``) and the lock one writer holds
(``lock``). Rebuilding a model from a checkpoint needs its family, so it
lives above: ``rosetta.jobs.restore``."""
