"""What a GGUF model file says of itself: its parameter count, read from the header (nothing loaded).

The GGUF header (llama.cpp's ``gguf.h``, versions 2 and 3) holds the metadata key/values, then one entry per tensor:
its name, its dimensions, its type and offset. The parameter count is the sum over the tensors of the product of
their dimensions: what llama.cpp prints as ``model params``. Only the header is read (a few MB for the vocabulary
arrays), never the weights.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import BinaryIO

from rags_expert.settings import LocalModelSettings, ModelProfileName

MAGIC = b"GGUF"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
MAX_COUNT = 1 << 32
"""More keys, tensors or array items than this is a damaged header, not a model."""


class GGUFError(ValueError):
    """The file is not a GGUF model, or its header is damaged."""


def _read(f: BinaryIO, fmt: str) -> int | float | bool:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("the header ends early")
    return struct.unpack(fmt, data)[0]


def _count(f: BinaryIO) -> int:
    n = int(_read(f, "<Q"))
    if n > MAX_COUNT:
        raise GGUFError(f"a count of {n} in the header")
    return n


def _skip_string(f: BinaryIO) -> None:
    f.seek(_count(f), 1)


def _skip_value(f: BinaryIO, kind: int) -> None:
    """Skip one metadata value of type ``kind``."""
    if kind in _SCALARS:
        f.seek(struct.calcsize(_SCALARS[kind]), 1)
    elif kind == _STRING:
        _skip_string(f)
    elif kind == _ARRAY:
        item, n = int(_read(f, "<I")), _count(f)
        if item in _SCALARS:
            f.seek(n * struct.calcsize(_SCALARS[item]), 1)
        else:
            for _ in range(n):
                _skip_value(f, item)
    else:
        raise GGUFError(f"unknown metadata type {kind}")


def parameter_count(path: Path) -> int:
    """The number of parameters of the GGUF model at ``path``; GGUFError when it is not one, OSError when unreadable."""
    with Path(path).open("rb") as f:
        if f.read(4) != MAGIC:
            raise GGUFError(f"{path} is not a GGUF file")
        version = int(_read(f, "<I"))
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version} (2 or 3 are read)")
        tensors, keys = _count(f), _count(f)
        for _ in range(keys):
            _skip_string(f)
            _skip_value(f, int(_read(f, "<I")))
        total = 0
        for _ in range(tensors):
            _skip_string(f)
            dims = int(_read(f, "<I"))
            if dims > 8:
                raise GGUFError(f"{path}: a tensor of {dims} dimensions")
            total += math.prod(int(_read(f, "<Q")) for _ in range(dims))
            f.seek(4 + 8, 1)  # type, offset
        return total


def size_label(params: int) -> str:
    """``135M``, ``1.7B``: the size as model names write it."""
    if params >= 1_000_000_000:
        return f"{params / 1e9:.1f}".rstrip("0").rstrip(".") + "B"
    return f"{round(params / 1e6)}M"


def local_profile(loc: LocalModelSettings) -> tuple[ModelProfileName, str]:
    """The model profile of the local model and the words saying why (``SmolLM2-135M-Instruct.Q4_1.gguf, 135M
    parameters: profile small``): ``local.profile`` when set, else by the GGUF's parameter count against
    ``local.small_below_params`` and ``local.compact_below_params`` (``small`` when the file cannot be read)."""
    from rags_expert.local.command import find_model

    if loc.profile != "auto":
        return loc.profile, f"profile {loc.profile} (local.profile)"
    path = find_model(loc)
    try:
        params = parameter_count(path)
    except (GGUFError, OSError) as exc:
        return "small", f"{path.name}: size unknown ({type(exc).__name__}): profile small"
    profile: ModelProfileName = (
        "small" if params < loc.small_below_params else "compact" if params < loc.compact_below_params else "standard"
    )
    return profile, f"{path.name}, {size_label(params)} parameters: profile {profile}"
