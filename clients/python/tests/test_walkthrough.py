"""The seed 000 walkthrough driven from Python: the owner and the peer are Python agents, each
with its own directory and identity file, sending the seed's JSON files as written (placeholders
filled); the third, consenting identity of the isolation check is the TypeScript agent. The hub
restarts between phases, and the return after it runs as fresh processes of this client's
command with the same saved identities."""

import json
import os
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from baton_client import BatonClient, create_identity, save_identity

FILES = Path(__file__).resolve().parents[3] / "examples" / "walkthrough" / "files"
PLACEHOLDERS = ("RUN_ID", "OWNER_PRINCIPAL", "PEER_PRINCIPAL", "TASK_ID", "GRANT_ID",
                "NOTICE_MESSAGE_ID", "REPLY_MESSAGE_ID", "EXPIRES_AT")


class Walk:
    def __init__(self, tmp: Path, discovery_url: str) -> None:
        self.tmp = tmp
        self.discovery_url = discovery_url
        self.values = {"RUN_ID": f"run-{uuid.uuid4().hex[:12]}"}

    def fill(self, text: str) -> str:
        for name in PLACEHOLDERS:
            if name in text:
                assert name in self.values, f"placeholder {name} is not resolved yet"
                text = text.replace(name, self.values[name])
        return text

    def dir(self, who: str) -> Path:
        d = self.tmp / who
        d.mkdir(exist_ok=True)
        return d

    def client(self, who: str) -> BatonClient:
        """A fresh client from the agent's saved identity file, as a new controller process is."""
        return BatonClient.from_file(self.discovery_url, str(self.dir(who) / "agent.identity.json"))

    def prepare(self, who: str, name: str) -> bytes:
        """One of the seed's JSON files, placeholders filled, saved in the agent's directory."""
        text = self.fill((FILES / name).read_text())
        json.loads(text)
        (self.dir(who) / name).write_text(text)
        return text.encode()

    def request(self, who: str, method: str, path: str, body: bytes | None = None, expect: int | None = None):
        res = self.client(who).request(method, self.fill(path), body)
        if expect is not None:
            assert res.status == expect, (who, method, path, res.status, res.body)
        return res.status, res.body

    def command(self, who: str, method: str, path: str):
        """The same request as a fresh process of ``python -m baton_client request``."""
        out = subprocess.run(
            [sys.executable, "-m", "baton_client", "request", self.discovery_url,
             "agent.identity.json", method, self.fill(path)],
            cwd=self.dir(who), capture_output=True, text=True, env=os.environ, timeout=120,
        )
        status = int(out.stderr.strip().split()[-1])
        return status, json.loads(out.stdout)


