"""Independent checks of the signed handoff context (seed 003), written without @baton/context.

Driven by test/cross-language.test.ts: one JSON request on standard input, one JSON answer on
standard output. Modes (the first argument):

  probe   the interpreter, its packages, and that the network is closed
  verify  verifies handoffs (offer and chain) and statuses signed by the TypeScript library
  sign    makes Ed25519 keys and did:key identifiers here, and signs a chain, statuses and COSE forms

JWS signatures are checked with jwcrypto; COSE_Sign1 and every signature made here use the
cryptography package directly. Digests, chain rules and status binding are computed here from the
seed's text, so an agreement with the library is evidence, not an echo.
"""

import base64
import hashlib
import json
import os
import re
import socket
import sys


class NetworkClosed(OSError):
    pass


def _no_network(*_args, **_kwargs):
    raise NetworkClosed("network access is closed for this script")


# The script never needs the network; close it before anything else is imported or run.
socket.socket.connect = _no_network
socket.socket.connect_ex = _no_network
socket.socket.sendto = _no_network
socket.create_connection = _no_network
socket.getaddrinfo = _no_network

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )
    from jwcrypto import jwk, jws
except ImportError as missing:
    print(
        f"python package {missing.name} is missing: apt-get install python3-jwcrypto",
        file=sys.stderr,
    )
    sys.exit(3)

OFFER_TYP = "handoff-offer+jwt"
STATUS_TYP = "handoff-status+jwt"
HOP = re.compile(r"^[A-Za-z0-9_-]{22,64}$")
DIGEST = re.compile(r"^[A-Za-z0-9_-]{43}$")
B64U = re.compile(r"^[A-Za-z0-9_-]*$")
SKEW_S = 60  # seed 003: a skew of no more than 60 seconds is recommended
MAX_LIFETIME_S = 300  # seed 003: a maximum lifetime of 300 seconds for interactive use
MAX_CHAIN = 16  # seed 003: a maximum chain length, 16 recommended (current offer included)
COSE_SIGN1_TAG = 18
COSE_EDDSA = -8


class Reject(Exception):
    def __init__(self, reason, check, index=None):
        super().__init__(reason)
        self.reason, self.check, self.index = reason, check, index


# ---- encodings ----


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text):
    if not isinstance(text, str) or not B64U.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64u(data) != text:
        raise ValueError("not canonical base64url")
    return data


B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58_encode(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n > 0:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def b58_decode(text):
    n = 0
    for ch in text:
        n = n * 58 + B58.index(ch)
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


def did_key(raw_public):
    """did:key of an Ed25519 key: multibase z, base58btc of multicodec 0xed 0x01 and the key."""
    return "did:key:z" + b58_encode(b"\xed\x01" + raw_public)


def did_key_public(did):
    if not did.startswith("did:key:z"):
        return None
    data = b58_decode(did[len("did:key:z") :])
    return data[2:] if len(data) == 34 and data[:2] == b"\xed\x01" else None


def digest(element):
    """The handoff digest: SHA-256 over the octets exactly as sent (a JWS's ASCII octets)."""
    data = element.encode("ascii") if isinstance(element, str) else element
    return b64u(hashlib.sha256(data).digest())


def thumbprint(public_jwk):
    """RFC 7638 thumbprint, computed by jwcrypto; the library's default kid."""
    return jwk.JWK(**public_jwk).thumbprint()


# ---- deterministic CBOR (RFC 8949 section 4.2.1), for COSE_Sign1 ----


class Tag:
    def __init__(self, tag, value):
        self.tag, self.value = tag, value


def cbor_head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * size):
            return bytes([major << 5 | extra]) + n.to_bytes(size, "big")
    raise ValueError("integer too large")


