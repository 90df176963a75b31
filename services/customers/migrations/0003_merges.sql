-- Merges of duplicate ideas (docs/ideas.md): the links a merge added to the primary, so that its
-- unmerge removes exactly those. A merge seen reverted before it was seen applied (events may
-- come in any order) stays `reverted`, and its late `merge.applied` changes nothing.
CREATE TABLE customers.merges (
    workspace_id uuid        NOT NULL,
    merge_id     uuid        NOT NULL PRIMARY KEY,
    primary_id   uuid        NOT NULL,
    state        text        NOT NULL CHECK (state IN ('applied', 'reverted')),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE customers.merge_links (
    merge_id    uuid        NOT NULL,
    customer_id uuid        NOT NULL,
    linked_at   timestamptz NOT NULL,
    PRIMARY KEY (merge_id, customer_id)
);

-- The consumer's handled-event ids are swept by age, like the other consumers'.
CREATE INDEX processed_events_at ON customers.processed_events (processed_at);
