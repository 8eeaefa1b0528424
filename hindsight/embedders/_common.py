"""Helpers shared by the embedders."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from hindsight._errors import UsageError
from hindsight.tokens import truncate_to_tokens

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


#: Share of a model's token limit that texts are cut to before they are sent: the token
#: count here is an estimate (:func:`hindsight.tokens.estimate_tokens`), and a real tokenizer
#: may count more for code, numbers or rare words.
LIMIT_MARGIN = 0.75

_TOO_LONG = re.compile(
    r"context.length|too long|too many tokens|maximum.{0,40}tokens|token limit|"
    r"input.{0,20}(?:length|limit)|exceeds.{0,40}(?:limit|tokens|length)|max_seq|"
    r"reduce the length",
    re.IGNORECASE,
)


def says_too_long(exc: BaseException) -> bool:
    """True when a provider's error says the input was longer than the model accepts."""
    return bool(_TOO_LONG.search(str(exc)))


def cut_to_tokens(text: str, max_tokens: int | None) -> str:
    """``text`` cut to :data:`LIMIT_MARGIN` of ``max_tokens`` estimated tokens (``None``: no
    limit); ``text`` itself when it fits."""
    if max_tokens is None:
        return text
    return truncate_to_tokens(text, max(1, int(max_tokens * LIMIT_MARGIN)), marker="")
