"""Embeddings from any provider that litellm speaks to (OpenAI, Azure, Bedrock, Ollama, ...).

``litellm`` is imported on first use, not at import time (importing it takes seconds).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from hindsight._errors import EmbeddingError, UsageError
from hindsight.embedders._common import (
    FloatMatrix,
    check_texts,
    cut_to_tokens,
    one_line,
    says_too_long,
)

__all__ = ["LiteLLMEmbedder"]

log = logging.getLogger("hindsight")

_MIN_CHARS = 16
"""Below this length a "too long" refusal is not about length: it is raised as it is."""

#: Probe text embedded once to learn the dimension when none is given.
PROBE_TEXT = "dimension probe"


class LiteLLMEmbedder:
    """An embedding model behind :func:`litellm.embedding`, batched, with a timeout.

    Args:
        model: litellm model string, e.g. ``"text-embedding-3-small"``,
            ``"openai/<model>"`` (with ``api_base`` for any OpenAI-compatible server),
            ``"ollama/nomic-embed-text"``, ``"azure/<deployment>"``.
        api_base: base URL of the provider (``None``: litellm's default / env variables).
        api_key: API key (``None``: litellm reads the provider's env variable).
        timeout: seconds per HTTP request, always passed to litellm (its own default is 6000 s).
        batch_size: max texts per request; longer inputs are split into several requests.
        dimension: expected vector length. ``None`` (default): learned by embedding one probe
            text (:data:`PROBE_TEXT`) the first time :attr:`dimension` is read or
            :meth:`embed` is called. It is **not** sent to the provider (no ``dimensions=``
            truncation request); every reply is checked against it.
        max_retries: retries of a failed request inside the provider client (default 2, as in
            litellm and openai). litellm 1.110 treats ``0`` as "default" on its OpenAI path
            (``max_retries or DEFAULT_MAX_RETRIES``), so 1 is the smallest value that bites.
        max_input_tokens: the model's input limit in tokens. ``None`` (default): litellm's
            model info (``max_input_tokens``, e.g. 8191 for ``text-embedding-3-small``) when
            it knows the model. Texts are cut to 75% of it (estimated tokens) before they are
            sent.

    Attributes:
        name: ``"litellm:<model>"``, recorded in the store.
        similarity_floor: 0.3 (cosine). Not measured here (no provider is reachable from the
            build machine); chosen from published measurements of OpenAI ``text-embedding-3``
            models: irrelevant query/passage pairs about 0.0-0.2, relevant ones 0.4-0.6, top
            hits rarely above 0.6. It suits that family and similar modern models; for
            ``text-embedding-ada-002`` (everything scores 0.7+) set
            ``MemoryConfig.similarity_floor`` to about 0.8.
        dedup_threshold: 0.92 (cosine above which two lessons are near-duplicates).
        truncated: how many texts were cut to fit the model's input so far. Besides the known
            limit, a request the provider refuses as too long (its error says "maximum
            context length", "too long", "too many tokens", ...) is sent again with the batch
            cut to half its longest text, until it is accepted; the length that worked is kept
            for later texts, and a warning is logged once. A long query never fails recall.

    Raises:
        UsageError: empty model, ``timeout <= 0``, ``batch_size < 1`` or ``dimension < 1``.
    """

    similarity_floor: float = 0.3
    dedup_threshold: float = 0.92

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 128,
        dimension: int | None = None,
        max_retries: int = 2,
        max_input_tokens: int | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise UsageError("LiteLLMEmbedder needs a model name, e.g. 'text-embedding-3-small'")
        if not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
            raise UsageError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise UsageError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise UsageError(f"dimension must be an int >= 1 or None, got {dimension!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise UsageError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.model = model.strip()
        self.name: str = f"litellm:{self.model}"
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = float(timeout)
        self.batch_size = batch_size
        self.max_retries = max_retries
        if max_input_tokens is not None and (
            isinstance(max_input_tokens, bool)
            or not isinstance(max_input_tokens, int)
            or max_input_tokens < 1
        ):
            raise UsageError(f"max_input_tokens must be an int >= 1, got {max_input_tokens!r}")
        self._dimension = dimension
        self._lock = threading.Lock()
        self._max_input_tokens = max_input_tokens
        self._limit_known = max_input_tokens is not None
        self._max_chars: int | None = None  # learned from "too long" refusals
        self.truncated = 0

    @property
    def max_input_tokens(self) -> int | None:
        """The model's input limit in tokens (given, or litellm's model info), else ``None``."""
        if not self._limit_known:
            self._limit_known = True
            try:
                import litellm

                info = litellm.get_model_info(self.model)
                found = info.get("max_input_tokens") or info.get("max_tokens")
                self._max_input_tokens = int(found) if found else None
            except Exception:  # unknown to litellm: the provider's refusals teach the limit
                self._max_input_tokens = None
        return self._max_input_tokens

    def _fit(self, text: str) -> str:
        cut = cut_to_tokens(text, self.max_input_tokens)
        if self._max_chars is not None and len(cut) > self._max_chars:
            cut = cut[: self._max_chars]
        return cut

    def limit_text(self) -> str:
        """The input limit texts are cut to, as known now: ``"8191 tokens"``, ``"12000
        characters (learned from the provider's refusals)"``, both, or ``"the provider's
        limit"`` when neither is known (yet)."""
        known = []
        if self.max_input_tokens is not None:
            known.append(f"{self.max_input_tokens} tokens")
        if self._max_chars is not None:
            known.append(f"{self._max_chars} characters (learned from the provider's refusals)")
        return " and ".join(known) or "the provider's limit"

    def _note_truncated(self, n: int) -> None:
        if not self.truncated:
            log.warning(
                "hindsight: %s: texts longer than the model's input are truncated to %s",
                self.name,
                self.limit_text(),
            )
        self.truncated += n

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder(model={self.model!r}, api_base={self.api_base!r})"

    @property
    def dimension(self) -> int:
        """Vector length; probes the provider once if it was not given.

        Raises:
            EmbeddingError: the probe request failed.
        """
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = self._request([PROBE_TEXT])[0].shape[1]
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        """Declare the expected length (e.g. the one a store recorded), skipping the probe."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"dimension must be an int >= 1, got {value!r}")
        self._dimension = value

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts`` in batches of ``batch_size``; float32 ``(len(texts), dimension)``.

        Rows are L2-normalised here whatever the provider returns (a zero row stays zero).
        Empty input makes no request when the dimension is known. Empty strings are sent
        as a single space, since several providers reject ``""``.

        Raises:
            EmbeddingError: the provider failed, timed out, or replied with the wrong number
                of vectors or a dimension other than :attr:`dimension`; one line naming the
                model and the provider's error.
            UsageError: ``texts`` is a bare string or holds a non-string.
        """
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        items = [self._fit(text) if text.strip() else " " for text in items]
        parts: list[FloatMatrix] = []
        sent: list[str] = []
        for i in range(0, len(items), self.batch_size):
            vectors, batch = self._request(items[i : i + self.batch_size])
            parts.append(vectors)
            sent += batch
        cut = sum(1 for given, final in zip(texts, sent, strict=True) if final not in (given, " "))
        if cut:
            self._note_truncated(cut)
        out = np.concatenate(parts, axis=0)
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = out.shape[1]
        if out.shape[1] != self._dimension:
            raise EmbeddingError(
                f"{self.name}: provider returned {out.shape[1]}-d vectors, "
                f"expected {self._dimension}"
            )
        return out

    def _request(self, batch: list[str]) -> tuple[FloatMatrix, list[str]]:
        """One ``litellm.embedding`` call (again with shorter texts while the provider says
        they are too long); returns normalised float32 ``(len(batch), d)`` and the texts as
        finally sent."""
        while True:
            try:
                return self._request_once(batch), batch
            except EmbeddingError as exc:
                longest = max((len(t) for t in batch), default=0)
                if not says_too_long(exc) or longest <= _MIN_CHARS:
                    raise
                self._max_chars = max(_MIN_CHARS, longest // 2)
                batch = [t[: self._max_chars] for t in batch]

    def _request_once(self, batch: list[str]) -> FloatMatrix:
        try:
            import litellm
        except ImportError as exc:  # pragma: no cover - litellm is a core dependency
            raise EmbeddingError(f"{self.name}: litellm is not installed ({exc})") from exc
        # Our EmbeddingError carries the message; litellm's "Give Feedback" banner is noise.
        litellm.suppress_debug_info = True
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": batch,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
        }
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        try:
            response = litellm.embedding(**kwargs)
        except Exception as exc:
            raise EmbeddingError(f"{self.name}: {one_line(exc)}") from exc
        try:
            data = sorted(_items(response), key=lambda item: int(_get(item, "index")))
            vectors = np.asarray([_get(item, "embedding") for item in data], dtype=np.float32)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise EmbeddingError(f"{self.name}: unreadable reply: {one_line(exc)}") from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(batch) or vectors.shape[1] == 0:
            raise EmbeddingError(
                f"{self.name}: asked for {len(batch)} vectors, got array of shape {vectors.shape}"
            )
        if not np.all(np.isfinite(vectors)):
            raise EmbeddingError(f"{self.name}: provider returned non-finite values")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        return vectors


def _items(response: Any) -> list[Any]:
    data = _get(response, "data")
    if not isinstance(data, list):
        raise TypeError(f"'data' is {type(data).__name__}, not a list")
    return data


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for dicts, ``obj.key`` for litellm's response objects."""
    if isinstance(obj, dict):
        return obj[key]
    return getattr(obj, key)
