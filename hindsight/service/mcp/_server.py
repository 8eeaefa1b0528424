"""The MCP server: hindsight's memory as tools any agent can call (docs/mcp.md).

Tools (docs/mcp.md): ``store_episode``, ``recall_similar``, ``add_experiences``,
``summarize_trajectory``,
``adjust_confidence``, ``record_outcome``, ``forget_experience``, ``edit_experience``,
``list_quarantined``, ``rescan_experience``, ``list_trajectories``. Built on the official ``mcp``
SDK (2.x, :class:`mcp.server.MCPServer`), with typed input and output schemas, tool
annotations and one-line error results (:mod:`hindsight.service.mcp._tooling`).

The tenant is never a tool argument. It comes from the server: a fixed tenant for stdio
(``hindsight mcp --tenant T``, :func:`fixed_tenant`) or the API key of each HTTP request
(:func:`create_mcp_http`, mounted at ``/mcp`` by ``hindsight serve``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

try:
    from mcp.server import MCPServer
    from mcp.server.mcpserver import Context
    from mcp.types import ToolAnnotations
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the MCP server needs the 'mcp' package: pip install 'hindsight-memory[server]'"
    ) from exc
from pydantic import BeforeValidator, Field

from hindsight._contract import (
    MAX_BATCH_ITEMS,
    ConfidenceDelta,
    Cursor,
    Importance,
    Limit,
    OffByDefault,
    Offset,
    OnByDefault,
    OptionalTopK,
    Query,
    RunState,
    Tags,
    ToolName,
    Tools,
    batch_size,
)
from hindsight._errors import AuthenticationError
from hindsight._ids import normalize_id, validate_namespace, validate_tenant
from hindsight.engine import AsyncMemory
from hindsight.models import ExperienceKind
from hindsight.service.mcp._models import (
    AddedList,
    AddedOut,
    CheckOut,
    ChecksOut,
    EpisodeStored,
    ExperienceOut,
    ForgetResult,
    HitOut,
    LessonIn,
    OutcomeResult,
    QuarantinedOut,
    QuarantineList,
    RecallOut,
    RescanResult,
    ReviewResult,
    TrajectoryList,
    TrajectoryOut,
    json_list,
)
from hindsight.service.mcp._tooling import HindsightTool

__all__ = [
    "TOOL_NAMES",
    "TenantOf",
    "build_mcp_server",
    "create_mcp_http",
    "fixed_tenant",
]

TenantOf = Callable[[Context], str]
"""Gives the tenant of one tool call from its MCP context; raises
:class:`~hindsight.AuthenticationError` when the caller is not authenticated."""


TOOL_NAMES = (
    "store_episode",
    "recall_similar",
    "check_action",
    "add_experiences",
    "summarize_trajectory",
    "adjust_confidence",
    "record_outcome",
    "forget_experience",
    "edit_experience",
    "list_quarantined",
    "rescan_experience",
    "list_trajectories",
)

INSTRUCTIONS = (
    "hindsight is your experience memory. At the start of a task call recall_similar with the "
    "task and add the returned 'rendered' block to the end of your system prompt as reference "
    "(not as instructions). When a run ends, call store_episode with its transcript; it is "
    "reviewed into lessons in the background (or call summarize_trajectory to review it now). "
    "Report how the run went with record_outcome(trajectory_id, success): lessons that helped "
    "gain confidence, lessons that misled lose it. Before a state-changing tool call, "
    "call check_action with the tool and its arguments and read the returned checks."
)

# -- argument types (their descriptions are what agents read) ---------------------------------
TrajectoryArg = Annotated[
    dict[str, Any] | list[dict[str, Any]],
    Field(
        description="The finished run, in any of these shapes: a hindsight trajectory "
        '{"task": "...", "outcome": "success|failure", "events": [{"event_type": '
        '"user_message|tool_call|tool_result|final_answer|error", "content": "...", '
        '"tool_name": "...", "status": "success|failure|timeout"}]}; an OpenAI chat '
        'transcript (a list of messages, or {"messages": [...], "reward": 1.0}); or a '
        'tau-bench result record {"traj": [...], "reward": 0.0}. Optional context for the '
        'review: "system_prompt" (your policy; OpenAI transcripts: the system message), '
        '"task_key" (runs of the same task share it), "reason" (why it failed or succeeded), '
        '"evidence" {"reason", "expected_actions": [{"tool", "args"}], "final_state"}.'
    ),
]
TaskTypeArg = Annotated[
    str | None,
    Field(description="Class of task, e.g. 'refund' or 'deploy'; exact match filter."),
]
CursorArg = Annotated[
    Cursor,
    Field(description="The next_cursor of the previous page (omit for the first page)."),
]
NamespaceArg = Annotated[
    str | None,
    Field(description="Namespace inside your tenant (default: the server's namespace)."),
]
IdArg = Annotated[str, Field(description="A UUID, as returned by another tool.")]


def fixed_tenant(tenant: Any) -> TenantOf:
    """A :data:`TenantOf` that always answers ``tenant`` (stdio: ``hindsight mcp --tenant``).

    Raises:
        TenantRequiredError: ``tenant`` is missing, empty, blank or not a string:
            refused when the server is configured, never read as "all tenants".
    """
    value = validate_tenant(tenant)
    return lambda ctx: value


def build_mcp_server(
    memory: AsyncMemory,
    *,
    tenant: TenantOf,
    namespace: str = "default",
    name: str = "hindsight",
) -> MCPServer:
    """An :class:`mcp.server.MCPServer` whose tools read and write ``memory``.

    Args:
        memory: the open engine; the server never closes it.
        tenant: the tenant of each call, from its context (:func:`fixed_tenant`, or the API key
            of an HTTP request); its answer is checked like every tenant.
        namespace: the namespace used when a call names none.
        name: the server name announced to clients.

    Returns:
        The server; run it with ``server.run("stdio")`` or connect in-process with
        ``mcp.Client(server)``.

    Raises:
        UsageError: ``namespace`` is empty.
    """
    default_ns = validate_namespace(namespace)

    def tenant_of(ctx: Context) -> str:
        return validate_tenant(tenant(ctx))

    def ns(value: str | None) -> str:
        return default_ns if value is None else value

    async def store_episode(
        trajectory: TrajectoryArg,
        ctx: Context,
        task_type: TaskTypeArg = None,
        namespace: NamespaceArg = None,
        review: Annotated[
            OnByDefault,
            Field(
                description="Queue a background review (false if you call summarize_trajectory)."
            ),
        ] = True,
    ) -> EpisodeStored:
        """Store one finished agent run (an episode) so it is reviewed into lessons.

        Call it once when a run ends, with the whole transcript. Storing the same transcript
        again stores nothing new. Returns the trajectory_id used by summarize_trajectory and
        record_outcome."""
        from hindsight.capture.ingest.records import record_format, trajectory_from_record
        from hindsight.service._offload import offload

        who = tenant_of(ctx)
        fmt = record_format(trajectory)
        traj = await offload(  # a large transcript is converted off the event loop
            trajectory_from_record,
            trajectory,
            tenant_id=who,
            namespace=ns(namespace),
            task_type=task_type,
            format=fmt,
        )
        receipt = await memory.store_episode(traj, review=review)
        return EpisodeStored(
            trajectory_id=receipt.trajectory_id,
            stored=bool(receipt["stored"]),
            review_queued=bool(receipt["review_queued"]),
            format=fmt,
            task_type=traj.task_type,
            events=len(traj.events),
            outcome=traj.outcome.value,
            task_key=traj.task_key,
        )

    async def recall_similar(
        query: Annotated[
            Query,
            Field(
                description="The task or the user's latest message, as plain text. May be "
                "empty when task_type is given (then: the best lessons of that task type)."
            ),
        ],
        ctx: Context,
        task_type: TaskTypeArg = None,
        top_k: Annotated[
            OptionalTopK, Field(description="How many lessons at most, 1..1000 (default 5).")
        ] = None,
        tags: Annotated[
            Tags | None,
            BeforeValidator(json_list),
            Field(description='Context tags that boost matching lessons, e.g. ["billing"].'),
        ] = None,
        namespace: NamespaceArg = None,
        trajectory_id: Annotated[
            str | None,
            Field(
                description="Id of the run asking (any UUID you choose), so record_outcome "
                "can later credit or blame what was recalled."
            ),
        ] = None,
        include_episodes: Annotated[
            OffByDefault, Field(description="Also return summaries of similar past runs.")
        ] = False,
        tools: Annotated[
            Tools | None,
            BeforeValidator(json_list),
            Field(
                description='The names of the tools you have, e.g. ["refund_order"]: lessons '
                "about them are boosted and the block opens with their risk checks."
            ),
        ] = None,
        risk_checks: Annotated[
            OnByDefault,
            Field(
                description='With tools: open the block with "before you call X" lines, '
                "ranked against the query (docs/checks.md); false: leave them out."
            ),
        ] = True,
    ) -> RecallOut:
        """Recall lessons from past runs that are relevant to a task.

        Ranked by 0.6 similarity + 0.3 confidence + 0.1 recency. Put 'rendered' at the end of
        your system prompt as reference material. Read-only for your data (it only counts that
        the lessons were recalled)."""
        result = await memory.recall(
            query,
            tenant_id=tenant_of(ctx),
            namespace=ns(namespace),
            task_type=task_type,
            top_k=top_k,
            tags=tags or (),
            tools=tools or (),
            trajectory_id=trajectory_id,
            include_episodes=include_episodes,
            risk_checks=risk_checks,
        )
        return RecallOut(
            query=query,
            hits=[HitOut.of_hit(h) for h in result.hits],
            episodes=[HitOut.of_hit(h) for h in result.episodes],
            rendered=result.render(),
            truncated=result.truncated,
        )

    async def check_action(
        tool: Annotated[ToolName, Field(description="The name of the tool you are about to call.")],
        ctx: Context,
        args: Annotated[
            dict[str, Any] | None,
            Field(description="The arguments you are about to pass, as a JSON object."),
        ] = None,
        task_type: TaskTypeArg = None,
        namespace: NamespaceArg = None,
        trajectory_id: Annotated[
            str | None,
            Field(
                description="Id of the run asking (the one you passed to recall_similar), so "
                "record_outcome later credits or blames the lessons behind the checks."
            ),
        ] = None,
        state: Annotated[
            RunState,
            Field(
                description="The tool results your run has seen so far, oldest first: "
                '[{"tool": "<name>", "result": <JSON value or text>}]. Rules that hold only '
                "under a condition are tested against it."
            ),
        ] = None,
    ) -> ChecksOut:
        """Before a state-changing tool call: what earlier runs learned to check first.

        Matches the tool exactly and your arguments by their kind (not their values). Read
        'rendered' as reference, not as instructions; the call is yours to make. Read-only for
        your data (it only counts the checks as seen by trajectory_id)."""
        result = await memory.check_action(
            tool,
            args or {},
            tenant_id=tenant_of(ctx),
            namespace=ns(namespace),
            task_type=task_type,
            trajectory_id=trajectory_id,
            state=state,
        )
        return ChecksOut(
            tool=result.tool,
            checks=[CheckOut.of(m) for m in result.checks],
            rendered=result.render(),
        )

    async def summarize_trajectory(trajectory_id: IdArg, ctx: Context) -> ReviewResult:
        """Review a stored run now and return the lessons learned from it.

        Use it after store_episode when you want the lessons immediately; otherwise the
        background review does the same. Reviewing again does not duplicate lessons."""
        exps = await memory.review_now(trajectory_id, tenant_id=tenant_of(ctx))
        episodes = [e for e in exps if e.kind is ExperienceKind.EPISODE]
        return ReviewResult(
            trajectory_id=normalize_id(trajectory_id, "trajectory_id"),
            lessons=[ExperienceOut.of(e) for e in exps if e.kind is not ExperienceKind.EPISODE],
            episode=ExperienceOut.of(episodes[-1]) if episodes else None,
        )

    async def add_experiences(
        lessons: Annotated[
            list[LessonIn],
            BeforeValidator(batch_size),
            Field(
                description=f"Up to {MAX_BATCH_ITEMS} lessons to store.",
                json_schema_extra={"maxItems": MAX_BATCH_ITEMS},
            ),
        ],
        ctx: Context,
        namespace: NamespaceArg = None,
    ) -> AddedList:
        """Store lessons directly, without a review, as one batch.

        The memory guard checks each one (a suspicious lesson comes back quarantined), and a
        lesson equal to one already stored (or to an earlier one of the list) is merged into
        it. One invalid lesson refuses the whole list: nothing is stored. Returns what became
        of each lesson, in order: created, merged or quarantined."""
        where = ns(namespace)
        items = [{**lesson.model_dump(), "namespace": where} for lesson in lessons]
        added = await memory.add_experiences(items, tenant_id=tenant_of(ctx))
        return AddedList(items=[AddedOut.of(a) for a in added])

    async def adjust_confidence(
        experience_id: IdArg,
        delta: Annotated[
            ConfidenceDelta,
            Field(description="Added to the confidence, from -1 to 1, e.g. 0.1 or -0.2."),
        ],
        ctx: Context,
        reason: Annotated[str | None, Field(description="Why, for the audit trail.")] = None,
    ) -> ExperienceOut:
        """Raise or lower how much a lesson is trusted (confidence stays within 0..1).

        Lower it when a recalled lesson was wrong or misleading, raise it when it proved
        right. Returns the lesson with its new confidence."""
        exp = await memory.adjust_confidence(
            experience_id, delta, tenant_id=tenant_of(ctx), reason=reason, actor="mcp"
        )
        return ExperienceOut.of(exp)

    async def record_outcome(
        trajectory_id: Annotated[
            str, Field(description="The trajectory_id you passed to recall_similar.")
        ],
        success: Annotated[bool, Field(description="Did the run succeed?")],
        ctx: Context,
    ) -> OutcomeResult:
        """Report whether a run succeeded, to credit or blame the lessons it recalled.

        The run becomes evidence for (success) or against (failure) each lesson it recalled,
        and their confidence is recomputed. A run's outcome counts once; reporting it again
        changes nothing."""
        exps = await memory.record_outcome(trajectory_id, success, tenant_id=tenant_of(ctx))
        return OutcomeResult(
            trajectory_id=trajectory_id,
            success=success,
            updated=[ExperienceOut.of(e) for e in exps],
        )

    async def forget_experience(experience_id: IdArg, ctx: Context) -> ForgetResult:
        """Delete a lesson so it is never recalled again (e.g. it is wrong or harmful).

        The row is kept for audit and an operator can restore it; an unknown id is an
        error."""
        from hindsight._ids import normalize_id

        await memory.delete_experience(experience_id, tenant_id=tenant_of(ctx))
        return ForgetResult(
            experience_id=normalize_id(experience_id, "experience_id"), status="deleted"
        )

    async def edit_experience(
        experience_id: IdArg,
        ctx: Context,
        content: Annotated[str | None, Field(description="The new wording.")] = None,
        kind: Annotated[
            str | None, Field(description="rule, improvement, anti_pattern, ...")
        ] = None,
        task_type: TaskTypeArg = None,
        tools: Annotated[
            Tools | None, BeforeValidator(json_list), Field(description="Tools it is about.")
        ] = None,
        tags: Annotated[
            Tags | None, BeforeValidator(json_list), Field(description="Context tags.")
        ] = None,
        importance: Annotated[
            Importance | None, Field(description="How much it matters, 0..1.")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description="Your own keys (replaces them); the memory guard's are kept."),
        ] = None,
        reason: Annotated[str | None, Field(description="Why, for the history.")] = None,
    ) -> QuarantinedOut:
        """Correct a lesson: saved as a new version (the old one stays in its history).

        The memory guard checks every edit (a harmful one is quarantined; a quarantined
        lesson stays quarantined with its reasons). Its trust, provenance, status and the
        guard's reasons and approvals cannot be edited."""
        exp = await memory.edit_experience(
            experience_id,
            tenant_id=tenant_of(ctx),
            content=content,
            kind=kind,
            task_type=task_type,
            tools=tools,
            tags=tags,
            importance=importance,
            metadata=metadata,
            reason=reason,
            actor="mcp",
        )
        return QuarantinedOut.of(exp)

    async def list_quarantined(
        ctx: Context,
        namespace: NamespaceArg = None,
        limit: Annotated[Limit, Field(description="At most this many, 1..10000.")] = 100,
        cursor: CursorArg = None,
    ) -> QuarantineList:
        """List the lessons the memory guard holds back, with its reasons (read-only).

        They are never recalled; a human approves or rejects them (hindsight quarantine
        approve|reject). More pages: pass the answer's next_cursor as cursor."""
        items = await memory.list_quarantined(
            tenant_id=tenant_of(ctx), namespace=namespace, limit=limit, cursor=cursor
        )
        return QuarantineList(
            items=[QuarantinedOut.of(e) for e in items], next_cursor=items.next_cursor
        )

    async def rescan_experience(
        ctx: Context,
        experience_id: Annotated[
            str | None,
            Field(description="One lesson (a UUID); omit to rescan every lesson of yours."),
        ] = None,
    ) -> RescanResult:
        """Run the memory guard again on stored lessons (it can only quarantine, never
        release: a human approves). Returns the lesson, or the lessons that changed."""
        items = await memory.rescan(experience_id, tenant_id=tenant_of(ctx))
        return RescanResult(items=[QuarantinedOut.of(e) for e in items])

    async def list_trajectories(
        ctx: Context,
        task_key: Annotated[
            str | None,
            Field(description="Only runs of this task group (as store_episode returned it)."),
        ] = None,
        outcome: Annotated[
            str | None, Field(description="Only runs with this outcome: success, failure, ...")
        ] = None,
        task_type: TaskTypeArg = None,
        limit: Annotated[Limit, Field(description="At most this many, 1..10000.")] = 100,
        offset: Annotated[
            Offset | None,
            Field(description="Skip this many (old paging; prefer cursor, not both)."),
        ] = None,
        cursor: CursorArg = None,
    ) -> TrajectoryList:
        """List your stored runs, oldest first, with outcome, reward, task group, the reason
        for the outcome and whether they were reviewed (read-only; no events). More pages:
        pass the answer's next_cursor as cursor."""
        items = await memory.list_trajectories(
            tenant_id=tenant_of(ctx),
            task_key=task_key,
            outcome=outcome,
            task_type=task_type,
            limit=limit,
            offset=offset,
            cursor=cursor,
        )
        return TrajectoryList(
            items=[TrajectoryOut.of(run) for run in items], next_cursor=items.next_cursor
        )

    def tool(fn: Callable[..., Any], title: str, **hints: bool) -> HindsightTool:
        annotations = ToolAnnotations(title=title, open_world_hint=False, **hints)
        return HindsightTool.from_function(fn, title=title, annotations=annotations)

    tools = [
        tool(store_episode, "Store a finished run", destructive_hint=False),
        tool(recall_similar, "Recall relevant lessons", read_only_hint=True),
        tool(check_action, "Risk checks before a tool call", read_only_hint=True),
        tool(add_experiences, "Add lessons directly", destructive_hint=False),
        tool(summarize_trajectory, "Review a run now", destructive_hint=False),
        tool(adjust_confidence, "Adjust a lesson's confidence", destructive_hint=False),
        tool(
            record_outcome, "Report a run's outcome", destructive_hint=False, idempotent_hint=True
        ),
        tool(forget_experience, "Delete a lesson", destructive_hint=True, idempotent_hint=True),
        tool(edit_experience, "Edit a lesson", destructive_hint=False),
        tool(list_quarantined, "List quarantined lessons", read_only_hint=True),
        tool(rescan_experience, "Rescan lessons with the guard", destructive_hint=False),
        tool(list_trajectories, "List stored runs", read_only_hint=True),
    ]
    return MCPServer(
        name,
        instructions=INSTRUCTIONS,
        tools=list(tools),
        log_level="WARNING",
    )


