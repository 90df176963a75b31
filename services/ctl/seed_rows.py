"""One chunk of seeded ideas and every row that hangs off them.

The ideas, their votes, decisions, tags and customer links go by COPY; their evidence,
participants, meetings, support tickets and signals through the ideas service's storage
functions (evidence.py, signals.py), a chunk's rows in one call each, so that the figures those
write on the ideas (the evidence count, the signal figures, the owner participant, the customer
match) are the API's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from services.ideas import evidence, signals
from services.ideas.evidence import NewEvidence, NewMeeting, NewParticipant, NewTicket
from services.ideas.signals import NewSignal
from services.ideas.store import DECIDED, fold_title, rice_priority, rice_score

from . import seed_data as d
from .sync_cursor import run

N = "\\N"
IDEA_COLS = (
    "workspace_id, id, number, title, summary, status, source, category, idea_type, url, url_key,"
    " title_key, destination, destination_issue_id, destination_issue_url, work_item_status,"
    " vote_count, public_vote_count, request_count, signal_count, rice_reach, rice_impact,"
    " rice_confidence, rice_effort, rice_score, rice_priority, rice_source, validation_score,"
    " validation_evidence_count, decision_reason, decided_at, closure_category,"
    " decision_owner_name, decision_owner_email, decision_deadline, total_customer_arr,"
    " customer_count, last_activity_at, last_signal_at, unique_source_count, average_sentiment,"
    " shipped_at, product_id, roadmap_stage_id, actionable, author_name, author_id, raw_input,"
    " created_at, updated_at, decision_owner_id"
)
COL = {c.strip(): n for n, c in enumerate(IDEA_COLS.split(","))}


def line(values: Iterable[Any]) -> str:
    return "\t".join([N if v is None else str(v) for v in values]) + "\n"


def _weighted(pairs: tuple[tuple[Any, int], ...]) -> tuple[list[Any], list[int]]:
    return [v for v, _ in pairs], [w for _, w in pairs]


class IdeaRows:
    """Generates ideas [first, first + k) with their votes, decisions, signals and the rest."""

    def __init__(self, seeder: Any, start: datetime, first: int) -> None:
        self.s, self.rng, self.ws, self.first = seeder, seeder.rng, seeder.ws, first
        self.now = seeder.now
        self.t: dict[str, list[str]] = {k: [] for k in ("votes", "decisions", "tags", "links")}
        self.ideas: list[list[Any]] = []
        self.signals: list[NewSignal] = []
        self.evidence: list[NewEvidence] = []
        self.owners: list[NewParticipant] = []
        self.participants: list[NewParticipant] = []
        self.meetings: list[NewMeeting] = []
        self.tickets: list[NewTicket] = []
        self.deleted: set[Any] = set()
        self.statuses = _weighted(d.STATUSES)
        self.sources = _weighted(d.SOURCES)
        self.categories = _weighted(d.CATEGORIES)

    def add(self, j: int, created: datetime) -> None:
        rng, s = self.rng, self.s
        idea = s.uid()
        status = rng.choices(*self.statuses)[0]
        source = rng.choices(*self.sources)[0]
        obj = rng.choice(d.OBJECTS)
        title = f"{rng.choice(d.VERBS)} {obj} {rng.choice(d.QUALIFIERS)}".strip()
        summary = rng.choice(d.SUMMARIES) if rng.random() < 0.8 else None
        age = (self.now - created).total_seconds()
        activity = created + timedelta(seconds=rng.random() * age)
        votes = self.votes(idea, created, age)
        arr, customers = self.links(idea, created)
        self.add_signals(idea, created, age, source, customers)
        rice = self.rice()
        if status == "deleted":
            self.deleted.add(idea)
        decided_at = shipped_at = closure = reason = owner = deadline = None
        cols: dict[str, Any] | None = None
        if status in DECIDED or status == "deleted":
            decided_at = created + timedelta(seconds=rng.random() * age)
            closure = DECIDED.get(status)
            reason = f"{closure or 'removed'}: reviewed in planning" if closure else None
            shipped_at = decided_at if status == "shipped" else None
            self.decision(idea, "new", status, closure, reason, decided_at)
        elif status in ("planned", "in_progress", "under_review"):
            self.decision(idea, "new", status, None, None, activity)
        if status not in ("new", "captured") and rng.random() < 0.7:
            owner = rng.choice(s.members)
            cols = s.owners[owner[1]]  # members.owner_columns: as PATCH decisionOwnerId sets
            deadline = created + timedelta(days=rng.randint(7, 90))
        dest = (
            rng.choice(d.DESTINATIONS)
            if status in ("planned", "in_progress", "shipped") and rng.random() < 0.6
            else None
        )
        issue = f"{dest.upper()}-{self.first + j}" if dest else None
        self.extras(idea, created, age, owner)
        self.ideas.append(
            list(
                (
                    self.ws,
                    idea,
                    self.first + j,
                    title,
                    summary,
                    status,
                    source,
                    rng.choices(*self.categories)[0],
                    rng.choice(("request", "problem", "suggestion")),
                    None,
                    None,
                    fold_title(title),
                    dest,
                    issue,
                    f"https://{dest}.example.com/issue/{issue}" if dest else None,
                    ("done" if status == "shipped" else rng.choice(d.WORK_STATUSES))
                    if dest
                    else None,
                    votes,
                    rng.randint(0, 5) if rng.random() < 0.2 else 0,
                    rng.randint(0, 3),
                    0,  # the signals' figures: signals.figures or signals.add
                    *rice,
                    rng.uniform(0, 100) if rng.random() < 0.4 else None,
                    None,  # the evidence count: evidence.evidence_counts
                    reason,
                    decided_at,
                    closure,
                    cols["decision_owner_name"] if cols else None,
                    cols["decision_owner_email"] if cols else None,
                    deadline,
                    arr,
                    len(customers),
                    activity,
                    None,
                    0,
                    None,
                    shipped_at,
                    rng.choice(s.products) if rng.random() < 0.7 else None,
                    rng.choice(s.stages) if status in ("planned", "in_progress") else None,
                    True,
                    self.s.person()[0] if source != "api" else None,
                    None,
                    summary or title,
                    created,
                    activity,
                    cols["decision_owner_id"] if cols else None,
                )
            )
        )

    def votes(self, idea: Any, created: datetime, age: float) -> int:
        if self.rng.random() > 0.4:
            return 0
        total = 0
        for v in range(self.rng.choice((1, 1, 2, 3, 5, 8))):
            value = 1 if self.rng.random() < 0.9 else -1
            total += value
            when = created + timedelta(seconds=self.rng.random() * age)
            self.t["votes"].append(line((self.ws, idea, f"user-{v}", value, when)))
        return total

    def add_signals(
        self, idea: Any, created: datetime, age: float, source: str, customers: list[Any]
    ) -> None:
        """The idea's signals, a third of them from people at its linked customers (by the
        customer's own e-mail or one of its domain: the customer match finds them)."""
        rng = self.rng
        if rng.random() > 0.3:
            return
        for _ in range(rng.randint(1, 3)):
            when = created + timedelta(seconds=rng.random() * age)
            platform = source if rng.random() < 0.5 else rng.choice(d.SOURCES)[0]
            label, score = rng.choice(d.SENTIMENTS)
            name, email = self.s.person()
            if customers and rng.random() < 0.33:
                own, domain = self.s.contacts[rng.choice(customers)]
                email = own if rng.random() < 0.5 else email.replace("example.com", domain)
            self.signals.append(
                NewSignal(
                    idea,
                    platform,
                    "Another customer asked about this.",
                    f"u{rng.randint(1, 9999)}",
                    name,
                    email,
                    rng.uniform(0.75, 1.0),
                    label,
                    max(-1.0, min(1.0, score + rng.uniform(-0.3, 0.3))),
                    when,
                    self.s.uid(),
                    recorded_at=when,
                )
            )

    def rice(self) -> tuple[Any, ...]:
        if self.rng.random() > 0.35:
            return (None,) * 7
        rng = self.rng
        r, i, c, e = (
            float(rng.randint(10, 5000)),
            float(rng.choice((0.25, 0.5, 1, 2, 3))),
            rng.choice((0.5, 0.8, 1.0)),
            float(rng.randint(1, 20)),
        )
        score = rice_score(r, i, c, e)
        return r, i, c, e, score, rice_priority(score), rng.choice(("manual", "ai"))

    def decision(
        self, idea: Any, prev: str, new: str, closure: Any, reason: Any, when: datetime
    ) -> None:
        name, email = self.rng.choice(self.s.members)
        self.t["decisions"].append(
            line(
                (
                    self.ws,
                    self.s.uid(),
                    idea,
                    "status_changed",
                    closure,
                    reason,
                    prev,
                    new,
                    email,
                    name,
                    "dashboard",
                    when,
                )
            )
        )

    def links(self, idea: Any, created: datetime) -> tuple[Any, list[Any]]:
        """The idea's linked customers and their total ARR."""
        if not self.s.customer_arr or self.rng.random() > 0.25:
            return None, []
        chosen = {
            self.rng.randrange(len(self.s.customer_arr)) for _ in range(self.rng.randint(1, 3))
        }
        total, customers = None, []
        for n in sorted(chosen):
            cid, arr, _ = self.s.customer_arr[n]
            customers.append(cid)
            self.t["links"].append(line((self.ws, idea, cid, created)))
            if arr is not None:
                total = (total or 0.0) + arr
        return total, customers

    def extras(self, idea: Any, created: datetime, age: float, owner: Any) -> None:
        """Tags, evidence, participants (the decision owner's always), meetings and tickets."""
        rng, s = self.rng, self.s
        for tag in {rng.choice(s.tags) for _ in range(rng.choice((0, 0, 1, 1, 2)))}:
            self.t["tags"].append(line((self.ws, idea, tag)))
        n_ev = rng.choice((0, 0, 0, 0, 1, 2)) if rng.random() < 0.5 else 0
        for k in range(n_ev):
            kind = rng.choice(d.EVIDENCE_TYPES)
            self.evidence.append(
                NewEvidence(
                    idea,
                    kind,
                    f"{kind.replace('_', ' ').title()} {k + 1}",
                    f"https://docs.example.com/{idea}/{k}",
                    "Supporting material from a customer.",
                    s.uid(),
                    created + timedelta(seconds=rng.random() * age),
                )
            )
        if owner is not None:
            # The decision owner is the owner participant (docs/ideas.md): as PATCH
            # decisionOwnerId makes it; a third of the ideas have an approver and a reviewer.
            member = s.owners[owner[1]]["decision_owner_id"]
            people = [("owner", member)]
            if rng.random() < 0.3:
                others = rng.sample([m for m in s.member_ids if m != member], 2)
                people += [("approver", others[0]), ("reviewer", others[1])]
            for role, who in people:
                decision = rng.choice(("approved", "rejected", "pending"))
                (self.owners if role == "owner" else self.participants).append(
                    NewParticipant(idea, who, role, decision, created + timedelta(days=1), s.uid())
                )
        if rng.random() < 0.05:
            self.meetings.append(
                NewMeeting(
                    idea,
                    "Customer call",
                    created + timedelta(days=2),
                    [s.person()[0] for _ in range(2)],
                    "We discussed this request at length.",
                    rng.choice(("mentioned", "extracted")),
                    f"https://meet.example.com/t/{idea}",
                    s.uid(),
                )
            )
        if rng.random() < 0.08:
            name, email = s.person()
            platform = rng.choice(d.TICKET_PLATFORMS)
            self.tickets.append(
                NewTicket(
                    idea,
                    platform,
                    str(rng.randint(10000, 99999)),
                    "Feature request from support",
                    rng.choice(("open", "pending", "solved")),
                    rng.choice(("low", "normal", "high")),
                    name,
                    email,
                    f"https://{platform}.example.com/tickets/{idea}",
                    s.uid(),
                    created,
                )
            )

    def flush(self) -> None:
        c, t, s, cur = self.s.copy, self.t, self.s, self.s.cur
        # Evidence and the signals of live ideas go first (no key ties them to the idea row),
        # so that the ideas are copied with the figures the API keeps, read from those rows by
        # `evidence_counts` and `signals.figures` (the aggregate of `signals.recount`): no
        # second write of each idea and its twenty indexes. A deleted idea's signals follow its
        # row (`signals.add`, which recounts it), so that the analytics rollups leave them out
        # as they do the API's.
        run(evidence.insert_evidence(cur, self.ws, self.evidence))
        counts = run(evidence.evidence_counts(cur, self.ws, [e.idea_id for e in self.evidence]))
        live = [x for x in self.signals if x.idea_id not in self.deleted]
        run(signals.insert(cur, self.ws, live))
        figures = run(signals.figures(cur, self.ws, [x.idea_id for x in live]))
        for idea in self.ideas:
            idea[COL["validation_evidence_count"]] = counts.get(idea[1])
            for col, value in figures.get(idea[1], {}).items():
                idea[COL[col]] = value
            last = idea[COL["last_signal_at"]]  # activity: the later of the idea's and its signals'
            if last is not None and last > idea[COL["last_activity_at"]]:
                idea[COL["last_activity_at"]] = last
        c("ideas.ideas", IDEA_COLS, [line(idea) for idea in self.ideas])
        c("ideas.votes", "workspace_id, idea_id, voter, value, created_at", t["votes"])
        c(
            "ideas.decisions",
            "workspace_id, id, idea_id, event_type, closure_category, reason,"
            " previous_status, new_status, actor_email, actor_name, source, created_at",
            t["decisions"],
        )
        c("ideas.idea_tags", "workspace_id, idea_id, tag_id", t["tags"])
        if t["links"]:
            c("customers.idea_links", "workspace_id, idea_id, customer_id, linked_at", t["links"])
        if self.s.has_projection:
            c("ideas.customer_links", "workspace_id, idea_id, customer_id, linked_at", t["links"])
        run(evidence.make_owners(cur, self.ws, self.owners))
        run(evidence.insert_participants(cur, self.ws, self.participants))
        run(evidence.insert_meetings(cur, self.ws, self.meetings))
        run(evidence.upsert_tickets(cur, self.ws, self.tickets))
        run(signals.add(cur, self.ws, [x for x in self.signals if x.idea_id in self.deleted]))
        for table, rows in (
            ("ideas.evidence", self.evidence),
            ("ideas.participants", self.owners + self.participants),
            ("ideas.meetings", self.meetings),
            ("ideas.support_tickets", self.tickets),
            ("ideas.signals", self.signals),
        ):
            s.counts[table] = s.counts.get(table, 0) + len(rows)
        s.counts["signals.matched"] = s.counts.get("signals.matched", 0) + sum(
            x.customer_id is not None for x in self.signals
        )
