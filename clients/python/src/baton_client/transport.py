"""HTTP over the standard library: one connection per request, the exact bytes signed."""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .errors import BatonError


@dataclass
class Response:
    """An answer: status, headers by lower-case name, and the body parsed as JSON when it is."""

    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        if not self.raw:
            return None
        try:
            return json.loads(self.raw)
        except ValueError:
            return {"text": self.raw.decode("utf-8", "replace")}


def send(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    timeout: float,
) -> Response:
    """Sends one request to ``url`` as given (path and query unchanged, so the signed
    ``@target-uri`` is what the hub rebuilds) and answers whatever status comes back."""
    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.netloc, timeout=timeout, context=ssl.create_default_context()
        )
    elif parts.scheme == "http":
        conn = http.client.HTTPConnection(parts.netloc, timeout=timeout)
    else:
        raise BatonError("network", f"unsupported URL scheme in {url}")
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", parts.netloc)
        conn.putheader("Accept", "application/json")
        for name, value in headers.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        elif method in ("POST", "PUT", "PATCH"):
            conn.putheader("Content-Length", "0")
        conn.endheaders(body)
        res = conn.getresponse()
        raw = res.read()
        return Response(res.status, {k.lower(): v for k, v in res.getheaders()}, raw)
    except (OSError, http.client.HTTPException) as error:
        raise BatonError("network", f"{method} {url} failed: {error}") from error
    finally:
        conn.close()
