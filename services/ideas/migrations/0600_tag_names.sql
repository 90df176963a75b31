-- A tag's name is unique in its workspace, ignoring case (POST/PATCH /tags answer 409 on a
-- second one). Names that already repeat (a workspace seeded twice) are folded into the oldest
-- tag of that name first: its ideas keep the tag, under the surviving id.
CREATE TEMPORARY TABLE tag_folds ON COMMIT DROP AS
SELECT t.workspace_id, t.id AS old_id, k.id AS keep_id
  FROM ideas.tags t
  JOIN LATERAL (SELECT k.id FROM ideas.tags k
                 WHERE k.workspace_id = t.workspace_id AND lower(k.name) = lower(t.name)
                 ORDER BY k.created_at, k.id LIMIT 1) k ON k.id <> t.id;

INSERT INTO ideas.idea_tags (workspace_id, idea_id, tag_id)
SELECT it.workspace_id, it.idea_id, f.keep_id
  FROM ideas.idea_tags it JOIN tag_folds f ON f.workspace_id = it.workspace_id AND f.old_id = it.tag_id
ON CONFLICT DO NOTHING;

DELETE FROM ideas.idea_tags it USING tag_folds f
 WHERE it.workspace_id = f.workspace_id AND it.tag_id = f.old_id;
DELETE FROM ideas.tags t USING tag_folds f WHERE t.workspace_id = f.workspace_id AND t.id = f.old_id;

CREATE UNIQUE INDEX tags_name_unique ON ideas.tags (workspace_id, lower(name));
