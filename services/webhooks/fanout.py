"""Events to delivery rows: one multi-row INSERT for all the events of a consumed batch, and
first attempts handed straight to this replica's dispatcher.

Matching subscriptions come from a short-lived per-workspace cache (`TargetCache`). A first
attempt that is due at once and fits in the dispatcher's bounds (overall and per host) is
reserved before the INSERT, which writes its row already leased; once the transaction commits
it starts without a NOTIFY or a claim round trip. If the process dies in between, the lease
expires and any replica makes the attempt, as with a claimed row. Rows that do not fit are
written unleased and a NOTIFY wakes the dispatchers to claim them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import aiopg

from libs.common.messaging import Event
from libs.common.render import dumps

from . import store
from . import subscriptions as subs
from .events import author_of, new_idea_payload
from .settings import WebhooksSettings
from .store import Claimed, NewDelivery, Secrets
from .targets import host_key

if TYPE_CHECKING:
    from .dispatcher import Dispatcher


@dataclass(frozen=True, kw_only=True)
class Target:
    id: uuid.UUID
    kind: str
    target_url: str
    host: str
    secret: str
    events: frozenset[str]

    def wants(self, event_type: str) -> bool:
        if self.kind == subs.AUTOMATION:  # hooks want new ideas
            return event_type == "idea.created"
        return event_type in self.events


class TargetCache:
    """Active subscriptions per workspace, kept for `TTL_S`.

    Every change to subscriptions NOTIFYs at commit and the dispatcher's LISTEN connection
    drops that workspace's entry (all of them on a reconnect). The INSERT joins the
    subscriptions table again, so a deleted or deactivated subscription never gets a row from a
    stale entry; only one created in the instant before its NOTIFY is seen could be missed, and
    the TTL bounds even that. A generation count keeps a read that raced with an invalidation
    from being stored."""

    TTL_S = 5.0
    MAX_ENTRIES = 10_000

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, list[Target]]] = {}
        self._gen = 0

    async def get(self, cur: aiopg.Cursor, workspace_id: str) -> list[Target]:
        now = time.monotonic()
        hit = self._entries.get(workspace_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        gen = self._gen
        targets = [
            Target(
                id=r["id"],
                kind=r["kind"],
                target_url=r["target_url"],
                host=host_key(r["target_url"]),
                secret=r["secret"],
                events=frozenset(r["events"]),
            )
            for r in await subs.active_targets(cur, workspace_id)
        ]
        if gen == self._gen:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[workspace_id] = (now + self.TTL_S, targets)
        return targets

    def invalidate(self, workspace_id: str | None = None) -> None:
        self._gen += 1
        if workspace_id:
            self._entries.pop(workspace_id, None)
        else:
            self._entries.clear()


class Handoff:
    """First attempts reserved in the dispatcher for one transaction; started after commit."""

    def __init__(self, dispatcher: Dispatcher | None) -> None:
        self.dispatcher = dispatcher
        self.lease = uuid.uuid4()
        self.jobs: dict[uuid.UUID, Claimed] = {}

    def reserve(self, row: NewDelivery, target: Target) -> bool:
        if self.dispatcher is None or not self.dispatcher.reserve(target.host, row.workspace_id):
            return False
        self.jobs[row.id] = Claimed(
            id=row.id,
            workspace_id=row.workspace_id,
            subscription_id=target.id,
            kind=target.kind,
            event_type=row.event_type,
            target_url=target.target_url,
            target_host=target.host,
            secrets=Secrets(current=target.secret),
            body=row.body,
            attempt_count=0,
            lease=self.lease,
        )
        return True

    def keep_only(self, inserted: dict[uuid.UUID, tuple[str, Secrets]]) -> None:
        """Keep the rows written, with the URL and secrets their INSERT read (a rotation or
        an edit the cache has not heard of yet applies all the same)."""
        for job_id in list(self.jobs):
            if job_id not in inserted:
                self._drop(job_id)
            else:
                url, secrets = inserted[job_id]
                self.jobs[job_id] = replace(self.jobs[job_id], target_url=url, secrets=secrets)

    def cancel(self) -> None:
        for job_id in list(self.jobs):
            self._drop(job_id)

    def go(self) -> None:
        for job in self.jobs.values():
            self._dispatcher().start(job)
        self.jobs.clear()

    def _drop(self, job_id: uuid.UUID) -> None:
        job = self.jobs.pop(job_id)
        self._dispatcher().unreserve(job)

    def _dispatcher(self) -> Dispatcher:
        """The dispatcher the jobs were reserved in: a job exists only when `reserve` had one."""
        assert self.dispatcher is not None
        return self.dispatcher


class Fanout:
    """The `webhooks` consumer's handler: each (event, matching active subscription) is a row."""

    def __init__(
        self, settings: WebhooksSettings, dispatcher: Callable[[], Dispatcher | None]
    ) -> None:
        self.settings, self.dispatcher = settings, dispatcher
        self.first_delay_s = settings.webhook_retry_schedule[0]
        self.lease_s = settings.webhook_timeout_s + store.LEASE_MARGIN_S
        self.cache = TargetCache()

    async def __call__(self, cur: aiopg.Cursor, event: dict[str, Any]) -> None:
        """One event (the one-at-a-time path): its rows wait for a dispatcher's claim."""
        await self.batch(cur, [event], hand_over=False)

    async def batch(
        self, cur: aiopg.Cursor, events: list[dict[str, Any]], hand_over: bool = True
    ) -> Handoff:
        """Write the rows of `events`; the caller starts the handoff after its commit (or
        cancels it)."""
        now = hand_over and self.first_delay_s <= 0
        handoff = Handoff(self.dispatcher() if now else None)
        try:
            rows: list[NewDelivery] = []
            for event in events:
                rows += await self._rows(cur, event, handoff)
            if rows:
                inserted = await store.insert_deliveries(
                    cur,
                    rows,
                    self.first_delay_s,
                    handoff.lease,
                    self.lease_s,
                    self._to_wake(rows, handoff),
                )
                handoff.keep_only(inserted)
        except BaseException:
            handoff.cancel()
            raise
        return handoff

    def _to_wake(self, rows: list[NewDelivery], handoff: Handoff) -> list[str]:
        """Hosts whose unleased rows are due now and worth a NOTIFY (see
        `Dispatcher.worth_a_notify`); rows due later are found by the dispatchers' poll."""
        if self.first_delay_s > 0:
            return []
        hosts = {r.target_host for r in rows if not r.leased}
        d = handoff.dispatcher
        return [h for h in hosts if d is None or d.worth_a_notify(h)]

    async def _rows(
        self, cur: aiopg.Cursor, event: dict[str, Any], handoff: Handoff
    ) -> list[NewDelivery]:
        event_type = str(event.get("type"))
        workspace_id = str(event.get("workspaceId"))
        targets = [t for t in await self.cache.get(cur, workspace_id) if t.wants(event_type)]
        if not targets:
            return []
        # The queue's message body is the delivery body (docs/webhooks.md): the bytes the
        # event was serialized to once, in its outbox, are signed and sent on every attempt.
        main_body = event.body if isinstance(event, Event) and event.body else dumps(event)
        occurred_at = event.get("createdAt") if isinstance(event.get("createdAt"), str) else None
        hook_body = b""
        if event_type == "idea.created" and any(t.kind == subs.AUTOMATION for t in targets):
            hook_body = new_idea_payload(event, author_of(event))
        rows = []
        for t in targets:
            is_hook = t.kind == subs.AUTOMATION
            row = NewDelivery(
                id=uuid.uuid4(),
                event_id=str(event["id"]),
                workspace_id=workspace_id,
                subscription_id=t.id,
                event_type=subs.NEW_IDEA if is_hook else event_type,
                target_host=t.host,
                body=hook_body if is_hook else main_body,
                occurred_at=occurred_at,
            )
            rows.append(row.leased_copy() if handoff.reserve(row, t) else row)
        return rows
