"""The realistic mix, for Locust (`bench/load.py` runs it; not imported by anything else).

Reads 80% (lists with filters 30, details 30, sub-resources 20), writes 15% (creates 5, votes
4, patches 4, customer links 2), analytics 4% and exports 1%, through the gateway with one of
several keys. The run's spec (keys, idea and customer ids, pacing) comes from the JSON file
named by LOAD_SPEC; every answer's status is counted by route family and written to
LOAD_STATUS_OUT when Locust quits. Requests are named by route family, so Locust's statistics
come out per family.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter, defaultdict

from locust import FastHttpUser, constant, constant_throughput, events, task

SPEC = json.loads(open(os.environ["LOAD_SPEC"]).read())
IDEAS: list[str] = SPEC["ideas"]
CUSTOMERS: list[str] = SPEC["customers"]
KEYS: list[str] = SPEC["keys"]
LISTS = [
    "/api/v1/ideas?limit=25",
    "/api/v1/ideas?limit=25&status=new",
    "/api/v1/ideas?limit=25&sort=voteCount",
    "/api/v1/ideas?limit=25&category=Integrations",
    "/api/v1/customers?limit=25",
]
SUBS = ["votes", "customers", "signals", "decisions"]
ANALYTICS = ["summary", "funnel", "ideas-over-time", "categories"]
STATUSES: dict[str, Counter[str]] = defaultdict(Counter)


@events.request.add_listener
def _count(name: str, response: object, exception: object, **_: object) -> None:
    code = getattr(response, "status_code", 0) or 0
    STATUSES[name][str(code) if code else "no_answer"] += 1


@events.quitting.add_listener
def _write(**_: object) -> None:
    out = os.environ.get("LOAD_STATUS_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({k: dict(v) for k, v in STATUSES.items()}, f)


class Client(FastHttpUser):
    # Flat out for capacity; `per_user_rps` paces each user for the soak.
    wait_time = (
        constant_throughput(SPEC["per_user_rps"]) if SPEC.get("per_user_rps") else constant(0)
    )
    connection_timeout = 10.0
    network_timeout = 30.0

    host = SPEC["hosts"][0]

    def on_start(self) -> None:
        self.h = {"Authorization": f"Bearer {random.choice(KEYS)}"}
        self.base = random.choice(SPEC["hosts"])  # one gateway a user, as behind a balancer
        self.n = 0

    def _get(self, path: str, name: str) -> None:
        self.client.get(self.base + path, headers=self.h, name=name)

    @task(30)
    def list_filtered(self) -> None:
        self._get(random.choice(LISTS), "list")

    @task(30)
    def detail(self) -> None:
        self._get(f"/api/v1/ideas/{random.choice(IDEAS)}", "detail")

    @task(20)
    def sub_resource(self) -> None:
        self._get(f"/api/v1/ideas/{random.choice(IDEAS)}/{random.choice(SUBS)}", "subresource")

    @task(5)
    def create(self) -> None:
        self.n += 1
        self.client.post(
            self.base + "/api/v1/ideas",
            headers=self.h,
            name="create",
            json={"title": f"Load idea {random.getrandbits(48):x}", "category": "Integrations"},
        )

    @task(4)
    def vote(self) -> None:
        self.client.post(
            self.base + f"/api/v1/ideas/{random.choice(IDEAS)}/vote",
            headers=self.h,
            name="vote",
            json={"voter": f"user:{random.randrange(10**6)}"},
        )

    @task(4)
    def patch(self) -> None:
        self.client.patch(
            self.base + f"/api/v1/ideas/{random.choice(IDEAS)}",
            headers=self.h,
            name="patch",
            json={"summary": f"edited {random.getrandbits(32):x}"},
        )

    @task(2)
    def link(self) -> None:
        self.client.post(
            self.base + f"/api/v1/ideas/{random.choice(IDEAS)}/customers",
            headers=self.h,
            name="link",
            json={"customerId": random.choice(CUSTOMERS)},
        )

    @task(4)
    def analytics(self) -> None:
        self._get(f"/api/v1/analytics/{random.choice(ANALYTICS)}", "analytics")

    @task(1)
    def export(self) -> None:
        self._get("/api/v1/export/customers", "export")
