-- Evidence, support tickets, meetings and participants are written through the API
-- (docs/ideas.md, evidence and participants).

-- A support ticket is one row per (platform, externalId) on an idea: a second POST of the
-- pair updates it (INSERT ... ON CONFLICT on this index, so two at once give one row). Pairs
-- that already repeat (seeded data) keep their oldest row.
DELETE FROM ideas.support_tickets t
 USING ideas.support_tickets k
 WHERE k.workspace_id = t.workspace_id AND k.idea_id = t.idea_id
   AND k.platform = t.platform AND k.external_id = t.external_id
   AND (k.created_at, k.id) < (t.created_at, t.id);
CREATE UNIQUE INDEX support_tickets_external
    ON ideas.support_tickets (workspace_id, idea_id, platform, external_id);

-- A participant is a member of the workspace, once per idea; name and e-mail are the member's.
-- Null for participants recorded before this column (they name no member).
ALTER TABLE ideas.participants ADD COLUMN member_id uuid;
CREATE UNIQUE INDEX participants_member
    ON ideas.participants (workspace_id, idea_id, member_id) WHERE member_id IS NOT NULL;
CREATE INDEX participants_member_ideas
    ON ideas.participants (workspace_id, member_id) WHERE member_id IS NOT NULL;
