"""Qdrant snapshots of hindsight's collection, for examples/deploy/backup.sh and restore.sh.

Runs inside the hindsight-api container (which reaches Qdrant at VECTOR_DB_URL with
VECTOR_DB_API_KEY); the scripts pipe this file to ``python -``. Standard library only.

    python - create              -> prints the name of a new snapshot; the file appears under
                                    ./data/snapshots/hindsight_experiences/ on the host
    python - recover NAME        -> replaces the collection with snapshot NAME from that folder

Qdrant REST API: POST /collections/{c}/snapshots, PUT /collections/{c}/snapshots/recover.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

COLLECTION = "hindsight_experiences"


def call(method: str, path: str, body: dict[str, object] | None = None) -> dict[str, object]:
    base = os.environ.get("VECTOR_DB_URL", "").rstrip("/")
    if not base.startswith(("http://", "https://")):
        sys.exit(f"error: VECTOR_DB_URL must be the Qdrant server's URL, got {base!r}")
    headers = {"content-type": "application/json"}
    if os.environ.get("VECTOR_DB_API_KEY"):
        headers["api-key"] = os.environ["VECTOR_DB_API_KEY"]
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=3600) as response:
        return dict(json.load(response))


def main(argv: list[str]) -> None:
    where = f"/collections/{COLLECTION}/snapshots"
    if argv[:1] == ["create"] and len(argv) == 1:
        result = call("POST", where + "?wait=true")["result"]
        print(dict(result)["name"])  # type: ignore[call-overload]
    elif argv[:1] == ["recover"] and len(argv) == 2:
        location = f"file:///qdrant/snapshots/{COLLECTION}/{argv[1]}"
        call("PUT", where + "/recover?wait=true", {"location": location, "priority": "snapshot"})
        print(f"recovered {COLLECTION} from {argv[1]}")
    else:
        sys.exit("usage: python - create | python - recover SNAPSHOT_NAME")


if __name__ == "__main__":
    main(sys.argv[1:])
