-- Customers and their links to ideas. The ideas service learns both from events (link.created,
-- customer.*) and keeps its own projection; analytics reads these tables read-only.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE customers.customers (
    id             uuid PRIMARY KEY,
    workspace_id   uuid        NOT NULL,
    name           text        NOT NULL,
    email          text,
    domain         text,
    arr            numeric,
    mrr            numeric,
    plan           text,
    source         text        NOT NULL DEFAULT 'api',
    external_id    text,
    crm_company_id text,
    metadata       jsonb,
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- Strictly increasing per customer (each change sets it past the previous value), so a
    -- projection keeps a customer's state only when an event's updatedAt is newer.
    updated_at     timestamptz,
    -- One lowercase text over the three searchable fields; the newline separator keeps a
    -- substring from matching across two fields (searches are single-line).
    search_text    text GENERATED ALWAYS AS (
        lower(name || E'\n' || coalesce(email, '') || E'\n' || coalesce(domain, ''))) STORED
);
CREATE UNIQUE INDEX customers_external_id ON customers.customers (workspace_id, external_id)
    WHERE external_id IS NOT NULL;
CREATE INDEX customers_created ON customers.customers (workspace_id, created_at, id);
-- arr is nullable: one index per order keeps NULLS LAST an index order in both.
CREATE INDEX customers_arr_asc ON customers.customers (workspace_id, arr ASC NULLS LAST, id ASC);
CREATE INDEX customers_arr_desc ON customers.customers (workspace_id, arr DESC NULLS LAST, id DESC);
CREATE INDEX customers_name ON customers.customers (workspace_id, name, id);
CREATE INDEX customers_search ON customers.customers
    USING gin (workspace_id, search_text gin_trgm_ops);

CREATE TABLE customers.idea_links (
    workspace_id uuid        NOT NULL,
    idea_id      uuid        NOT NULL,
    customer_id  uuid        NOT NULL REFERENCES customers.customers (id),
    linked_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, idea_id, customer_id)
);
-- The unique index serves an idea's customers; this one a customer's ideas (newest link first)
-- and ideaCount.
CREATE INDEX idea_links_customer ON customers.idea_links (workspace_id, customer_id, linked_at, idea_id);
CREATE INDEX idea_links_idea ON customers.idea_links (workspace_id, idea_id, linked_at, customer_id);
