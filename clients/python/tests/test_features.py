"""Each feature through the typed helpers, against the live hub, with the TypeScript agent on
the other side where a feature has two sides."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from baton_client import BatonError, HandoffClient
from baton_client.context import handoff_digest, sign_offer, sign_status


def in_an_hour() -> str:
    return (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat(timespec="seconds")


def test_token_handoff_moves_only_from_its_stated_state(hub_url, ts):
    handoffs = HandoffClient(hub_url)
    created = handoffs.create({"task": "translate"}, note="from python", idempotency_key="py-create-0001")
    again = handoffs.create({"task": "translate"}, note="from python", idempotency_key="py-create-0001")
    assert again["handoff_id"] == created["handoff_id"]
    hid, owner, receiver = created["handoff_id"], created["owner_token"], created["receiver_token"]
    status, moved = ts.call(
        "advanceHandoff",
        {"params": {"handoff_id": hid, "state": "accepted"}, "body": {"from": "offered", "nonce": "ts-1"}},
        token=receiver,
    )
    assert status == 200 and moved["version"] == 2
    # The same move again, with the same nonce, is answered, not repeated.
    repeat = handoffs.advance(hid, "accepted", receiver, from_="offered", nonce="ts-1")
    assert repeat["repeated"] is True and repeat["version"] == 2
    with pytest.raises(BatonError) as conflict:
        handoffs.advance(hid, "accepted", owner, from_="offered")
    assert conflict.value.code == "state_conflict" and conflict.value.status == 409
    assert conflict.value.context["state"] == "accepted" and conflict.value.context["version"] == 2
    assert conflict.value.fix
    assert handoffs.wait(hid, owner, version=1, seconds=1)["state"] == "accepted"
    assert handoffs.read(hid, owner)["version"] == 2
    with pytest.raises(BatonError) as unknown:
        handoffs.read(hid, "hot_r_not-a-token")
    assert unknown.value.status in (401, 404)


def test_resources_grants_and_revocation_with_the_typescript_agent(agent, ts):
    owner = agent("owner")
    task = owner.resources.create("py-tasks", "task/v1", {"title": "translate"})
    assert task["version"] == 1 and task["owner"] == owner.principal
    status, body = ts.call("readResource", {"params": {"id": task["id"]}})
    assert status == 403 and body["code"] == "resource_forbidden"
    grant = owner.grants.create(task["id"], ts.principal, ["resource:read", "resource:update"], in_an_hour())
    assert grant["delegable"] is False
    ts.ok("updateResource", {"params": {"id": task["id"]}, "body": {"expectedVersion": 1, "data": {"title": "done"}}})
    with pytest.raises(BatonError) as stale:
        owner.resources.update(task["id"], 1, {"title": "mine"})
    assert stale.value.code == "version_conflict" and stale.value.context["currentVersion"] == 2
    history = owner.resources.history(task["id"])["versions"]
    assert [v["version"] for v in history] == [1, 2] and history[1]["actor"] == ts.principal
    listed = owner.resources.list(namespace="py-tasks", kind="task/v1")["resources"]
    assert [r["id"] for r in listed] == [task["id"]]
    assert any(g["id"] == grant["id"] for g in owner.grants.list()["capabilities"])
    assert owner.grants.revoke(grant["id"])["revokedAt"]
    status, body = ts.call("readResource", {"params": {"id": task["id"]}})
    assert status == 403


def test_messages_are_durable_idempotent_and_acknowledged(agent, ts):
    me = agent("messenger")
    first = me.messages.send(ts.principal, {"n": 1}, "py-msg:1")
    again = me.messages.send(ts.principal, {"n": 1}, "py-msg:1")
    assert again["id"] == first["id"] and first["receipt"]
    with pytest.raises(BatonError) as reuse:
        me.messages.send(ts.principal, {"n": 2}, "py-msg:1")
    assert reuse.value.code == "idempotency_conflict"
    reply = ts.ok("sendMessage", {"body": {"recipient": me.principal, "body": {"ok": True}, "idempotencyKey": "ts:1"}})
    inbox = me.messages.list(after=0, limit=20)
    assert [m["id"] for m in inbox["messages"]] == [reply["id"]]
    assert me.messages.ack(reply["id"])["ackedAt"]
    assert me.messages.list(after=0, unacked=True)["messages"] == []


def test_home_files_are_private_and_compare_and_set(agent, ts):
    me = agent("home")
    wrote = me.home.write("run/owner.json", '{"stage":"prepared"}', 0)
    assert wrote["revision"] == 1
    with pytest.raises(BatonError) as exists:
        me.home.write("run/owner.json", '{"stage":"other"}', 0)
    assert exists.value.status == 409
    assert me.home.read("run/owner.json")["content"] == '{"stage":"prepared"}'
    assert [f["path"] for f in me.home.list(prefix="run/")["files"]] == ["run/owner.json"]
    status, _ = ts.call("readHomeFile", {"query": {"path": "run/owner.json"}})
    assert status == 404
    me.home.delete("run/owner.json", 1)
    with pytest.raises(BatonError) as gone:
        me.home.read("run/owner.json")
    assert gone.value.status == 404


def test_a_signed_handoff_context_is_witnessed_and_answered(agent, ts):
    planner, coder = agent("planner"), agent("coder")
    offer = sign_offer(planner.identity, coder.principal, "ctx-py-1", task="task-42")
    answered = planner.hops.offer(coder.principal, {"offer": offer.element})
    assert answered["hop"]["digest"] == offer.digest == handoff_digest(offer.element)
    inbox = coder.hops.inbox(after=0)["deliveries"]
    assert any(offer.element in json.dumps(d) for d in inbox), inbox
    coder.hops.answer(sign_status(coder.identity, offer.element, "accepted"))
    assert coder.hops.read(offer.digest)["state"] == "accepted"
    assert planner.hops.chain(offer.digest)
    # A hop addressed to someone else is refused by the hub's checks.
    stray = sign_offer(planner.identity, ts.principal, "ctx-py-2")
    with pytest.raises(BatonError) as refused:
        planner.hops.offer(coder.principal, {"offer": stray.element})
    assert refused.value.code == "hop_refused" and refused.value.context["reason"] == "wrong-audience"


def test_a_compute_job_runs_and_is_waited_for(agent):
    me = agent("computer")
    job = me.compute.submit({"*": [{"var": "x"}, 2]}, "py-job-1", input={"x": 21})
    done = me.compute.read(job["jobId"])
    version = done["version"]
    while done["state"] not in ("succeeded", "failed", "canceled"):
        done = me.compute.wait(job["jobId"], version=version, seconds=10)
        version = done["version"]
    assert done["state"] == "succeeded" and done["output"] == 42, done
    assert any(j["jobId"] == job["jobId"] for j in me.compute.list(limit=5)["jobs"])


def test_every_refusal_is_a_baton_error_with_code_fix_and_context(agent):
    me = agent("errors")
    with pytest.raises(BatonError) as missing:
        me.home.read("never/written.json")
    assert missing.value.status == 404 and missing.value.code and missing.value.fix
    with pytest.raises(BatonError) as bad:
        me.call("createResource", body={"namespace": "", "kind": "k", "data": 1})
    assert bad.value.code == "invalid_request" and bad.value.context.get("field")


def test_an_enrolled_key_also_signs_under_the_web_bot_auth_profile(agent, discovery):
    from baton_client import BatonClient

    me = agent("web-bot")
    web = BatonClient(me.identity, discovery, profile="web-bot-auth")
    assert web.me()["principal"] == me.principal
    made = web.resources.create("wba", "note/v1", {"profile": "web-bot-auth"})
    assert made["owner"] == me.principal
    # A key that never enrolled is named by no thumbprint the hub knows.
    from baton_client import create_identity

    stranger = BatonClient(create_identity("x"), discovery, profile="web-bot-auth")
    with pytest.raises(BatonError) as refused:
        stranger.me()
    assert refused.value.code == "key_not_enrolled" and refused.value.status == 401
