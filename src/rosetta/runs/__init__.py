"""A run folder's checkpoints: writing and reading them atomically
(``checkpoint``), their checksums (``integrity``), the model rebuilt from one
(``restore``) and averaging them (``average``)."""