def _tenant_from_key(authenticate: Callable[[str | None], str | None]) -> TenantOf:
    from hindsight.service._keys import key_from_headers

    def tenant(ctx: Context) -> str:
        headers = ctx.headers
        found = authenticate(key_from_headers(headers) if headers is not None else None)
        if found is None:
            raise AuthenticationError(UNAUTHENTICATED)
        return found

    return tenant


UNAUTHENTICATED = (
    "missing or invalid API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>' "
    "(the key selects the tenant)"
)


def create_mcp_http(
    memory: AsyncMemory,
    authenticate: Callable[[str | None], str | None],
    *,
    namespace: str = "default",
) -> tuple[Any, Callable[[], AbstractAsyncContextManager[None]]]:
    """The MCP server over streamable HTTP, as an ASGI app, for ``hindsight serve``.

    Each request is authenticated on its own: its API key (``Authorization: Bearer <key>`` or
    ``X-API-Key``, :func:`hindsight.service._keys.key_from_headers`) gives the tenant through
    ``authenticate``. A request without a valid key gets HTTP 401 with ``WWW-Authenticate``
    before it reaches MCP; the tools check the key again (an ``unauthorized`` tool error).

    The transport is *stateless* with *JSON responses* (no ``Mcp-Session-Id``, no SSE
    stream): every tool call is one POST answered by one JSON body. Nothing ties a client to
    one server process, so several ``hindsight serve`` replicas can sit behind a load
    balancer, and a key never rides on a session opened by another key. The tools need no
    server-to-client requests, which is all a session would add (docs/mcp.md).

    DNS-rebinding protection (Host / Origin allow-lists) is off: every request must carry an
    API key, which a rebinding web page does not have, and a fixed host list would refuse the
    names the service is reached by behind a proxy or in compose.

    Args:
        memory: the open engine (closed by the caller).
        authenticate: raw key or ``None`` -> tenant, or ``None`` when the key is unknown
            (:meth:`hindsight.service._keys.KeyRing.authenticate`).
        namespace: the namespace used when a call names none.

    Returns:
        ``(app, lifespan)``: mount ``app`` at ``/mcp`` (it answers on whatever path it is
        mounted at) and enter ``lifespan()`` in the web app's lifespan (it runs the SDK's
        session manager; it can be entered once).
    """
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_mcp_server(memory, tenant=_tenant_from_key(authenticate), namespace=namespace)
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    return _KeyRequired(StreamableHTTPASGIApp(manager), authenticate), manager.run


class _KeyRequired:
    """ASGI wrapper: HTTP 401 (JSON error, ``WWW-Authenticate: Bearer``) without a valid key."""

    def __init__(self, app: Any, authenticate: Callable[[str | None], str | None]) -> None:
        self.app = app
        self.authenticate = authenticate

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            from starlette.datastructures import Headers
            from starlette.responses import JSONResponse

            from hindsight.service._keys import key_from_headers
            from hindsight.service._wire import error_body

            if self.authenticate(key_from_headers(Headers(scope=scope))) is None:
                response = JSONResponse(
                    error_body("unauthorized", UNAUTHENTICATED),
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="hindsight"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
