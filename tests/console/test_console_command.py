"""``hindsight console``: the console on a local embedded store, signed in from the printed URL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hindsight import Memory
from tests.console.conftest import open_page
from tests.server.conftest import REPO


def test_hindsight_console_prints_a_url_that_signs_in(
    browser: Any, tmp_path: Path, page_errors: list[str]
) -> None:
    data = tmp_path / "data"
    with Memory(data_dir=data) as mem:
        mem.add_experience("Local lesson: deploy with helm 3", tenant_id="acme")
        mem.add_experience("another tenant's lesson", tenant_id="other")
    env = {**os.environ, "HINDSIGHT_DATA_DIR": str(data), "PYTHONUNBUFFERED": "1"}
    env.pop("DATABASE_URL", None)
    env.pop("HINDSIGHT_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hindsight", "console", "--tenant", "acme", "--port", "0"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "/console/login#key=hs_" in url, url
        page = open_page(browser, page_errors)
        page.goto(url)  # console.js sends the key from the fragment, then drops it
        page.wait_for_url(url.split("/console/")[0] + "/console/")
        assert page.inner_text("[data-tenant]") == "acme"
        assert "#key" not in page.url
        page.click("[data-nav=experiences]")
        rows = page.locator("tr[data-experience]").all_inner_texts()
        assert len(rows) == 1 and rows[0].startswith("Local lesson")
        assert page_errors == []
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_a_taken_port_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "HINDSIGHT_DATA_DIR": str(tmp_path / "d")}
        done = subprocess.run(
            [sys.executable, "-m", "hindsight", "console", "--port", str(port)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: could not serve on 127.0.0.1:{port}")
    assert len(done.stderr.strip().splitlines()) == 1
