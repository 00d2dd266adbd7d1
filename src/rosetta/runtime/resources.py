"""What the machine can hold, asked before the work: a size whose memory
would exceed it is refused with the estimate, in a second, instead of an
allocation that fails (or swaps the machine to a halt) minutes later."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rosetta.errors import RosettaError

MEMINFO = Path("/proc/meminfo")
GB = 1e9


def available_memory() -> int:
    """Bytes of memory the machine can give without swapping (Linux's
    ``MemAvailable``; elsewhere the physical memory)."""
    if MEMINFO.is_file():
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def refuse_beyond_memory(needed: float, what: str) -> None:
    """A ``RosettaError`` when ``needed`` bytes (an estimate, for ``what``)
    exceed the memory available."""
    available = available_memory()
    if needed > available:
        raise RosettaError(
            f"{what} needs about {needed / GB:,.1f} GB of memory; this machine "
            f"has {available / GB:,.1f} GB available: choose smaller sizes"
        )


def refuse_beyond_disk(needed: float, folder: Path, what: str) -> None:
    """A ``RosettaError`` when ``needed`` bytes (an estimate, for ``what``)
    exceed the free space where ``folder`` is (or would be made)."""
    place = Path(folder).resolve()
    while not place.exists():
        place = place.parent
    free = shutil.disk_usage(place).free
    if needed > free:
        raise RosettaError(
            f"{what} needs about {needed / GB:,.1f} GB of disk; {place} has "
            f"{free / GB:,.1f} GB free: choose smaller sizes"
        )
