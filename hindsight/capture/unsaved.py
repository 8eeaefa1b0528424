"""The durable unsaved area: finished runs that could not be written yet, kept on disk.

A framework integration hands each finished run to the memory's background writer
(:mod:`hindsight.capture.writer`). What the writer could not store (the memory was closed, the
store failed or stayed locked past the close's drain timeout) is written here, one JSON file
per pending write, and stored again at the memory's next open. Nothing captured is lost, and
nothing waits forever.

Files are ``<data_dir>/unsaved/<time_ns>-<trajectory id>.json`` (written to a temporary name
first, then renamed: a crash never leaves half a file under the real name); their content is
:meth:`PendingWrite.to_json`. A file that cannot be read back is moved to ``unsaved/bad/``
with a warning, never deleted; a run the memory refuses (``UsageError``: e.g. its id belongs to
another tenant) is kept in ``unsaved/rejected/`` with the reason and never retried.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight.models import Trajectory

__all__ = ["FORMAT_VERSION", "PendingWrite", "UnsavedArea"]

log = logging.getLogger("hindsight")

FORMAT_VERSION = 1
"""Version of the JSON written by :meth:`PendingWrite.to_json`."""


@dataclass(eq=False)
class PendingWrite:
    """One finished (or paused) run on its way to the store, and the steps already done.

    Attributes:
        trajectory: the run.
        review: queue its post-hoc review when stored (never while it is paused).
        merge: merge into a stored trajectory of the same id (a run stored in parts,
            :func:`hindsight.store.trajectories.merge_trajectories`) instead of no-op.
        recalled: ids of the experiences the run's model was seen to receive; recorded as
            recalled by this run (outcome attribution) before the run is stored.
        attribute: when the outcome is success or failure, credit or blame what the run
            recalled (``record_outcome``, counted once per run) after storing it.
        done: the steps finished so far (``"recall"``, ``"store"``, ``"outcome"``), so a
            retry repeats none of them.
        error: the text of the last failure of this write (``None`` while none); kept
            in memory only.
    """

    trajectory: Trajectory
    review: bool = True
    merge: bool = False
    recalled: tuple[str, ...] = ()
    attribute: bool = True
    done: set[str] = field(default_factory=set)
    error: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The JSON document written to the unsaved area."""
        return {
            "format": FORMAT_VERSION,
            "review": self.review,
            "merge": self.merge,
            "recalled": list(self.recalled),
            "attribute": self.attribute,
            "done": sorted(self.done),
            "trajectory": self.trajectory.model_dump(mode="json"),
        }

    @classmethod
    def from_json(cls, data: Any) -> PendingWrite:
        """Read :meth:`to_json` back.

        Raises:
            ValueError: not such a document (pydantic's ``ValidationError`` included).
        """
        if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
            raise ValueError(f"not an unsaved-run document of format {FORMAT_VERSION}")
        return cls(
            trajectory=Trajectory.model_validate(data["trajectory"]),
            review=bool(data.get("review", True)),
            merge=bool(data.get("merge", False)),
            recalled=tuple(str(i) for i in data.get("recalled") or ()),
            attribute=bool(data.get("attribute", True)),
            done={str(s) for s in data.get("done") or ()},
        )


class UnsavedArea:
    """A folder of :class:`PendingWrite` files (created on first write). Thread-safe.

    Args:
        path: the folder, e.g. ``<data_dir>/unsaved``.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"UnsavedArea({str(self.path)!r})"

    def put(self, write: PendingWrite) -> Path:
        """Write ``write`` durably; returns its file.

        Raises:
            OSError: the folder or the file cannot be written (callers log it: the run is
                then lost, loudly).
        """
        text = json.dumps(write.to_json(), ensure_ascii=False)
        self.path.mkdir(parents=True, exist_ok=True)
        with self._lock:
            name = f"{time.time_ns():020d}-{write.trajectory.id}.json"
            final = self.path / name
            tmp = self.path / f".{name}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        return final

    def files(self) -> list[Path]:
        """The files waiting, oldest first."""
        if not self.path.is_dir():
            return []
        return sorted(p for p in self.path.glob("*.json") if p.is_file())

    def __len__(self) -> int:
        return len(self.files())

    def pending(self) -> Iterator[tuple[Path, PendingWrite]]:
        """``(file, write)`` for each file, oldest first; an unreadable file is moved to
        ``bad/`` (logged) and skipped."""
        for path in self.files():
            try:
                write = PendingWrite.from_json(json.loads(path.read_text(encoding="utf-8")))
            except FileNotFoundError:
                continue  # taken by another process sharing the folder
            except (OSError, ValueError) as exc:
                self._quarantine(path, exc)
                continue
            yield path, write

    def remove(self, path: Path) -> None:
        """Delete one file (a missing one is fine: another process took it)."""
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def reject(self, write: PendingWrite, reason: str) -> Path:
        """Keep a write the memory refused in ``rejected/`` (with the reason), out of the
        replay; returns its file.

        Raises:
            OSError: it cannot be written.
        """
        folder = self.path / "rejected"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{time.time_ns():020d}-{write.trajectory.id}.json"
        doc = {**write.to_json(), "rejected": reason}
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        return path

    def _quarantine(self, path: Path, exc: BaseException) -> None:
        bad = self.path / "bad"
        try:
            bad.mkdir(exist_ok=True)
            os.replace(path, bad / path.name)
        except OSError:
            pass
        log.warning("hindsight: unreadable unsaved run %s moved to %s: %s", path.name, bad, exc)
