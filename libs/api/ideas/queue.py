"""The ideas service's consumer queue: `ideas` projects customers' ARR and links onto ideas."""

QUEUE: dict[str, tuple[str, ...]] = {
    "ideas": ("customer.*", "link.*"),
}
