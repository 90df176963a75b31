"""API keys: generation and hashing. Only the hash of a key is ever stored."""

from __future__ import annotations

import hashlib
import secrets
import string

PREFIXES = {"production": "ims_live_", "staging": "ims_test_"}
_ALPHABET = string.ascii_letters + string.digits
KEY_RANDOM_LEN = 40


def random_base62(n: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def new_key(kind: str) -> str:
    return PREFIXES[kind] + random_base62(KEY_RANDOM_LEN)


def hash_key(key: str) -> bytes:
    # Keys carry 238 bits of randomness, so a fast hash is enough: nothing to brute-force.
    return hashlib.sha256(key.encode()).digest()


def looks_like_key(token: str) -> bool:
    return any(token.startswith(p) for p in PREFIXES.values())
