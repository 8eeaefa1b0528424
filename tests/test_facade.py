"""The sync facade mirrors the async engine: same methods, same signatures, same errors."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from hindsight import AsyncMemory, Memory, NotFoundError, UsageError
from hindsight.testing import FakeEmbedder

# Async methods that have no sync twin on purpose (the facade has its own form of them).
NOT_MIRRORED = {"aclose", "store_episode"}


def public_async_methods() -> list[str]:
    return sorted(
        name
        for name, fn in inspect.getmembers(AsyncMemory, inspect.iscoroutinefunction)
        if not name.startswith("_") and name not in NOT_MIRRORED
    )


@pytest.mark.parametrize("name", public_async_methods())
def test_every_async_method_has_a_sync_twin_with_its_signature(name: str) -> None:
    twin = getattr(Memory, name, None)
    assert twin is not None, f"Memory.{name} is missing"
    assert not inspect.iscoroutinefunction(twin)
    sync_params = list(inspect.signature(twin).parameters.values())[1:]
    async_params = list(inspect.signature(getattr(AsyncMemory, name)).parameters.values())[1:]
    assert sync_params == async_params
    assert (twin.__doc__ or "").strip(), f"Memory.{name} has no docstring"


def test_twins_pass_arguments_and_errors_through(tmp_path: Path) -> None:
    with Memory(data_dir=tmp_path, embedder=FakeEmbedder(16)) as mem:
        exp = mem.add_experience("Retry order_query once on timeout", tenant_id="t", tags=["x"])
        assert mem.get_experience(str(exp.id).upper(), tenant_id="t").id == exp.id
        assert mem.adjust_confidence(exp.id, -0.1, tenant_id="t").confidence < exp.confidence
        assert [e.id for e in mem.list_experiences(tenant_id="t")] == [exp.id]
        with pytest.raises(TypeError):
            mem.recall("q", tenant="t")  # type: ignore[call-arg]
        with pytest.raises(UsageError):
            mem.recall("q", tenant_id="")
        with pytest.raises(NotFoundError):
            mem.get_experience("00000000-0000-0000-0000-000000000000", tenant_id="t")


class CountingMemory(AsyncMemory):
    calls = 0

    async def stats(self, *, tenant_id: str | None = None) -> dict[str, object]:
        CountingMemory.calls += 1
        return await super().stats(tenant_id=tenant_id)


def test_twins_dispatch_to_subclass_overrides(tmp_path: Path) -> None:
    aio = CountingMemory(data_dir=tmp_path, embedder=FakeEmbedder(16))
    with Memory.from_async(aio) as mem:
        mem.stats(tenant_id="t")
    assert CountingMemory.calls == 1


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {}),
        ((1, "x"), {}),
        ((), {"a": 1}),
        ((1,), {"c": 2.0}),
        ((1,), {"b": "y", "d": [1]}),
        ((), {"a": 1, "b": "y", "c": 3.0, "d": 4}),
        # not plain: the signature binds them (and raises what is wrong)
        ((1, "x", 3.0), {}),
        ((1,), {"a": 2}),
        ((), {"b": "y"}),
        ((1,), {"e": 0}),
        ((), {}),
    ],
)
def test_the_fast_binding_of_direct_twins_equals_the_signature(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    from hindsight._sync import _bound_fast, _plain_parameters

    def method(self: object, a: int, b: str = "b", *, c: float = 1.0, d: object = None) -> None:
        return None

    signature = inspect.signature(method)
    plain = _plain_parameters(signature)
    assert plain is not None
    fast = _bound_fast(plain, args, kwargs)
    try:
        bound = signature.bind(object(), *args, **kwargs)
    except TypeError:
        assert fast is None  # the caller binds it through the signature, which raises
        return
    bound.apply_defaults()
    expected = dict(bound.arguments)
    del expected["self"]
    assert fast == expected


def test_a_signature_with_star_arguments_is_never_bound_fast() -> None:
    from hindsight._sync import _plain_parameters

    def starred(self: object, *args: object, **kwargs: object) -> None:
        return None

    def positional_only(self: object, a: int, /) -> None:
        return None

    assert _plain_parameters(inspect.signature(starred)) is None
    assert _plain_parameters(inspect.signature(positional_only)) is None
