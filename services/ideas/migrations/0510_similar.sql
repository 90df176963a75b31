-- Similar ideas by meaning (docs/similar.md): one sentence embedding an idea, as int8 (384
-- bytes), with a hash of the text it was computed from (an edit that leaves title and summary
-- alone computes nothing). `live` is false for deleted ideas and merged duplicates, which the
-- searches leave out. Every write takes the next `seq`: each ideas process keeps its in-memory
-- index current by reading the rows past the last seq it applied (woken by NOTIFY
-- ideas_similar), and loads a workspace's live rows when it first searches it, so a restart
-- recomputes nothing.
CREATE SEQUENCE ideas.embedding_seq;

CREATE TABLE ideas.embeddings (
    workspace_id uuid        NOT NULL,
    idea_id      uuid        NOT NULL,
    vector       bytea       NOT NULL,
    text_hash    bytea       NOT NULL,
    live         boolean     NOT NULL,
    seq          bigint      NOT NULL DEFAULT nextval('ideas.embedding_seq'),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, idea_id)
);
CREATE INDEX embeddings_seq ON ideas.embeddings (seq);
