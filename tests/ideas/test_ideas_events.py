"""Every idea event as consumed from RabbitMQ, with the payloads of docs/webhooks.md."""

from __future__ import annotations

from typing import Any

from tests.ideas.conftest import Tap
from tests.support.api import Api


def shape(event: dict[str, Any]) -> tuple[str, list[str]]:
    return event["type"], sorted(event["data"])


async def test_create_update_score_status_events(api: Api, tap: Tap) -> None:
    """create, PATCH with RICE and status: created, status_changed, scored, updated."""
    idea = (await api.post("/api/v1/ideas", json={"title": "E"})).data
    [created] = await tap.take(1)
    assert shape(created) == ("idea.created", ["idea"]) and created["data"]["idea"] == idea
    assert set(created) == {"id", "type", "createdAt", "workspaceId", "data"}
    r = await api.patch(f"/api/v1/ideas/{idea['id']}", json={"status": "planned", "riceReach": 1})
    events = await tap.take(3)
    assert [shape(e) for e in events] == [
        ("idea.status_changed", ["idea", "previousStatus"]),
        ("idea.scored", ["idea"]),
        ("idea.updated", ["idea"]),
    ]
    assert events[0]["data"]["previousStatus"] == "new"
    detail = r.data
    assert all(e["data"]["idea"] == {k: detail[k] for k in e["data"]["idea"]} for e in events)
    await api.patch(f"/api/v1/ideas/{idea['id']}", json={"title": "E2"})
    [updated] = await tap.take(1)
    assert updated["type"] == "idea.updated" and updated["data"]["idea"]["title"] == "E2"


async def test_vote_assign_delete_batch_events(api: Api, tap: Tap) -> None:
    """vote, roadmap, batch status and delete events carry their extras."""
    a, b = (
        await api.post("/api/v1/ideas/batch", json={"ideas": [{"title": "a"}, {"title": "b"}]})
    ).data["ideas"]
    assert [e["type"] for e in await tap.take(2)] == ["idea.created"] * 2
    await api.post(f"/api/v1/ideas/{a['id']}/vote", json={"voter": "v", "value": -1})
    [voted] = await tap.take(1)
    assert voted["type"] == "idea.voted" and voted["data"]["vote"] == {"voter": "v", "value": -1}
    assert voted["data"]["idea"]["voteCount"] == -1
    stage = (await api.get("/api/v1/roadmap/stages")).data[2]["id"]
    await api.put(f"/api/v1/ideas/{a['id']}/roadmap", json={"stageId": stage})
    await api.put(f"/api/v1/ideas/{a['id']}/roadmap", json={"stageId": None})
    one, two = await tap.take(2)
    assert one["type"] == "idea.assigned" and one["data"]["previousRoadmapStageId"] is None
    assert one["data"]["idea"]["roadmapStageId"] == stage
    assert two["data"]["previousRoadmapStageId"] == stage
    await api.patch(
        "/api/v1/ideas/batch/status", json={"ids": [a["id"], b["id"]], "status": "archived"}
    )
    events = await tap.take(2)
    assert {(e["type"], e["data"]["previousStatus"]) for e in events} == {
        ("idea.status_changed", "new")
    }
    await api.delete(f"/api/v1/ideas/{b['id']}")
    changed, deleted = await tap.take(2)
    assert (
        changed["type"] == "idea.status_changed" and changed["data"]["previousStatus"] == "archived"
    )
    assert deleted["type"] == "idea.deleted" and deleted["data"]["idea"]["status"] == "deleted"


async def test_signal_detected_event(api: Api, tap: Tap) -> None:
    """An automation duplicate emits idea.signal_detected with the Signal."""
    await api.post("/api/v1/automation/ideas", json={"title": "Sig", "url": "https://s.io/x"})
    [created] = await tap.take(1)
    await api.post(
        "/api/v1/automation/ideas",
        json={"title": "Sig2", "url": "https://s.io/x/", "source": "discord"},
    )
    [sig] = await tap.take(1)
    assert sig["type"] == "idea.signal_detected"
    assert sig["data"]["idea"]["id"] == created["data"]["idea"]["id"]
    assert sig["data"]["idea"]["signalCount"] == 1
    assert sig["data"]["signal"]["platform"] == "discord"
    assert sig["data"]["signal"]["similarity"] == 1.0
