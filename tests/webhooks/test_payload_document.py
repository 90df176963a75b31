"""Real deliveries match the document's `webhooks` section: payload schema and headers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import jsonschema

from tests.support.api import Workspace
from tests.webhooks.support import Receiver
from tests.webhooks.test_delivery import ALL_EVENTS

# Every event type but idea.destination_created, which no API call emits.
EVENTS = [e for e in ALL_EVENTS if e != "idea.destination_created"]


async def _deliveries(receiver: Receiver, path: str, kinds: set[str]) -> list[Any]:
    deadline = time.monotonic() + 30
    while kinds - {r.headers["X-Service-Event"] for r in receiver.at(path)}:
        assert time.monotonic() < deadline, kinds - {
            r.headers["X-Service-Event"] for r in receiver.at(path)
        }
        await asyncio.sleep(0.25)
    return receiver.at(path)


async def test_every_event_delivered_matches_its_documented_payload(
    ws: Workspace, receiver: Receiver
) -> None:
    """Each event the API emits arrives as the `webhooks` section describes it."""
    api = ws.api
    doc = (await api.with_key(None).get("/api/v1/openapi.json")).json
    path = receiver.new_path()
    r = await api.post("/api/v1/webhooks", json={"targetUrl": receiver.url(path), "events": EVENTS})
    assert r.status == 200, r.body
    idea = (await api.post("/api/v1/ideas", json={"title": "Payload check"})).data
    one = f"/api/v1/ideas/{idea['id']}"
    assert (await api.patch(one, json={"status": "planned", "riceReach": 10})).status == 200
    assert (await api.post(one + "/vote", json={"value": 1})).status == 200
    comment = (await api.post(one + "/comments", json={"body": "Payload comment"})).data
    r = await api.patch(f"{one}/comments/{comment['id']}", json={"body": "Edited"})
    assert r.status == 200, r.body
    assert (await api.delete(f"{one}/comments/{comment['id']}")).status == 200
    stage = (await api.get("/api/v1/roadmap/stages")).data[0]["id"]
    assert (await api.put(one + "/roadmap", json={"stageId": stage})).status == 200
    for _ in range(2):  # the second is a duplicate: a signal on the first
        await api.post("/api/v1/automation/ideas", json={"title": "Payload duplicate"})
    customer = (await api.post("/api/v1/customers", json={"name": "Payload Co"})).data
    await api.patch(f"/api/v1/customers/{customer['id']}", json={"arr": 10})
    assert (await api.delete(one)).status == 200

    got = await _deliveries(receiver, path, set(EVENTS))
    components = {"components": doc["components"]}
    for delivery in got:
        kind = delivery.headers["X-Service-Event"]
        post = doc["webhooks"][kind]["post"]
        schema = {**post["requestBody"]["content"]["application/json"]["schema"], **components}
        jsonschema.Draft202012Validator(
            schema,
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
        ).validate(delivery.json)
        assert delivery.json["type"] == kind
        missing = [
            p["name"]
            for p in post["parameters"]
            if p["required"] and p["name"] not in delivery.headers
        ]
        assert missing == [], (kind, missing)
