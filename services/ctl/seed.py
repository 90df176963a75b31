"""`ideasctl seed`: deterministic, realistic data for every resource of one workspace.

Ideas are generated in chunks; each chunk's ideas, votes, decisions, tags and customer links go
to PostgreSQL with COPY, its evidence, participants, meetings, tickets and signals through the
ideas service's storage functions, a chunk's rows in one call each (seed_rows.py); then end users
of the customers and their votes (seed_users.py). Customers are written to the customers
service's tables, and each idea's totalCustomerARR and customer count are computed here from
the same links, so the projection starts consistent (its tables are filled too when they exist).
"""

from __future__ import annotations

import io
import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from libs.common import db
from services.ideas import members, products, tags
from services.ideas.state import create_state

from . import seed_data as d
from .seed_rows import IdeaRows
from .seed_rows import line as _line
from .seed_users import seed_users
from .sync_cursor import SyncCursor, run

CHUNK = 50_000
DAYS = 180
# From this many ideas on, the ideas table's secondary indexes are dropped before the load and
# built again after it, in the same transaction: one sorted build per index is many times
# cheaper than a million random insertions into twenty indexes that do not fit in memory.
BULK = 100_000


class Seeder:
    def __init__(self, conn: Any, workspace_id: uuid.UUID, seed: int) -> None:
        self.conn, self.ws = conn, workspace_id
        # The same seed gives the same data in every workspace; ids are mixed with the
        # workspace id so that two workspaces never share one.
        self.rng = random.Random(seed)
        self.now = datetime.now(UTC).replace(microsecond=0)
        self.counts: dict[str, int] = {}
        self.cur: Any = SyncCursor(conn)  # the ideas service's storage functions run on it

    def uid(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128) ^ self.ws.int, version=4)

    def copy(self, table: str, columns: str, lines: list[str]) -> None:
        if not lines:
            return
        with self.conn.cursor() as cur:
            cur.copy_expert(f"COPY {table} ({columns}) FROM STDIN", io.StringIO("".join(lines)))
        self.counts[table] = self.counts.get(table, 0) + len(lines)

    def person(self) -> tuple[str, str]:
        first, last = self.rng.choice(d.FIRST), self.rng.choice(d.LAST)
        return f"{first} {last}", f"{first}.{last}@example.com".lower()

    # ---- workspace-level records ------------------------------------------------------------

    def workspace(self) -> None:
        # Every record here goes through the ideas service's own storage functions (the
        # routes' way in), on this transaction's connection: the workspace's state and its
        # default stages only when the workspace is new to the service (a stage it deleted
        # does not come back), tags, products, members and decision owners.
        store = self.cur
        run(create_state(store, self.ws))
        self.stages = [
            r["id"]
            for r in run(
                db.fetchall(
                    store,
                    "SELECT id FROM ideas.roadmap_stages WHERE workspace_id = %s ORDER BY position",
                    (self.ws,),
                )
            )
        ]
        # Tag names are unique in a workspace (ignoring case): a tag the workspace already has
        # (an earlier seed, or one made through the API) is used, not made again.
        have = {
            r["name"].lower(): r["id"]
            for r in run(
                db.fetchall(
                    store, "SELECT name, id FROM ideas.tags WHERE workspace_id = %s", (self.ws,)
                )
            )
        }
        ids = {name: self.uid() for name, _ in d.TAGS}  # drawn for every tag: ids stay stable
        self.tags = [have.get(name.lower(), ids[name]) for name, _ in d.TAGS]
        for name, color in d.TAGS:
            if name.lower() not in have:
                run(tags.create(store, self.ws, name, color, tag_id=ids[name]))
                self.counts["ideas.tags"] = self.counts.get("ideas.tags", 0) + 1
        ids = {name: self.uid() for name, _ in d.PRODUCTS}
        self.products = list(ids.values())
        made = run(  # by an earlier seed of the same seed value: the same ids
            db.fetchall(
                store,
                "SELECT id FROM ideas.products WHERE workspace_id = %s AND id = ANY(%s::uuid[])",
                (self.ws, self.products),
            )
        )
        for n, p in d.PRODUCTS:
            if ids[n] not in {r["id"] for r in made}:
                parent = ids.get(p) if p else None
                run(products.create(store, self.ws, n, parent, product_id=ids[n]))
                self.counts["ideas.products"] = self.counts.get("ideas.products", 0) + 1
        # A member's e-mail is unique in the workspace (ignoring case): one the workspace
        # already has (an earlier seed, or one added through the API) is used, not added again.
        self.members = []
        self.owners: dict[str, dict[str, Any]] = {}  # e-mail -> the ideas' owner columns
        for k in range(12):
            name, email = self.person()
            email = email.replace("@", f"{k}@")
            seen = self.now - timedelta(hours=self.rng.randint(1, 24 * 60))
            member_id = self.uid()
            role = d.ROLES[k % len(d.ROLES)] if k else "owner"
            dashboard = self.rng.random() < 0.8
            found: uuid.UUID | None = run(
                db.fetchval(
                    store,
                    "SELECT id FROM ideas.members WHERE workspace_id = %s AND lower(email) = %s",
                    (self.ws, email.lower()),
                )
            )
            if found is None:
                run(
                    members.create(
                        store,
                        self.ws,
                        name,
                        email,
                        role,
                        dashboard,
                        member_id=member_id,
                        last_active_at=seen,
                    )
                )
                self.counts["ideas.members"] = self.counts.get("ideas.members", 0) + 1
            owner = run(members.owner_columns(store, self.ws, found or member_id))
            self.members.append((owner["decision_owner_name"], owner["decision_owner_email"]))
            self.owners[owner["decision_owner_email"]] = owner
        self.member_ids = [self.owners[email]["decision_owner_id"] for _, email in self.members]

    def customers(self, m: int) -> None:
        self.customer_arr: list[tuple[uuid.UUID, float | None, datetime]] = []
        self.contacts: dict[uuid.UUID, tuple[str, str]] = {}  # id -> (e-mail, domain)
        self.has_projection = self._has_table("ideas", "customer_arr")
        if not self._has_table("customers", "customers"):
            return  # the customers service is not part of this build
        plans = self.rng.choices([p for p, _ in d.PLANS], [w for _, w in d.PLANS], k=m)
        lines = []
        for n in range(m):
            company = f"{self.rng.choice(d.COMPANIES)} {n + 1}"
            domain = f"{company.lower().replace(' ', '-')}.example.com"
            arr = None if self.rng.random() < 0.05 else float(self.rng.randint(1, 400) * 600)
            cid = self.uid()
            created = self.now - timedelta(days=self.rng.uniform(0, DAYS + 180))
            self.customer_arr.append((cid, arr, created))
            self.contacts[cid] = (f"billing@{domain}", domain)
            lines.append(
                _line(
                    (
                        self.ws,
                        cid,
                        company,
                        f"billing@{domain}",
                        domain,
                        arr,
                        None if arr is None else round(arr / 12, 2),
                        plans[n],
                        "crm",
                        f"crm-{n + 1}",
                        f"co_{n + 1}",
                        created,
                        created,
                    )
                )
            )
        self.copy(
            "customers.customers",
            "workspace_id, id, name, email, domain, arr, mrr, plan,"
            " source, external_id, crm_company_id, created_at, updated_at",
            lines,
        )
        if self.has_projection:
            self.copy(
                "ideas.customer_arr",
                "workspace_id, customer_id, arr, version",
                [_line((self.ws, c, a, t)) for c, a, t in self.customer_arr],
            )
        if self._has_table("ideas", "customer_contacts"):
            # the customer match of new signals (docs/ideas.md, Signals)
            with self.conn.cursor() as cur:
                cur.execute(
                    "INSERT INTO ideas.customer_contacts"
                    " (workspace_id, customer_id, email_key, domain_key, version)"
                    " SELECT workspace_id, id, lower(email), lower(domain), created_at"
                    " FROM customers.customers WHERE workspace_id = %s ON CONFLICT DO NOTHING",
                    (self.ws,),
                )

    def has_table(self, schema: str, table: str) -> bool:
        return self._has_table(schema, table)

    def _has_table(self, schema: str, table: str) -> bool:
        with self.conn.cursor() as cur:
            cur.execute("SELECT to_regclass(%s)", (f"{schema}.{table}",))
            return cur.fetchone()[0] is not None

    # ---- ideas --------------------------------------------------------------------------------

    def ideas(self, n: int) -> None:
        with self.conn.cursor() as cur:
            cur.execute(
                "UPDATE ideas.workspace_state SET next_idea_number = next_idea_number + %s"
                " WHERE workspace_id = %s RETURNING next_idea_number - %s",
                (n, self.ws, n),
            )
            first = cur.fetchone()[0]
        self.first_number = first
        start = self.now - timedelta(days=DAYS)
        span = DAYS * 86400.0
        for base in range(0, n, CHUNK):
            k = min(CHUNK, n - base)
            offsets = sorted(self.rng.random() * span for _ in range(k))
            rows = IdeaRows(self, start, first + base)
            for j, off in enumerate(offsets):
                rows.add(j, start + timedelta(seconds=off))
            rows.flush()


