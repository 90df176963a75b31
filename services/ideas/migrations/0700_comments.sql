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

-- The Idea form gains commentCount, right after mergedIntoId (migration 0500's functions,
-- recreated: still the one place that defines the forms).
DROP FUNCTION ideas.idea_detail_json(ideas.ideas, json);
DROP FUNCTION ideas.idea_json(ideas.ideas);
DROP TYPE ideas.idea_form;

CREATE TYPE ideas.idea_form AS (
    id uuid, "ideaServiceId" text, title text, summary text, status text, source text,
    category text, "ideaType" text, url text, destination text, "destinationIssueId" text,
    "destinationIssueUrl" text, "voteCount" integer, "publicVoteCount" integer,
    "requestCount" integer, "signalCount" integer, rice json, validation json,
    "decisionReason" text, "decidedAt" text, "closureCategory" text, "decisionOwnerName" text,
    "decisionDeadline" text, "totalCustomerARR" numeric, "lastActivityAt" text,
    "lastSignalAt" text, "uniqueSourceCount" integer, "averageSentiment" float8,
    "workItemStatus" text, "shippedAt" text, "productId" uuid, actionable boolean,
    "createdAt" text, "roadmapStageId" uuid,
    "mergedIntoId" uuid, "commentCount" integer);

-- Idea.
CREATE FUNCTION ideas.idea_json(i ideas.ideas) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT row_to_json(ROW(
        i.id, 'IDEA-' || i.number, i.title, i.summary, i.status, i.source, i.category,
        i.idea_type, i.url, i.destination, i.destination_issue_id, i.destination_issue_url,
        i.vote_count, i.public_vote_count, i.request_count, i.signal_count,
        row_to_json(ROW(i.rice_reach, i.rice_impact, i.rice_confidence, i.rice_effort,
                        i.rice_score, i.rice_priority, i.rice_source)::ideas.rice_form),
        row_to_json(ROW(i.validation_score, i.validation_evidence_count)::ideas.validation_form),
        i.decision_reason, public.ims_json_ts(i.decided_at), i.closure_category,
        i.decision_owner_name, public.ims_json_ts(i.decision_deadline),
        trim_scale(i.total_customer_arr), public.ims_json_ts(i.last_activity_at),
        public.ims_json_ts(i.last_signal_at), i.unique_source_count, i.average_sentiment,
        i.work_item_status, public.ims_json_ts(i.shipped_at), i.product_id, i.actionable,
        public.ims_json_ts(i.created_at), i.roadmap_stage_id, i.merged_into_id,
        i.comment_count)::ideas.idea_form) $$;

CREATE FUNCTION ideas.idea_detail_json(i ideas.ideas, tags json) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT (left(ideas.idea_json(i)::text, -1) || ',' || substr(row_to_json(ROW(
        tags,
        CASE WHEN i.destination IS NOT NULL AND i.destination_issue_id IS NOT NULL THEN
            row_to_json(ROW(i.destination, i.destination_issue_id, i.destination_issue_url,
                            i.work_item_status)::ideas.work_item_form) END,
        i.author_id, i.author_name, i.raw_input)::ideas.idea_detail_form)::text, 2))::json $$;
