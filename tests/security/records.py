"""Records of every kind in a workspace, so that path ids of every route resolve."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import psycopg2

from libs.api.enums import WebhookEventType, values
from services.ctl.seed import seed
from tests.support.api import Workspace
from tests.support.processes import System

WEBHOOK_EVENTS = list(values(WebhookEventType))


@dataclass
class Records:
    ideas: list[str] = field(default_factory=list)
    customers: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    webhooks: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    deliveries: list[str] = field(default_factory=list)  # of webhooks[0]
    tags: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    signals: list[str] = field(default_factory=list)  # of ideas[0]
    # of ideas[0], written through the API
    evidence: list[str] = field(default_factory=list)
    tickets: list[str] = field(default_factory=list)
    meetings: list[str] = field(default_factory=list)
    participants: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)  # top-level ones
    users: list[str] = field(default_factory=list)

    @property
    def second_ideas(self) -> list[str]:
        """The ideas after the first: a merge's primary when the first is its duplicate."""
        return self.ideas[1:]


async def seed_records(
    system: System, ws: Workspace, *, ideas: int = 20, customers: int = 8
) -> Records:
    """`ideasctl seed` data (sub-resources included), then webhooks, hooks and a linked idea
    through the API (their targets are never called: see conftest)."""
    conn = psycopg2.connect(system.database_url)
    try:
        seed(conn, ws.id, ideas=ideas, customers=customers)
    finally:
        conn.close()
    api, rec = ws.api, Records()
    for i in range(2):
        r = await api.post(
            "/api/v1/webhooks",
            json={
                "name": f"hook {i}",
                "targetUrl": f"https://hooks.example.com/ims/{i}",
                "events": WEBHOOK_EVENTS,
            },
        )
        assert r.status == 200, r.body
        rec.webhooks.append(r.data["id"])
        r = await api.post(
            "/api/v1/automation/webhooks/subscribe",
            json={"hookUrl": f"https://hooks.example.com/new/{i}"},
        )
        assert r.status == 201, r.body
        rec.hooks.append(r.json["id"])
    idea = (await api.post("/api/v1/ideas", json={"title": "Linked idea"})).data["id"]
    customer = (await api.post("/api/v1/customers", json={"name": "Linked customer"})).data["id"]
    assert (
        await api.post(f"/api/v1/ideas/{idea}/customers", json={"customerId": customer})
    ).status == 200
    rec.ideas = [i["id"] for i in (await api.get("/api/v1/ideas", params={"limit": 100})).data]
    r = await api.post(f"/api/v1/ideas/{rec.ideas[0]}/signals", json={"platform": "slack"})
    assert r.status == 200, r.body
    rec.signals = [r.data["id"]]
    rec.customers = [
        c["id"] for c in (await api.get("/api/v1/customers", params={"limit": 100})).data
    ]
    r = await api.post(
        "/api/v1/users",
        json={"name": "Recorded user", "email": "user@records.example", "customerId": customer},
    )
    assert r.status == 200, r.body
    rec.users = [r.data["id"]]
    rec.stages = [s["id"] for s in (await api.get("/api/v1/roadmap/stages")).data]
    rec.tags = [t["id"] for t in (await api.get("/api/v1/tags")).data]
    rec.products = [p["id"] for p in (await api.get("/api/v1/products")).data]
    rec.members = [m["id"] for m in (await api.get("/api/v1/members")).data]
    first = f"/api/v1/ideas/{rec.ideas[0]}"
    for kind, path, body in (
        ("evidence", "evidence", {"type": "quote", "title": "Recorded evidence"}),
        ("tickets", "support-tickets", {"platform": "zendesk", "externalId": "1", "subject": "S"}),
        ("meetings", "meetings", {"title": "Review", "meetingDate": "2025-01-01T00:00:00Z"}),
        ("participants", "participants", {"memberId": rec.members[0], "role": "reviewer"}),
    ):
        r = await api.post(f"{first}/{path}", json=body)
        assert r.status == 200, r.body
        getattr(rec, kind).append(r.data["id"])
    for body in ({"body": "Recorded comment"}, {"body": "Recorded note", "internal": True}):
        r = await api.post(f"{first}/comments", json=body)
        assert r.status == 200, r.body
        rec.comments.append(r.data["id"])
    r = await api.post(f"{first}/comments", json={"body": "Reply", "parentId": rec.comments[0]})
    assert r.status == 200, r.body
    # The idea and customer created above are delivered to webhooks[0] an hour from now: the
    # delivery rows exist at once (within a second or two of the event).
    deadline = time.monotonic() + 10
    while not rec.deliveries and time.monotonic() < deadline:
        detail = (await api.get(f"/api/v1/webhooks/{rec.webhooks[0]}")).data
        rec.deliveries = [d["id"] for d in detail["recentDeliveries"]]
        await asyncio.sleep(0.2)
    assert rec.ideas and rec.customers and rec.stages and rec.deliveries and rec.tags
    assert rec.products and rec.members and rec.users
    assert rec.evidence and rec.tickets and rec.meetings and rec.participants and rec.comments
    return rec
