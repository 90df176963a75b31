-- Duplicates (docs/ideas.md, merge and unmerge): an idea merged into another carries
-- merged_into_id, and everything a merge moved is recorded, so that unmerge gives back exactly
-- what the merge took even after later votes, signals and links.

ALTER TABLE ideas.ideas ADD COLUMN merged_into_id uuid;
CREATE INDEX ideas_merged_into ON ideas.ideas (workspace_id, merged_into_id)
    WHERE merged_into_id IS NOT NULL;

-- One row a merge; undone_at is set by its unmerge (the row stays as history).
CREATE TABLE ideas.merges (
    workspace_id          uuid        NOT NULL,
    id                    uuid        NOT NULL PRIMARY KEY,
    duplicate_id          uuid        NOT NULL,
    primary_id            uuid        NOT NULL,
    -- what the duplicate had before: the unmerge restores it
    previous_status       text        NOT NULL,
    previous_decided_at   timestamptz,
    previous_closure      text,
    -- the counters added to the primary: the unmerge takes them back
    public_vote_count     integer     NOT NULL,
    request_count         integer     NOT NULL,
    merged_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    undone_at             timestamptz
);
-- At most one merge in force per duplicate.
CREATE UNIQUE INDEX merges_active ON ideas.merges (workspace_id, duplicate_id)
    WHERE undone_at IS NULL;

-- Every vote the duplicate had when it was merged (moved or not), with the merge that had
-- brought it there (a chain unmerged in reverse order stays exact).
CREATE TABLE ideas.merge_votes (
    merge_id      uuid        NOT NULL,
    voter         text        NOT NULL,
    value         smallint    NOT NULL,
    created_at    timestamptz NOT NULL,
    origin_merge  uuid,
    moved         boolean     NOT NULL,
    PRIMARY KEY (merge_id, voter)
);

-- A vote a merge put on the primary carries that merge until its voter votes again.
ALTER TABLE ideas.votes ADD COLUMN merge_id uuid;

-- The signals a merge moved.
CREATE TABLE ideas.merge_signals (
    merge_id  uuid NOT NULL,
    signal_id uuid NOT NULL,
    PRIMARY KEY (merge_id, signal_id)
);

-- Link removals the projection has seen (link.deleted): a link.created of the same pair that
-- is not newer arrives late and is ignored (services/ideas/projection.py).
CREATE TABLE ideas.customer_link_removals (
    workspace_id uuid        NOT NULL,
    idea_id      uuid        NOT NULL,
    customer_id  uuid        NOT NULL,
    linked_at    timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, idea_id, customer_id)
);

-- The Idea form gains mergedIntoId, last among its members (migration 0400's functions,
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
    "mergedIntoId" uuid);

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
        public.ims_json_ts(i.created_at), i.roadmap_stage_id, i.merged_into_id)::ideas.idea_form) $$;

CREATE FUNCTION ideas.idea_detail_json(i ideas.ideas, tags json) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT (left(ideas.idea_json(i)::text, -1) || ',' || substr(row_to_json(ROW(
        tags,
        CASE WHEN i.destination IS NOT NULL AND i.destination_issue_id IS NOT NULL THEN
            row_to_json(ROW(i.destination, i.destination_issue_id, i.destination_issue_url,
                            i.work_item_status)::ideas.work_item_form) END,
        i.author_id, i.author_name, i.raw_input)::ideas.idea_detail_form)::text, 2))::json $$;

