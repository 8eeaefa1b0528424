"""Capture (docs/concepts.md#trajectories-and-events): turn a run into a structured
:class:`~hindsight.models.Trajectory`.

Owns the framework-free recorder (:class:`RunRecorder`, :mod:`.recorder`), the trajectory a
caller hands over (:mod:`.trajectory`: a dict or a Trajectory, validated) and the log formats
``hindsight ingest`` and the HTTP/MCP ``store_episode`` read (:mod:`.ingest`: openai, tau-bench,
events, trajectory JSON).

May import: the foundation (``hindsight._*``, ``config``, ``models``, ``ports``, ``tokens``,
``clock``). Never a later stage, the engine, the service or the CLI.
"""

from hindsight.capture.recorder import RunRecorder

__all__ = ["RunRecorder"]
