"""A LangGraph customer-support agent that learns across runs (hindsight;
docs/integrations/langgraph.md#the-example).

Run 1 fails on an order service that times out at peak hours; its post-hoc review stores the
lesson; run 2 recalls it into the tail of its system prompt and succeeds. The agent itself is
shipped in the package (``hindsight_langgraph.examples.support_agent``) so that ``hindsight
demo`` runs it from an installed wheel too; this file is the runner.

    python examples/langgraph_agent.py                       # offline, scripted model
    python examples/langgraph_agent.py --model openai:gpt-4o-mini   # a real model
    python examples/langgraph_agent.py --json                # the report as JSON

Needs: pip install "hindsight-memory[langgraph]"
"""

from __future__ import annotations

from hindsight_langgraph.examples.support_agent import main

if __name__ == "__main__":
    raise SystemExit(main())
