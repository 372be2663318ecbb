"""What a host's authorization hook may answer and how long it may take, through ``ainvoke``: a ``{uid: bool}``
mapping is honoured and any other shape denies everything; a generator or an async generator is consumed within
``authorization.timeout`` and off the event loop; a sync hook that hangs holds only a daemon thread of its own, so
later questions still answer and ``asyncio.run`` returns."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from helpers.permissions import PermissionTable

from rag.test_authorization import agent_for, ask, prompts, script
from rags_expert import RagsExpert
from rags_expert.testing import ScriptedChatModel

GRANTS = {"alice": {"varen"}}


def outcome(final: Any) -> tuple[str, str | None, list[str]]:
    meta = final.response_metadata
    return meta["outcome"], meta.get("reason"), [s["uid"] for s in meta["sources"]]


async def test_a_mapping_of_uids_to_booleans_is_honoured(tmp_path):
    table = PermissionTable(grants=GRANTS)

    def hook(user: str | None, uids: list[str]) -> dict[str, bool]:
        return {uid: uid in table.grants.get(user, set()) for uid in uids}  # {"varen": True, "secret": False}

    model = ScriptedChatModel(responder=script())
    final = await ask(await agent_for(tmp_path, model, hook), user_id="alice")
    assert outcome(final) == ("success", None, ["varen"])
    assert "crowns" not in final.content and "crowns" not in prompts(model)


@pytest.mark.parametrize(
    "answer",
    [
        {"varen": "yes", "secret": "no"},  # a mapping, but not to booleans: never read as its keys
        {"varen": 1, "secret": 0},
        {"varen": None},
        "varen secret",
        b"varen",
        [b"varen"],
    ],
)
async def test_any_other_shape_denies_everything(tmp_path, answer):
    model = ScriptedChatModel(responder=script())
    final = await ask(await agent_for(tmp_path, model, lambda user, uids: answer), user_id="alice")
    assert outcome(final) == ("failure", "authorization_error", [])
    assert "1412" not in final.content and "crowns" not in final.content
    assert not [c for c in model.calls if "<chunk" in str(c)]  # nothing was graded or answered


async def ticking(stop: asyncio.Event) -> float:
    """The longest the event loop went without running this task (seconds), until ``stop`` is set."""
    longest, last = 0.0, time.monotonic()
    while not stop.is_set():
        await asyncio.sleep(0.01)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    return longest


async def timed_ask(agent: RagsExpert, **configurable: Any) -> tuple[Any, float, float]:
    """The answer, how long it took, and the longest stall of the event loop meanwhile."""
    stop = asyncio.Event()
    ticker = asyncio.create_task(ticking(stop))
    start = time.monotonic()
    try:
        final = await asyncio.wait_for(ask(agent, **configurable), 20)
    finally:
        stop.set()
    return final, time.monotonic() - start, await ticker


async def test_a_generator_is_consumed_within_the_timeout_and_off_the_event_loop(tmp_path):
    def slow_generator(user: str | None, uids: list[str]) -> Iterator[str]:
        for uid in uids:  # a per-uid check that takes longer than the timeout in all
            time.sleep(0.4)
            yield uid

    agent = await agent_for(
        tmp_path, ScriptedChatModel(responder=script()), slow_generator, authorization={"timeout": 0.3}
    )
    final, took, stall = await timed_ask(agent, user_id="alice")
    assert outcome(final) == ("failure", "authorization_error", [])
    assert took < 2.0, took  # one check, timed out at 0.3 s (not every uid of every check, one after the other)
    assert stall < 0.35, stall  # the loop kept running while the generator slept (0.8 s per check)


async def test_a_generator_within_the_timeout_is_honoured(tmp_path):
    table = PermissionTable(grants=GRANTS)

    def generator(user: str | None, uids: list[str]) -> Iterator[str]:
        yield from table.allowed(user, uids)

    final = await ask(await agent_for(tmp_path, ScriptedChatModel(responder=script()), generator), user_id="alice")
    assert outcome(final) == ("success", None, ["varen"])


@pytest.mark.parametrize("delay", [0.0, 1.0])
async def test_an_async_generator_is_honoured_within_the_timeout(tmp_path, delay):
    table = PermissionTable(grants=GRANTS)

    async def hook(user: str | None, uids: list[str]) -> AsyncIterator[str]:
        for uid in table.allowed(user, uids):
            await asyncio.sleep(delay)
            yield uid

    agent = await agent_for(tmp_path, ScriptedChatModel(responder=script()), hook, authorization={"timeout": 0.3})
    final, took, _ = await timed_ask(agent, user_id="alice")
    if delay:
        assert outcome(final) == ("failure", "authorization_error", []) and took < 2.0
    else:
        assert outcome(final) == ("success", None, ["varen"])


def hanging_hook(table: PermissionTable, release: threading.Event, asked: list[str | None] | None = None) -> Any:
    """The table's sync hook, except that it hangs (until ``release``) for users whose name starts with "hang";
    each call's user is appended to ``asked``."""

    def hook(user: str | None, uids: list[str]) -> list[str]:
        if asked is not None:
            asked.append(user)
        if (user or "").startswith("hang"):
            release.wait(60)
        return table.allowed(user, uids)

    return hook


