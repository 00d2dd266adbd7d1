"""Typed, frozen configuration: ``sections`` (what every run has),
``schema`` (the whole ``Config``, with the model section of each family) and
``reading`` (YAML and ``--set`` overrides in, a ``Config`` or a clear error
out)."""
