"""Secrets as they are shown after the one answer that reveals them."""

from __future__ import annotations

from typing import Any


def mask_secret(secret: str) -> str:
    """`whsec_****abcd`: the secret's prefix (up to its first `_`) and its last four characters."""
    prefix = secret[: secret.index("_") + 1] if "_" in secret else ""
    return f"{prefix}****{secret[-4:]}"


def mask_fields(document: Any, paths: tuple[str, ...]) -> bool:
    """Mask, in place, the string at each dotted path of a decoded JSON document (a list on the
    way applies the rest of the path to each item); True when anything was masked."""
    return any(_mask(document, path.split(".")) for path in paths)


def _mask(node: Any, parts: list[str]) -> bool:
    if isinstance(node, list):
        return any([_mask(item, parts) for item in node])
    if not isinstance(node, dict) or parts[0] not in node:
        return False
    if len(parts) > 1:
        return _mask(node[parts[0]], parts[1:])
    if not isinstance(node[parts[0]], str):
        return False
    node[parts[0]] = mask_secret(node[parts[0]])
    return True
