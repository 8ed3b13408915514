"""Campaign keys: what lets the scorer tell its own campaign's messages from forged ones.

DDS without SROS2 authenticates nobody: any process on the domain can publish a result, a
DONE or an operator answer. Each campaign therefore gets a random secret key, written into
the results store when the campaign is planned and never sent over the network. The
progression manager (which has the store open) signs the results and statuses it publishes
with an HMAC-SHA256 over the message's serialised bytes; the scorer (which has the same store
open) commits only what verifies. A process that cannot read the store cannot forge a
result; one that can read it could as well write the store directly, so the store file's
permissions are the boundary (docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

KEY_BYTES = 32


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def sign(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def verify(key: bytes, data: bytes, signature: str) -> bool:
    if not isinstance(signature, str) or len(signature) != 64:
        return False
    return hmac.compare_digest(sign(key, data), signature)
