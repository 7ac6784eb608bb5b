"""The signed handoff context (seed 003, draft-srivastava-agentproto-handoff-context-01) in its
JWS form: sign offers and statuses as an identity, name them by their handoff digest, and verify
a received handoff with the draft's seven checks, in order, each refusal with its reason code.

A Baton hub witnesses these on ``/v1/hops``: its trust configuration is the admitted principals,
so an identity signs with its did:key as both ``iss`` and ``kid``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .identity import Identity, b64url, jwk_thumbprint

OFFER_TYP = "handoff-offer+jwt"
STATUS_TYP = "handoff-status+jwt"
DEFAULT_TTL_S = 120
# seed 003: a skew of at most 60 s and a lifetime of at most 300 s are recommended, a chain
# length (current offer included) of 16; choice: elements of at most 16 KiB.
SKEW_S = 60
MAX_LIFETIME_S = 300
MAX_CHAIN = 16
MAX_ELEMENT_OCTETS = 16_384
ALGORITHMS = ("EdDSA", "ES256")
REF_KINDS = ("digest", "salted-digest", "scitt-receipt", "learnlog-head")

_HOP = re.compile(r"[A-Za-z0-9_-]{22,64}")
_DIGEST = re.compile(r"[A-Za-z0-9_-]{43}")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+")
_B64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def handoff_digest(element: str) -> str:
    """SHA-256 of the signed element's octets, base64url: the name of an offer or status."""
    return b64url(hashlib.sha256(element.encode("latin-1")).digest())


def sign_jws(header: dict[str, Any], payload: dict[str, Any], identity: Identity) -> str:
    """A compact JWS (RFC 7515) signed with Ed25519 (RFC 8037, ``alg: EdDSA``)."""
    h = b64url(json.dumps(header, separators=(",", ":")).encode())
    p = b64url(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
    return f"{h}.{p}." + b64url(identity.sign(f"{h}.{p}".encode("ascii")))


def _claims(element: str) -> dict[str, Any]:
    return json.loads(_b64u_decode(element.split(".")[1]))


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
    grant: str | None = None,
    prev: str | None = None,
    refs: list[dict[str, Any]] | None = None,
    ttl_s: int = DEFAULT_TTL_S,
    now: float | None = None,
    hop: str | None = None,
    iss: str | None = None,
    kid: str | None = None,
) -> SignedOffer:
    """Signs an offer from ``identity`` to ``aud``; ``prev`` is the handoff digest it continues.
    ``iss`` and ``kid`` default to the identity's did:key, as a hub's trust names it."""
    iat = int(time.time() if now is None else now)
    claims: dict[str, Any] = {
        "v": 1,
        "typ": "offer",
        # seed 003: the hop carries at least 128 bits from a secure random source
        "hop": hop or secrets.token_urlsafe(16),
        "dialog": dialog,
        "iss": iss or identity.principal,
        "aud": aud,
        "iat": iat,
        "exp": iat + ttl_s,
    }
    for k, v in (("task", task), ("obo", obo), ("grant", grant), ("prev", prev), ("refs", refs)):
        if v is not None:
            claims[k] = v
    header = {"alg": "EdDSA", "kid": kid or identity.principal, "typ": OFFER_TYP}
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
    iss: str | None = None,
    kid: str | None = None,
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
        "iss": iss or identity.principal,
        "aud": claims["aud"] if canceled else claims["iss"],
        "iat": int(time.time() if now is None else now),
        "state": state,
    }
    if reason is not None:
        out["reason"] = reason
    if detail is not None:
        out["detail"] = detail
    header = {"alg": "EdDSA", "kid": kid or identity.principal, "typ": STATUS_TYP}
    return sign_jws(header, out, identity)


# ---- verifying a handoff: the seven checks ----


class HandoffRejected(Exception):
    """A handoff refused by one of the seven checks: the draft's ``reason`` code, the ``check``
    that failed and, for a chain element, its ``index`` (0 = oldest)."""

    def __init__(self, reason: str, check: str, detail: str, index: int | None = None) -> None:
        super().__init__(f"{reason} at {check}: {detail}")
        self.reason, self.check, self.detail, self.index = reason, check, detail, index


@dataclass
class VerifiedHandoff:
    claims: dict[str, Any]
    digest: str
    chain: list[dict[str, Any]]
    """The verified chain's members, oldest first, without the current offer."""
    partial: bool
    origin: str


