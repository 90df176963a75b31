"""The customers service's consumer queue: it links a merged duplicate's customers to its
primary, and unlinks them on unmerge (the ideas service's internal `merge.*` events)."""

QUEUE: dict[str, tuple[str, ...]] = {"customers": ("merge.*",)}
