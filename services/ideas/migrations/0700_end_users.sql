-- Votes on behalf of end users (CONTRACT 17, docs/ideas.md#end-users): such a vote's voter is
-- `user:<userId>`; `user_id` is that id, derived from the voter so that every writer of votes
-- (a vote, a merge's move, an unmerge) keeps it right without knowing of it. A `voter` of that
-- form is refused in the API: only `userId` makes one.
ALTER TABLE ideas.votes ADD COLUMN user_id uuid GENERATED ALWAYS AS (
    CASE WHEN voter ~ '^user:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
         THEN substr(voter, 6)::uuid END) STORED;
-- A user's votes: `voteCount`, the export and the erasure.
CREATE INDEX votes_user ON ideas.votes (workspace_id, user_id, idea_id) WHERE user_id IS NOT NULL;
