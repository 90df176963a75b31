"""The ideas service's consumer queue: it projects customers' ARR and links onto ideas."""

QUEUE: dict[str, tuple[str, ...]] = {"ideas": ("customer.*", "link.*")}
