"""The ideas service's consumer queues: `ideas` projects customers' ARR and links onto ideas;
`similar` keeps each idea's embedding current (docs/similar.md)."""

QUEUE: dict[str, tuple[str, ...]] = {
    "ideas": ("customer.*", "link.*"),
    "similar": ("idea.created", "idea.updated", "idea.status_changed", "idea.deleted"),
}
