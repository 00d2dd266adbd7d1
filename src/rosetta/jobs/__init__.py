"""The application layer: what the commands and the server do, built from
the layers below and the list of families.

- ``training``: a training run, from a configuration to its best checkpoint.
- ``run_config``: a run's configuration, read with every family's sections.
- ``restore`` and ``loading``: a run or checkpoint back as a model, and
  ``rosetta.load`` (an inference object ready to use).
- ``exports`` and ``importers``: exports for other toolkits (and the
  engines that load them), and the models of other toolkits brought in as
  runs.
- ``processes``: training in several processes (``rosetta train --nproc``).
- ``distill``, ``demo``, ``plots``: sequence-level distillation, ``make
  demo``, the figures of a run.

Nothing below imports this package; the command line and the server import
it (and the families' public records), never a family's own modules.
"""
