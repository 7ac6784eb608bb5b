"""Run by the suite with the package installed into a fresh virtual environment (pip, no index):
make an identity file, then a token handoff, a resource grant and a message with a TypeScript
agent on the same hub. Exits non-zero at the first thing that is not as expected."""

import json
import os
import tempfile
import urllib.request
from datetime import datetime, timedelta, timezone

import baton_client
from baton_client import BatonClient, BatonError, HandoffClient, create_identity, save_identity

hub = os.environ["BATON_HUB_URL"]
agent_url = os.environ["BATON_TS_AGENT"]
# Installed, not imported from the repository's source folder.
assert "site-packages" in baton_client.__file__, baton_client.__file__


def ts(operation, input=None, token=None):
    body = {"operation": operation, "input": input or {}}
    if token:
        body["token"] = token
    req = urllib.request.Request(agent_url + "/call", json.dumps(body).encode(), method="POST")
    req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req) as res:
        answer = json.loads(res.read())
    assert answer["status"] < 400, (operation, answer)
    return answer["body"]


def ts_principal():
    req = urllib.request.Request(agent_url + "/whoami", b"{}", method="POST")
    with urllib.request.urlopen(req) as res:
        return json.loads(res.read())["principal"]


with tempfile.TemporaryDirectory() as home:
    path = os.path.join(home, "agent.identity.json")
    save_identity(path, create_identity(hub + "/.well-known/agent-net", "clean-machine"))
    me = BatonClient.from_file(hub + "/.well-known/agent-net", path)
    assert me.me()["state"] == "approved"
    print("identity", me.principal)

    # A token handoff: this agent creates it, the TypeScript agent accepts with the receiver token.
    handoffs = HandoffClient(hub)
    created = handoffs.create({"task": "translate", "words": 120}, note="from python")
    moved = ts(
        "advanceHandoff",
        {"params": {"handoff_id": created["handoff_id"], "state": "accepted"}, "body": {"from": "offered"}},
        token=created["receiver_token"],
    )
    assert moved["state"] == "accepted", moved
    seen = handoffs.wait(created["handoff_id"], created["owner_token"], version=1, seconds=1)
    assert seen["state"] == "accepted" and seen["version"] == 2, seen
    print("handoff", created["handoff_id"], "accepted by the TypeScript agent")

    # A resource grant: the TypeScript agent reads and updates what it was granted.
    peer = ts_principal()
    task = me.resources.create("clean-machine", "task/v1", {"title": "translate"})
    expires = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat(timespec="seconds")
    grant = me.grants.create(task["id"], peer, ["resource:read", "resource:update"], expires)
    read = ts("readResource", {"params": {"id": task["id"]}})
    assert read["data"] == {"title": "translate"}, read
    ts("updateResource", {"params": {"id": task["id"]}, "body": {"expectedVersion": 1, "data": {"done": True}}})
    assert me.resources.read(task["id"])["version"] == 2
    me.grants.revoke(grant["id"])
    print("grant", grant["id"], "used and revoked")

    # A message each way, with the hub's receipt and an ack.
    sent = me.messages.send(peer, {"hello": "from python"}, "clean-machine:hello:1")
    inbox = ts("listMessages", {"query": {"after": 0}})
    assert any(m["id"] == sent["id"] for m in inbox["messages"]), inbox
    back = ts("sendMessage", {"body": {"recipient": me.principal, "body": {"hello": "from ts"}, "idempotencyKey": "clean:1"}})
    mine = me.messages.list(after=0)["messages"]
    assert [m["id"] for m in mine] == [back["id"]], mine
    me.messages.ack(back["id"])
    try:
        me.messages.ack("msg_none")
        raise SystemExit("an unknown message was acknowledged")
    except BatonError as error:
        assert error.status == 404 and error.fix, error
    print("messages", sent["id"], back["id"])
print("clean machine: ok")
