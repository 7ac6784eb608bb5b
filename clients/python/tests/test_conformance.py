"""The signed-request conformance vectors (conformance/signed-requests.json), run by this client:
each signing vector signs to the same fields, byte for byte, and each verification vector is
accepted or refused by ``verify_request`` (the hub's rules) with its code and reason."""

import json
import re

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from baton_client import BatonError, Identity, VerifyPolicy, sign_request, verify_request
from baton_client.identity import b64url_decode

from conftest import CONFORMANCE

VECTORS = json.loads((CONFORMANCE / "signed-requests.json").read_text())


def identity(name: str) -> Identity:
    key = VECTORS["keys"][name]
    private = Ed25519PrivateKey.from_private_bytes(b64url_decode(key["privateKeyJwk"]["d"]))
    return Identity(key["principal"], "vectors", private, "2026-01-01T00:00:00.000Z")


def test_refusals_outnumber_acceptances():
    refused = [v for v in VECTORS["verification"] if "code" in v["verdict"]]
    assert len(refused) > len(VECTORS["verification"]) - len(refused)


@pytest.mark.parametrize("v", VECTORS["signing"], ids=lambda v: v["name"])
def test_signs_as_the_vector(v):
    req = v["request"]
    body = None if req["body"] is None else req["body"].encode()
    signed = sign_request(
        identity(v["key"]),
        req["method"],
        req["url"],
        body,
        req["headers"],
        created=v["created"],
        nonce=v["nonce"],
        profile=v["profile"],
        expires_in=v.get("expires", v["created"] + 60) - v["created"],
    )
    headers = dict(signed.headers)
    assert headers.pop("signature-input") == v["expected"]["signatureInput"]
    assert headers.pop("signature") == v["expected"]["signature"]
    assert headers == v["expected"]["headers"]
    assert signed.base == v["expected"]["signatureBase"]


@pytest.mark.parametrize("v", VECTORS["verification"], ids=lambda v: v["name"])
def test_verifies_as_the_hub(v):
    verifier = VECTORS["verifier"]
    keys = VECTORS["keys"]
    policy = VerifyPolicy(
        now=v.get("verifier", {}).get("now", verifier["now"]),
        skew_seconds=verifier["skewSeconds"],
        enrolled={keys[n]["thumbprint"]: keys[n]["principal"] for n in verifier["enrolled"]},
        seen_nonces={(keys[s["key"]]["principal"], s["nonce"]) for s in v.get("verifier", {}).get("seenNonces", [])},
    )
    req = v["request"]
    target = verifier["origin"] + re.sub(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*", "", req["url"])
    body = b"" if req["body"] is None else req["body"].encode()
    if "accept" in v["verdict"]:
        assert verify_request(req["method"], target, req["headers"], body, policy).principal == v["verdict"]["principal"]
        return
    with pytest.raises(BatonError) as refused:
        verify_request(req["method"], target, req["headers"], body, policy)
    assert refused.value.code == v["verdict"]["code"], refused.value
    if "reason" in v["verdict"]:
        assert refused.value.context.get("reason") == v["verdict"]["reason"], refused.value
