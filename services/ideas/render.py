"""The public forms of an idea, as SQL expressions over `ideas.ideas i`.

Both are built inside PostgreSQL by `ideas.idea_json` and `ideas.idea_detail_json`, generated
from the public models by forms.py and installed by the schema's migrations (the analytics
exports call the same functions): lists and reads embed the JSON text as an orjson fragment
without converting rows in Python. The Signal and Comment forms are still written in their
migrations (0400_json_forms.sql, 0700_comments.sql).
"""

from __future__ import annotations

from libs.common.render import fragment

__all__ = ["COMMENT_JSON", "DETAIL_JSON", "IDEA_JSON", "SIGNAL_JSON", "TAGS_JSON", "fragment"]

IDEA_JSON = "ideas.idea_json(i)"

# The idea's tags, by name: IdeaDetail's `tags`.
TAGS_JSON = """(SELECT coalesce(array_to_json(array_agg(ROW(t.id, t.name, t.color)::ideas.tag_form
                                                   ORDER BY t.name, t.id)), '[]')
   FROM ideas.idea_tags it JOIN ideas.tags t ON t.workspace_id = it.workspace_id AND t.id = it.tag_id
  WHERE it.workspace_id = i.workspace_id AND it.idea_id = i.id)"""

DETAIL_JSON = f"ideas.idea_detail_json(i, {TAGS_JSON})"

# A Signal, over `ideas.signals s`.
SIGNAL_JSON = "ideas.signal_json(s)"

# A Comment, over `ideas.comments c` (migration 0700_comments.sql).
COMMENT_JSON = "ideas.comment_json(c)"
