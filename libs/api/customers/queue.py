"""The customers service's consumer queue: it links a merged duplicate's customers to its
primary, and unlinks them on unmerge (the ideas service's internal `merge.*` events), and links
the customer a new signal's e-mail matched (`signal.matched`); it keeps the links that end
users' votes hold (the ideas service's `vote.changed`, and its own `users.settle` after a user
moved to another customer or was erased)."""

QUEUE: dict[str, tuple[str, ...]] = {
    "customers": ("merge.*", "signal.matched", "vote.changed", "users.settle")
}
