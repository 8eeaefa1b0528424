"""The docker compose deployment (docs/deploy.md) without Docker.

Docker does not run here, so: docker-compose.yml (PostgreSQL with pgvector), its Qdrant option
docker-compose.qdrant.yml, .env.example and the Dockerfile are parsed and checked (services,
healthchecks, depends_on conditions, env names, bind mounts, ports, profiles, non-root user,
command); the compose environment, resolved the way compose resolves
it from .env.example, is accepted by MemoryConfig; every healthcheck command is run for real
against a loopback server (the API's against ``hindsight serve`` in test_deploy_serve.py);
``docker-compose config`` and shellcheck check the files when they are installed.
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from hindsight.config import MemoryConfig

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yml"
QDRANT_FILE = REPO / "docker-compose.qdrant.yml"
ENV_EXAMPLE = REPO / ".env.example"
SETTINGS = (
    "DATABASE_URL",
    "VECTOR_DB_URL",
    "LLM_API_KEY",
    "LLM_BASE_URL",
    "EMBEDDING_MODEL",
    "REFLECTION_MODEL",
    "MEMORY_DECAY_HALFLIFE_DAYS",
    "MAX_RETRIEVE_COUNT",
)
SERVE_CMD = ["hindsight", "serve", "--host", "0.0.0.0", "--port", "8710"]
_REF = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)


# -- helpers: compose's own rules, applied to our files ------------------------------------
def compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")))


def services(*, qdrant: bool = False) -> dict[str, Any]:
    """The services of docker-compose.yml, with ``qdrant`` docker-compose.qdrant.yml merged
    over it as compose merges files (mappings key by key: environment, depends_on)."""
    merged = dict(compose()["services"])
    if qdrant:
        for name, spec in compose(QDRANT_FILE)["services"].items():
            base = dict(merged.get(name, {}))
            for key, value in spec.items():
                if isinstance(value, dict) and isinstance(base.get(key), dict):
                    base[key] = {**base[key], **value}
                else:
                    base[key] = value
            merged[name] = base
    return merged


def env_file(path: Path, *, commented: bool = False) -> dict[str, str]:
    """``KEY=VALUE`` lines of an env file; with ``commented``, also ``# KEY=VALUE`` lines
    (settings documented but left unset)."""
    pattern = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$")
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = pattern.match(line.strip())
        if match and (commented or not match.group(1)):
            found.setdefault(match.group(2), match.group(3).strip())
    return found


class MissingVariable(KeyError):
    pass


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Compose's variable substitution: ``${X}``, ``${X:-default}``, ``${X-default}``,
    ``${X:?error}``, ``${X?error}``, ``$X`` and ``$$`` (a literal ``$``)."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("name") or match.group("bare")
        op, arg, value = match.group("op"), match.group("arg") or "", env.get(name)
        if op in (":-", "-"):
            return value if (value if op == ":-" else value is not None) else arg
        if op in (":?", "?") and not (value if op == ":?" else value is not None):
            raise MissingVariable(f"{name}: {arg}")
        return value or ""

    return _REF.sub(one, text)


def references(node: Any) -> set[str]:
    """Names of every ``${VAR}`` / ``$VAR`` used in a parsed compose document."""
    if isinstance(node, dict):
        return set().union(*(references(v) for v in node.values()), set())
    if isinstance(node, list):
        return set().union(*(references(v) for v in node), set())
    if isinstance(node, str):
        return {
            m.group("name") or m.group("bare") for m in _REF.finditer(node) if m.group(0) != "$$"
        }
    return set()


def container_env(
    service: str, dotenv: Mapping[str, str], *, qdrant: bool = False
) -> dict[str, str]:
    """The environment compose gives ``service``: its env_file, then ``environment``
    (which wins), each value interpolated with ``dotenv`` (the project's .env)."""
    spec = services(qdrant=qdrant)[service]
    env: dict[str, str] = {}
    if spec.get("env_file"):
        env.update(dotenv)  # env_file: .env (our only env file), values taken literally
    for key, value in (spec.get("environment") or {}).items():
        env[key] = interpolate(str(value), dotenv)
    return env


def dockerfile() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text(encoding="utf-8"))
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def exec_form(args: str) -> list[str]:
    import json

    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def healthcheck_command(spec: Mapping[str, Any]) -> list[str]:
    """A compose healthcheck's ``test`` as the argv Docker runs (``$$`` unescaped)."""
    test = [str(t).replace("$$", "$") for t in spec["healthcheck"]["test"]]
    if test[0] == "CMD":
        return test[1:]
    assert test[0] == "CMD-SHELL", test
    return ["/bin/sh", "-c", test[1]]


