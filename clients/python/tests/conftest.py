"""Fixtures for the client's tests, which run against a real hub started by the suite
(tests/python-client.test.ts): BATON_HUB_URL names it, BATON_TS_AGENT a TypeScript agent on the
same hub (an @baton/client identity this process can ask to make calls)."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

from baton_client import BatonClient, create_identity, fetch_discovery, load_identity, save_identity

REPO = Path(__file__).resolve().parents[3]
CONFORMANCE = REPO / "conformance"


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: these tests run from the suite (npm test), against a hub")
    return value


@pytest.fixture(scope="session")
def hub_url() -> str:
    return _env("BATON_HUB_URL").rstrip("/")


@pytest.fixture(scope="session")
def discovery_url(hub_url: str) -> str:
    return hub_url + "/.well-known/agent-net"


@pytest.fixture(scope="session")
def discovery(discovery_url: str) -> dict[str, Any]:
    return fetch_discovery(discovery_url)


@pytest.fixture
def agent(tmp_path: Path, discovery_url: str, discovery: dict[str, Any]) -> Callable[[str], BatonClient]:
    """Makes a new Python agent: an identity file of its own, enrolled by a signed GET /v1/me
    (approved at once on the suite's open-admission hub)."""

    def make(name: str = "agent") -> BatonClient:
        path = tmp_path / f"{name}.identity.json"
        save_identity(path, create_identity(discovery_url, name))
        client = BatonClient(load_identity(path), discovery)
        assert client.me()["state"] == "approved"
        return client

    return make


class TsAgent:
    """The TypeScript agent: calls an operation by its contract with @baton/client."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.principal: str = self._post("/whoami", {})["principal"]

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        req = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=60) as res:
            return json.loads(res.read())

    def call(self, operation: str, input: dict[str, Any] | None = None, token: str | None = None) -> tuple[int, Any]:
        """Answers (status, body) of the call, whatever the status."""
        answer = self._post(
            "/call", {"operation": operation, "input": input or {}, **({"token": token} if token else {})}
        )
        return answer["status"], answer["body"]

    def ok(self, operation: str, input: dict[str, Any] | None = None, token: str | None = None) -> Any:
        status, body = self.call(operation, input, token)
        assert status < 400, (operation, status, body)
        return body

    def restart(self) -> None:
        """Stops the hub and starts it again on the same data and address."""
        self._post("/restart", {})

    def load_identity(self, path: str) -> str:
        """The principal @baton/client reads from an identity file this client wrote."""
        return self._post("/load-identity", {"path": path})["principal"]


@pytest.fixture(scope="session")
def ts() -> TsAgent:
    return TsAgent(_env("BATON_TS_AGENT"))
