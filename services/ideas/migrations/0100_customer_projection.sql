-- The ideas service's projection of customers: each customer's ARR (with the version it was
-- read at) and the set of idea-customer links, fed by customer.* and link.* events. An idea's
-- total_customer_arr and customer_count are recomputed from these tables, never by deltas, so a
-- repeated or late event cannot lose or double-count a dollar.
CREATE TABLE ideas.customer_arr (
    workspace_id uuid        NOT NULL,
    customer_id  uuid        NOT NULL,
    arr          numeric,
    version      timestamptz NOT NULL,   -- the customer's updatedAt; only newer states apply
    PRIMARY KEY (workspace_id, customer_id)
);

CREATE TABLE ideas.customer_links (
    workspace_id uuid        NOT NULL,
    idea_id      uuid        NOT NULL,
    customer_id  uuid        NOT NULL,
    linked_at    timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, idea_id, customer_id)
);
CREATE INDEX customer_links_customer ON ideas.customer_links (workspace_id, customer_id, idea_id);