# -- docker-compose.yml --------------------------------------------------------------------
@pytest.mark.parametrize("qdrant", [False, True], ids=["pgvector", "qdrant"])
def test_services_healthchecks_and_start_order(qdrant: bool) -> None:
    svc = services(qdrant=qdrant)
    extra = {"qdrant"} if qdrant else set()
    assert set(svc) == {"hindsight-api", "hindsight-worker", "postgres", "ollama"} | extra
    for name in ("hindsight-api", "postgres", "ollama", *extra):
        check = svc[name]["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name
        assert {"interval", "timeout", "retries"} <= set(check), name
    api = svc["hindsight-api"]
    assert api["depends_on"] == {
        name: {"condition": "service_healthy"} for name in ("postgres", *extra)
    }
    assert svc["hindsight-worker"]["depends_on"] == {
        "hindsight-api": {"condition": "service_healthy"}
    }
    assert svc["hindsight-worker"]["command"][:2] == ["hindsight", "worker"]
    assert api["command"] == SERVE_CMD
    assert api["ports"] == ["${HINDSIGHT_BIND:-127.0.0.1}:8710:8710"]  # loopback by default
    assert all("ports" not in svc[n] for n in ("postgres", "ollama", *extra))  # internal
    # Optional services sit behind profiles; nothing that always runs waits for them.
    assert svc["ollama"]["profiles"] == ["local-llm"]
    assert svc["hindsight-worker"]["profiles"] == ["workers"]
    profiled = {n for n, s in svc.items() if s.get("profiles")}
    for name, spec in svc.items():
        if not spec.get("profiles"):
            assert not profiled & set(spec.get("depends_on") or {}), name


def test_images_are_pinned_and_data_is_bind_mounted() -> None:
    svc = services(qdrant=True)
    # PostgreSQL 16 with pgvector 0.8 (iterative index scans), pinned to both versions
    assert re.fullmatch(r"pgvector/pgvector:0\.8\.\d+-pg16", svc["postgres"]["image"])
    for name in ("qdrant", "ollama"):
        image = svc[name]["image"]
        _, _, tag = image.partition(":")
        assert re.fullmatch(r"v?\d+\.\d+(\.\d+)?", tag), f"{name}: pin a version, got {image}"
    assert svc["hindsight-api"]["build"] == "."
    for path in (COMPOSE_FILE, QDRANT_FILE):  # no named volumes: data lives in ./data
        assert "volumes" not in compose(path)
    mounts = {n: s.get("volumes", []) for n, s in svc.items()}
    for name, volumes in mounts.items():
        for volume in volumes:
            assert volume.startswith("./data/"), f"{name}: {volume} is not a bind mount"
    assert mounts["hindsight-api"] == ["./data/hindsight:/data"]
    assert "./data/postgres:/var/lib/postgresql/data" in mounts["postgres"]
    assert "./data/qdrant:/qdrant/storage" in mounts["qdrant"]
    assert "./data/snapshots:/qdrant/snapshots" in mounts["qdrant"]  # backup.sh reads it


def test_env_names_secrets_and_env_example() -> None:
    documented = env_file(ENV_EXAMPLE, commented=True)
    active = env_file(ENV_EXAMPLE)
    used = references(compose()) | references(compose(QDRANT_FILE))
    assert used <= set(documented), f"not in .env.example: {sorted(used - set(documented))}"
    api_env = services(qdrant=True)["hindsight-api"]["environment"]
    missing = set(SETTINGS) - set(documented) - set(api_env)
    assert not missing, f"settings neither in .env.example nor set by compose: {missing}"
    assert {"DATABASE_URL", "HINDSIGHT_API_KEYS"} <= set(services()["hindsight-api"]["environment"])
    assert "VECTOR_DB_URL" not in services()["hindsight-api"]["environment"]  # pgvector
    assert {"VECTOR_DB_URL", "VECTOR_DB_API_KEY"} <= set(api_env)
    assert services()["hindsight-api"]["env_file"] == ".env"
    # Secrets are only referenced, never written into the compose files.
    text = COMPOSE_FILE.read_text(encoding="utf-8") + QDRANT_FILE.read_text(encoding="utf-8")
    for secret in ("POSTGRES_PASSWORD", "QDRANT_API_KEY", "HINDSIGHT_API_KEYS"):
        assert active[secret] not in text, secret
        assert f"${{{secret}:?" in text, f"{secret} must be required (${{{secret}:?...}})"
    # .env is ignored by git and kept out of the image; .env.example is committed.
    ignored = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=REPO, check=False)
    assert ignored.returncode == 0, ".env must be git-ignored"
    shown = subprocess.run(["git", "check-ignore", "-q", ".env.example"], cwd=REPO, check=False)
    assert shown.returncode == 1, ".env.example must not be ignored"
    dockerignore = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".env", ".git/", ".venv/", "data/"} <= set(dockerignore)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("HINDSIGHT_") or name in SETTINGS or name in ("REVIEWER",):
            monkeypatch.delenv(name)
    return monkeypatch


