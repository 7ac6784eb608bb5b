"""HTTP Message Signatures (RFC 9421) with Ed25519 and Content-Digest (RFC 9530), as a Baton
hub verifies them: byte for byte the signature base and fields the TypeScript client makes.

Two profiles share one signature: Baton's (keyid the did:key principal) and Web Bot Auth's
(keyid the RFC 7638 JWK thumbprint, ``tag="web-bot-auth"``, ``expires`` and ``@authority``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from . import sf
from .errors import BatonError
from .identity import Identity, public_key_of_principal

LABEL = "sig1"
ALGORITHM = "ed25519"
WEB_BOT_AUTH_TAG = "web-bot-auth"
REQUIRED_COMPONENTS = ("@method", "@target-uri")
BODY_COMPONENTS = ("content-digest", "content-type")
PRESENT_COMPONENTS = ("idempotency-key",)
SIGNATURE_AGENT = "signature-agent"
Profile = Literal["baton", "web-bot-auth"]

_TARGET = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)([^?#]*)(\?[^#]*)?$")
_NONCE = re.compile(r"[\x21-\x7e]{1,128}")
_THUMBPRINT = re.compile(r"[A-Za-z0-9_-]{43}")


def content_digest(body: bytes) -> str:
    """The Content-Digest field value of a body (RFC 9530 §2): ``sha-256=:<base64>:``."""
    return "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode("ascii") + ":"


def new_nonce() -> str:
    """A fresh nonce: 16 random bytes, base64url."""
    return secrets.token_urlsafe(16)


def _error(code: str, message: str, **context: object) -> BatonError:
    return BatonError(code, message, status=401, context=dict(context))


def _malformed(message: str, reason: str, **context: object) -> BatonError:
    return _error("signature_malformed", message, reason=reason, **context)


Headers = Mapping[str, "str | list[str]"]


def _lower(headers: Headers) -> dict[str, str | list[str]]:
    return {k.lower(): v for k, v in headers.items()}


def _target_parts(target_uri: str) -> tuple[str, str, str, str]:
    m = _TARGET.match(target_uri)
    if not m:
        raise BatonError("signature_malformed", "The target URI is not absolute", status=401)
    return m.group(1).lower(), m.group(2), m.group(3) or "/", m.group(4) or ""


def _derived(method: str, target_uri: str, name: str) -> str:
    scheme, authority, path, query = _target_parts(target_uri)
    if name == "@method":
        return method
    if name == "@target-uri":
        return target_uri
    if name == "@scheme":
        return scheme
    if name == "@authority":
        # RFC 9421 §2.2.3: lower-cased host, default port omitted.
        host = authority.lower()
        if scheme == "https" and host.endswith(":443"):
            return host[:-4]
        if scheme == "http" and host.endswith(":80"):
            return host[:-3]
        return host
    if name == "@path":
        return path
    if name == "@query":
        return query or "?"
    if name == "@request-target":
        return path + query
    raise _malformed(f"Unsupported derived component {name}", "component_unsupported")


def _field(headers: dict[str, str | list[str]], name: str, key: str | None) -> str:
    raw = headers.get(name)
    if raw is None:
        raise _error(
            "signature_invalid",
            f"The covered field {name} is absent",
            reason="covered_field_absent",
            component=name,
        )
    # RFC 9421 §2.1: each field line's value trimmed, lines joined with ", ".
    value = ", ".join(v.strip() for v in raw) if isinstance(raw, list) else raw.strip()
    if key is None:
        return value
    # RFC 9421 §2.1.2: one member of a dictionary field, serialized again.
    try:
        member = dict(sf.parse_dictionary(value)).get(key)
    except sf.StructuredFieldError:
        member = None
    if member is None:
        raise _error(
            "signature_invalid",
            f"The covered field {name} has no member {key}",
            reason="covered_field_absent",
            component=name,
        )
    if isinstance(member, sf.InnerList):
        return sf.serialize_inner_list(member)
    return sf.serialize_item(member)


def _component_key(item: sf.Item) -> str | None:
    """The ``key`` parameter of a covered field, the only component parameter Baton reads."""
    if not item.params:
        return None
    if (
        len(item.params) == 1
        and item.params[0][0] == "key"
        and isinstance(item.params[0][1], str)
        and isinstance(item.value, str)
        and not item.value.startswith("@")
    ):
        return item.params[0][1]
    raise _malformed("Covered components must be plain strings", "component_unsupported")


def signature_base(method: str, target_uri: str, headers: Headers, inner: sf.InnerList) -> str:
    """The signature base of a request (RFC 9421 §2.5)."""
    lower = _lower(headers)
    lines = []
    seen: set[str] = set()
    for item in inner.items:
        if not isinstance(item.value, str):
            raise _malformed("Covered components must be plain strings", "component_unsupported")
        key = _component_key(item)
        name = item.value
        ident = sf.serialize_item(item)
        # RFC 9421 §2.5: a component may appear at most once, and names are lower case.
        if ident in seen or name != name.lower():
            raise _malformed(f"Component {name} is repeated or not lower case", "component_invalid")
        seen.add(ident)
        value = _derived(method, target_uri, name) if name.startswith("@") else _field(lower, name, key)
        if "\r" in value or "\n" in value:
            raise BatonError(
                "signature_malformed", f"Component {name} holds a line break", status=401
            )
        lines.append(f"{ident}: {value}")
    lines.append(f'"@signature-params": {sf.serialize_inner_list(inner)}')
    return "\n".join(lines)


def default_components(has_body: bool, headers: Headers, profile: Profile = "baton") -> list[str]:
    """Baton's covered components for a request; Web Bot Auth adds ``@authority`` and, when the
    request carries it, ``signature-agent``."""
    lower = _lower(headers)
    out = list(REQUIRED_COMPONENTS)
    if profile == "web-bot-auth":
        out.append("@authority")
        if SIGNATURE_AGENT in lower:
            out.append(SIGNATURE_AGENT)
    if has_body:
        out += BODY_COMPONENTS
    return out + [c for c in PRESENT_COMPONENTS if c in lower]


@dataclass
class SignedFields:
    signature_input: str
    signature: str
    base: str


def create_signature(
    method: str,
    target_uri: str,
    headers: Headers,
    identity: Identity,
    *,
    created: int,
    nonce: str | None,
    components: Iterable[str],
    keyid: str | None = None,
    expires: int | None = None,
    tag: str | None = None,
    label: str = LABEL,
) -> SignedFields:
    """Signs a request (RFC 9421 §3.1) and answers the Signature-Input and Signature values."""
    params: sf.Params = [("created", created)]
    if expires is not None:
        params.append(("expires", expires))
    if nonce is not None:
        params.append(("nonce", nonce))
    params.append(("keyid", keyid or identity.principal))
    params.append(("alg", ALGORITHM))
    if tag is not None:
        params.append(("tag", tag))
    inner = sf.InnerList([sf.Item(c) for c in components], params)
    base = signature_base(method, target_uri, headers, inner)
    signature = identity.sign(base.encode("utf-8"))
    return SignedFields(
        sf.serialize_dictionary([(label, inner)]),
        sf.serialize_dictionary([(label, sf.Item(signature))]),
        base,
    )


@dataclass
class SignedRequest:
    """A request ready to send: its headers (lower-case names) include the signature fields."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    base: str