def cbor_encode(v):
    if v is None:
        return b"\xf6"
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if isinstance(v, int):
        return cbor_head(0, v) if v >= 0 else cbor_head(1, -1 - v)
    if isinstance(v, (bytes, bytearray)):
        return cbor_head(2, len(v)) + bytes(v)
    if isinstance(v, str):
        b = v.encode("utf-8")
        return cbor_head(3, len(b)) + b
    if isinstance(v, list):
        return cbor_head(4, len(v)) + b"".join(cbor_encode(x) for x in v)
    if isinstance(v, dict):
        items = sorted((cbor_encode(k), cbor_encode(x)) for k, x in v.items())
        return cbor_head(5, len(items)) + b"".join(k + x for k, x in items)
    if isinstance(v, Tag):
        return cbor_head(6, v.tag) + cbor_encode(v.value)
    raise ValueError(f"cannot encode {type(v).__name__}")


def cbor_decode(data):
    value, end = _cbor_item(data, 0)
    if end != len(data):
        raise ValueError("trailing octets")
    return value


def _cbor_item(d, i):
    major, info = d[i] >> 5, d[i] & 31
    i += 1
    if info < 24:
        n = info
    elif info <= 27:
        size = 1 << (info - 24)
        n, i = int.from_bytes(d[i : i + size], "big"), i + size
    else:
        raise ValueError("indefinite or reserved length")
    if major == 0:
        return n, i
    if major == 1:
        return -1 - n, i
    if major in (2, 3):
        raw = d[i : i + n]
        if len(raw) != n:
            raise ValueError("short string")
        return (bytes(raw) if major == 2 else raw.decode("utf-8")), i + n
    if major == 4:
        out = []
        for _ in range(n):
            item, i = _cbor_item(d, i)
            out.append(item)
        return out, i
    if major == 5:
        out = {}
        for _ in range(n):
            k, i = _cbor_item(d, i)
            if k in out:
                raise ValueError("duplicate key")
            out[k], i = _cbor_item(d, i)
        return out, i
    if major == 6:
        inner, i = _cbor_item(d, i)
        return Tag(n, inner), i
    if major == 7 and info in (20, 21, 22):
        return {20: False, 21: True, 22: None}[info], i
    raise ValueError("unsupported CBOR item")


def sig_structure(protected, payload):
    """RFC 9052 section 4.4: what a COSE_Sign1 signature covers."""
    return cbor_encode(["Signature1", protected, b"", payload])


# ---- opening signed elements ----


def ed25519_public(public_jwk):
    if public_jwk.get("kty") != "OKP" or public_jwk.get("crv") != "Ed25519":
        raise ValueError("not an Ed25519 JWK")
    return Ed25519PublicKey.from_public_bytes(b64u_decode(public_jwk["x"]))


def open_element(element, trust, typ):
    """Strict parse, a trusted key for (iss, kid), the signature: answers the members."""
    if isinstance(element, dict) and "cose" in element:
        return open_cose(bytes.fromhex(element["cose"]), trust)
    if not isinstance(element, str):
        raise Reject("bad-signature", "signature")
    parts = element.split(".")
    if len(parts) != 3:
        raise Reject("bad-signature", "signature")
    try:
        header = json.loads(b64u_decode(parts[0]))
        payload = json.loads(b64u_decode(parts[1]))
        b64u_decode(parts[2])
    except ValueError:
        raise Reject("bad-signature", "signature") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise Reject("bad-signature", "signature")
    if header.get("alg") != "EdDSA" or header.get("typ") != typ or "crit" in header:
        raise Reject("bad-signature", "signature")
    keys = [k for k in trust.get(payload.get("iss"), []) if thumbprint(k) == header.get("kid")]
    if not keys:
        raise Reject("untrusted-key", "signature")
    token = jws.JWS()
    try:
        token.deserialize(element)
    except jws.InvalidJWSObject:
        raise Reject("bad-signature", "signature") from None
    for k in keys:
        try:
            token.verify(jwk.JWK(**k), alg="EdDSA")
            return payload
        except jws.InvalidJWSSignature:
            continue
    raise Reject("bad-signature", "signature")


