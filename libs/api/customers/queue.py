"""The customers service's consumer queue: it links a merged duplicate's customers to its
primary, and unlinks them on unmerge (the ideas service's internal `merge.*` events), and links
the customer a new signal's e-mail matched (`signal.matched`)."""

QUEUE: dict[str, tuple[str, ...]] = {"customers": ("merge.*", "signal.matched")}