def sign_request(
    identity: Identity,
    method: str,
    url: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    content_type: str = "application/json",
    created: int | None = None,
    nonce: str | None = None,
    profile: Profile = "baton",
    expires_in: int = 60,
) -> SignedRequest:
    """Builds and signs a request as a Baton hub verifies it: Content-Type and Content-Digest
    with a body, then Signature-Input and Signature over the profile's components.

    ``profile="web-bot-auth"`` signs under the Web Bot Auth profile (keyid the JWK thumbprint,
    ``tag``, ``expires`` ``expires_in`` seconds after ``created``, ``@authority`` covered), which
    a hub accepts once the key is enrolled.
    """
    out = {k.lower(): v for k, v in (headers or {}).items()}
    has_body = body is not None and len(body) > 0
    if has_body:
        assert body is not None
        out.setdefault("content-type", content_type)
        out["content-digest"] = content_digest(body)
    created = int(time.time()) if created is None else created
    nonce = new_nonce() if nonce is None else nonce
    web = profile == "web-bot-auth"
    signed = create_signature(
        method,
        url,
        out,
        identity,
        created=created,
        nonce=nonce,
        components=default_components(has_body, out, profile),
        keyid=identity.thumbprint if web else None,
        expires=created + expires_in if web else None,
        tag=WEB_BOT_AUTH_TAG if web else None,
    )
    out["signature-input"] = signed.signature_input
    out["signature"] = signed.signature
    return SignedRequest(method, url, out, body if has_body else None, signed.base)


