-- Comments on ideas (docs/ideas.md, Comments): one row a comment or reply, and the idea's
-- comment_count (its comments that are not internal), kept in the transaction of each write.

ALTER TABLE ideas.ideas ADD COLUMN comment_count integer NOT NULL DEFAULT 0;

CREATE TABLE ideas.comments (
    workspace_id  uuid        NOT NULL,
    id            uuid        NOT NULL PRIMARY KEY,
    idea_id       uuid        NOT NULL,
    -- the top-level comment this one replies to; kept when that comment is deleted
    parent_id     uuid,
    body          text        NOT NULL,
    internal      boolean     NOT NULL DEFAULT false,
    -- 'user' (an end user of the customers service, by id) or 'key' (the API key that wrote it)
    author_type   text        NOT NULL CHECK (author_type IN ('user', 'key')),
    author_id     uuid        NOT NULL,
    -- the user's or the key's name when the comment was written
    author_name   text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at    timestamptz
);
-- The list's keyset, oldest first, with and without the `internal` filter: a page is an index
-- range scan from the cursor, whatever its depth.
CREATE INDEX comments_idea ON ideas.comments (workspace_id, idea_id, created_at, id);
CREATE INDEX comments_idea_internal
    ON ideas.comments (workspace_id, idea_id, internal, created_at, id);
-- A user's comments, for their export and erasure.
CREATE INDEX comments_user ON ideas.comments (workspace_id, author_id, created_at, id)
    WHERE author_type = 'user';

CREATE TYPE ideas.comment_author_form AS (type text, id uuid, name text);

CREATE TYPE ideas.comment_form AS (
    id uuid, "ideaId" uuid, body text, internal boolean, "parentId" uuid, author json,
    "createdAt" text, "updatedAt" text);

-- Comment.
CREATE FUNCTION ideas.comment_json(c ideas.comments) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT row_to_json(ROW(
        c.id, c.idea_id, c.body, c.internal, c.parent_id,
        row_to_json(ROW(c.author_type, c.author_id, c.author_name)::ideas.comment_author_form),
        public.ims_json_ts(c.created_at), public.ims_json_ts(c.updated_at))::ideas.comment_form) $$;

-- The Idea form's commentCount (right after mergedIntoId) is in the forms generated from the
-- public models (services/ideas/forms.py), which are applied after every file.
