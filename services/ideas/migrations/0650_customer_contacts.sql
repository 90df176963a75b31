-- The ideas service's projection of customers' contact keys, for the customer match of a new
-- signal (docs/ideas.md, Signals): each customer's e-mail and domain, lower-cased, with the
-- version they were read at. Fed by customer.created / customer.updated; a later state wins.
CREATE TABLE ideas.customer_contacts (
    workspace_id uuid        NOT NULL,
    customer_id  uuid        NOT NULL,
    email_key    text,
    domain_key   text,
    version      timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, customer_id)
);
CREATE INDEX customer_contacts_email ON ideas.customer_contacts (workspace_id, email_key)
    WHERE email_key IS NOT NULL;
CREATE INDEX customer_contacts_domain ON ideas.customer_contacts (workspace_id, domain_key)
    WHERE domain_key IS NOT NULL;
-- Customers recorded before this table are filled by the projection's rebuild (ideasctl).
