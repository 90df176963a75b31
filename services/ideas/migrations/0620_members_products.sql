-- A member's e-mail is unique in its workspace, ignoring case (POST/PATCH /members answer 409
-- on a second one). E-mails that already repeat (a workspace seeded twice) keep their oldest
-- member; ideas name their decision owner by name and e-mail, so no row points at the others.
DELETE FROM ideas.members m
 USING ideas.members k
 WHERE k.workspace_id = m.workspace_id AND lower(k.email) = lower(m.email)
   AND (k.created_at, k.id) < (m.created_at, m.id);
CREATE UNIQUE INDEX members_email_unique ON ideas.members (workspace_id, lower(email));

-- The member an idea's decision owner came from (`decisionOwnerId`): a member's new name or
-- e-mail reaches the ideas they own, and removing the member clears it (the name and e-mail
-- stay, as the record of who owned the decision). Null for owners set before this column.
ALTER TABLE ideas.ideas ADD COLUMN decision_owner_id uuid;
CREATE INDEX ideas_decision_owner_id ON ideas.ideas (workspace_id, decision_owner_id)
    WHERE decision_owner_id IS NOT NULL;

-- Children of a product (a product with children cannot be deleted; cycles are refused).
CREATE INDEX products_parent ON ideas.products (workspace_id, parent_id)
    WHERE parent_id IS NOT NULL;
