"""The README's "Run it as a service" block runs: a key is created, ``hindsight serve`` starts
with it (on a free port instead of 8710, in the background), and the curl recall answers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.server.conftest import REPO, free_port


def service_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Run it as a service", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^```bash\n(.*?)^```", section, re.M | re.S)
    assert found, "README has no bash block under 'Run it as a service'"
    return found.group(1)


def test_readme_service_block_runs(tmp_path: Path) -> None:
    block = service_block()
    serve = re.search(r"^hindsight serve\b.*$", block, re.M)
    assert serve and "8710" in block
    port = free_port()
    background = (
        f"hindsight serve --port {port} > serve.log 2>&1 & server=$!\n"
        "trap 'kill $server; wait $server || true' EXIT\n"
        f"for _ in $(seq 300); do curl -sf http://127.0.0.1:{port}/health >/dev/null && break;"
        " sleep 0.2; done"
    )
    script = block[: serve.start()] + background + block[serve.end() :]
    script = "set -euo pipefail\n" + script.replace("8710", str(port))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.pop("DATABASE_URL", None)
    env.update(
        HINDSIGHT_DATA_DIR=str(tmp_path / "memory"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    served = tmp_path / "serve.log"
    log = served.read_text(errors="replace") if served.exists() else ""
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log}"
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert reply["hits"] == []  # a fresh memory: nothing learned yet, and no error
    assert "Application startup complete" in log and "Traceback" not in log
