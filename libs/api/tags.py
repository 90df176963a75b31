"""The document's tags: every route names one, and each is declared here with what it groups."""

from __future__ import annotations

TAGS: dict[str, str] = {
    "Ideas": "Product ideas: capture, list and filter, update, vote, score with RICE, decide, "
    "delete; their signals, decisions, evidence, participants, meetings and tickets.",
    "Roadmap": "Roadmap stages and the ideas assigned to them.",
    "Workspace": "The key's workspace: counts, tags, products and team members.",
    "Customers": "Customers with their revenue, and their links to ideas.",
    "Users": "End users: the people who ask for ideas and vote (customers' staff, public "
    "visitors, chat users), each optionally of a customer; their export and erasure.",
    "Webhooks": "Subscriptions that receive signed deliveries of the workspace's events "
    "(payloads in the `webhooks` section).",
    "Analytics": "Reports over ideas, decisions, signals, the roadmap and revenue. Not on the "
    "starter plan.",
    "Export": "Streamed CSV or JSON exports of ideas, customers, decisions and signals: at most "
    "10 per hour per workspace. Not on the starter plan.",
    "Automation": "The automation-compatible API for platforms such as Zapier: a key test, "
    "recent ideas, idea creation with duplicate detection, and `new_idea` hooks.",
    "MCP": "The workspace as Model Context Protocol tools for AI assistants, limited by the "
    "key's scopes and plan.",
    "Document": "This OpenAPI document.",
}