def _config_from(env: Mapping[str, str], monkeypatch: pytest.MonkeyPatch) -> MemoryConfig:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return MemoryConfig()


@pytest.mark.parametrize("qdrant", [False, True], ids=["pgvector", "qdrant"])
def test_compose_environment_is_accepted_by_memory_config(
    clean_env: pytest.MonkeyPatch, qdrant: bool
) -> None:
    dotenv = env_file(ENV_EXAMPLE)
    env = container_env("hindsight-api", dotenv, qdrant=qdrant)
    assert env == container_env("hindsight-worker", dotenv, qdrant=qdrant)  # one config
    config = _config_from(env, clean_env)
    assert config.sql_url() == (
        "postgresql+psycopg://hindsight:change-me-postgres@postgres:5432/hindsight"
    )
    if qdrant:
        assert config.vector_db_url == "http://qdrant:6333"
        assert config.vector_db_api_key == dotenv["QDRANT_API_KEY"]
    else:  # pgvector in the PostgreSQL store
        assert config.vector_db_url is None and config.vectors_in_sql()
    assert config.data_dir == Path("/data")
    assert (config.embedding_model, config.half_life_days, config.top_k) == ("hash", 30.0, 5)
    assert (config.reviewer, config.reflection_model, config.llm_base_url) == (
        "heuristic",
        None,
        None,
    )


def test_the_documented_llm_settings_are_accepted(clean_env: pytest.MonkeyPatch) -> None:
    """Uncommenting the review-model lines of .env.example gives a valid LLM configuration."""
    dotenv = {**env_file(ENV_EXAMPLE, commented=True), "REVIEWER": "llm"}
    config = _config_from(container_env("hindsight-api", dotenv), clean_env)
    assert config.reflection_model == "gpt-4o-mini"
    assert config.llm_base_url == "https://api.openai.com/v1"
    assert config.llm_api_key == "sk-..."
    from hindsight.review import LLMReviewer

    assert LLMReviewer.from_config(config).name.startswith("llm:")


def test_required_secrets_fail_like_compose() -> None:
    dotenv = env_file(ENV_EXAMPLE)
    for secret in ("POSTGRES_PASSWORD", "QDRANT_API_KEY", "HINDSIGHT_API_KEYS"):
        partial = {k: v for k, v in dotenv.items() if k != secret}
        with pytest.raises(MissingVariable, match=f"set {secret} in .env"):
            container_env("hindsight-api", partial, qdrant=True)
    without_qdrant = {k: v for k, v in dotenv.items() if k != "QDRANT_API_KEY"}
    assert container_env("hindsight-api", without_qdrant)  # only the Qdrant option needs it


