"""Typed calls to a Baton hub: a signed client for agents, and token handoffs (seed 002)."""

from __future__ import annotations

import json
import time
from typing import Any, Iterable, Literal, Mapping, cast
from urllib.parse import quote, urlencode, urlsplit

from . import _operations as ops
from .errors import BatonError
from .identity import Identity, load_identity
from .signing import Profile, sign_request
from .transport import Response, send

DISCOVERY_PATH = "/.well-known/agent-net"


def _json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _path(op: ops.Operation, params: Mapping[str, Any]) -> str:
    path = op.path
    for name in op.path_params:
        if name not in params:
            raise TypeError(f"{op.operation_id} needs the path parameter {name}")
        path = path.replace("{" + name + "}", quote(str(params[name]), safe=""))
    return path


def _query(op: ops.Operation, query: Mapping[str, Any] | None) -> str:
    pairs = []
    for name, value in (query or {}).items():
        if name not in op.query:
            raise TypeError(f"{op.operation_id} takes no query parameter {name}")
        if value is None:
            continue
        pairs.append((name, str(value).lower() if isinstance(value, bool) else str(value)))
    return "?" + urlencode(pairs, quote_via=quote) if pairs else ""


def _check_body(op: ops.Operation, body: Any) -> None:
    if op.body is None:
        if body is not None:
            raise TypeError(f"{op.operation_id} takes no body")
        return
    if isinstance(body, Mapping):
        unknown = [k for k in body if k not in op.body]
        if unknown:
            raise TypeError(f"{op.operation_id} has no field {', '.join(unknown)}")


def _answer(res: Response) -> Any:
    if res.status >= 400:
        raise BatonError.from_body(res.body, res.status)
    return res.body


def fetch_discovery(discovery_url: str, timeout: float = 30) -> dict[str, Any]:
    """Reads a hub's discovery document (``/.well-known/agent-net``)."""
    return cast(dict[str, Any], _answer(send("GET", discovery_url, {}, None, timeout)))