def seed(
    conn: Any, workspace_id: str, ideas: int = 200, customers: int = 50, seed_value: int = 1
) -> dict[str, Any]:
    """Seed one workspace in one transaction (nothing is left half-written on failure)."""
    started = time.monotonic()
    seeder = Seeder(conn, uuid.UUID(workspace_id), seed_value)
    with conn:
        with conn.cursor() as cur:
            cur.execute("SET LOCAL maintenance_work_mem = '512MB'")
            cur.execute("SET LOCAL synchronous_commit = off")
        seeder.workspace()
        seeder.customers(customers)
        bulk = ideas >= BULK
        rebuild = drop_indexes(conn) if bulk else []
        if bulk:  # the signals' figures are updates of the ideas: those triggers too
            set_rollup_triggers(conn, enabled=False, inserts_only=False)
        seeder.ideas(ideas)
        with conn.cursor() as cur:
            for definition in rebuild:
                cur.execute(definition)
        # End users of the customers, and their votes (after the indexes are back: the votes
        # find their ideas by number).
        seed_users(seeder, seeder.first_number, ideas)
        if bulk:
            set_rollup_triggers(conn, enabled=True, inserts_only=False)
            with conn.cursor() as cur:
                cur.execute("SELECT ideas.rebuild_rollups(%s)", (seeder.ws,))
    c = seeder.counts
    return {
        "ideas": c.get("ideas.ideas", 0),
        "customers": c.get("customers.customers", 0),
        "workspaceId": workspace_id,
        "votes": c.get("ideas.votes", 0),
        "decisions": c.get("ideas.decisions", 0),
        "signals": c.get("ideas.signals", 0),
        "links": c.get("customers.idea_links", 0),
        "users": c.get("customers.users", 0),
        "userVotes": c.get("user votes", 0),
        "comments": c.get("comments", 0),
        "seconds": round(time.monotonic() - started, 1),
    }


