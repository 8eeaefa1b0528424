"""Helpers shared by the embedders."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from hindsight._errors import UsageError

FloatMatrix = npt.NDArray[np.float32]
"""float32 array of shape ``(n, dimension)``."""


def one_line(exc: BaseException, limit: int = 300) -> str:
    """``Type: first line of the message``, cut to ``limit`` characters."""
    text = str(exc).strip()
    first = text.splitlines()[0].strip() if text else ""
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, after checking it is a sequence of str.

    Raises:
        UsageError: ``texts`` is a bare string (a common slip that would embed characters)
            or holds a non-string.
    """
    if isinstance(texts, str):
        raise UsageError("embed() takes a sequence of texts, not a single str")
    items = list(texts)
    for text in items:
        if not isinstance(text, str):
            raise UsageError(f"embed() texts must be str, got {type(text).__name__}")
    return items
