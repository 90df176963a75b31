-- The JSON forms of the ideas that leave this schema (docs/api.md, docs/api.md): the
-- list, the reads, the answers to writes, the events (and so the webhook payloads) and the
-- analytics exports all call these functions, so an Idea, an IdeaDetail and a Signal each have
-- one form wherever they appear.
--
-- Each form is a row of a composite type turned into JSON by row_to_json: compact, with the
-- keys in the type's attribute order, which is the order of the OpenAPI document's schema
-- (tests/contract/test_rendering.py holds them to it). Date-times go through
-- public.ims_json_ts, money through trim_scale (libs/common/render.py). Each function is one
-- SQL expression, so PostgreSQL inlines it into the calling query: a list page or an export
-- builds its JSON as fast as with the expression written out in place.

CREATE TYPE ideas.rice_form AS (
    reach float8, impact float8, confidence float8, effort float8, score float8,
    priority text, source text);

CREATE TYPE ideas.validation_form AS (score float8, "evidenceCount" integer);

CREATE TYPE ideas.idea_form AS (
    id uuid, "ideaServiceId" text, title text, summary text, status text, source text,
    category text, "ideaType" text, url text, destination text, "destinationIssueId" text,
    "destinationIssueUrl" text, "voteCount" integer, "publicVoteCount" integer,
    "requestCount" integer, "signalCount" integer, rice json, validation json,
    "decisionReason" text, "decidedAt" text, "closureCategory" text, "decisionOwnerName" text,
    "decisionDeadline" text, "totalCustomerARR" numeric, "lastActivityAt" text,
    "lastSignalAt" text, "uniqueSourceCount" integer, "averageSentiment" float8,
    "workItemStatus" text, "shippedAt" text, "productId" uuid, actionable boolean,
    "createdAt" text, "roadmapStageId" uuid);

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
        public.ims_json_ts(i.created_at), i.roadmap_stage_id)::ideas.idea_form) $$;

CREATE TYPE ideas.tag_form AS (id uuid, name text, color text);

CREATE TYPE ideas.work_item_form AS (system text, "issueId" text, "issueUrl" text, status text);

CREATE TYPE ideas.idea_detail_form AS (
    tags json, "externalWorkItem" json, "sourceUserId" text, "sourceUserName" text,
    "rawInput" text);

-- IdeaDetail: the Idea's members, then the detail's. `tags` is the idea's tags as a JSON array
-- of tag_form rows (the caller's subquery: services/ideas/render.py); a subquery inside the
-- function would keep PostgreSQL from inlining it.
CREATE FUNCTION ideas.idea_detail_json(i ideas.ideas, tags json) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT (left(ideas.idea_json(i)::text, -1) || ',' || substr(row_to_json(ROW(
        tags,
        CASE WHEN i.destination IS NOT NULL AND i.destination_issue_id IS NOT NULL THEN
            row_to_json(ROW(i.destination, i.destination_issue_id, i.destination_issue_url,
                            i.work_item_status)::ideas.work_item_form) END,
        i.author_id, i.author_name, i.raw_input)::ideas.idea_detail_form)::text, 2))::json $$;

CREATE TYPE ideas.signal_form AS (
    id uuid, platform text, "userId" text, "userName" text, "userEmail" text, content text,
    similarity float8, sentiment text, "sentimentScore" float8, "autoLinkedCustomerId" uuid,
    "detectedAt" text, "createdAt" text);

-- Signal.
CREATE FUNCTION ideas.signal_json(s ideas.signals) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT row_to_json(ROW(
        s.id, s.platform, s.user_id, s.user_name, s.user_email, s.content, s.similarity,
        s.sentiment, s.sentiment_score, s.auto_linked_customer_id,
        public.ims_json_ts(s.detected_at), public.ims_json_ts(s.created_at))::ideas.signal_form) $$;
