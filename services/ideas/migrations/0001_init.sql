-- The ideas service's tables. Every index starts with workspace_id (every query filters by it).
-- Analytics reads these tables read-only; the customers projection writes total_customer_arr and
-- customer_count (services/ideas/projection.py).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- Per-workspace state, created lazily on first use (INSERT ... ON CONFLICT DO NOTHING).
CREATE TABLE ideas.workspace_state (
    workspace_id      uuid PRIMARY KEY,
    next_idea_number  bigint      NOT NULL DEFAULT 1,
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- Kept counters: ideas per status (the list's `total` without filters, workspace info).
CREATE TABLE ideas.status_counts (
    workspace_id uuid    NOT NULL,
    status       text    NOT NULL,
    n            bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, status)
);

-- Ideas created through the automation API per UTC month (the plan's quota).
CREATE TABLE ideas.automation_usage (
    workspace_id uuid    NOT NULL,
    month        date    NOT NULL,
    n            integer NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, month)
);

CREATE TABLE ideas.roadmap_stages (
    workspace_id uuid        NOT NULL,
    id           uuid        NOT NULL PRIMARY KEY,
    name         text        NOT NULL,
    slug         text        NOT NULL,
    color        text,
    position     integer     NOT NULL,
    is_default   boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, slug)
);