def test_interpolation_rules() -> None:
    env = {"A": "1", "E": ""}
    assert interpolate("${A}-${A:-x}-${E:-d}-${E-d}-${U-d}-$A-$$A", env) == "1-1-d--d-1-$A"
    with pytest.raises(MissingVariable):
        interpolate("${E:?need E}", env)
    assert references({"k": ["${A:-1}", "$B", "$$C"]}) == {"A", "B"}


def _compose_cli() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_config_agrees(tmp_path: Path) -> None:
    """``docker-compose config`` (Compose itself, when installed) accepts the file, alone and
    with the Qdrant option, and resolves the API's environment exactly as
    :func:`container_env` does."""
    cli = _compose_cli()
    if cli is None:
        pytest.skip("docker-compose is not installed (Debian: apt-get install docker-compose)")
    shutil.copy(COMPOSE_FILE, tmp_path / "docker-compose.yml")
    shutil.copy(QDRANT_FILE, tmp_path / "docker-compose.qdrant.yml")
    shutil.copy(ENV_EXAMPLE, tmp_path / ".env")
    for qdrant, files in (
        (False, []),
        (True, ["-f", "docker-compose.yml", "-f", QDRANT_FILE.name]),
    ):
        done = subprocess.run(
            [*cli, *files, "config"],
            cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        resolved = yaml.safe_load(done.stdout)["services"]
        assert resolved["hindsight-api"]["environment"] == container_env(
            "hindsight-api", env_file(ENV_EXAMPLE), qdrant=qdrant
        )
        assert ("qdrant" in resolved["hindsight-api"]["depends_on"]) is qdrant
    (tmp_path / ".env").write_text("POSTGRES_USER=x\n")  # required secrets missing
    done = subprocess.run(
        [*cli, "config"], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode != 0 and "set POSTGRES_PASSWORD in .env" in done.stderr


# -- Dockerfile ----------------------------------------------------------------------------
def test_dockerfile() -> None:
    steps = dockerfile()
    froms = [args for word, args in steps if word == "FROM"]
    assert froms and all(f.split()[0] == "python:3.12-slim" for f in froms), froms
    users = [args for word, args in steps if word == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image must run as a non-root user"
    assert ("EXPOSE", "8710") in steps
    assert ("VOLUME", '["/data"]') in steps
    env = " ".join(args for word, args in steps if word == "ENV")
    assert "HINDSIGHT_DATA_DIR=/data" in env
    cmd = [args for word, args in steps if word == "CMD"]
    assert exec_form(cmd[-1]) == SERVE_CMD
    health = [args for word, args in steps if word == "HEALTHCHECK"]
    assert len(health) == 1 and " CMD " in f" {health[0]} "
    probe = exec_form(health[0].split(" CMD ", 1)[1])
    assert probe[0] == "python" and "/health" in probe[-1]  # no curl in slim images
    # The compose healthcheck is the same probe.
    assert healthcheck_command(services()["hindsight-api"]) == probe


def test_dockerfile_installs_server_and_postgres_without_torch() -> None:
    steps = dockerfile()
    runs = " ".join(args for word, args in steps if word == "RUN")
    match = re.search(r'pip install "\.\[([a-z,]+)\]"', runs)
    assert match, runs
    extras = set(match.group(1).split(","))
    assert extras == {"server", "postgres"}
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    wanted = [d for e in extras for d in optional[e]] + list(project["dependencies"])
    assert not [d for d in wanted if re.match(r"(torch|sentence-transformers)\b", d)]
    # What COPY brings in exists and is not excluded by .dockerignore.
    ignored = set((REPO / ".dockerignore").read_text(encoding="utf-8").split())
    for word, args in steps:
        if word == "COPY" and not args.startswith("--from"):
            for source in args.split()[:-1]:
                assert (REPO / source).exists(), source
                assert source not in ignored and f"{source}/" not in ignored, source


# -- healthchecks, run for real --------------------------------------------------------------
class _Ready(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        code = self.status if self.path == "/readyz" else 404
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"all shards are ready" if code == 200 else b"no")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ready)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _run(argv: list[str], **env: str) -> int:
    return subprocess.run(
        argv, env={**os.environ, **env}, capture_output=True, timeout=30, check=False
    ).returncode


def test_qdrant_healthcheck_reads_readyz(http_server: Any) -> None:
    """The bash-only probe (the Qdrant image has no curl or wget) passes on 200 only."""
    argv = healthcheck_command(services(qdrant=True)["qdrant"])
    assert argv[0] == "bash"  # exec form: /dev/tcp is a bash feature, not sh's
    port = http_server.server_address[1]
    local = [a.replace("6333", str(port)) for a in argv]
    assert _run(local) == 0
    http_server.RequestHandlerClass.status = 503
    try:
        assert _run(local) == 1
    finally:
        http_server.RequestHandlerClass.status = 200
    closed = [a.replace("6333", "1") for a in argv]
    assert _run(closed) != 0


def test_postgres_healthcheck_uses_pg_isready() -> None:
    url = os.environ.get("HINDSIGHT_TEST_DATABASE_URL")
    if not url or shutil.which("pg_isready") is None:
        pytest.skip("needs HINDSIGHT_TEST_DATABASE_URL and pg_isready")
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    argv = healthcheck_command(services()["postgres"])
    env = {
        "POSTGRES_USER": str(parsed.username),
        "POSTGRES_DB": str(parsed.database),
        "PGHOST": str(parsed.host or parsed.query.get("host")),  # a Unix socket's folder
        "PGPORT": str(parsed.port or 5432),
    }
    assert _run(argv, **env) == 0
    assert _run(argv, **{**env, "PGPORT": "1"}) != 0


def test_ollama_healthcheck_is_the_ollama_cli() -> None:
    assert healthcheck_command(services()["ollama"]) == ["ollama", "list"]


# -- backup scripts --------------------------------------------------------------------------
SCRIPTS = sorted((REPO / "examples" / "deploy").glob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_parse(script: Path) -> None:
    assert os.access(script, os.X_OK), f"{script.name} must be executable"
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    if shutil.which("shellcheck"):
        done = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout


def test_scripts_refuse_bad_arguments(tmp_path: Path) -> None:
    restore = REPO / "examples" / "deploy" / "restore.sh"
    done = subprocess.run(
        ["bash", str(restore), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "hindsight.pgdump" in done.stderr
    helper = REPO / "examples" / "deploy" / "qdrant_snapshot.py"
    done = subprocess.run(
        [sys.executable, str(helper), "bogus"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1 and "usage:" in done.stderr
    done = subprocess.run(
        [sys.executable, str(helper), "create"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "VECTOR_DB_URL": ""},
    )
    assert done.returncode == 1 and "VECTOR_DB_URL" in done.stderr


def test_deploy_page_documents_every_setting() -> None:
    """docs/deploy.md's configuration table names every environment variable MemoryConfig
    reads, every name of .env.example and the API key variables of ``hindsight serve``."""
    text = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    rows = {m.group(1) for m in re.finditer(r"^\| `([A-Z][A-Z0-9_]*)`", text, re.M)}
    rows |= {n for m in re.finditer(r"^\| (`[A-Z].*?) \|", text, re.M) for n in re.findall(
        r"`([A-Z][A-Z0-9_]*)`", m.group(1))}  # fmt: skip
    missing = []
    for name, field in MemoryConfig.model_fields.items():
        alias = field.validation_alias
        choices = [str(c) for c in getattr(alias, "choices", [])]
        if choices and not set(choices) & rows:
            missing.append(f"{name} ({' / '.join(choices)})")
    missing += sorted(set(env_file(ENV_EXAMPLE, commented=True)) - rows)
    missing += sorted({"HINDSIGHT_API_KEYS", "HINDSIGHT_API_KEYS_FILE", *SETTINGS} - rows)
    assert not missing, f"docs/deploy.md#configuration lacks: {missing}"