def set_rollup_triggers(conn: Any, *, enabled: bool, inserts_only: bool = True) -> None:
    """Turn the analytics rollup triggers (ideas migration 0300) off or on again, those of
    inserts only (a bulk load, which then rebuilds the workspace's rollups once, at the end,
    instead of per COPY) or all of them. In the caller's transaction, which holds the tables
    locked until it ends; whoever turns them off rebuilds the rollups (`ideas.rebuild_rollups`)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT c.relname, t.tgname FROM pg_trigger t"
            " JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE c.relnamespace = 'ideas'::regnamespace AND t.tgname LIKE %s"
            " ORDER BY 1, 2",
            ("%\\_rollup\\_insert" if inserts_only else "%\\_rollup\\_%",),
        )
        for table, trigger in cur.fetchall():
            cur.execute(
                f"ALTER TABLE ideas.{table} {'ENABLE' if enabled else 'DISABLE'} TRIGGER {trigger}"
            )


def drop_indexes(conn: Any) -> list[str]:
    """Drop the ideas table's secondary indexes (locking the table until commit); return the
    statements that build them again. Primary key and unique constraints stay."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i"
            " JOIN pg_class c ON c.relname = i.indexname"
            " JOIN pg_index x ON x.indexrelid = c.oid"
            " WHERE i.schemaname = 'ideas' AND i.tablename = 'ideas'"
            " AND NOT x.indisunique ORDER BY i.indexname"
        )
        found = cur.fetchall()
        for name, _ in found:
            cur.execute(f"DROP INDEX ideas.{name}")
    return [definition for _, definition in found]
