"""On/off arguments and settings through the Python API (docs/concepts.md#the-input-contract).

A switch is read by one rule on every interface (:func:`hindsight._contract.switch`): ``"no"``,
``"false"``, ``"off"`` and ``0`` are off, never truthy strings, and anything else that is not a
boolean is refused with one line naming it. Settings given as keywords are checked like the
environment's: a misspelt name or a value the setting refuses is an error, never a default.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight import Memory, UsageError
from hindsight.config import MemoryConfig, load_config, with_overrides
from tests.helpers import make_memory, trajectory

OFF = ["no", "false", "False", "off", "0", 0, False, " no "]
ON = ["yes", "true", "on", "1", 1, True, " YES\t"]
REFUSED = ["maybe", "", "  ", [True], {"on": True}, 2, 0.5, 1.0, 0.0, b"yes"]


@pytest.fixture
def mem(tmp_path: Path, database_url: str) -> Iterator[Memory]:
    """A memory on each SQL backend holding one lesson of tenant ``t``."""
    with make_memory(tmp_path / "d", database_url) as memory:
        memory.add_experience("Retry the export once when it times out.", tenant_id="t")
        yield memory


@pytest.mark.parametrize("value", OFF)
def test_forget_everything_given_an_off_value_deletes_nothing(mem: Memory, value: Any) -> None:
    with pytest.raises(UsageError, match="forget needs exactly one of"):
        mem.forget(tenant_id="t", everything=value)
    assert len(mem.list_experiences(tenant_id="t")) == 1


@pytest.mark.parametrize("value", REFUSED)
def test_a_switch_that_is_not_one_is_refused_in_one_line(mem: Memory, value: Any) -> None:
    calls = {
        "everything": lambda: mem.forget(tenant_id="t", everything=value),
        "include_episodes": lambda: mem.recall("export", tenant_id="t", include_episodes=value),
        "explain": lambda: mem.recall("export", tenant_id="t", explain=value),
        "record": lambda: mem.check_action("export", {}, tenant_id="t", record=value),
        "include_shared": lambda: mem.recall("export", tenant_id="t", include_shared=value),
        "risk_checks": lambda: mem.recall("export", tenant_id="t", risk_checks=value),
        "dry_run": lambda: mem.distill(tenant_id="t", dry_run=value),
        "review": lambda: mem.store_episode(trajectory("t", "export"), review=value),
        "all_failed": lambda: mem.retry_review_jobs(all_failed=value),
    }
    for name, call in calls.items():
        with pytest.raises(UsageError) as err:
            call()
        assert str(err.value).startswith(f"{name} must be true or false, got"), str(err.value)
        assert "\n" not in str(err.value)
    assert len(mem.list_experiences(tenant_id="t")) == 1


@pytest.mark.parametrize(
    ("value", "expected"), [*((v, False) for v in OFF), *((v, True) for v in ON)]
)
def test_a_switch_means_what_it_says(mem: Memory, value: Any, expected: bool) -> None:
    report = mem.distill(tenant_id="t", dry_run=value)
    assert report["dry_run"] is expected
    receipt = mem.store_episode(trajectory("t", f"export {value!r}"), review=value)
    assert receipt["review_queued"] is expected


def test_a_folder_given_where_the_config_goes_is_refused(tmp_path: Path) -> None:
    for given in (str(tmp_path), tmp_path, {"data_dir": str(tmp_path)}):
        with pytest.raises(UsageError, match=r"config must be a MemoryConfig, got .*data_dir="):
            Memory(given)  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())  # nothing was created anywhere


@pytest.mark.parametrize(
    ("name", "hint"),
    [("data_dri", "data_dir"), ("topk", "top_k"), ("databse_url", "database_url"), ("zzz", "")],
)
def test_a_misspelt_setting_is_refused_with_the_closest_name(
    tmp_path: Path, name: str, hint: str
) -> None:
    message = f"invalid configuration: '{name}' is not a setting"
    message += f" (did you mean {hint}?)" if hint else ""
    for call in (
        lambda: load_config(**{name: "x"}),
        lambda: Memory(**{name: str(tmp_path)}),
        lambda: Memory(MemoryConfig(data_dir=tmp_path), **{name: "x"}),
    ):
        with pytest.raises(UsageError) as err:
            call()
        assert str(err.value) == message


def test_settings_beside_a_config_are_validated_like_the_environment(tmp_path: Path) -> None:
    config = MemoryConfig(data_dir=tmp_path)
    for value in ("x", 0, 1001, True):
        with pytest.raises(UsageError, match="invalid configuration: top_k: top_k must be"):
            with_overrides(config, top_k=value)
    assert with_overrides(config, top_k="7").top_k == 7
    assert with_overrides(config).top_k == config.top_k
    assert with_overrides(config, top_k=7).data_dir == tmp_path


def test_a_setting_may_be_given_by_its_environment_variable_name(tmp_path: Path) -> None:
    assert load_config(HINDSIGHT_DATA_DIR=str(tmp_path)).data_dir == tmp_path
    assert load_config(MAX_RETRIEVE_COUNT=3).top_k == 3
    config = MemoryConfig(data_dir=tmp_path)
    assert with_overrides(config, HINDSIGHT_MAX_RETRIEVE_COUNT="4").top_k == 4
    with pytest.raises(UsageError, match="'HINDSIGHT_DATA_DRI' is not a setting"):
        load_config(HINDSIGHT_DATA_DRI=str(tmp_path))


SETTING_SWITCHES = {
    "situation_match": "HINDSIGHT_SITUATION_MATCH",
    "condition_mining": "HINDSIGHT_CONDITION_MINING",
    "dedup_judge": "HINDSIGHT_DEDUP_JUDGE",
    "guard": "HINDSIGHT_GUARD",
    "background_review": "HINDSIGHT_BACKGROUND_REVIEW",
}


@pytest.mark.parametrize("name", SETTING_SWITCHES)
def test_on_off_settings_read_like_the_switch_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A setting that is on or off reads the values an on/off argument reads, as a keyword and
    from the environment, and refuses the others with the argument's words."""
    config = MemoryConfig(data_dir=tmp_path)
    for value in OFF:
        assert getattr(with_overrides(config, **{name: value}), name) is False, value
    for value in ON:
        assert getattr(with_overrides(config, **{name: value}), name) is True, value
    for value in ("maybe", 2, 0.5, [True]):
        message = f"invalid configuration: {name}: {name} must be true or false, got {value!r}"
        with pytest.raises(UsageError) as err:
            with_overrides(config, **{name: value})
        assert str(err.value) == message
    env = SETTING_SWITCHES[name]
    if env is not None:
        monkeypatch.setenv(env, "off")
        assert getattr(load_config(data_dir=tmp_path), name) is False
        monkeypatch.setenv(env, "perhaps")
        with pytest.raises(UsageError) as err:
            load_config(data_dir=tmp_path)
        assert str(err.value) == (
            f"invalid configuration: {env}: {name} must be true or false, got 'perhaps'"
        )


