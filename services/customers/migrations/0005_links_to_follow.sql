-- Links still to be carried up a chain of merges (services/customers/merges.py, `follow`): a
-- customer newly linked to a merged duplicate, waiting for the step that links it to the
-- primary. A step takes every row of its idea at once, so links made together go up together.
CREATE TABLE customers.links_to_follow (
    workspace_id uuid NOT NULL,
    idea_id      uuid NOT NULL,
    customer_id  uuid NOT NULL,
    PRIMARY KEY (workspace_id, idea_id, customer_id)
);