# ---- verification: the hub's checks, in the hub's order ----


@dataclass
class VerifyPolicy:
    """What a request must satisfy: the hub's rules, at the verifier's clock."""

    now: float
    """The verifier's time, seconds since the epoch."""
    skew_seconds: int = 60
    require_nonce: bool = True
    components: tuple[str, ...] = REQUIRED_COMPONENTS
    body_components: tuple[str, ...] = BODY_COMPONENTS
    present_components: tuple[str, ...] = PRESENT_COMPONENTS
    enrolled: Mapping[str, str] = field(default_factory=dict)
    """Enrolled keys for Web Bot Auth keyids: JWK thumbprint -> did:key principal."""
    seen_nonces: set[tuple[str, str]] = field(default_factory=set)
    """(principal, nonce) pairs already used; a verifier that keeps them refuses a replay."""


@dataclass
class Verified:
    principal: str
    keyid: str
    nonce: str | None
    created: int
    profile: Profile
    base: str


def _parse_fields(signature_input: str, signature: str) -> tuple[str, sf.InnerList, bytes, dict]:
    try:
        inputs = sf.parse_dictionary(signature_input)
    except sf.StructuredFieldError as e:
        raise _malformed(f"Signature-Input is not a valid structured field: {e}", "syntax") from None
    try:
        signatures = sf.parse_dictionary(signature)
    except sf.StructuredFieldError as e:
        raise _malformed(f"Signature is not a valid structured field: {e}", "syntax") from None
    chosen = next((m for m in inputs if m[0] == LABEL), inputs[0] if len(inputs) == 1 else None)
    if chosen is None:
        raise _malformed("Send exactly one signature, labelled sig1", "label")
    label, inner = chosen
    if not isinstance(inner, sf.InnerList):
        raise _malformed("Signature-Input must hold an inner list", "syntax")
    member = dict(signatures).get(label)
    if not isinstance(member, sf.Item) or not isinstance(member.value, bytes):
        raise _malformed(f"Signature has no byte sequence labelled {label}", "label")
    if len(member.value) != 64:
        raise _malformed("An Ed25519 signature is 64 bytes", "signature_length")
    params = dict(inner.params)
    if not isinstance(params.get("created"), int) or isinstance(params.get("created"), bool):
        raise _malformed("The created parameter must be an integer", "created")
    if not isinstance(params.get("keyid"), str):
        raise _malformed("The keyid parameter must be a string", "keyid")
    nonce = params.get("nonce")
    if nonce is not None and (not isinstance(nonce, str) or not _NONCE.fullmatch(nonce)):
        raise _malformed("The nonce parameter must be 1 to 128 printable characters", "nonce")
    alg = params.get("alg")
    if alg is not None and alg != ALGORITHM:
        raise _malformed('Only alg="ed25519" is accepted', "alg")
    expires = params.get("expires")
    if expires is not None and (not isinstance(expires, int) or isinstance(expires, bool)):
        raise _malformed("The expires parameter must be an integer", "expires")
    tag = params.get("tag")
    if tag is not None and tag != WEB_BOT_AUTH_TAG:
        raise _malformed('The tag parameter, when sent, must be "web-bot-auth"', "tag")
    return label, inner, member.value, params