def open_cose(data, trust):
    try:
        top = cbor_decode(data)
        if not isinstance(top, Tag) or top.tag != COSE_SIGN1_TAG or len(top.value) != 4:
            raise ValueError("not a tagged COSE_Sign1")
        protected, unprotected, payload_bytes, signature = top.value
        header = cbor_decode(protected)
        payload = cbor_decode(payload_bytes)
        if not isinstance(header, dict) or not isinstance(payload, dict):
            raise ValueError("not maps")
        if cbor_encode(top) != data or cbor_encode(payload) != payload_bytes:
            raise ValueError("not deterministic")
        if header.get(1) != COSE_EDDSA or 2 in header or not isinstance(unprotected, dict):
            raise ValueError("header")
        kid = header.get(4).decode("utf-8")
    except (ValueError, AttributeError, TypeError, IndexError, UnicodeDecodeError):
        raise Reject("bad-signature", "signature") from None
    keys = [k for k in trust.get(payload.get("iss"), []) if thumbprint(k) == kid]
    if not keys:
        raise Reject("untrusted-key", "signature")
    for k in keys:
        try:
            ed25519_public(k).verify(signature, sig_structure(protected, payload_bytes))
            return payload
        except InvalidSignature:
            continue
    raise Reject("bad-signature", "signature")


def is_text(v):
    return isinstance(v, str) and len(v) > 0


