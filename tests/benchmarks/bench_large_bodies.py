"""How much a large run posted to ``hindsight serve`` delays other tenants' small requests
(docs/deploy.md#large-requests).

Not a test: run it on an otherwise idle machine.

    python tests/benchmarks/bench_large_bodies.py [--messages 30000] [--posts 4] [--probes 200]

Starts a real ``hindsight serve`` (SQLite + Qdrant Edge in a temporary data dir) and measures the
latency of small ``GET /v1/stats`` requests of one tenant, first alone, then while another
tenant posts ``--posts`` runs of ``--messages`` messages each (~1 MB for 30,000) back to back
through ``POST /v1/episodes``. Prints p50 / p95 / p99 / max of both, in milliseconds, and the
seconds each large post took.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.server.conftest import start_server


def _run(messages: int, salt: int) -> dict[str, Any]:
    turns = []
    for i in range(messages // 2):
        turns.append({"role": "user", "content": f"run {salt} step {i}: where is order {i}?"})
        turns.append({"role": "assistant", "content": f"order {i} is on its way"})
    return {"trajectory": {"messages": turns, "reward": 1}, "review": False}


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return (
        f"p50 {statistics.median(ordered):.1f}  p95 {at(0.95):.1f}  p99 {at(0.99):.1f}  "
        f"max {ordered[-1]:.1f} ms (n={len(ordered)})"
    )


def _probe(url: str, key: str, n: int, stop: threading.Event | None = None) -> list[float]:
    took: list[float] = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
        while len(took) < n and not (stop is not None and stop.is_set()):
            t0 = time.perf_counter()
            http.get("/v1/stats").raise_for_status()
            took.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.01)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--posts", type=int, default=4)
    parser.add_argument("--probes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        served = start_server(Path(tmp) / "data")
        try:
            small, big = served.key("small-tenant"), served.key("big-tenant")
            _probe(served.url, small, 20)  # warm up
            alone = _probe(served.url, small, args.probes)
            bodies = [_run(args.messages, i) for i in range(args.posts)]
            posted: list[float] = []
            stop = threading.Event()

            def post_all() -> None:
                with httpx.Client(
                    base_url=served.url, headers={"Authorization": f"Bearer {big}"}, timeout=300
                ) as http:
                    for body in bodies:
                        t0 = time.perf_counter()
                        http.post("/v1/episodes", json=body).raise_for_status()
                        posted.append(time.perf_counter() - t0)
                stop.set()

            poster = threading.Thread(target=post_all)
            poster.start()
            during = _probe(served.url, small, 10**9, stop)
            poster.join()
        finally:
            served.stop()
    print(f"small requests alone:            {_percentiles(alone)}")
    print(f"small requests during big posts: {_percentiles(during)}")
    print("big posts:", ", ".join(f"{s:.2f} s" for s in posted))


if __name__ == "__main__":
    main()
