"""API keys as the API defines them (docs/running.md): their format, how one is made, and the
hash it is stored under. Only the hash of a key is ever stored; the admin CLI makes keys, the
gateway checks them."""

from __future__ import annotations

import hashlib
import re
import secrets
import string

PREFIXES = {"production": "ims_live_", "staging": "ims_test_"}
_ALPHABET = string.ascii_letters + string.digits
KEY_RANDOM_LEN = 40
# A prefix and 32 or more base62 characters; more than 128 are not issued.
KEY_FORMAT = re.compile(r"ims_(?:live|test)_[A-Za-z0-9]{32,128}")


def new_key(kind: str) -> str:
    return PREFIXES[kind] + "".join(secrets.choice(_ALPHABET) for _ in range(KEY_RANDOM_LEN))


def is_key(token: str) -> bool:
    """Whether `token` has a key's format (which also refuses every non-ASCII character)."""
    return KEY_FORMAT.fullmatch(token) is not None


def hash_key(key: str) -> bytes:
    # Keys carry 238 bits of randomness, so a fast hash is enough: nothing to brute-force.
    return hashlib.sha256(key.encode()).digest()
