"""The similar service's consumer queue: `similar` keeps its copy of each idea (title, summary,
status, merged or deleted) and the idea's embedding current (docs/similar.md). A merge and an
unmerge send `idea.updated` and `idea.status_changed`; a delete sends `idea.deleted` and
`idea.status_changed`. Each carries the Idea after the change."""

QUEUE: dict[str, tuple[str, ...]] = {
    "similar": ("idea.created", "idea.updated", "idea.status_changed", "idea.deleted"),
}
