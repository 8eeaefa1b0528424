"""The LLM reviewer: a language model answers the review questions through litellm.

:mod:`.prompts` holds the questions, the report schema and ``PROMPT_VERSION``; :mod:`._parse`
finds, repairs and validates the report in a reply; :mod:`.reviewer` asks (forced JSON, one
retry with the parse error) and turns the report into lessons. Import :class:`LLMReviewer`
from :mod:`hindsight.review` or :mod:`.reviewer`: this package does not import it eagerly (it
pulls in httpx).
"""
