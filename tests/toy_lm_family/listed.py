"""The one line a new family adds, made in a running process: importing this
module puts the toy language model at the end of
``rosetta.families.FAMILIES`` (before anything else reads the list)."""

import rosetta.families
from tests.toy_lm_family import FAMILY

rosetta.families.FAMILIES = (*rosetta.families.FAMILIES, FAMILY)
