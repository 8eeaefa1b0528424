"""Runnable examples shipped with the package (so ``hindsight demo`` works from a wheel).

* :mod:`hindsight_langgraph.examples.support_agent`: a customer-support graph that fails on a
  tool that times out at peak hours, learns from the review, and succeeds the next run.
"""