@pytest.mark.parametrize("name", ["data_dir", "guard_rules"])
@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_path_setting_is_refused(tmp_path: Path, name: str, blank: str) -> None:
    """``Path("")`` is the current folder: a store opened there, or rules read from it, is
    never what an empty setting meant."""
    given = {"data_dir": tmp_path, name: blank}
    with pytest.raises(UsageError) as err:
        load_config(**given)
    assert str(err.value) == (
        f'invalid configuration: {name}: empty: give a path ("" would be the current folder)'
    )
    if name == "data_dir":
        with pytest.raises(UsageError, match="data_dir: empty: give a path"):
            Memory(data_dir=blank)


def test_an_empty_variable_is_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``HINDSIGHT_DATA_DIR=`` (set, empty) means the default folder, as the CLI reads its
    options, never the current folder; the same for every setting's variable."""
    from tests.cli_helpers import REPO, run_cli

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    for env in ("HINDSIGHT_DATA_DIR", "HINDSIGHT_GUARD_RULES", "HINDSIGHT_REFLECTION_MODEL"):
        monkeypatch.setenv(env, "")
    config = load_config()
    assert config.data_dir == tmp_path / "xdg" / "hindsight"
    assert config.guard_rules is None and config.reflection_model is None
    proc = run_cli(
        "stats", "--tenant", "t", data_dir=None, HINDSIGHT_DATA_DIR="",
        XDG_DATA_HOME=str(tmp_path / "xdg"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "xdg" / "hindsight" / "hindsight.db").exists()
    assert not (REPO / "hindsight.db").exists()  # the CLI runs in the repository
