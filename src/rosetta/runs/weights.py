"""A checkpoint's tensors back into a model, an optimizer and a training
task, each checked before use: names, shapes, dtypes, finite values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from torch import nn

from rosetta.errors import RosettaError, in_words
from rosetta.runs.checkpoint import MODEL_FILE, OPTIMIZER_FILE, STATE_FILE, alias_key


def check_tensors(
    stored: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], path: Path
) -> None:
    """Every stored tensor has the dtype of the model's tensor it loads into
    (copying would convert an int32 silently) and is finite."""
    for name, tensor in stored.items():
        if name in expected and tensor.dtype != expected[name].dtype:
            raise RosettaError(
                f"{path}: {name} is stored as {tensor.dtype}, the model "
                f"holds {expected[name].dtype}; not a checkpoint Rosetta wrote"
            )
    floats = [(n, t) for n, t in stored.items() if t.is_floating_point()]
    finite = [all_finite(t) for _, t in floats]
    if finite and not bool(torch.stack(finite).all()):
        bad = next(n for (n, _), ok in zip(floats, finite, strict=True) if not ok)
        raise RosettaError(f"{path}: {bad} holds NaN or infinite values")


CHUNK = 1 << 22  # entries checked at once: a large table needs no copy's memory


def all_finite(tensor: torch.Tensor) -> torch.Tensor:
    """Whether every entry of ``tensor`` is finite (a 0-d bool tensor). A
    finite sum says so in one pass (NaN and infinity carry into any sum);
    otherwise, where a sum of finite entries could overflow, the entries are
    checked a part at a time."""
    if bool(tensor.sum().isfinite()):
        return torch.tensor(True, device=tensor.device)
    flat = tensor.reshape(-1)
    parts = [part.isfinite().all() for part in flat.split(CHUNK)]
    return torch.stack(parts).all() if parts else torch.tensor(True)


Upgrade = Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]]


def load_weights(
    folder: Path,
    model: nn.Module,
    device: torch.device,
    upgrade: Upgrade | None = None,
) -> None:
    """Load ``model.safetensors`` into ``model``, in place, its names first
    given by ``upgrade`` (the family's ``upgrade_weights``: a checkpoint of
    an earlier Rosetta with today's names).

    A tied tensor is stored once, under any one of its names; every other
    name must be in the file, and nothing else. The names and shapes are
    checked from the file's header; the tensors are then read one at a time
    (``pread``, no mapping) and copied into the model, so loading needs
    memory for the model and its largest tensor, not for two models.
    """
    path = folder / MODEL_FILE
    try:
        with safe_open(str(path), "pt", device=str(device), backend="pread") as file:
            # each name as ``upgrade`` gives it -> its name in the file (the
            # upgrades rename, so they map names as they map tensors)
            names = {name: name for name in file.keys()}  # noqa: SIM118
            if upgrade is not None:
                names = upgrade(names)  # type: ignore[arg-type, assignment]
            shapes = {
                name: torch.Size(file.get_slice(saved).get_shape())
                for name, saved in names.items()
            }
            _load_into(model, shapes, path, lambda name: file.get_tensor(names[name]))
    except (SafetensorError, OSError, RuntimeError) as error:
        reason = in_words(error)
        raise RosettaError(f"{path}: cannot load weights: {reason}") from None


def _load_into(
    model: nn.Module,
    stored: dict[str, torch.Size],
    path: Path,
    read: Callable[[str], torch.Tensor],
) -> None:
    """``model``'s tensors from the stored ones (their shapes by name), each
    read by ``read`` once, checked and copied into every name it is tied
    to."""
    current = model.state_dict()
    names_of: dict[tuple, list[str]] = {}
    for name, tensor in current.items():
        names_of.setdefault(alias_key(tensor), []).append(name)
    sources, missing = {}, []
    for names in names_of.values():
        found = [name for name in names if name in stored]
        if not found:
            missing.append(names[0])
        for name in names:
            sources[name] = found[0] if found else None
    unexpected = sorted(set(stored) - set(sources))
    if missing or unexpected:
        raise RosettaError(
            f"{path}: cannot load weights: these do not match the model "
            f"(missing: {', '.join(missing) or 'none'}; "
            f"unexpected: {', '.join(unexpected) or 'none'})"
        )
    for name, source in sources.items():
        if stored[source] != current[name].shape:  # the first, in one line
            raise RosettaError(
                f"{path}: cannot load weights: {name} is {tuple(stored[source])} in "
                f"the file, {tuple(current[name].shape)} in the model its "
                "configuration builds"
            )
    targets: dict[str, list[str]] = {}
    for name, source in sources.items():
        targets.setdefault(source, []).append(name)  # type: ignore[arg-type]
    with torch.no_grad():
        for source, names in targets.items():
            tensor = read(source)
            check_tensors({source: tensor}, {source: current[names[0]]}, path)
            for name in names:
                current[name].copy_(tensor)
            del tensor


def load_optimizer(
    folder: Path, optimizer: torch.optim.Optimizer, meta: dict[str, Any]
) -> None:
    path = folder / OPTIMIZER_FILE
    check_param_groups(meta.get("optimizer_param_groups"), optimizer, folder)
    try:
        tensors = load_file(str(path))
        state: dict[int, dict[str, torch.Tensor]] = {}
        for key, value in tensors.items():
            index, name = key.split(".", 1)
            state.setdefault(int(index), {})[name] = value
        check_slots(state, optimizer)
        optimizer.load_state_dict(
            {"state": state, "param_groups": meta["optimizer_param_groups"]}
        )
    except (SafetensorError, OSError, KeyError, TypeError, ValueError) as error:
        raise RosettaError(
            f"{path}: the optimizer state does not fit this model's optimizer "
            f"({type(error).__name__}: {error})"
        ) from None


def check_slots(
    state: dict[int, dict[str, torch.Tensor]], optimizer: torch.optim.Optimizer
) -> None:
    """Each saved slot belongs to a parameter and has its shape (``step``:
    one number), finite floats, and each parameter has the same slots:
    ``load_state_dict`` checks none of it, and a slot missing or of another
    shape fails only at the next step, or broadcasts."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    names = {name for slots in state.values() for name in slots}
    for index, slots in state.items():
        if not 0 <= index < len(params):
            raise ValueError(f"slots of parameter {index}, of {len(params)}")
        if missing := sorted(names - set(slots)):
            raise ValueError(f"parameter {index} has no {', '.join(missing)}")
        for name, tensor in slots.items():
            shape = torch.Size() if name == "step" else params[index].shape
            if tensor.shape != shape or not tensor.is_floating_point():
                raise ValueError(
                    f"{index}.{name} is {tensor.dtype} {tuple(tensor.shape)}, "
                    f"not a float tensor of shape {tuple(shape)}"
                )
            if not bool(tensor.isfinite().all()):
                raise ValueError(f"{index}.{name} holds NaN or infinite values")


def _same_kind(saved: Any, current: Any) -> bool:
    """Whether a saved optimizer setting has the shape of the current one: a
    number for a number, a list of numbers for a tuple, a flag for a flag."""
    if isinstance(current, bool) or current is None:
        return isinstance(saved, bool) or saved is None
    if isinstance(current, int | float):
        return isinstance(saved, int | float) and not isinstance(saved, bool)
    if isinstance(current, tuple | list):
        return (
            isinstance(saved, list)
            and len(saved) == len(current)
            and all(_same_kind(a, b) for a, b in zip(saved, current, strict=True))
        )
    return True


def check_param_groups(
    saved: Any, optimizer: torch.optim.Optimizer, folder: Path
) -> None:
    """The checkpoint's optimizer settings (``optimizer_param_groups``) have
    the groups, keys and kinds of values of ``optimizer``'s."""
    where = f"{folder / 'checkpoint.json'}: optimizer_param_groups"
    current = optimizer.param_groups
    if not isinstance(saved, list) or len(saved) != len(current):
        raise RosettaError(f"{where}: not {len(current)} group(s) of settings")
    for number, (group, ours) in enumerate(zip(saved, current, strict=True)):
        if not isinstance(group, dict) or set(group) != set(ours):
            raise RosettaError(f"{where}.{number}: not this optimizer's settings")
        for key, value in ours.items():
            if key != "params" and not _same_kind(group[key], value):
                raise RosettaError(f"{where}.{number}.{key}: {group[key]!r}")


def load_state(folder: Path, device: torch.device) -> dict[str, torch.Tensor]:
    """The training tensors saved beside the weights ({} if there are none)."""
    path = folder / STATE_FILE
    if not path.is_file():
        return {}
    try:
        return load_file(str(path), device=str(device))
    except (SafetensorError, OSError, RuntimeError) as error:
        raise RosettaError(f"{path}: cannot load: {error}") from None
