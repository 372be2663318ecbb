"""The HTTP authorization hook against a real server on 127.0.0.1: allowed uids, the bearer token, and every
fault (an HTTP error, a timeout, a refused connection) failing closed without the token in any output."""

from __future__ import annotations

import logging

import pytest
from helpers.documents import KeywordRetriever
from helpers.permissions import PermissionTable, permission_server

from rag.test_authorization import DOCS, ask, script
from rags_expert import RagsExpert
from rags_expert.rag.authorization import AuthorizationError, build_authorizer
from rags_expert.settings import AuthorizationSettings, RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

TOKEN = "tok-9f8e7d6c5b4a"


async def test_the_endpoint_answers_which_uids_are_allowed():
    table = PermissionTable(grants={"alice": {"a", "b"}})
    with permission_server(table, token=TOKEN) as server:
        url = f"http://127.0.0.1:{server.server_port}/authorize"
        authorizer = build_authorizer(AuthorizationSettings(url=url, token=TOKEN))
        assert await authorizer.allowed("alice", ["a", "c", "b"]) == {"a", "b"}
        assert await authorizer.allowed(None, ["a"]) == set()
    assert server.requests[0] == {"path": "/authorize", "authorization": f"Bearer {TOKEN}"}


@pytest.mark.parametrize("fault", ["status", "timeout", "token", "refused"])
async def test_a_fault_of_the_endpoint_fails_closed_and_never_shows_the_token(tmp_path, fault, caplog):
    caplog.set_level(logging.DEBUG)
    table = PermissionTable(grants={"alice": {"varen", "secret"}})
    with permission_server(table, token=TOKEN) as server:
        port = server.server_port
        server.status = 503 if fault == "status" else 200
        server.delay = 1.0 if fault == "timeout" else 0.0
        token = "wrong-token" if fault == "token" else TOKEN
        if fault == "refused":
            server.shutdown()
            server.server_close()
        settings = RagsExpertSettings(
            store={"data_dir": str(tmp_path / "q")},
            lessons={"enabled": False},
            max_rephrases=0,
            authorization={"url": f"http://127.0.0.1:{port}/authorize", "token": token, "timeout": 0.3},
        )

        model = ScriptedChatModel(responder=script())
        agent = await RagsExpert(settings, chat_model=model, retriever=KeywordRetriever(docs=DOCS)).async_init()
        final = await ask(agent, user_id="alice")
    meta = final.response_metadata
    assert (meta["outcome"], meta["reason"], meta["sources"]) == ("failure", "authorization_error", [])
    assert "1412" not in final.content and "crowns" not in final.content
    for text in (str(final), caplog.text):
        assert token not in text and TOKEN not in text


async def test_the_error_names_the_fault_not_the_reply():
    table = PermissionTable()
    with permission_server(table) as server:
        server.status = 500
        authorizer = build_authorizer(AuthorizationSettings(url=f"http://127.0.0.1:{server.server_port}/"))
        with pytest.raises(AuthorizationError, match=r"^the HTTP authorization hook failed \(HTTP 500\)$"):
            await authorizer.allowed("u", ["a"])
