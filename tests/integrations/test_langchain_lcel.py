"""Recall for LCEL chains without agent middleware
(docs/integrations/langchain.md#lcel-chains-and-legacy-agents): HindsightRetriever, the block at the
tail of a ChatPromptTemplate's system message, a complete chain captured by the handler, and a
memory that fails never breaking the chain."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

import pytest
from hindsight_langchain import HindsightCallbackHandler, HindsightRetriever, with_experience
from hindsight_langchain.testing import ScriptedChatModel, system_prompt_of
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from langchain_core.runnables import RunnablePassthrough

from hindsight import BLOCK_END, BLOCK_START, TenantRequiredError, UsageError
from tests.integrations.langchain_support import (
    TENANT,
    closing,  # noqa: F401  (autouse fixture)
    memory,
)

LESSON = "order_query times out at peak hours: use order_query_cached"
QUESTION = "Where is order 42? order_query timed out"
PLAIN = [("system", "You track orders."), ("human", "{question}")]


def chain_of(mem: Any, prompt: ChatPromptTemplate, model: ScriptedChatModel) -> Any:
    retriever = HindsightRetriever(memory=mem, tenant_id=TENANT)
    return (
        {"question": RunnablePassthrough(), "hindsight_experience": retriever.as_block()}
        | with_experience(prompt)
        | model
        | StrOutputParser()
    )


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_the_retriever_gives_one_document_per_experience(how: str) -> None:
    mem = memory()
    exp = mem.add_experience(LESSON, tenant_id=TENANT, kind="improvement")
    retriever = HindsightRetriever(memory=mem, tenant_id=TENANT)
    docs = (
        retriever.invoke(QUESTION) if how == "invoke" else asyncio.run(retriever.ainvoke(QUESTION))
    )
    [doc] = docs
    assert doc.page_content == LESSON
    assert doc.metadata["id"] == exp.id and doc.metadata["kind"] == "improvement"
    assert set(doc.metadata["breakdown"]) >= {"similarity", "confidence"}
    assert exp.recall_count == mem.get_experience(exp.id, tenant_id=TENANT).recall_count  # dry


@pytest.mark.parametrize(
    "messages",
    [
        [("system", "You track orders."), ("human", "{question}")],
        [("system", "You track {what}."), ("placeholder", "{history}"), ("human", "{question}")],
        [("human", "{question}")],
    ],
    ids=["system", "system-with-variables", "no-system"],
)
def test_a_chain_gets_the_block_at_the_tail_of_its_system_message(messages: list[Any]) -> None:
    mem = memory()
    mem.add_experience(LESSON, tenant_id=TENANT)
    model = ScriptedChatModel(replies=["Use the cache."])
    prompt = ChatPromptTemplate.from_messages(messages)
    retriever = HindsightRetriever(memory=mem, tenant_id=TENANT)
    chain = (
        RunnablePassthrough.assign(hindsight_experience=retriever.as_block(key="question"))
        | with_experience(prompt)
        | model
    )
    chain.invoke({"question": QUESTION, "what": "orders", "history": []})
    system = system_prompt_of(model.prompts[0])
    assert system.rstrip().endswith(BLOCK_END) and LESSON in system
    if messages[0][0] == "system":
        assert system.startswith("You track orders.") and system.count(BLOCK_START) == 1


def test_no_hit_leaves_the_prompt_as_it_was() -> None:
    mem = memory()
    model = ScriptedChatModel(replies=["Shipped."])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You track orders."), ("human", "{question}")]
    )
    chain_of(mem, prompt, model).invoke("Where is order 42?")
    assert system_prompt_of(model.prompts[0]) == "You track orders."


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_complete_chain_is_captured_and_what_its_model_saw_is_credited(how: str) -> None:
    mem = memory()
    exp = mem.add_experience(LESSON, tenant_id=TENANT)
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    model = ScriptedChatModel(replies=["Order 42 shipped (from the cache)."])
    prompt = ChatPromptTemplate.from_messages(PLAIN)
    run_id = uuid.uuid4()  # the root run id is the trajectory id
    config: Any = {"callbacks": [handler], "run_id": run_id}
    chain = chain_of(mem, prompt, model)
    if how == "invoke":
        answer = chain.invoke(QUESTION, config)
    else:
        answer = asyncio.run(chain.ainvoke(QUESTION, config))
    assert answer.startswith("Order 42 shipped")
    assert handler.wait(30)
    traj = mem.get_trajectory(str(run_id), tenant_id=TENANT)
    assert traj.task == QUESTION and traj.outcome.value == "success"  # the default detector
    assert LESSON in system_prompt_of(model.prompts[0])  # the model got the block
    assert traj.system_prompt == "You track orders."  # the stored policy is the app's prompt
    after = mem.get_experience(exp.id, tenant_id=TENANT)
    assert (after.recall_count, after.helped_count) == (1, 1)
    assert after.confidence > exp.confidence


def test_a_block_the_prompt_dropped_is_not_credited() -> None:
    mem = memory()
    exp = mem.add_experience(LESSON, tenant_id=TENANT)
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    model = ScriptedChatModel(replies=["Order 42 shipped."])
    retriever = HindsightRetriever(memory=mem, tenant_id=TENANT)
    prompt = ChatPromptTemplate.from_messages(PLAIN)  # no {hindsight_experience}: block unused
    chain = (
        RunnablePassthrough.assign(hindsight_experience=retriever.as_block(key="question"))
        | prompt
        | model
    )
    run_id = uuid.uuid4()
    chain.invoke({"question": QUESTION}, {"callbacks": [handler], "run_id": run_id})
    assert handler.wait(30)
    traj = mem.get_trajectory(str(run_id), tenant_id=TENANT)
    assert traj.outcome.value == "success" and traj.metadata["recall_not_seen_calls"] == 1
    after = mem.get_experience(exp.id, tenant_id=TENANT)
    assert (after.recall_count, after.helped_count) == (0, 0)
    assert after.confidence == exp.confidence


def test_a_closed_memory_gives_an_empty_block_and_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mem = memory()
    model = ScriptedChatModel(replies=["Shipped."])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You track orders."), ("human", "{question}")]
    )
    chain = chain_of(mem, prompt, model)
    mem.close()
    with caplog.at_level(logging.WARNING, logger="hindsight.langchain"):
        assert chain.invoke("Where is order 42?") == "Shipped."
        assert chain.invoke("And order 43?") == "Shipped."
    assert [r for r in caplog.records if "recall failed" in r.getMessage()] != []
    assert len([r for r in caplog.records if "recall" in r.getMessage()]) == 1
    assert system_prompt_of(model.prompts[1]) == "You track orders."


def test_bad_arguments_are_refused_in_one_line() -> None:
    mem = memory()
    with pytest.raises(TenantRequiredError):
        HindsightRetriever(memory=mem, tenant_id="")
    with pytest.raises(UsageError, match="hindsight"):
        HindsightRetriever(memory={"not": "a memory"}, tenant_id=TENANT)
    with pytest.raises(UsageError, match="ChatPromptTemplate"):
        with_experience(PromptTemplate.from_template("{q}"))  # type: ignore[arg-type]
    prompt = ChatPromptTemplate.from_messages([("system", "{hindsight_experience}")])
    with pytest.raises(UsageError, match="already"):
        with_experience(prompt)
    block = HindsightRetriever(memory=mem, tenant_id=TENANT).as_block()
    with pytest.raises(UsageError, match="query"):
        block.invoke({"a": "x", "b": "y"})
