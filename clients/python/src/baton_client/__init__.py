"""A Python client for Baton hubs: identities, RFC 9421 signed requests, and typed calls.

>>> from baton_client import BatonClient, create_identity, save_identity
"""

from .client import (
    BatonClient,
    Compute,
    Grants,
    HandoffClient,
    Home,
    Hops,
    Messages,
    Resources,
    discovery_url_of,
    fetch_discovery,
)
from .errors import BatonError
from .identity import (
    Identity,
    create_identity,
    identity_from_file,
    jwk_thumbprint,
    load_identity,
    principal_of,
    public_key_of_principal,
    save_identity,
)
from .signing import (
    SignedRequest,
    VerifyPolicy,
    Verified,
    content_digest,
    create_signature,
    sign_request,
    signature_base,
    verify_request,
)
from .transport import Response

__all__ = [
    "BatonClient",
    "BatonError",
    "Compute",
    "Grants",
    "HandoffClient",
    "Home",
    "Hops",
    "Identity",
    "Messages",
    "Resources",
    "Response",
    "SignedRequest",
    "Verified",
    "VerifyPolicy",
    "content_digest",
    "create_identity",
    "create_signature",
    "discovery_url_of",
    "fetch_discovery",
    "identity_from_file",
    "jwk_thumbprint",
    "load_identity",
    "principal_of",
    "public_key_of_principal",
    "save_identity",
    "sign_request",
    "signature_base",
    "verify_request",
]
