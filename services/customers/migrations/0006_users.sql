-- End users (docs/customers.md#end-users): the people who ask for ideas and vote,
-- each optionally of a customer. `externalId` and the e-mail (ignoring case) are each unique in
-- the workspace: the unique indexes are what makes concurrent identifies of one new user make
-- one row (INSERT ... ON CONFLICT DO NOTHING, then read the winner).
CREATE TABLE customers.users (
    id           uuid        PRIMARY KEY,
    workspace_id uuid        NOT NULL,
    name         text,
    email        text,
    external_id  text,
    customer_id  uuid        REFERENCES customers.customers (id),
    avatar_url   text,
    metadata     json,       -- the compact JSON text the client sent, as customers' metadata
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz,
    -- The lowercase name and e-mail, joined by a newline so a substring cannot match across both.
    search_text  text GENERATED ALWAYS AS (
        lower(coalesce(name, '') || E'\n' || coalesce(email, ''))) STORED
);
CREATE UNIQUE INDEX users_email ON customers.users (workspace_id, lower(email))
    WHERE email IS NOT NULL;
CREATE UNIQUE INDEX users_external_id ON customers.users (workspace_id, external_id)
    WHERE external_id IS NOT NULL;
CREATE INDEX users_created ON customers.users (workspace_id, created_at, id);
CREATE INDEX users_customer ON customers.users (workspace_id, customer_id, created_at, id)
    WHERE customer_id IS NOT NULL;
CREATE INDEX users_search ON customers.users USING gin (workspace_id, search_text gin_trgm_ops);
