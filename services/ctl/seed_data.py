"""Vocabulary and proportions of the seed data: plausible product feedback, not lorem ipsum."""

from __future__ import annotations

VERBS = (
    "Add",
    "Support",
    "Improve",
    "Allow",
    "Fix",
    "Show",
    "Export",
    "Sync",
    "Speed up",
    "Simplify",
    "Automate",
    "Customize",
    "Filter",
    "Schedule",
    "Share",
)
OBJECTS = (
    "dark mode",
    "CSV export",
    "SSO login",
    "Slack notifications",
    "bulk edit",
    "mobile app",
    "API rate limits",
    "dashboard widgets",
    "roadmap view",
    "search",
    "calendar sync",
    "Jira integration",
    "audit log",
    "custom fields",
    "email digests",
    "two-factor auth",
    "offline mode",
    "keyboard shortcuts",
    "PDF reports",
    "webhook retries",
    "team permissions",
    "onboarding checklist",
    "billing page",
    "invoice download",
    "time tracking",
    "Zendesk sync",
    "comment threads",
    "file attachments",
    "public portal",
    "voting widget",
)
QUALIFIERS = (
    "for admins",
    "on mobile",
    "for large teams",
    "in the editor",
    "per workspace",
    "for enterprise customers",
    "in reports",
    "across projects",
    "with filters",
    "for guests",
    "",
    "",
    "",
    "",
)
SUMMARIES = (
    "Customers keep asking for this in support chats.",
    "Several enterprise accounts flagged this during renewal.",
    "Would save our team hours every week.",
    "Competitors already offer this; we lose deals over it.",
    "Requested repeatedly on the community forum.",
    "Blocking rollout to the rest of the company.",
    "Current workaround is a spreadsheet and it breaks often.",
)

# (value, weight)
STATUSES = (
    ("new", 30),
    ("under_review", 15),
    ("planned", 12),
    ("in_progress", 8),
    ("shipped", 12),
    ("rejected", 8),
    ("archived", 5),
    ("duplicate", 3),
    ("captured", 5),
    ("deleted", 2),
)
SOURCES = (
    ("slack", 18),
    ("email", 14),
    ("api", 10),
    ("intercom", 10),
    ("zendesk", 9),
    ("chrome", 7),
    ("discord", 6),
    ("teams", 6),
    ("extension", 5),
    ("zapier", 4),
    ("freshdesk", 3),
    ("helpscout", 3),
    ("sentry", 2),
    ("vscode", 2),
    ("outlook", 1),
)
CATEGORIES = (("feature", 45), ("improvement", 25), ("bug", 18), ("integration", 7), (None, 5))
DESTINATIONS = ("jira", "linear", "github")
WORK_STATUSES = ("todo", "in_progress", "done")

FIRST = (
    "Ann",
    "Bo",
    "Chen",
    "Dara",
    "Eli",
    "Fatima",
    "Gus",
    "Hana",
    "Ivan",
    "Jo",
    "Kai",
    "Lena",
    "Mo",
    "Nia",
    "Omar",
    "Pia",
    "Quinn",
    "Ravi",
    "Sara",
    "Tom",
)
LAST = ("Smith", "Garcia", "Kim", "Novak", "Okafor", "Rossi", "Silva", "Tanaka", "Weber", "Young")
COMPANIES = (
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Hooli",
    "Stark",
    "Wayne",
    "Wonka",
    "Tyrell",
    "Cyberdyne",
    "Soylent",
    "Vandelay",
    "Pied Piper",
    "Aperture",
    "Oscorp",
)
PLANS = (("starter", 40), ("pro", 35), ("business", 18), ("enterprise", 7))
TAGS = (
    ("bug", "#ef4444"),
    ("ux", "#3b82f6"),
    ("performance", "#f59e0b"),
    ("security", "#10b981"),
    ("mobile", "#8b5cf6"),
    ("api", "#6366f1"),
    ("billing", "#ec4899"),
    ("reporting", "#14b8a6"),
    ("integrations", "#84cc16"),
    ("onboarding", "#f97316"),
    ("enterprise", "#0ea5e9"),
    ("quick-win", "#22c55e"),
)
PRODUCTS = (
    ("Web App", None),
    ("Mobile", None),
    ("Platform", None),
    ("Editor", "Web App"),
    ("Dashboard", "Web App"),
    ("iOS", "Mobile"),
    ("Android", "Mobile"),
    ("Public API", "Platform"),
)
ROLES = ("owner", "admin", "admin", "member", "member", "member", "member", "viewer")
SENTIMENTS = (("positive", 0.6), ("neutral", 0.0), ("negative", -0.6))
EVIDENCE_TYPES = ("document", "screenshot", "external_issue", "link", "quote")
TICKET_PLATFORMS = ("zendesk", "intercom", "freshdesk", "helpscout")
