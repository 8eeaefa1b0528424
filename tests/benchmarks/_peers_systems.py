"""The three memory systems of the peer benchmark, behind one small interface.

Each system is opened in a folder of its own, gets the same :class:`PrecomputedEmbedder`, and
offers ``add(text, tenant)`` (its public per-item write call), ``ready()`` (what it does
before it can be queried at full speed; returns seconds), ``search(query, tenant, k)`` (its
public tenant-filtered search; returns the texts, best first), ``count()`` and ``close()``.

* :class:`HindsightSystem` - ``hindsight.Memory`` embedded default (SQLite + Qdrant Edge),
  ``add_experience`` (guard + dedup on write, as for any user) and ``recall``.
* :class:`Mem0System` - ``mem0.Memory`` open-source, embedded: local Qdrant at a path (what
  ``qdrant-client`` local mode does: brute force) + SQLite history; ``add(..., infer=False)``
  so no LLM is called; ``search(filters={"user_id": tenant})``. Its LLM slot holds a
  langchain fake chat model that is never called, its embedder slot our embedder through its
  ``langchain`` provider. Telemetry is off (``MEM0_TELEMETRY=False``) and ``MEM0_DIR`` defaults
  to ``<tmp>/hindsight-bench-mem0``, both set when this module is imported, before mem0 is.
* :class:`LangGraphSystem` - ``langgraph.store.memory.InMemoryStore`` with
  ``index={"dims", "embed", "fields": ["text"]}``; tenant = namespace ``(tenant, "lessons")``.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.benchmarks._peers_data import PrecomputedEmbedder

# mem0 reads both when it is first imported: no telemetry (it would post to its analytics
# host), and its home folder (config.json) under the temp dir instead of ~/.mem0.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "hindsight-bench-mem0"))


class HindsightSystem:
    """hindsight embedded default, through the public sync facade."""

    name = "hindsight"

    def __init__(self, root: Path, embedder: PrecomputedEmbedder) -> None:
        from hindsight import Memory

        self.mem = Memory(data_dir=root / "hindsight", embedder=embedder, background_review=False)

    def add(self, text: str, tenant: str) -> None:
        self.mem.add_experience(text, tenant_id=tenant, kind="rule")

    def ready(self) -> float:
        """Wait for the background vector-index build (HNSW) that the engine starts itself."""
        start = time.perf_counter()
        optimize = getattr(self.mem.aio.index, "optimize", None)
        if optimize is not None:
            optimize(wait=True)
        return time.perf_counter() - start

    def search(self, query: str, tenant: str, k: int) -> list[str]:
        result = self.mem.recall(query, tenant_id=tenant, top_k=k)
        return [hit.experience.content for hit in result.hits]

    def count(self) -> int:
        return int(self.mem.stats()["experiences"]["by_status"]["active"])

    def close(self) -> None:
        self.mem.close()


class Mem0System:
    """mem0 open-source ``Memory``, embedded configuration, no LLM (``infer=False``)."""

    name = "mem0"

    def __init__(self, root: Path, embedder: PrecomputedEmbedder) -> None:
        # mem0 without its nlp/extras logs one warning per call about spaCy / fastembed.
        logging.getLogger("mem0").setLevel(logging.ERROR)
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from mem0 import Memory

        self.mem = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "bench",
                        "path": str(root / "mem0-qdrant"),
                        "embedding_model_dims": embedder.dimension,
                    },
                },
                "embedder": {"provider": "langchain", "config": {"model": embedder.as_langchain()}},
                "llm": {
                    "provider": "langchain",
                    "config": {"model": FakeListChatModel(responses=["(never called)"])},
                },
                "history_db_path": str(root / "mem0-history.db"),
            }
        )

    def add(self, text: str, tenant: str) -> None:
        out = self.mem.add(text, user_id=tenant, infer=False)
        if not out.get("results"):
            raise RuntimeError(f"mem0 stored nothing for {text!r}")

    def ready(self) -> float:
        return 0.0  # local mode has no index to build (brute force)

    def search(self, query: str, tenant: str, k: int) -> list[str]:
        out = self.mem.search(query, filters={"user_id": tenant}, top_k=k)
        return [item["memory"] for item in out["results"]]

    def count(self) -> int:
        info = self.mem.vector_store.client.count("bench", exact=True)
        return int(info.count)

    def close(self) -> None:
        self.mem.vector_store.client.close()
        self.mem.db.close()


class LangGraphSystem:
    """LangGraph ``InMemoryStore`` with a vector index; one namespace per tenant."""

    name = "langgraph"

    def __init__(self, root: Path, embedder: PrecomputedEmbedder) -> None:
        from langgraph.store.memory import InMemoryStore

        del root  # in memory only
        self.store = InMemoryStore(
            index={"dims": embedder.dimension, "embed": embedder.embed_lists, "fields": ["text"]}
        )

    def add(self, text: str, tenant: str) -> None:
        self.store.put((tenant, "lessons"), uuid.uuid4().hex, {"text": text})

    def ready(self) -> float:
        return 0.0

    def search(self, query: str, tenant: str, k: int) -> list[str]:
        items = self.store.search((tenant, "lessons"), query=query, limit=k)
        return [item.value["text"] for item in items]

    def count(self) -> int:
        return sum(
            len(self.store.search(ns, limit=1_000_000))
            for ns in self.store.list_namespaces(max_depth=2, limit=100_000)
        )

    def close(self) -> None:
        pass


SYSTEMS: dict[str, Any] = {cls.name: cls for cls in (HindsightSystem, Mem0System, LangGraphSystem)}
