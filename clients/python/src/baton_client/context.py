"""The signed handoff context (seed 003, draft-srivastava-agentproto-handoff-context-01) in its
JWS form: sign offers and statuses as an identity, and the handoff digest that names them.

A Baton hub witnesses these on ``/v1/hops``: its trust configuration is the admitted principals,
so an identity signs with its did:key as both ``iss`` and ``kid``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from .identity import Identity, b64url

OFFER_TYP = "handoff-offer+jwt"
STATUS_TYP = "handoff-status+jwt"
DEFAULT_TTL_S = 120


def handoff_digest(element: str) -> str:
    """SHA-256 of the signed element's octets, base64url: the name of an offer or status."""
    return b64url(hashlib.sha256(element.encode("ascii")).digest())


def sign_jws(header: dict[str, Any], payload: dict[str, Any], identity: Identity) -> str:
    """A compact JWS (RFC 7515) signed with Ed25519 (RFC 8037, ``alg: EdDSA``)."""
    h = b64url(json.dumps(header, separators=(",", ":")).encode())
    p = b64url(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
    return f"{h}.{p}." + b64url(identity.sign(f"{h}.{p}".encode("ascii")))


def _claims(element: str) -> dict[str, Any]:
    from .identity import b64url_decode

    return json.loads(b64url_decode(element.split(".")[1]))


@dataclass
class SignedOffer:
    element: str
    claims: dict[str, Any]
    digest: str


def sign_offer(
    identity: Identity,
    aud: str,
    dialog: str,
    *,
    task: str | None = None,
    obo: str | None = None,
    prev: str | None = None,
    ttl_s: int = DEFAULT_TTL_S,
    now: float | None = None,
) -> SignedOffer:
    """Signs an offer from ``identity`` to ``aud``; ``prev`` is the handoff digest it continues."""
    iat = int(time.time() if now is None else now)
    claims: dict[str, Any] = {
        "v": 1,
        "typ": "offer",
        # seed 003: the hop carries at least 128 bits from a secure random source
        "hop": secrets.token_urlsafe(16),
        "dialog": dialog,
        "iss": identity.principal,
        "aud": aud,
        "iat": iat,
        "exp": iat + ttl_s,
    }
    for k, v in (("task", task), ("obo", obo), ("prev", prev)):
        if v is not None:
            claims[k] = v
    header = {"alg": "EdDSA", "kid": identity.principal, "typ": OFFER_TYP}
    element = sign_jws(header, claims, identity)
    return SignedOffer(element, claims, handoff_digest(element))


def sign_status(
    identity: Identity,
    offer: str,
    state: str,
    *,
    reason: str | None = None,
    detail: str | None = None,
    now: float | None = None,
) -> str:
    """Signs a status answering ``offer`` (the signed element as delivered): ``accepted``,
    ``rejected``, ``completed`` or ``failed`` by its delegate, ``canceled`` by its delegator."""
    claims = _claims(offer)
    canceled = state == "canceled"
    out: dict[str, Any] = {
        "v": 1,
        "typ": "status",
        "hop": claims["hop"],
        "offer": handoff_digest(offer),
        "iss": identity.principal,
        "aud": claims["aud"] if canceled else claims["iss"],
        "iat": int(time.time() if now is None else now),
        "state": state,
    }
    if reason is not None:
        out["reason"] = reason
    if detail is not None:
        out["detail"] = detail
    return sign_jws({"alg": "EdDSA", "kid": identity.principal, "typ": STATUS_TYP}, out, identity)
