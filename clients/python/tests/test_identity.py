import json
import os

import pytest

from baton_client import (
    BatonError,
    create_identity,
    identity_from_file,
    jwk_thumbprint,
    load_identity,
    principal_of,
    public_key_of_principal,
    save_identity,
)


def test_the_identity_file_is_the_clis(tmp_path, ts):
    identity = create_identity("http://hub.example/.well-known/agent-net", "planner")
    path = tmp_path / "agent.identity.json"
    save_identity(path, identity)
    assert os.stat(path).st_mode & 0o777 == 0o600
    data = json.loads(path.read_text())
    assert set(data) == {"principal", "hub", "publicKeyJwk", "privateKeyJwk", "createdAt", "name"}
    assert data["principal"].startswith("did:key:z6Mk")
    # The TypeScript client reads the same file and finds the same principal.
    assert ts.load_identity(str(path)) == identity.principal
    assert load_identity(path).principal == identity.principal


def test_an_identity_file_is_never_overwritten_nor_read_when_others_can(tmp_path):
    path = tmp_path / "a.json"
    save_identity(path, create_identity("h"))
    with pytest.raises(BatonError) as exists:
        save_identity(path, create_identity("h"))
    assert exists.value.code == "identity_file_exists"
    os.chmod(path, 0o644)
    with pytest.raises(BatonError) as insecure:
        load_identity(path)
    assert insecure.value.code == "identity_file_insecure"


def test_a_file_whose_principal_is_not_its_key_is_refused():
    a, b = create_identity("h"), create_identity("h")
    forged = {**a.to_file(), "principal": b.principal}
    with pytest.raises(BatonError) as refused:
        identity_from_file(forged)
    assert refused.value.code == "identity_file_invalid"


def test_did_key_and_thumbprint_of_the_rfc_8037_key():
    # RFC 8037 Appendix A.1 and A.3: the key and its thumbprint.
    x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    assert jwk_thumbprint(x) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    raw = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
    principal = principal_of(raw)
    assert principal.startswith("did:key:z6Mk")
    assert public_key_of_principal(principal) == raw
    assert public_key_of_principal("did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme") is None