@pytest.mark.slow  # about 2 s: three questions time out
def test_hung_sync_hooks_do_not_wedge_later_questions_nor_asyncio_run(tmp_path):
    """More hung calls than the loop's default executor has threads; then a question the hook answers at once is
    answered promptly, and ``asyncio.run`` (the README's one-loop-per-request pattern) returns."""
    table, release = PermissionTable(grants=GRANTS), threading.Event()
    executor = ThreadPoolExecutor(max_workers=2)  # the loop's default executor, smaller than the hung calls
    result: dict[str, Any] = {}

    async def host() -> None:
        asyncio.get_running_loop().set_default_executor(executor)
        model = ScriptedChatModel(responder=script())
        agent = await agent_for(tmp_path, model, hanging_hook(table, release), authorization={"timeout": 0.3})
        result["hung"] = [outcome(await ask(agent, user_id=f"hang{i}")) for i in range(3)]
        start = time.monotonic()
        result["answer"] = outcome(await ask(agent, user_id="alice"))
        result["took"] = time.monotonic() - start
        result["returning"] = time.monotonic()

    runner = threading.Thread(target=asyncio.run, args=(host(),), daemon=True)
    runner.start()
    try:
        runner.join(15)
        assert not runner.is_alive(), f"asyncio.run did not return: {result}"
        assert result["hung"] == [("failure", "authorization_error", [])] * 3
        assert result["answer"] == ("success", None, ["varen"]) and result["took"] < 2.0
    finally:
        release.set()
        runner.join(10)
        executor.shutdown(wait=False)


async def test_past_the_hung_calls_bound_every_check_is_denied_at_once_until_they_end(tmp_path):
    table, release, asked = PermissionTable(grants=GRANTS), threading.Event(), []
    hook = hanging_hook(table, release, asked)
    agent = await agent_for(
        tmp_path,
        ScriptedChatModel(responder=script()),
        hook,
        authorization={"timeout": 0.3, "max_hung_calls": 2},
    )
    try:
        for i in range(2):
            assert outcome(await ask(agent, user_id=f"hang{i}")) == ("failure", "authorization_error", [])
        assert asked == ["hang0", "hang1"]
        for user in ("hang2", "alice"):  # two threads hang: denied without asking the hook (no third thread)
            final = await ask(agent, user_id=user)
            assert outcome(final) == ("failure", "authorization_error", [])
        assert asked == ["hang0", "hang1"]
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while outcome(final := await ask(agent, user_id="alice"))[0] != "success" and time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # the released threads end
    assert outcome(final) == ("success", None, ["varen"])


def test_the_hung_calls_bound_is_a_setting():
    from rags_expert.settings import AuthorizationSettings

    assert AuthorizationSettings().max_hung_calls == 16
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        AuthorizationSettings(max_hung_calls=0)