def test_the_seed_000_walkthrough_two_python_agents_and_a_typescript_one(tmp_path, discovery_url, ts):
    w = Walk(tmp_path, discovery_url)
    # Each participant makes its key once and is admitted (open admission on this hub).
    for who in ("owner", "peer"):
        save_identity(w.dir(who) / "agent.identity.json", create_identity(discovery_url))
        me = w.client(who).me()
        assert me["state"] == "approved"
        w.values[f"{who.upper()}_PRINCIPAL"] = me["principal"]

    # Owner: create the task once and share only that task.
    status, task = w.request("owner", "POST", "/v1/resources", w.prepare("owner", "handoff-task.json"), 201)
    assert task["version"] == 1
    w.values["TASK_ID"] = task["id"]
    w.values["EXPIRES_AT"] = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    _, grant = w.request("owner", "POST", "/v1/capabilities", w.prepare("owner", "handoff-grant.json"), 201)
    assert grant["delegable"] is False
    w.values["GRANT_ID"] = grant["id"]

    # Owner: checkpoint the prepared notice, then send it; a lost answer is retried identically.
    notice = w.prepare("owner", "handoff-notice.json")
    _, cp = w.request("owner", "PUT", "/v1/home/file", w.prepare("owner", "handoff-owner-checkpoint.json"), 200)
    assert cp["revision"] == 1
    status, sent = w.request("owner", "POST", "/v1/messages", notice)
    assert status in (200, 201)
    w.values["NOTICE_MESSAGE_ID"] = sent["id"]
    _, resent = w.request("owner", "POST", "/v1/messages", notice)
    assert resent["id"] == sent["id"]

    ts.restart()

    # Peer: read the notice and the exact task, then prepare and write the result.
    _, inbox = w.request("peer", "GET", "/v1/messages?after=0&limit=20", None, 200)
    got = next(m for m in inbox["messages"] if m["id"] == sent["id"])
    assert got["sender"] == w.values["OWNER_PRINCIPAL"]
    assert got["body"]["taskId"] == task["id"] and got["body"]["taskVersion"] == 1
    _, seen = w.request("peer", "GET", "/v1/resources/TASK_ID", None, 200)
    assert seen["owner"] == w.values["OWNER_PRINCIPAL"] and seen["version"] == 1
    w.request("peer", "PUT", "/v1/home/file", w.prepare("peer", "handoff-peer-checkpoint.json"), 200)
    result = w.prepare("peer", "handoff-result.json")
    _, patched = w.request("peer", "PATCH", "/v1/resources/TASK_ID", result, 200)
    assert patched["version"] == 2
    status, reply = w.request("peer", "POST", "/v1/messages", w.prepare("peer", "handoff-reply.json"))
    assert status in (200, 201)
    w.values["REPLY_MESSAGE_ID"] = reply["id"]
    _, done = w.request("peer", "PUT", "/v1/home/file", w.prepare("peer", "handoff-peer-complete.json"), 200)
    assert done["revision"] == 2
    w.request("peer", "POST", "/v1/messages/NOTICE_MESSAGE_ID/ack", None, 200)

    # Owner: verify the result and retain the receipt.
    _, owner_inbox = w.request("owner", "GET", "/v1/messages?after=0&limit=20", None, 200)
    got_reply = next(m for m in owner_inbox["messages"] if m["id"] == reply["id"])
    assert got_reply["body"]["taskVersion"] == 2
    _, final = w.request("owner", "GET", "/v1/resources/TASK_ID", None, 200)
    assert final["version"] == 2 and final["data"]["status"] == "completed"
    _, history = w.request("owner", "GET", "/v1/resources/TASK_ID/history", None, 200)
    assert len(history["versions"]) == 2 and history["versions"][0]["data"]["status"] == "open"
    w.request("owner", "PUT", "/v1/home/file", w.prepare("owner", "handoff-owner-complete.json"), 200)
    w.request("owner", "POST", "/v1/messages/REPLY_MESSAGE_ID/ack", None, 200)

    ts.restart()

    # Restart and return: fresh processes with the same saved identities.
    for who, role in (("owner", "owner"), ("peer", "peer")):
        status, me = w.command(who, "GET", "/v1/me")
        assert status == 200 and me["principal"] == w.values[f"{who.upper()}_PRINCIPAL"]
        status, file = w.command(who, "GET", f"/v1/home/file?path=handoff%2FRUN_ID%2F{role}.json")
        content = json.loads(file["content"])
        assert status == 200 and content["taskId"] == task["id"] and content["taskVersion"] == 2
        status, r = w.command(who, "GET", "/v1/resources/TASK_ID")
        assert status == 200 and r["version"] == 2

    # Isolation: the third, consenting identity (the TypeScript agent) sees nothing of the task.
    for op in ("readResource", "resourceHistory"):
        status, body = ts.call(op, {"params": {"id": task["id"]}})
        assert status == 403, (op, body)
    listed = ts.ok("listResources", {"query": {"namespace": w.fill("handoff-OWNER_PRINCIPAL-RUN_ID"), "kind": "net-task-handoff/v1"}})
    assert listed["resources"] == []
    w.request("peer", "GET", "/v1/home/file?path=handoff%2FRUN_ID%2Fowner.json", None, 404)

    # Revocation: the owner revokes the exact grant; the peer's reads and PATCH are then 403.
    _, revoked = w.request("owner", "DELETE", "/v1/capabilities/GRANT_ID", None, 200)
    assert revoked["revokedAt"]
    w.request("peer", "GET", "/v1/resources/TASK_ID", None, 403)
    w.request("peer", "GET", "/v1/resources/TASK_ID/history", None, 403)
    w.request("peer", "PATCH", "/v1/resources/TASK_ID", result, 403)

    # Reconciliation lookups, each by the relevant owner or peer.
    _, lookup = w.request("owner", "GET", "/v1/resources?namespace=handoff-OWNER_PRINCIPAL-RUN_ID&kind=net-task-handoff%2Fv1", None, 200)
    assert [r["id"] for r in lookup["resources"]] == [task["id"]]
    _, caps = w.request("owner", "GET", "/v1/capabilities", None, 200)
    assert next(c for c in caps["capabilities"] if c["id"] == grant["id"])["revokedAt"]
    w.request("owner", "GET", "/v1/home/file?path=handoff%2FRUN_ID%2Fowner.json", None, 200)
    w.request("peer", "GET", "/v1/home/file?path=handoff%2FRUN_ID%2Fpeer.json", None, 200)
