"""``python -m rosetta``: the ``rosetta`` command."""

import sys

try:
    from rosetta.cli import command_line

    command_line()
except KeyboardInterrupt:  # Ctrl-C before the command line could note it
    print("interrupted", file=sys.stderr)
    sys.exit(130)
