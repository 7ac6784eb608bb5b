"""Agent identities: an Ed25519 key whose principal is its did:key, kept in the same identity
file the ``baton identity init`` command writes (principal, hub, public and private JWK,
creation time, optional name), readable by its owner only."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from .errors import BatonError

_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
# The multicodec prefix of an Ed25519 public key (ed25519-pub, 0xed as a varint).
_ED25519_PUB = b"\xed\x01"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def base58btc_encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = ""
    while n > 0:
        n, r = divmod(n, 58)
        out = _B58[r] + out
    # Each leading zero byte is a leading "1".
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def base58btc_decode(text: str) -> bytes | None:
    n = 0
    for ch in text:
        i = _B58.find(ch)
        if i < 0:
            return None
        n = n * 58 + i
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


def principal_of(public_key: bytes) -> str:
    """The did:key of an Ed25519 public key: ``did:key:z6Mk…``."""
    return "did:key:z" + base58btc_encode(_ED25519_PUB + public_key)


def public_key_of_principal(principal: str) -> bytes | None:
    """The 32-byte Ed25519 public key a did:key names, or None when it names none."""
    if not principal.startswith("did:key:z") or len(principal) > 200:
        return None
    raw = base58btc_decode(principal[len("did:key:z") :])
    if raw is None or len(raw) != 34 or raw[:2] != _ED25519_PUB:
        return None
    return raw[2:]


def jwk_thumbprint(x: str) -> str:
    """The RFC 7638 thumbprint of an Ed25519 public JWK (RFC 8037 §A.3), base64url SHA-256."""
    canonical = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"))
    return b64url(hashlib.sha256(canonical.encode("ascii")).digest())


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Identity:
    """An agent's identity in memory: its principal, key pair and the hub it was made for."""

    principal: str
    hub: str
    private_key: Ed25519PrivateKey
    created_at: str
    name: str | None = None

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    @property
    def public_key_bytes(self) -> bytes:
        return self.public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    @property
    def public_jwk(self) -> dict[str, str]:
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(self.public_key_bytes)}

    @property
    def thumbprint(self) -> str:
        """The RFC 7638 JWK thumbprint of the public key: the keyid of a Web Bot Auth signature."""
        return jwk_thumbprint(self.public_jwk["x"])

    def sign(self, data: bytes) -> bytes:
        return self.private_key.sign(data)

    def to_file(self) -> dict[str, Any]:
        """The identity file's JSON form."""
        d = b64url(
            self.private_key.private_bytes(
                serialization.Encoding.Raw,
                serialization.PrivateFormat.Raw,
                serialization.NoEncryption(),
            )
        )
        out: dict[str, Any] = {
            "principal": self.principal,
            "hub": self.hub,
            "publicKeyJwk": self.public_jwk,
            "privateKeyJwk": {**self.public_jwk, "d": d},
            "createdAt": self.created_at,
        }
        if self.name is not None:
            out["name"] = self.name
        return out


def create_identity(hub: str, name: str | None = None) -> Identity:
    """A new Ed25519 identity for a hub (named by its discovery URL)."""
    key = Ed25519PrivateKey.generate()
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return Identity(principal_of(raw), hub, key, _now_iso(), name)


def _invalid(message: str) -> BatonError:
    return BatonError("identity_file_invalid", message)


def identity_from_file(value: Any) -> Identity:
    """Rebuilds an identity from its file form, checking that the principal matches the key."""
    if not isinstance(value, dict):
        raise _invalid("The identity file does not have the expected shape")
    pub, priv = value.get("publicKeyJwk"), value.get("privateKeyJwk")
    principal, hub, created = value.get("principal"), value.get("hub"), value.get("createdAt")
    if not (
        isinstance(pub, dict)
        and isinstance(priv, dict)
        and isinstance(principal, str)
        and principal.startswith("did:key:z")
        and isinstance(hub, str)
        and isinstance(created, str)
        and pub.get("kty") == "OKP"
        and pub.get("crv") == "Ed25519"
        and priv.get("kty") == "OKP"
        and priv.get("crv") == "Ed25519"
        and isinstance(priv.get("d"), str)
        and isinstance(pub.get("x"), str)
    ):
        raise _invalid("The identity file does not have the expected shape")
    name = value.get("name")
    if name is not None and not isinstance(name, str):
        raise _invalid("The identity file does not have the expected shape")
    try:
        d = b64url_decode(priv["d"])
        key = Ed25519PrivateKey.from_private_bytes(d)
    except Exception as error:
        raise _invalid("The identity file holds no usable Ed25519 key") from error
    x = b64url(key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
    if x != pub["x"] or x != priv.get("x"):
        raise _invalid("The public key does not belong to the private key")
    if principal_of(b64url_decode(x)) != principal:
        raise _invalid("The principal does not match the key")
    return Identity(principal, hub, key, created, name)


def save_identity(path: str | os.PathLike[str], identity: Identity) -> None:
    """Writes an identity file with mode 0600; never overwrites one (``identity_file_exists``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise BatonError(
            "identity_file_exists", f"{os.fspath(path)} already exists; it is never overwritten"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(identity.to_file(), indent=2) + "\n")
        # The umask may have narrowed the mode but never widened it; make it exactly 0600.
        os.fchmod(f.fileno(), 0o600)
        f.flush()
        os.fsync(f.fileno())


def load_identity(path: str | os.PathLike[str]) -> Identity:
    """Reads an identity file, refusing one group or others may read (``identity_file_insecure``)."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if os.name != "nt" and mode & 0o077:
        raise BatonError(
            "identity_file_insecure",
            f"{os.fspath(path)} has mode {mode:o}; an identity file must be 600",
            context={"mode": f"{mode:o}"},
        )
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except ValueError:
        raise _invalid(f"{os.fspath(path)} is not valid JSON") from None
    return identity_from_file(value)
