"""The webhooks service's consumer queue: the dispatcher turns every public event into
deliveries."""

QUEUE: dict[str, tuple[str, ...]] = {"webhooks": ("idea.*", "customer.*", "comment.*")}