CREATE TABLE ideas.products (
    workspace_id uuid        NOT NULL,
    id           uuid        NOT NULL PRIMARY KEY,
    name         text        NOT NULL,
    parent_id    uuid        REFERENCES ideas.products (id),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX products_ws ON ideas.products (workspace_id, name);

CREATE TABLE ideas.tags (
    workspace_id uuid        NOT NULL,
    id           uuid        NOT NULL PRIMARY KEY,
    name         text        NOT NULL,
    color        text,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tags_ws ON ideas.tags (workspace_id, name);

CREATE TABLE ideas.members (
    workspace_id     uuid        NOT NULL,
    id               uuid        NOT NULL PRIMARY KEY,
    name             text        NOT NULL,
    email            text        NOT NULL,
    role             text        NOT NULL CHECK (role IN ('owner','admin','member','viewer')),
    dashboard_access boolean     NOT NULL DEFAULT true,
    last_active_at   timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX members_ws ON ideas.members (workspace_id, name);

CREATE TABLE ideas.ideas (
    workspace_id              uuid             NOT NULL,
    id                        uuid             NOT NULL PRIMARY KEY,
    number                    bigint           NOT NULL,          -- ideaServiceId = IDEA-<number>
    title                     text             NOT NULL,
    summary                   text,
    status                    text             NOT NULL,
    source                    text             NOT NULL DEFAULT 'api',
    category                  text,
    idea_type                 text,
    url                       text,
    url_key                   text,                               -- normalized url (duplicates)
    title_key                 text             NOT NULL,          -- folded title (duplicates)
    destination               text,
    destination_issue_id      text,
    destination_issue_url     text,
    work_item_status          text,
    vote_count                integer          NOT NULL DEFAULT 0,
    public_vote_count         integer          NOT NULL DEFAULT 0,
    request_count             integer          NOT NULL DEFAULT 0,
    signal_count              integer          NOT NULL DEFAULT 0,
    rice_reach                double precision,
    rice_impact               double precision,
    rice_confidence           double precision,
    rice_effort               double precision,
    rice_score                double precision,
    rice_priority             text,
    rice_source               text,
    validation_score          double precision,
    validation_evidence_count integer,
    decision_reason           text,
    decided_at                timestamptz,
    closure_category          text,
    decision_owner_name       text,
    decision_owner_email      text,
    decision_deadline         timestamptz,
    total_customer_arr        numeric,                            -- customers projection
    customer_count            integer          NOT NULL DEFAULT 0, -- customers projection
    last_activity_at          timestamptz      NOT NULL DEFAULT now(),
    last_signal_at            timestamptz,
    unique_source_count       integer          NOT NULL DEFAULT 0,
    average_sentiment         double precision,
    shipped_at                timestamptz,
    product_id                uuid,
    roadmap_stage_id          uuid,
    actionable                boolean          NOT NULL DEFAULT true,
    author_name               text,                               -- sourceUserName
    author_id                 text,                               -- sourceUserId
    raw_input                 text,
    created_at                timestamptz      NOT NULL DEFAULT now(),
    updated_at                timestamptz      NOT NULL DEFAULT now(),
    -- One lowercase text for `search` (trigram index: substring match of every word).
    search_text               text GENERATED ALWAYS AS (
        lower(title || E'\n' || coalesce(summary, ''))) STORED,
    UNIQUE (workspace_id, number)
);

-- Sort indexes: (workspace_id, key, id). A NOT NULL key serves both orders with one index; a
-- nullable key has one index per order so that NULLS LAST holds in both.
CREATE INDEX ideas_created ON ideas.ideas (workspace_id, created_at, id);
CREATE INDEX ideas_votes ON ideas.ideas (workspace_id, vote_count, id);
CREATE INDEX ideas_signals ON ideas.ideas (workspace_id, signal_count, id);
CREATE INDEX ideas_activity ON ideas.ideas (workspace_id, last_activity_at, id);
CREATE INDEX ideas_rice_asc ON ideas.ideas (workspace_id, rice_score ASC NULLS LAST, id ASC);
CREATE INDEX ideas_rice_desc ON ideas.ideas (workspace_id, rice_score DESC NULLS LAST, id DESC);
CREATE INDEX ideas_validation_asc ON ideas.ideas (workspace_id, validation_score ASC NULLS LAST, id ASC);
CREATE INDEX ideas_validation_desc ON ideas.ideas (workspace_id, validation_score DESC NULLS LAST, id DESC);
CREATE INDEX ideas_arr_asc ON ideas.ideas (workspace_id, total_customer_arr ASC NULLS LAST, id ASC);
CREATE INDEX ideas_arr_desc ON ideas.ideas (workspace_id, total_customer_arr DESC NULLS LAST, id DESC);
CREATE INDEX ideas_shipped_asc ON ideas.ideas (workspace_id, shipped_at ASC NULLS LAST, id ASC);
CREATE INDEX ideas_shipped_desc ON ideas.ideas (workspace_id, shipped_at DESC NULLS LAST, id DESC);
CREATE INDEX ideas_decided_asc ON ideas.ideas (workspace_id, decided_at ASC NULLS LAST, id ASC);
CREATE INDEX ideas_decided_desc ON ideas.ideas (workspace_id, decided_at DESC NULLS LAST, id DESC);
-- Filter indexes (newest first within the filter).
CREATE INDEX ideas_status ON ideas.ideas (workspace_id, status, created_at, id);
CREATE INDEX ideas_stage ON ideas.ideas (workspace_id, roadmap_stage_id, created_at, id);
CREATE INDEX ideas_product ON ideas.ideas (workspace_id, product_id, created_at, id);
CREATE INDEX ideas_owner ON ideas.ideas (workspace_id, decision_owner_email)
    WHERE decision_owner_email IS NOT NULL;
-- has_customers / min_arr (the projection keeps customer_count and total_customer_arr).
CREATE INDEX ideas_has_customers ON ideas.ideas (workspace_id, created_at, id)
    WHERE customer_count > 0;
-- Duplicate detection of the automation API.
CREATE INDEX ideas_url_key ON ideas.ideas (workspace_id, url_key) WHERE url_key IS NOT NULL;
CREATE INDEX ideas_title_key ON ideas.ideas (workspace_id, title_key, created_at);
CREATE INDEX ideas_search ON ideas.ideas USING gin (workspace_id, search_text gin_trgm_ops);

CREATE TABLE ideas.idea_tags (
    workspace_id uuid NOT NULL,
    idea_id      uuid NOT NULL,   -- no foreign keys: bulk loads skip per-row checks
    tag_id       uuid NOT NULL,
    PRIMARY KEY (workspace_id, idea_id, tag_id)
);
CREATE INDEX idea_tags_tag ON ideas.idea_tags (workspace_id, tag_id, idea_id);

CREATE TABLE ideas.votes (
    workspace_id uuid        NOT NULL,
    idea_id      uuid        NOT NULL,
    voter        text        NOT NULL,
    value        smallint    NOT NULL CHECK (value IN (-1, 1)),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, idea_id, voter)
);
CREATE INDEX votes_recent ON ideas.votes (workspace_id, idea_id, created_at DESC);

CREATE TABLE ideas.decisions (
    workspace_id      uuid        NOT NULL,
    id                uuid        NOT NULL PRIMARY KEY,
    idea_id           uuid        NOT NULL,
    event_type        text        NOT NULL,
    closure_category  text,
    reason            text,
    confidence_score  double precision,
    previous_status   text,
    new_status        text,
    actor_email       text,
    actor_name        text,
    source            text        NOT NULL DEFAULT 'api',
    related_idea_id   uuid,
    external_issue_id text,
    external_issue_url text,
    metadata          jsonb,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX decisions_idea ON ideas.decisions (workspace_id, idea_id, created_at, id);
CREATE INDEX decisions_created ON ideas.decisions (workspace_id, created_at);

CREATE TABLE ideas.signals (
    workspace_id             uuid             NOT NULL,
    id                       uuid             NOT NULL PRIMARY KEY,
    idea_id                  uuid             NOT NULL,
    platform                 text             NOT NULL,
    user_id                  text,
    user_name                text,
    user_email               text,
    content                  text,
    similarity               double precision NOT NULL,
    sentiment                text,
    sentiment_score          double precision,
    auto_linked_customer_id  uuid,
    detected_at              timestamptz      NOT NULL DEFAULT clock_timestamp(),
    created_at               timestamptz      NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX signals_idea ON ideas.signals (workspace_id, idea_id, detected_at, id);
CREATE INDEX signals_detected ON ideas.signals (workspace_id, detected_at);

CREATE TABLE ideas.evidence (
    workspace_id uuid        NOT NULL,
    id           uuid        NOT NULL PRIMARY KEY,
    idea_id      uuid        NOT NULL,
    type         text        NOT NULL CHECK (type IN ('document','screenshot','external_issue','link','quote')),
    title        text,
    url          text,
    content      text,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX evidence_idea ON ideas.evidence (workspace_id, idea_id, created_at);

CREATE TABLE ideas.participants (
    workspace_id uuid        NOT NULL,
    id           uuid        NOT NULL PRIMARY KEY,
    idea_id      uuid        NOT NULL,
    name         text        NOT NULL,
    email        text,
    role         text        NOT NULL CHECK (role IN ('owner','approver','reviewer')),
    decision     text        NOT NULL CHECK (decision IN ('approved','rejected','pending')),
    decided_at   timestamptz
);
CREATE INDEX participants_idea ON ideas.participants (workspace_id, idea_id);

CREATE TABLE ideas.meetings (
    workspace_id   uuid        NOT NULL,
    id             uuid        NOT NULL PRIMARY KEY,
    idea_id        uuid        NOT NULL,
    title          text        NOT NULL,
    meeting_date   timestamptz NOT NULL,
    participants   text[]      NOT NULL DEFAULT '{}',
    excerpt        text,
    relation       text        NOT NULL CHECK (relation IN ('mentioned','extracted')),
    transcript_url text
);
CREATE INDEX meetings_idea ON ideas.meetings (workspace_id, idea_id, meeting_date);

CREATE TABLE ideas.support_tickets (
    workspace_id   uuid        NOT NULL,
    id             uuid        NOT NULL PRIMARY KEY,
    idea_id        uuid        NOT NULL,
    platform       text        NOT NULL,
    external_id    text        NOT NULL,
    subject        text,
    status         text,
    priority       text,
    customer_name  text,
    customer_email text,
    url            text,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX support_tickets_idea ON ideas.support_tickets (workspace_id, idea_id, created_at);

-- The status counters follow every insert, status change and removal of an idea. Statement
-- triggers with transition tables: one grouped upsert per statement (batches, COPY).
CREATE FUNCTION ideas.count_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE ideas.status_counts c SET n = c.n - o.k
          FROM (SELECT workspace_id, status, count(*) AS k FROM old_rows GROUP BY 1, 2) o
         WHERE c.workspace_id = o.workspace_id AND c.status = o.status;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO ideas.status_counts (workspace_id, status, n)
        SELECT workspace_id, status, count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (workspace_id, status) DO UPDATE SET n = ideas.status_counts.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER ideas_count_insert AFTER INSERT ON ideas.ideas
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ideas.count_status();
CREATE TRIGGER ideas_count_update AFTER UPDATE ON ideas.ideas
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ideas.count_status();
CREATE TRIGGER ideas_count_delete AFTER DELETE ON ideas.ideas
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ideas.count_status();