def verify_request(
    method: str,
    target_uri: str,
    headers: Headers,
    body: bytes,
    policy: VerifyPolicy,
) -> Verified:
    """Verifies a request's RFC 9421 signature and its body's RFC 9530 digest as a Baton hub
    does, in the hub's order; raises BatonError with the hub's code for each refusal."""
    lower = _lower(headers)

    def header(name: str) -> str | None:
        v = lower.get(name)
        return ", ".join(v) if isinstance(v, list) else v

    si, sig = header("signature-input"), header("signature")
    if si is None or sig is None:
        raise _error("signature_missing", "The request is not signed (no Signature-Input or Signature)")
    label, inner, signature, params = _parse_fields(si, sig)
    profile: Profile = "web-bot-auth" if params.get("tag") == WEB_BOT_AUTH_TAG else "baton"
    nonce, keyid, created = params.get("nonce"), params["keyid"], params["created"]
    expires = params.get("expires")
    if policy.require_nonce and nonce is None:
        raise _malformed("The nonce parameter is required", "nonce")
    if profile == "web-bot-auth":
        # Web Bot Auth: created and expires, and a keyid that is a JWK thumbprint.
        if expires is None:
            raise _malformed("A web-bot-auth signature carries expires", "expires")
        if not _THUMBPRINT.fullmatch(keyid):
            raise _malformed("A web-bot-auth keyid is a JWK thumbprint (RFC 7638)", "keyid")

    covered = {item.value for item in inner.items if not item.params}
    has_body = len(body) > 0 or "content-digest" in lower
    required = list(policy.components)
    if profile == "web-bot-auth":
        required.append("@authority")
    if has_body:
        required += policy.body_components
    required += [c for c in policy.present_components if c in lower]
    missing = [c for c in required if c not in covered]
    if profile == "web-bot-auth" and SIGNATURE_AGENT in lower:
        # The agent's Signature-Agent, whole or its member for this label, must be signed.
        keyed = any(
            item.value == SIGNATURE_AGENT and item.params == [("key", label)] for item in inner.items
        )
        if SIGNATURE_AGENT not in covered and not keyed:
            missing.append(SIGNATURE_AGENT)
    if missing:
        raise _malformed(
            f"The signature must cover {', '.join(missing)}", "components", missing=missing
        )

    now_ms = policy.now * 1000
    if abs(now_ms - created * 1000) > policy.skew_seconds * 1000 or (
        expires is not None and expires * 1000 < now_ms
    ):
        raise _error(
            "signature_stale",
            "The signature was not created within the skew window",
            created=created,
            now=int(policy.now),
            skew_seconds=policy.skew_seconds,
        )

    if profile == "web-bot-auth":
        principal = policy.enrolled.get(keyid)
        if principal is None:
            raise _error("key_not_enrolled", "The keyid names no key enrolled here", keyid=keyid)
    else:
        principal = keyid
    raw = public_key_of_principal(principal)
    if raw is None:
        raise _error(
            "unknown_key", "The keyid is not a did:key of an Ed25519 public key", keyid=keyid
        )
    base = signature_base(method, target_uri, headers, inner)
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, base.encode("utf-8"))
    except InvalidSignature:
        raise _error("signature_invalid", "The signature does not verify over this request") from None
    # The hub records a nonce once the headers verify, and refuses it again within the window.
    if (principal, nonce or "") in policy.seen_nonces:
        raise _error("signature_replayed", "This nonce was already used with this key", keyid=principal)
    _check_digest(header("content-digest"), body)
    return Verified(principal, keyid, nonce, created, profile, base)


_DIGEST_MEMBER = re.compile(r"^\s*([a-z0-9_-]+)=:([A-Za-z0-9+/]*={0,2}):\s*$")
_DIGEST_LENGTHS = {"sha-256": ("sha256", 32), "sha-512": ("sha512", 64)}


def parse_content_digest(value: str) -> tuple[str, bytes] | None:
    """The digest a Content-Digest value asks to check: its sha-256 member, else its sha-512
    one (hashlib's name and the bytes); None when it holds neither or does not parse."""
    found: dict[str, bytes] = {}
    for member in value.split(","):
        m = _DIGEST_MEMBER.match(member)
        text = m.group(2).rstrip("=") if m else ""
        if not m or len(text) % 4 == 1:
            return None
        # Padding optional, stray pad bits ignored, as the hub decodes it.
        found[m.group(1)] = base64.b64decode(text + "=" * (-len(text) % 4))
    for name, (algorithm, length) in _DIGEST_LENGTHS.items():
        if name in found:
            return (algorithm, found[name]) if len(found[name]) == length else None
    return None


def _check_digest(value: str | None, body: bytes) -> None:
    """RFC 9530: the body must be the one its Content-Digest names; no digest, no body."""
    if value is None and len(body) == 0:
        return
    parsed = parse_content_digest(value) if value is not None else None
    if parsed is None or not hmac.compare_digest(hashlib.new(parsed[0], body).digest(), parsed[1]):
        raise _error("digest_mismatch", "The body does not match its sha-256 Content-Digest")
