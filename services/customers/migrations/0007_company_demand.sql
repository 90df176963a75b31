-- A company's demand (docs/customers.md#a-companys-demand-links-that-votes-hold):
-- while a user of a customer votes +1 on an idea, the customer is linked to it.
--
-- A link's reasons: `direct` (POST /ideas/{id}/customers, a signal match, a merge's copy:
-- such a link stays until it is unlinked or its merge undone), and the +1 votes of the
-- customer's users, read from `user_votes` and `users` whenever a vote, a user's customer or
-- the user changes. A row exists while it has a reason: direct, or held by a vote.
ALTER TABLE customers.idea_links ADD COLUMN direct boolean NOT NULL DEFAULT true;

-- The ideas service's user votes (its `vote.changed` events), each kept with the version it
-- came with: an older or repeated event changes nothing. `value` 0 is a vote that is gone.
CREATE TABLE customers.user_votes (
    workspace_id uuid     NOT NULL,
    user_id      uuid     NOT NULL,
    idea_id      uuid     NOT NULL,
    value        smallint NOT NULL CHECK (value IN (-1, 0, 1)),
    version      bigint   NOT NULL,
    PRIMARY KEY (workspace_id, user_id, idea_id)
);
-- Who votes +1 on an idea: whether a customer's link is held.
CREATE INDEX user_votes_idea ON customers.user_votes (workspace_id, idea_id, user_id)
    WHERE value = 1;