def is_date(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_offer_members(c):
    ok = (
        c.get("v") == 1
        and c.get("typ") == "offer"
        and isinstance(c.get("hop"), str)
        and HOP.fullmatch(c["hop"])
        and all(is_text(c.get(k)) for k in ("dialog", "iss", "aud"))
        and is_date(c.get("iat"))
        and is_date(c.get("exp"))
        and all(c.get(k) is None or DIGEST.fullmatch(c[k]) for k in ("prev", "grant"))
    )
    if not ok:
        raise Reject("malformed", "signature")


def element_bytes(element):
    return bytes.fromhex(element["cose"]) if isinstance(element, dict) else element


# ---- the seven checks (seed 003), in order; the first failure ends processing ----


def verify_handoff(item, trust, replay):
    handoff = item["handoff"]
    me, now = item["audience"], item["now"]
    max_life = item.get("maxLifetimeS", MAX_LIFETIME_S)
    offer = handoff["offer"]
    this_digest = digest(element_bytes(offer))
    # 1. signature and trusted key
    c = open_element(offer, trust, OFFER_TYP)
    check_offer_members(c)
    # 2. audience: aud equals the receiver's own identifier
    if c["aud"] != me:
        raise Reject("wrong-audience", "audience")
    # 3. freshness: live within the skew, and exp - iat within the maximum lifetime
    if (
        c["exp"] <= c["iat"]
        or c["exp"] - c["iat"] > max_life
        or c["iat"] > now + SKEW_S
        or now >= c["exp"] + SKEW_S
    ):
        raise Reject("stale", "freshness")
    # 4. replay: (iss, hop) remembered with its digest; other octets are equivocation
    seen = replay.get((c["iss"], c["hop"]))
    if seen is not None:
        raise Reject("replay" if seen == this_digest else "equivocation", "replay")
    replay[(c["iss"], c["hop"])] = this_digest
    # 5. dialog
    if "dialog" in item and c["dialog"] != item["dialog"]:
        raise Reject("policy", "dialog")
    # 6. chain
    elements = handoff.get("chain", [])
    if len(elements) + 1 > MAX_CHAIN:
        raise Reject("too-deep", "chain", len(elements))
    links = []
    for i, el in enumerate(elements):
        try:
            claims = open_element(el, trust, OFFER_TYP)
            check_offer_members(claims)
        except Reject as r:
            raise Reject(r.reason, "chain", i) from None
        links.append((claims, digest(element_bytes(el))))
    offers = [claims for claims, _ in links] + [c]
    senders = set()
    for i, o in enumerate(offers):
        if o["iss"] in senders:
            raise Reject("cycle", "chain", i)
        senders.add(o["iss"])
        if i < len(links) and me in (o["iss"], o["aud"]):
            raise Reject("cycle", "chain", i)
    for i in range(1, len(offers)):
        before, before_digest = links[i - 1]
        o = offers[i]
        if o.get("prev") != before_digest:
            raise Reject("broken-chain", "chain", i)
        if before["aud"] != o["iss"]:
            raise Reject("broken-chain", "chain", i)
        if not (before["iat"] - SKEW_S <= o["iat"] < before["exp"] + SKEW_S):
            raise Reject("broken-chain", "chain", i)
    # 7. refs: digest refs checked against the material given; others not checked
    refs = []
    for ref in c.get("refs", []):
        content = item.get("material", {}).get(ref["digest"])
        if ref["kind"] != "digest" or content is None:
            refs.append("not-checked")
            continue
        ok = b64u(hashlib.sha256(content.encode("utf-8")).digest()) == ref["digest"]
        refs.append("verified" if ok else "mismatch")
    if "mismatch" in refs:
        raise Reject("ref-mismatch", "refs")
    return {
        "ok": True,
        "digest": this_digest,
        "iss": c["iss"],
        "aud": c["aud"],
        "hop": c["hop"],
        "chain": [d for _, d in links],
        "partial": offers[0].get("prev") is not None,
        "origin": offers[0]["iss"],
        "refs": refs,
    }


def verify_status(item, trust):
    s = open_element(item["status"], trust, STATUS_TYP)
    state = s.get("state")
    if (
        s.get("v") != 1
        or s.get("typ") != "status"
        or state not in ("accepted", "rejected", "completed", "failed", "canceled")
        or not DIGEST.fullmatch(str(s.get("offer")))
        or not is_date(s.get("iat"))
    ):
        raise Reject("malformed", "signature")
    if s["aud"] != item["audience"]:
        raise Reject("wrong-audience", "audience")
    if s["iat"] > item["now"] + SKEW_S:
        raise Reject("stale", "freshness")
    answer = {"ok": True, "digest": digest(element_bytes(item["status"])), "state": state}
    if "offer" in item:
        offer_el = item["offer"]
        raw = element_bytes(offer_el)
        o = (
            cbor_decode(cbor_decode(raw).value[2])
            if isinstance(offer_el, dict)
            else json.loads(b64u_decode(offer_el.split(".")[1]))
        )
        # seed 003: the sender is the delegate, except for canceled, sent by the delegator
        sender, receiver = (o["iss"], o["aud"]) if state == "canceled" else (o["aud"], o["iss"])
        if s["offer"] != digest(raw) or s["hop"] != o["hop"] or (s["iss"], s["aud"]) != (
            sender,
            receiver,
        ):
            raise Reject("policy", "binding")
    for k in ("reason", "offer", "hop", "iss", "aud"):
        if k in s:
            answer[k] = s[k]
    return answer


def verify_mode(request):
    trust = {}
    for iss, keys in request["trust"].items():
        keys = keys if isinstance(keys, list) else [keys]
        raw = did_key_public(iss)
        # a did:key names its key: the configured JWK must be the one the identifier encodes
        if raw is not None and any(b64u_decode(k["x"]) != raw for k in keys):
            raise SystemExit(f"trust entry for {iss} is not the key its did:key names")
        trust[iss] = keys
    replay = {}
    answers = []
    for item in request["items"]:
        try:
            if item["kind"] == "handoff":
                answers.append(verify_handoff(item, trust, replay))
            else:
                answers.append(verify_status(item, trust))
        except Reject as r:
            answers.append(
                {"ok": False, "reason": r.reason, "check": r.check}
                | ({} if r.index is None else {"index": r.index})
            )
    return {"answers": answers}


# ---- signing here, for the library to verify ----


class Agent:
    def __init__(self):
        self.key = Ed25519PrivateKey.generate()
        raw = self.key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.id = did_key(raw)
        self.jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64u(raw)}
        self.kid = thumbprint(self.jwk)

    def jws(self, typ, claims):
        header = {"alg": "EdDSA", "kid": self.kid, "typ": typ}
        signing_input = (
            b64u(json.dumps(header, separators=(",", ":")).encode("utf-8"))
            + "."
            + b64u(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
        )
        return signing_input + "." + b64u(self.key.sign(signing_input.encode("ascii")))

    def cose(self, claims):
        protected = cbor_encode({1: COSE_EDDSA, 4: self.kid.encode("utf-8")})
        payload = cbor_encode(claims)
        signature = self.key.sign(sig_structure(protected, payload))
        return cbor_encode(Tag(COSE_SIGN1_TAG, [protected, {}, payload, signature])).hex()


def new_hop():
    return b64u(os.urandom(16))  # seed 003: at least 128 bits from a secure random source


def offer_claims(iss, aud, dialog, iat, ttl, **extra):
    c = {"v": 1, "typ": "offer", "hop": new_hop(), "dialog": dialog, "iss": iss.id, "aud": aud.id}
    return c | {"iat": iat, "exp": iat + ttl} | extra


def status_claims(offer_element, offer, state, iat, **extra):
    canceled = state == "canceled"
    sender, receiver = (offer["iss"], offer["aud"]) if canceled else (offer["aud"], offer["iss"])
    return {
        "v": 1,
        "typ": "status",
        "hop": offer["hop"],
        "offer": digest(element_bytes(offer_element)),
        "iss": sender,
        "aud": receiver,
        "iat": iat,
        "state": state,
    } | extra


def sign_mode(request):
    now, dialog = request["now"], request["dialog"]
    assistant, planner, coder = Agent(), Agent(), Agent()
    brief = "Write a patch that makes the flaky retry test deterministic."
    first = offer_claims(assistant, planner, dialog, now - 10, 300, task="task-41")
    first_jws = assistant.jws(OFFER_TYP, first)
    refs = [{"kind": "digest", "digest": b64u(hashlib.sha256(brief.encode("utf-8")).digest())}]
    second = offer_claims(
        planner, coder, dialog, now - 5, 120, task="task-42", prev=digest(first_jws), refs=refs
    )
    second_jws = planner.jws(OFFER_TYP, second)
    second_cose = {"cose": planner.cose(second)}
    # same sender and hop, other octets: equivocation at a receiver that saw the first
    twin_jws = planner.jws(OFFER_TYP, second | {"task": "task-43"})
    return {
        "agents": {
            name: {"id": a.id, "publicJwk": a.jwk, "kid": a.kid}
            for name, a in (("assistant", assistant), ("planner", planner), ("coder", coder))
        },
        "brief": brief,
        "handoff": {"offer": second_jws, "chain": [first_jws]},
        "coseHandoff": {"offer": second_cose, "chain": [first_jws]},
        "twin": twin_jws,
        "digests": {"first": digest(first_jws), "second": digest(second_jws)},
        "statuses": {
            "accepted": coder.jws(STATUS_TYP, status_claims(second_jws, second, "accepted", now)),
            "completed": coder.jws(
                STATUS_TYP, status_claims(second_jws, second, "completed", now + 1)
            ),
            "canceled": planner.jws(
                STATUS_TYP, status_claims(second_jws, second, "canceled", now + 2)
            ),
            "rejectedCose": {
                "cose": coder.cose(
                    status_claims(second_cose, second, "rejected", now, reason="policy")
                )
            },
        },
    }


def probe_mode(_request):
    try:
        with socket.socket() as s:
            s.connect(("127.0.0.1", 9))
        network = "open"
    except NetworkClosed:
        network = "closed"
    except OSError:
        network = "open"
    import cryptography
    import jwcrypto

    return {
        "python": sys.version.split()[0],
        "cryptography": cryptography.__version__,
        "jwcrypto": getattr(jwcrypto, "__version__", "present"),
        "network": network,
    }


def main():
    modes = {"probe": probe_mode, "verify": verify_mode, "sign": sign_mode}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        raise SystemExit("usage: verify.py probe|verify|sign < request.json")
    request = json.load(sys.stdin)
    json.dump(modes[sys.argv[1]](request), sys.stdout)


if __name__ == "__main__":
    main()
