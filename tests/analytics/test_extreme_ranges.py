"""Date ranges at the edges of the calendar are validation errors, never a 500."""

from __future__ import annotations

import pytest

from tests.support.api import Workspace

EDGES = [
    ({"end": "0001-01-10T00:00:00Z"}, "end"),
    ({"start": "9999-12-01T00:00:00Z", "end": "9999-12-31T23:59:59Z"}, "end"),
    ({"start": "9999-12-31T00:00:00Z"}, "start"),
    ({"start": "0001-01-01T00:00:00+05:00"}, "start"),
]


@pytest.mark.parametrize("params,field", EDGES)
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/analytics/ideas-over-time",
        "/api/v1/analytics/signals",
        "/api/v1/analytics/decisions",
        "/api/v1/analytics/categories",
    ],
)
async def test_calendar_edges_are_validation_errors(
    ws: Workspace, path: str, params: dict[str, str], field: str
) -> None:
    """Ranges that would step outside years 1 to 9999 answer 400 naming the parameter."""
    r = await ws.api.get(
        path, params={"period": "month", **params} if "ideas-over" in path else params
    )
    assert r.status == 400, (path, params, r.body)
    assert r.error["code"] == "validation_error" and r.error["field"] == field


async def test_export_with_far_future_start_is_a_validation_error(ws: Workspace) -> None:
    """An export range that cannot be converted answers 400, not 500."""
    r = await ws.api.get(
        "/api/v1/export/ideas", params={"format": "json", "start": "9999-12-31T23:59:59-05:00"}
    )
    assert r.status == 400 and r.error["field"] == "start"