class HandoffClient:
    """Token handoffs (seed 002): create one, then read, move and wait on it with either token.

    >>> handoffs = HandoffClient("http://127.0.0.1:8080")
    >>> created = handoffs.create({"task": "translate"})
    >>> handoffs.advance(created["handoff_id"], "accepted", created["receiver_token"], from_="offered")
    """

    def __init__(self, hub_url: str, *, timeout: float = 60) -> None:
        self.hub_url = hub_url.rstrip("/")
        self.timeout = timeout

    def call(
        self,
        operation_id: str,
        *,
        token: str | None = None,
        params: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Calls an operation of the published contracts that needs no signature."""
        op = ops.OPERATIONS[operation_id]
        if op.auth == "signature":
            raise TypeError(f"{operation_id} is signed: call it through BatonClient")
        _check_body(op, body)
        headers: dict[str, str] = {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        data = None if body is None else _json(body)
        if data is not None:
            headers["Content-Type"] = "application/json"
        url = self.hub_url + _path(op, params or {}) + _query(op, query)
        return _answer(send(op.method, url, headers, data, self.timeout))

    def create(
        self,
        payload: Any,
        *,
        note: str | None = None,
        notify_url: str | None = None,
        states: list[str] | None = None,
        final: list[str] | None = None,
        transitions: dict[str, list[str]] | None = None,
        idempotency_key: str | None = None,
    ) -> ops.CreateHandoffOutput:
        """Creates a handoff; its answer holds both tokens, shown only this once."""
        body: dict[str, Any] = {"payload": payload}
        for k, v in (
            ("note", note),
            ("notify_url", notify_url),
            ("states", states),
            ("final", final),
            ("transitions", transitions),
        ):
            if v is not None:
                body[k] = v
        return self.call("createHandoff", body=body, idempotency_key=idempotency_key)

    def read(self, handoff_id: str, token: str) -> ops.ReadHandoffOutput:
        return self.call("readHandoff", token=token, params={"handoff_id": handoff_id})

    def advance(
        self,
        handoff_id: str,
        state: str,
        token: str,
        *,
        from_: str,
        nonce: str | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        """Moves a handoff to ``state`` only from exactly ``from_``; a ``nonce`` makes it safe to
        repeat. A 409 ``state_conflict`` carries where the handoff really is."""
        body: dict[str, Any] = {"from": from_}
        if nonce is not None:
            body["nonce"] = nonce
        if note is not None:
            body["note"] = note
        return self.call(
            "advanceHandoff", token=token, params={"handoff_id": handoff_id, "state": state}, body=body
        )

    def wait(self, handoff_id: str, token: str, *, version: int, seconds: int = 25) -> ops.WaitHandoffOutput:
        """Answers as soon as the handoff moves past ``version`` or ends, within ``seconds``."""
        return self.call(
            "waitHandoff",
            token=token,
            params={"handoff_id": handoff_id, "seconds": seconds},
            query={"version": version},
        )


class BatonClient:
    """Calls a Baton hub as one agent, each request signed afresh (RFC 9421, Ed25519).

    >>> client = BatonClient.from_file("http://127.0.0.1:8080/.well-known/agent-net", "agent.identity.json")
    >>> task = client.resources.create("tasks", "task/v1", {"title": "translate"})
    """

    def __init__(
        self,
        identity: Identity,
        discovery: Mapping[str, Any],
        *,
        timeout: float = 60,
        max_retry_wait: float = 5,
        profile: Profile = "baton",
    ) -> None:
        self.identity = identity
        self.discovery = dict(discovery)
        self.api_base = str(discovery["apiBase"]).rstrip("/")
        self.timeout = timeout
        self.max_retry_wait = max_retry_wait
        self.profile: Profile = profile
        self.resources = Resources(self)
        self.grants = Grants(self)
        self.messages = Messages(self)
        self.home = Home(self)
        self.hops = Hops(self)
        self.compute = Compute(self)

    @classmethod
    def connect(cls, discovery_url: str, identity: Identity, **options: Any) -> "BatonClient":
        """Reads discovery and answers a client for the identity."""
        return cls(identity, fetch_discovery(discovery_url), **options)

    @classmethod
    def from_file(cls, discovery_url: str, identity_path: str, **options: Any) -> "BatonClient":
        """Like ``connect``, loading the identity file first (refusing one others can read)."""
        return cls.connect(discovery_url, load_identity(identity_path), **options)

    @property
    def principal(self) -> str:
        return self.identity.principal

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        """Sends one signed request to any path and answers it whatever its status. A 429 whose
        Retry-After is at most ``max_retry_wait`` seconds is retried once, signed afresh."""
        data = body if isinstance(body, bytes) or body is None else _json(body)
        res = self._send(method, path, data, headers)
        if res.status == 429:
            retry = res.headers.get("retry-after", "")
            if retry.isdigit() and int(retry) <= self.max_retry_wait:
                time.sleep(int(retry))
                res = self._send(method, path, data, headers)
        return res

    def _send(self, method: str, path: str, data: bytes | None, headers: Mapping[str, str] | None) -> Response:
        signed = sign_request(
            self.identity, method, self.api_base + path, data, headers, profile=self.profile
        )
        return send(method, signed.url, signed.headers, signed.body, self.timeout)

    def call(
        self,
        operation_id: str,
        *,
        params: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Calls an operation by its operationId in the published contracts and answers its
        body, or raises the hub's error as a BatonError."""
        op = ops.OPERATIONS[operation_id]
        if op.auth != "signature":
            raise TypeError(f"{operation_id} is not signed: call it through HandoffClient")
        _check_body(op, body)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
        path = _path(op, params or {}) + _query(op, query)
        return _answer(self.request(op.method, path, body, headers))

    def me(self) -> ops.MeOutput:
        """The signing principal, its admission state, quotas and usage."""
        return self.call("me")

    def set_label(self, label: str) -> ops.SetMyLabelOutput:
        return self.call("setMyLabel", body={"label": label})


def _some(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


class _Feature:
    def __init__(self, client: BatonClient) -> None:
        self._client = client

    def _call(self, operation_id: str, **kwargs: Any) -> Any:
        return self._client.call(operation_id, **kwargs)


class Resources(_Feature):
    """Versioned shared resources with their history (seed 000)."""

    def create(
        self, namespace: str, kind: str, data: Any, *, idempotency_key: str | None = None
    ) -> ops.CreateResourceOutput:
        return self._call(
            "createResource",
            body={"namespace": namespace, "kind": kind, "data": data},
            idempotency_key=idempotency_key,
        )

    def list(
        self,
        *,
        namespace: str | None = None,
        kind: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> ops.ListResourcesOutput:
        return self._call(
            "listResources", query=_some(namespace=namespace, kind=kind, after=after, limit=limit)
        )

    def read(self, resource_id: str) -> ops.ReadResourceOutput:
        return self._call("readResource", params={"id": resource_id})

    def update(self, resource_id: str, expected_version: int, data: Any) -> ops.UpdateResourceOutput:
        """Replaces the data only at ``expected_version``; a 409 tells the real version."""
        return self._call(
            "updateResource",
            params={"id": resource_id},
            body={"expectedVersion": expected_version, "data": data},
        )

    def history(self, resource_id: str) -> ops.ResourceHistoryOutput:
        return self._call("resourceHistory", params={"id": resource_id})


Action = Literal["resource:read", "resource:update"]


class Grants(_Feature):
    """Scoped, expiring, revocable grants on one resource (seed 000)."""

    def create(
        self,
        resource_id: str,
        subject: str,
        actions: Iterable[str],
        expires_at: str,
        *,
        delegable: bool = False,
        idempotency_key: str | None = None,
    ) -> ops.CreateGrantOutput:
        """Grants ``subject`` the ``actions`` on one resource until ``expires_at`` (RFC 3339)."""
        return self._call(
            "createGrant",
            body={
                "resourceId": resource_id,
                "subject": subject,
                "actions": list(actions),
                "delegable": delegable,
                "expiresAt": expires_at,
            },
            idempotency_key=idempotency_key,
        )

    def list(self) -> ops.ListGrantsOutput:
        return self._call("listGrants")

    def revoke(self, grant_id: str) -> ops.RevokeGrantOutput:
        return self._call("revokeGrant", params={"id": grant_id})


class Messages(_Feature):
    """Durable messages with idempotency keys, sequences, acks and hub-signed receipts."""

    def send(self, recipient: str, body: Any, idempotency_key: str) -> ops.SendMessageOutput:
        """Sends a message; repeating the same key and body answers the same message."""
        return self._call(
            "sendMessage",
            body={"recipient": recipient, "body": body, "idempotencyKey": idempotency_key},
        )

    def list(
        self,
        *,
        after: int | None = None,
        limit: int | None = None,
        unacked: bool | None = None,
        wait: int | None = None,
    ) -> ops.ListMessagesOutput:
        """Your inbox after an exclusive global sequence; ``wait`` long-polls for a new one."""
        return self._call(
            "listMessages", query=_some(after=after, limit=limit, unacked=unacked, wait=wait)
        )

    def ack(self, message_id: str) -> ops.AckMessageOutput:
        return self._call("ackMessage", params={"id": message_id})


class Home(_Feature):
    """Private per-agent home files (checkpoints)."""

    def write(self, path: str, content: str, expected_revision: int) -> ops.WriteHomeFileOutput:
        """Writes a file: ``expected_revision`` 0 creates only, else commits only at it."""
        return self._call(
            "writeHomeFile",
            body={"path": path, "expectedRevision": expected_revision, "content": content},
        )

    def read(self, path: str) -> ops.ReadHomeFileOutput:
        return self._call("readHomeFile", query={"path": path})

    def list(
        self, *, prefix: str | None = None, after: str | None = None, limit: int | None = None
    ) -> ops.ListHomeFilesOutput:
        return self._call("listHomeFiles", query=_some(prefix=prefix, after=after, limit=limit))

    def delete(self, path: str, expected_revision: int) -> ops.DeleteHomeFileOutput:
        return self._call(
            "deleteHomeFile", query={"path": path, "expectedRevision": expected_revision}
        )


class Hops(_Feature):
    """Signed handoff contexts (seed 003) witnessed by the hub."""

    def offer(self, to: str, handoff: Mapping[str, Any]) -> ops.OfferHandoffOutput:
        """Offers a signed Handoff object ``{offer, chain?}`` to an admitted agent."""
        return self._call("offerHandoff", body={"to": to, "handoff": dict(handoff)})

    def answer(self, status: str) -> ops.AnswerHandoffOutput:
        """Sends a signed status (a compact JWS) for a hop you are a party to."""
        return self._call("answerHandoff", body={"status": status})

    def inbox(self, *, after: int | None = None, limit: int | None = None) -> ops.ListHopInboxOutput:
        return self._call("listHopInbox", query=_some(after=after, limit=limit))

    def read(self, digest: str) -> ops.ReadHopOutput:
        return self._call("readHop", params={"digest": digest})

    def chain(self, digest: str) -> ops.ReadHopChainOutput:
        return self._call("readHopChain", params={"digest": digest})


class Compute(_Feature):
    """Bounded compute jobs (``json-expr-v1``)."""

    def submit(
        self,
        program: Any,
        idempotency_key: str,
        *,
        input: Any = None,
        input_resource_id: str | None = None,
        output: Mapping[str, Any] | None = None,
        language: str = "json-expr-v1",
    ) -> ops.SubmitComputeJobOutput:
        body = {"language": language, "program": program, "idempotencyKey": idempotency_key}
        body.update(_some(input=input, inputResourceId=input_resource_id, output=output))
        return self._call("submitComputeJob", body=body)

    def list(self, *, limit: int | None = None) -> ops.ListComputeJobsOutput:
        return self._call("listComputeJobs", query=_some(limit=limit))

    def read(self, job_id: str) -> ops.ReadComputeJobOutput:
        return self._call("readComputeJob", params={"id": job_id})

    def wait(self, job_id: str, *, version: int, seconds: int = 25) -> ops.WaitComputeJobOutput:
        return self._call(
            "waitComputeJob", params={"id": job_id, "seconds": seconds}, query={"version": version}
        )

    def cancel(self, job_id: str) -> ops.CancelComputeJobOutput:
        return self._call("cancelComputeJob", params={"id": job_id})


def discovery_url_of(url: str) -> str:
    """The discovery URL of a hub named by its origin or by its discovery URL."""
    parts = urlsplit(url)
    return url if parts.path.endswith(DISCOVERY_PATH) else f"{parts.scheme}://{parts.netloc}{DISCOVERY_PATH}"
