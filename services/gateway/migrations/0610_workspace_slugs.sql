-- PATCH /workspace sets a workspace's slug: unique across all workspaces, ignoring case.
-- Nothing set slugs before (they were all null), so no existing pair can collide.
CREATE UNIQUE INDEX workspaces_slug_unique ON gateway.workspaces (lower(slug)) WHERE slug IS NOT NULL;
