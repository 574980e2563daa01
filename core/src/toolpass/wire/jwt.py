"""RS256 JSON Web Tokens (GitHub App authentication, Entra ID client assertions), signed with
the ``crypto`` extra."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from toolpass.wire.errors import ConfigError


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def rs256(
    claims: Mapping[str, Any], private_key_pem: str, headers: Mapping[str, Any] | None = None
) -> str:
    """A compact JWT of ``claims`` signed with an RSA private key (PEM, unencrypted);
    ``headers`` adds to the JOSE header (Entra ID's ``x5t``: the certificate's thumbprint)."""
    try:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding, rsa
    except ImportError:
        raise ConfigError(
            "signing a JWT needs the crypto extra: pip install 'toolpass-core[crypto]'"
        ) from None
    try:
        key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ConfigError("the private key is not an unencrypted PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError("the private key is not an RSA key")
    jose = {"alg": "RS256", "typ": "JWT", **(headers or {})}
    header = _b64(json.dumps(jose, separators=(",", ":")).encode())
    payload = _b64(json.dumps(dict(claims), separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{_b64(signature)}"
