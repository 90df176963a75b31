-- Votes on behalf of end users (docs/ideas.md#end-users): such a vote's voter is
-- `user:<userId>`; `user_id` is that id, derived from the voter so that every writer of votes
-- (a vote, a merge's move, an unmerge) keeps it right without knowing of it. A `voter` of that
-- form is refused in the API: only `userId` makes one.
ALTER TABLE ideas.votes ADD COLUMN user_id uuid GENERATED ALWAYS AS (
    CASE WHEN voter ~ '^user:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
         THEN substr(voter, 6)::uuid END) STORED;
-- A user's votes: `voteCount`, the export and the erasure.
CREATE INDEX votes_user ON ideas.votes (workspace_id, user_id, idea_id) WHERE user_id IS NOT NULL;

-- Each change of a user's vote on an idea carries the next number of this sequence, taken under
-- the idea's row lock: the customers service keeps a user's vote only when its number is newer
-- than the one it holds (a late or repeated `vote.changed` changes nothing).
CREATE SEQUENCE ideas.vote_versions;

-- Users erased (DELETE /users/{id}): a vote on behalf of one, checked under the user's advisory
-- lock that the erasure holds exclusively, is 404, so no vote slips in behind an erasure.
CREATE TABLE ideas.erased_users (
    workspace_id uuid        NOT NULL,
    user_id      uuid        NOT NULL,
    erased_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, user_id)
);

-- The ideas a user asked for (sourceUserId), and the signals that carry an e-mail: the export
-- and the erasure of one user read them without a scan of the workspace.
CREATE INDEX ideas_author ON ideas.ideas (workspace_id, author_id) WHERE author_id IS NOT NULL;
CREATE INDEX signals_user_email ON ideas.signals (workspace_id, lower(user_email))
    WHERE user_email IS NOT NULL;

-- Users this service has seen the customers service confirm (a vote on their behalf): a later
-- vote of one needs no lookup, as users go only by an erasure, which `erased_users` records
-- first (docs/ideas.md, End users).
CREATE TABLE ideas.known_users (
    workspace_id uuid NOT NULL,
    user_id      uuid NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
