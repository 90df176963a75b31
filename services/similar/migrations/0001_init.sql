-- The similar service's own copy of what it needs of each idea (docs/similar.md), filled from
-- the ideas service's events (queue `similar`: idea.created, idea.updated, idea.status_changed,
-- idea.deleted; a merge and an unmerge send idea.updated and idea.status_changed), so that it
-- reads no other schema. `version` is the event's place in the ideas service's outbox (the
-- message header `x-event-seq`): a row takes an event's state only when the event is not older
-- than the state it holds, so a redelivered or reordered event changes nothing. 0: a row the
-- backfill (`ideasctl similar rebuild`) copied, which any event overrides.
CREATE TABLE "similar".ideas (
    workspace_id   uuid        NOT NULL,
    idea_id        uuid        NOT NULL,
    title          text        NOT NULL,
    summary        text,
    status         text        NOT NULL,
    merged_into_id uuid,
    version        bigint      NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, idea_id)
);

-- One sentence embedding an idea, as int8 (384 bytes), with a hash of the model and the text it
-- was computed from (an edit that leaves title and summary alone computes nothing). `live` is
-- false for deleted ideas and merged duplicates, which the searches leave out. Every write takes
-- the next `seq`: each search process keeps its in-memory indexes current by reading the rows
-- past the last seq it applied (woken by NOTIFY similar_index), and loads a workspace's live rows
-- when it first searches it, so a restart recomputes nothing.
CREATE SEQUENCE "similar".embedding_seq;

CREATE TABLE "similar".embeddings (
    workspace_id uuid        NOT NULL,
    idea_id      uuid        NOT NULL,
    vector       bytea       NOT NULL,
    text_hash    bytea       NOT NULL,
    live         boolean     NOT NULL,
    seq          bigint      NOT NULL DEFAULT nextval('similar.embedding_seq'),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, idea_id)
);
CREATE INDEX embeddings_seq ON "similar".embeddings (seq);
