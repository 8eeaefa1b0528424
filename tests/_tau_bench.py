"""The real tau-bench airline trajectories, shared by the ingest and reviewer tests.

Path: env ``HINDSIGHT_TAU_BENCH``, else ``../shared/data/tau-bench/gpt-4o-airline.json`` beside
the repository. Absent: the tests skip, except under ``CI=true`` where they fail.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hindsight.capture.ingest import iter_trajectories
from hindsight.models import Trajectory

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/tau-bench/gpt-4o-airline.json"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


@pytest.fixture(scope="session")
def tau_file() -> Path:
    path = Path(os.environ.get("HINDSIGHT_TAU_BENCH") or DEFAULT)
    if not path.is_file():
        if _in_ci():
            pytest.fail(f"tau-bench file {path} is missing (CI needs ../shared beside the clone)")
        pytest.skip(f"tau-bench file {path} not found (set HINDSIGHT_TAU_BENCH)")
    return path


@pytest.fixture(scope="session")
def tau_trajectories(tau_file: Path) -> list[Trajectory]:
    return list(iter_trajectories(tau_file, tenant_id="t1"))
