"""``hindsight serve`` (HTTP API + MCP on one port) and ``hindsight keys`` (docs/http.md)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from hindsight.config import MemoryConfig

from hindsight.cli._common import (
    HindsightTyper,
    JsonOpt,
    State,
    app,
    err_console,
    escape,
    fail,
    guarded,
    out_console,
    path_value,
    print_json,
    state,
)

keys_app = HindsightTyper(
    name="keys",
    help="API keys of `hindsight serve`: each key belongs to one tenant (stored hashed).",
    no_args_is_help=True,
)
app.add_typer(keys_app)

KeysFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--file",
        parser=path_value,
        help="Keys file (default: HINDSIGHT_API_KEYS_FILE, else <data dir>/api-keys.json).",
    ),
]
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _config(st: State, **overrides: Any) -> MemoryConfig:
    from hindsight.config import load_config

    if st.data_dir is not None:
        overrides["data_dir"] = st.data_dir
    return load_config(**overrides)


def _keys_file(st: State, given: Path | None) -> Path:
    from hindsight.service._keys import ENV_KEYS_FILE, KEYS_FILE_NAME

    if given is not None:
        return given
    if os.environ.get(ENV_KEYS_FILE, "").strip():
        return Path(os.environ[ENV_KEYS_FILE].strip())
    return Path(_config(st).data_dir) / KEYS_FILE_NAME


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port.")] = 8710,
    keys_file: Annotated[
        Path | None,
        typer.Option(
            "--keys-file",
            parser=path_value,
            help="API keys file (wins over HINDSIGHT_API_KEYS_FILE).",
        ),
    ] = None,
    insecure_single_tenant: Annotated[
        str | None,
        typer.Option(
            "--insecure-single-tenant",
            help="No API keys: every request is this tenant's (local single-user use only).",
        ),
    ] = None,
    workers_in_process: Annotated[
        bool,
        typer.Option(
            "--workers-in-process/--no-workers-in-process",
            help="Run review jobs in this process (off: run `hindsight worker` processes).",
        ),
    ] = True,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", min=1024, help="Larger request bodies get 413.")
    ] = 2 * 1024 * 1024,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level: warning, info, debug.")
    ] = "info",
) -> None:
    """Serve the HTTP API (/v1, docs at /docs) and MCP (/mcp) on one port.

    Uses the same configuration as every command (DATABASE_URL, VECTOR_DB_URL, ...). Stops
    gracefully on SIGTERM or Ctrl-C: open requests finish, the store is closed and reviews not
    done yet stay queued for the next start (exit status: uvicorn re-raises the signal after
    the graceful shutdown, as service managers expect)."""
    try:
        from hindsight.service.http import create_app
        from hindsight.service.http._app import NO_KEYS_MESSAGE
    except ImportError as exc:
        raise fail(f"{exc} (pip install 'hindsight-memory[server]')", 1) from None

    from hindsight.engine import AsyncMemory
    from hindsight.service._keys import KeyRing

    st = state(ctx)
    with guarded():
        config = _config(st, background_review=workers_in_process)
        if insecure_single_tenant is not None:
            ring = KeyRing.single_tenant(insecure_single_tenant)
            if host not in LOOPBACK:
                err_console.print(
                    f"[yellow]warning:[/] no API keys and listening on {escape(host)}: anyone "
                    "who can reach this port reads and writes tenant "
                    f"{escape(insecure_single_tenant)!r}",
                    highlight=False,
                    soft_wrap=True,
                )
        else:
            ring = KeyRing.from_env(keys_file=keys_file, data_dir=config.data_dir)
        if ring.is_empty():
            raise fail(NO_KEYS_MESSAGE, 2)
        _check_port_free(host, port)
        memory = AsyncMemory(config)
    try:
        with guarded():
            web = create_app(memory, keyring=ring, max_body_bytes=max_body_bytes, close_memory=True)
        where = f"http://{host}:{port}" if ":" not in host else f"http://[{host}]:{port}"
        keys = "none (--insecure-single-tenant)" if ring.insecure else (ring.path or "env")
        err_console.print(
            f"hindsight: HTTP API at {where}/v1 (docs {where}/docs), MCP at {where}/mcp, "
            f"console at {where}/console; store {escape(config.sql_url())}; "
            f"keys: {escape(str(keys))}",
            highlight=False,
            soft_wrap=True,
        )
        _run(web, host, port, log_level)
    finally:
        memory.close()


def _run(web: Any, host: str, port: int, log_level: str, sock: Any = None) -> None:
    """Run ``web`` with uvicorn until SIGTERM / Ctrl-C (on ``sock`` when given, already
    bound); fail in one line when it could not start."""
    import uvicorn

    uv = uvicorn.Server(
        uvicorn.Config(
            web,
            host=host,
            port=port,
            log_level=log_level,
            lifespan="on",
            timeout_graceful_shutdown=10,
        )
    )
    # uvicorn exits on a startup failure (e.g. the port got taken): one line below instead
    with contextlib.suppress(SystemExit):
        uv.run(sockets=[sock] if sock is not None else None)
    if not uv.started:
        raise fail(f"could not serve on {host}:{port} (see the log above)", 1)


@app.command("console")
def console(
    ctx: typer.Context,
    tenant: Annotated[
        str,
        typer.Option("--tenant", envvar="HINDSIGHT_TENANT", help="The tenant the console shows."),
    ] = "default",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="TCP port (0: any free one).")
    ] = 8711,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level: warning, info, debug.")
    ] = "warning",
) -> None:
    """Open the audit console on the local embedded store (docs/console.md).

    Serves on 127.0.0.1 only and prints the URL to open: it carries a key made for this
    session (in the URL's #fragment, which the browser never sends to a server) that signs
    you in as TENANT and works until this command stops (Ctrl-C). Reviews run in this
    process, as with `hindsight serve`."""
    import secrets
    import socket

    try:
        from hindsight.service.http import create_app
    except ImportError as exc:
        raise fail(f"{exc} (pip install 'hindsight-memory[server]')", 1) from None
    from hindsight.engine import AsyncMemory
    from hindsight.service._keys import KeyRing

    host = "127.0.0.1"
    key = "hs_" + secrets.token_urlsafe(32)
    with guarded():
        ring = KeyRing.from_plain({key: tenant})
        config = _config(state(ctx))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections wait in the backlog until uvicorn serves
    except OSError as exc:
        sock.close()
        reason = (exc.strerror or str(exc)).lower()
        raise fail(f"could not serve on {host}:{port}: {reason} (try --port 0)", 2) from None
    port = sock.getsockname()[1]
    try:
        with guarded():
            memory = AsyncMemory(config)
        try:
            with guarded():
                web = create_app(memory, keyring=ring, close_memory=True, mcp=False)
            out_console.print(
                f"http://{host}:{port}/console/login#key={key}", highlight=False, soft_wrap=True
            )
            err_console.print(
                f"hindsight console: open the URL above (tenant {escape(tenant)!r}; the key "
                f"works until this command stops); store {escape(config.sql_url())}",
                highlight=False,
                soft_wrap=True,
            )
            _run(web, host, port, log_level, sock)
        finally:
            memory.close()
    finally:
        sock.close()


def _check_port_free(host: str, port: int) -> None:
    """Fail in one line before opening the store when ``host:port`` cannot be bound."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise fail(f"could not serve on {host}:{port}: {reason.lower()}", 2) from None


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Option("--tenant", help="The tenant this key acts as.")],
    file: KeysFileOpt = None,
    label: Annotated[str | None, typer.Option("--label", help="A note (who uses it).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a key and print it once (only its SHA-256 hash is stored). A running server
    picks it up without a restart."""
    from hindsight.service._keys import create_key

    path = _keys_file(state(ctx), file)
    with guarded():
        raw, record = create_key(path, tenant, label=label)
    if as_json:
        print_json({"key": raw, "id": record.id, "tenant": record.tenant, "file": str(path)})
        return
    out_console.print(raw, highlight=False, soft_wrap=True)
    err_console.print(
        f"key {record.id} for tenant {escape(record.tenant)!r} added to {escape(str(path))}; "
        "it is shown only now",
        highlight=False,
        soft_wrap=True,
    )


@keys_app.command("list")
def keys_list(ctx: typer.Context, file: KeysFileOpt = None, as_json: JsonOpt = False) -> None:
    """The keys of the file: id, tenant, creation time, label (never the keys)."""
    from hindsight.service._keys import read_keys_file

    path = _keys_file(state(ctx), file)
    with guarded():
        records = read_keys_file(path)
    if as_json:
        print_json(
            [
                {"id": r.id, "tenant": r.tenant, "created_at": r.created_at, "label": r.label}
                for r in records
            ]
        )
        return
    if not records:
        out_console.print(f"no keys in {escape(str(path))}", highlight=False)
    for r in records:
        note = f"  ({escape(r.label)})" if r.label else ""
        out_console.print(f"{r.id}  {escape(r.tenant)}  {r.created_at}{note}", highlight=False)


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[
        str | None, typer.Argument(help="The key's id (from `keys list`) or the key itself.")
    ] = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="Revoke every key of this tenant.")
    ] = None,
    file: KeysFileOpt = None,
) -> None:
    """Remove a key (or all of a tenant's); a running server refuses it at once."""
    from hindsight.service._keys import revoke_keys

    path = _keys_file(state(ctx), file)
    with guarded():
        n = revoke_keys(path, key_id=key_id, tenant=tenant)
    out_console.print(f"revoked {n} key(s) in {escape(str(path))}", highlight=False)