class ReplayStore:
    """Check 4's memory in one process: the first digest seen for each (iss, hop) until expiry."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], tuple[str, float]] = {}

    def remember(self, iss: str, hop: str, digest: str, expires_at: float, now: float) -> str | None:
        prior = self._seen.get((iss, hop))
        if prior is not None and prior[1] > now:
            return prior[0]
        self._seen[(iss, hop)] = (digest, expires_at)
        return None


def _canonical_b64u(text: str) -> bool:
    rem = len(text) & 3
    if rem == 1 or not _B64URL.fullmatch(text):
        return False
    if rem == 0:
        return True
    # RFC 4648 §3.5: the unused low bits of the last character are zero.
    v = _B64URL_ALPHABET.index(text[-1])
    return (v & 0x0F) == 0 if rem == 2 else (v & 0x03) == 0


def _b64u_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data.decode("utf-8", "replace"), parse_constant=_reject_constant)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass
class _Element:
    raw: str
    header: dict[str, Any]
    payload: dict[str, Any]
    signing_input: bytes
    signature: bytes
    digest: str


class _Failure(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def _read(raw: Any, max_octets: int) -> _Element:
    """Splits and parses a JWS element strictly; an undecodable element is treated as absent."""
    if not isinstance(raw, str):
        raise _Failure("bad-signature", "this client reads JWS elements only")
    if len(raw) > max_octets:
        raise _Failure("policy", "element too large")
    parts = raw.split(".")
    if len(parts) != 3 or parts[0] == "":
        raise _Failure("bad-signature", "not three parts")
    h, p, s = parts
    if not (_canonical_b64u(h) and _canonical_b64u(p) and s and _canonical_b64u(s)):
        raise _Failure("bad-signature", "not canonical base64url")
    header = _json_object(_b64u_decode(h))
    if header is None:
        raise _Failure("bad-signature", "header is not a JSON object")
    if header.get("alg") not in ALGORITHMS:
        raise _Failure("bad-signature", "algorithm not allowed")
    # RFC 7515 §4.1.11: a crit this reader does not understand (it understands none) is invalid.
    if "crit" in header:
        raise _Failure("bad-signature", "unknown crit")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise _Failure("bad-signature", "kid missing")
    if "typ" in header and not isinstance(header["typ"], str):
        raise _Failure("bad-signature", "typ is not a string")
    payload = _json_object(_b64u_decode(p))
    if payload is None:
        raise _Failure("bad-signature", "payload is not a JSON object")
    return _Element(raw, header, payload, f"{h}.{p}".encode("latin-1"), _b64u_decode(s), handoff_digest(raw))


TrustConfig = Mapping[str, "Mapping[str, Any] | Iterable[Mapping[str, Any]]"]


def _trust_keys(trust: TrustConfig) -> dict[str, list[tuple[str, str, bytes]]]:
    """Issuer -> (kid, alg, raw key): a key's kid is its JWK's own, else its thumbprint."""
    out: dict[str, list[tuple[str, str, bytes]]] = {}
    for iss, value in trust.items():
        keys = [value] if isinstance(value, Mapping) else list(value)
        for jwk in keys:
            if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519" and isinstance(jwk.get("x"), str):
                kid = jwk.get("kid") if isinstance(jwk.get("kid"), str) else jwk_thumbprint(jwk["x"])
                out.setdefault(iss, []).append((kid, "EdDSA", _b64u_decode(jwk["x"])))
    return out


def _keys_for(e: _Element, trust: dict[str, list[tuple[str, str, bytes]]], typ: str) -> list[bytes]:
    """Check 1 up to the signature: the typ, the issuer, and the keys trusted for (iss, kid, alg)."""
    if e.header.get("typ") != typ:
        raise _Failure("bad-signature", "missing or unexpected typ")
    iss = e.payload.get("iss")
    if not isinstance(iss, str) or not iss:
        raise _Failure("bad-signature", "iss missing")
    keys = [k for kid, alg, k in trust.get(iss, []) if kid == e.header["kid"] and alg == e.header["alg"]]
    if not keys:
        raise _Failure("untrusted-key", "no trusted key for iss and kid")
    return keys


def _verifies(e: _Element, keys: list[bytes]) -> bool:
    for key in keys:
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(e.signature, e.signing_input)
            return True
        except (InvalidSignature, ValueError):
            continue
    return False


def _is_text(v: Any) -> bool:
    return isinstance(v, str) and len(v) > 0


def _is_date(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return float(v).is_integer() and 0 <= v <= 2**53 - 1


def _is_digest(v: Any) -> bool:
    return isinstance(v, str) and bool(_DIGEST.fullmatch(v))


def _refs_ok(value: Any) -> bool:
    if not isinstance(value, list):
        return False
    for ref in value:
        if not isinstance(ref, dict):
            return False
        kind = ref.get("kind")
        if not isinstance(kind, str) or not (kind in REF_KINDS or _URI.fullmatch(kind)):
            return False
        # seed 003: a salt is delivered with the object, never inside the element
        if not _is_digest(ref.get("digest")) or "salt" in ref:
            return False
    return True


def is_offer_claims(p: Mapping[str, Any]) -> bool:
    """Whether a payload has the members of an offer, each well-formed."""
    v = p.get("v")

    def optional(name: str, test: Callable[[Any], bool]) -> bool:
        return name not in p or test(p[name])

    return (
        not isinstance(v, bool)
        and v == 1
        and p.get("typ") == "offer"
        and isinstance(p.get("hop"), str)
        and bool(_HOP.fullmatch(p["hop"]))
        and _is_text(p.get("dialog"))
        and _is_text(p.get("iss"))
        and _is_text(p.get("aud"))
        and _is_date(p.get("iat"))
        and _is_date(p.get("exp"))
        and optional("task", _is_text)
        and optional("obo", _is_text)
        and optional("grant", _is_digest)
        and optional("prev", _is_digest)
        and optional("refs", _refs_ok)
    )


def _fresh(c: Mapping[str, Any], now: float, skew: float, max_life: float) -> bool:
    # seed 003: exp after iat, within the maximum lifetime, and live within the skew either way
    if c["exp"] <= c["iat"] or c["exp"] - c["iat"] > max_life:
        return False
    if c["iat"] > now + skew:
        return False
    return now < c["exp"] + skew


@dataclass
class RefPolicy:
    """How far references are checked: ``require`` ``none`` or ``all``; ``material`` by digest
    gives each referenced content (and a salted digest's salt, base64url)."""

    require: str = "none"
    material: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _check_refs(refs: list[dict[str, Any]], policy: RefPolicy | None) -> str | None:
    failure = None
    for ref in refs:
        required = policy is not None and policy.require == "all"
        if ref["kind"] in ("digest", "salted-digest"):
            if policy is None:
                continue
            m = policy.material.get(ref["digest"])
            if m is None:
                outcome = "unverifiable"
            elif ref["kind"] == "digest":
                got = b64url(hashlib.sha256(m["content"].encode()).digest())
                outcome = "verified" if got == ref["digest"] else "mismatch"
            elif "salt" not in m or len(_b64u_decode(m["salt"])) < 16:
                outcome = "unverifiable"
            else:
                got = b64url(hashlib.sha256(_b64u_decode(m["salt"]) + m["content"].encode()).digest())
                outcome = "verified" if got == ref["digest"] else "mismatch"
        else:
            outcome = "unverifiable" if required else "not-checked"
        if outcome == "mismatch":
            failure = "ref-mismatch"
        elif outcome == "unverifiable" and required and failure is None:
            failure = "unverifiable-ref"
    return failure


def verify_handoff(
    handoff: Any,
    *,
    trust: TrustConfig,
    audience: str,
    now: float | None = None,
    replay: ReplayStore | None = None,
    dialog: str | Iterable[str] | None = None,
    skew_s: float = SKEW_S,
    max_lifetime_s: float = MAX_LIFETIME_S,
    max_chain: int = MAX_CHAIN,
    require_full_chain: bool = False,
    trusted_origins: Iterable[str] | None = None,
    max_element_octets: int = MAX_ELEMENT_OCTETS,
    refs: RefPolicy | None = None,
) -> VerifiedHandoff:
    """Verifies a Handoff object ``{offer, chain?}`` (JWS elements) with the seed's seven checks
    in order (signature and trusted key, audience, freshness, replay, dialog, chain, refs),
    raising HandoffRejected at the first failure."""
    now = time.time() if now is None else now
    if not isinstance(handoff, Mapping) or not isinstance(handoff.get("offer"), (str, bytes)):
        raise HandoffRejected("bad-signature", "signature", "handoff is not { offer, chain? }")
    chain_raw = handoff.get("chain", [])
    if not isinstance(chain_raw, list) or not all(isinstance(e, (str, bytes)) for e in chain_raw):
        raise HandoffRejected("bad-signature", "signature", "chain is not a list of signed elements")
    # seed 003: the chain length is bounded before any signature work
    too_deep = len(chain_raw) + 1 > max_chain
    keys = _trust_keys(trust)

    # 1. signature and trusted key
    try:
        current = _read(handoff["offer"], max_element_octets)
        found = _keys_for(current, keys, OFFER_TYP)
        if not _verifies(current, found):
            raise _Failure("bad-signature", "signature does not verify")
    except _Failure as f:
        raise HandoffRejected(f.reason, "signature", f.detail) from None
    if not is_offer_claims(current.payload):
        raise HandoffRejected("malformed", "signature", "members not valid")
    claims = current.payload

    # 2. audience
    if claims["aud"] != audience:
        raise HandoffRejected("wrong-audience", "audience", "aud is not this receiver")
    # 3. freshness
    if not _fresh(claims, now, skew_s, max_lifetime_s):
        raise HandoffRejected("stale", "freshness", "offer is not live")
    # 4. replay
    if replay is not None:
        prior = replay.remember(claims["iss"], claims["hop"], current.digest, claims["exp"] + skew_s, now)
        if prior is not None:
            # seed 003: the same sender and hop with other octets is equivocation
            if prior != current.digest:
                raise HandoffRejected("equivocation", "replay", "hop seen with other octets")
            raise HandoffRejected("replay", "replay", "hop seen before")
    # 5. dialog
    if dialog is not None:
        expected = [dialog] if isinstance(dialog, str) else list(dialog)
        if claims["dialog"] not in expected:
            raise HandoffRejected("policy", "dialog", "dialog not expected")
    # 6. chain
    n = len(chain_raw)
    if too_deep:
        raise HandoffRejected("too-deep", "chain", "chain longer than allowed", n)
    links: list[tuple[dict[str, Any], str]] = []
    for i, raw in enumerate(chain_raw):
        try:
            e = _read(raw, max_element_octets)
            found = _keys_for(e, keys, OFFER_TYP)
            if not _verifies(e, found):
                raise _Failure("bad-signature", "signature does not verify")
        except _Failure as f:
            raise HandoffRejected(f.reason, "chain", f.detail, i) from None
        if not is_offer_claims(e.payload):
            raise HandoffRejected("malformed", "chain", "members not valid", i)
        links.append((e.payload, e.digest))
    senders: set[str] = set()
    for i in range(n + 1):
        c = links[i][0] if i < n else claims
        # seed 003: a sender twice, or the receiver earlier in the chain, is a cycle
        if c["iss"] in senders:
            raise HandoffRejected("cycle", "chain", "sender appears twice", i)
        senders.add(c["iss"])
        if i < n and audience in (c["iss"], c["aud"]):
            raise HandoffRejected("cycle", "chain", "receiver appears earlier in the chain", i)
    for i in range(1, n + 1):
        before, before_digest = links[i - 1]
        c = links[i][0] if i < n else claims
        if c.get("prev") != before_digest:
            raise HandoffRejected("broken-chain", "chain", "prev link", i)
        if before["aud"] != c["iss"]:
            raise HandoffRejected("broken-chain", "chain", "continuity", i)
        if c["iat"] < before["iat"] - skew_s or c["iat"] >= before["exp"] + skew_s:
            raise HandoffRejected("broken-chain", "chain", "timing", i)
    first = links[0][0] if n else claims
    partial = "prev" in first
    origins = None if trusted_origins is None else list(trusted_origins)
    if (require_full_chain or origins is not None) and partial:
        raise HandoffRejected("policy", "chain", "full chain required", 0)
    if origins is not None and first["iss"] not in origins:
        raise HandoffRejected("policy", "chain", "origin not trusted", 0)
    # 7. refs
    failure = _check_refs(claims.get("refs", []), refs)
    if failure is not None:
        raise HandoffRejected(failure, "refs", "reference check failed")
    return VerifiedHandoff(claims, current.digest, [c for c, _ in links], partial, first["iss"])
