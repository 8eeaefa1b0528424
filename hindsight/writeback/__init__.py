"""Write-back (docs/lifecycle.md): reviewed lessons become stored experiences, and stay true
over time.

Owns the write path every new experience takes (:mod:`.pipeline`: guard, dedup / merge /
supersede, SQL + vector log, vectors), lessons to experiences with their metadata
(:mod:`.lessons`, also the lessons a caller adds by hand), the dedup rules and the optional
LLM judge (:mod:`.dedup`, :mod:`.judge`, :mod:`.decision`, :mod:`.text`), confidence from
outcomes and by hand (:mod:`.confidence`), versions, edits and rollback (:mod:`.versions`),
forgetting and restore (:mod:`.forgetting`), compression of clusters (:mod:`.compression`), the
periodic ``maintain`` run (:mod:`.maintain`) and the human audit (:mod:`.audit`). Rules and
numbers: docs/lifecycle.md.

May import: the foundation, the store and the guard (every write is screened first). Never
capture, review, recall, the engine, the service or the CLI.
"""

from hindsight.writeback.lessons import PROVENANCE_TRUST, lessons_to_experiences, normalize_content
from hindsight.writeback.pipeline import WriteBack

__all__ = ["PROVENANCE_TRUST", "WriteBack", "lessons_to_experiences", "normalize_content"]
