"""The signed handoff context vectors (conformance/handoff-context), run by this client: it signs
the planner-to-coder offers to the same octets and digests, verifies that handoff, and refuses
every negative vector with its reason code at its check."""

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from baton_client.context import (
    HandoffRejected,
    RefPolicy,
    ReplayStore,
    handoff_digest,
    sign_offer,
    verify_handoff,
)
from baton_client.identity import Identity, b64url, b64url_decode, jwk_thumbprint

from conftest import CONFORMANCE

DIR = CONFORMANCE / "handoff-context"
NEGATIVE = json.loads((DIR / "negative.json").read_text())
PLANNER = json.loads((DIR / "planner-coder.json").read_text())


def identity(private_jwk) -> Identity:
    key = Ed25519PrivateKey.from_private_bytes(b64url_decode(private_jwk["d"]))
    return Identity("unused", "vectors", key, "2026-01-01T00:00:00.000Z")


def refs_policy(spec):
    return None if spec is None else RefPolicy(spec["require"], spec.get("material", {}))


def test_rfc_8037_a4_signs_to_the_same_jws():
    v = json.loads((DIR / "rfc8037.json").read_text())
    h = b64url(json.dumps(v["protectedHeader"], separators=(",", ":")).encode())
    p = b64url(v["payload"].encode())
    assert f"{h}.{p}." + b64url(identity(v["privateJwk"]).sign(f"{h}.{p}".encode())) == v["jws"]
    assert jwk_thumbprint(v["publicJwk"]["x"]) == v["thumbprint"]


def test_planner_to_coder_offers_sign_to_the_same_octets_and_digests():
    for o in PLANNER["offers"]:
        agent = PLANNER["agents"][o["input"]["iss"]]
        i = o["input"]
        signed = sign_offer(
            identity(agent["privateJwk"]), i["aud"], i["dialog"], task=i.get("task"), obo=i.get("obo"),
            grant=i.get("grant"), prev=i.get("prev"), refs=i.get("refs"), ttl_s=i.get("ttlS", 120),
            now=i["iat"], hop=i["hop"], iss=i["iss"], kid=agent["kid"],
        )
        assert signed.element == o["jws"] and signed.digest == o["digest"] == handoff_digest(o["jws"])


def test_the_planner_to_coder_handoff_verifies_refs_included():
    trust = {iss: a["publicJwk"] for iss, a in PLANNER["agents"].items()}
    at = PLANNER["verifyAt"]
    verified = verify_handoff(
        PLANNER["handoff"], trust=trust, audience=at["audience"], now=at["now"], dialog=at["dialog"],
        replay=ReplayStore(), require_full_chain=True,
        refs=RefPolicy("all", PLANNER["material"]),
    )
    assert verified.digest == PLANNER["offers"][1]["digest"]
    assert verified.origin == "spiffe://a.example/agent/assistant" and verified.partial is False
    # The same handoff again is a replay.
    store = ReplayStore()
    verify_handoff(PLANNER["handoff"], trust=trust, audience=at["audience"], now=at["now"], replay=store)
    with pytest.raises(HandoffRejected) as again:
        verify_handoff(PLANNER["handoff"], trust=trust, audience=at["audience"], now=at["now"], replay=store)
    assert again.value.reason == "replay"


@pytest.mark.parametrize("case", NEGATIVE["cases"], ids=lambda c: c["name"])
def test_every_negative_vector_is_refused_with_its_reason(case):
    d = NEGATIVE["defaults"]
    options = dict(case.get("options", {}))
    kwargs = dict(
        trust=options.pop("trust", d["trust"]),
        audience=case.get("audience", d["audience"]),
        now=case.get("now", d["now"]),
        replay=ReplayStore(),
        refs=refs_policy(options.pop("refs", None)),
    )
    renamed = {"maxLifetimeMs": "max_lifetime_s", "requireFullChain": "require_full_chain",
               "trustedOrigins": "trusted_origins", "dialog": "dialog"}
    for name, value in options.items():
        kwargs[renamed[name]] = value / 1000 if name == "maxLifetimeMs" else value
    for before in case.get("before", []):
        verify_handoff(before, **kwargs)
    with pytest.raises(HandoffRejected) as refused:
        verify_handoff(case["handoff"], **kwargs)
    assert (refused.value.reason, refused.value.check) == (case["reason"], case["check"]), refused.value
    if "index" in case:
        assert refused.value.index == case["index"]
