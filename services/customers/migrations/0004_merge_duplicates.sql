-- A customer linked to a merged duplicate after its merge was applied is linked to the primary
-- as the merge's own links were (services/customers/merges.py): each merge's duplicate, to find
-- the merge a new link follows.
ALTER TABLE customers.merges ADD COLUMN duplicate_id uuid;
CREATE INDEX merges_applied_by_duplicate ON customers.merges (workspace_id, duplicate_id)
    WHERE state = 'applied';
