"""What a host's authorization hook may answer, through ``ainvoke``: a ``{uid: bool}`` mapping is honoured and any
other shape denies everything."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.permissions import PermissionTable

from rag.test_authorization import agent_for, ask, prompts, script
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
