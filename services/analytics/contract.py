"""The analytics service's public routes: reports and exports (plan-gated)."""

from libs.common.contract import API, Route

S = "analytics"
A = f"{API}/analytics"
E = f"{API}/export"

ROUTES = [
    *(Route("GET", f"{A}/{name}", S, f"analytics_{name.replace('-', '_')}", "analytics:read",
            summary, plan_gated=True, tags=("Analytics",))
      for name, summary in (
          ("summary", "Idea, RICE, customer and revenue summary"),
          ("ideas-over-time", "Ideas over time"),
          ("decisions", "Decisions: outcomes, owners, overdue, over time"),
          ("funnel", "Ideas per status with ARR and RICE; average days between stages"),
          ("signals", "Signal volume, sentiment and platforms"),
          ("roadmap", "Ideas per roadmap stage and shipping velocity"),
          ("revenue-impact", "ARR by status and the top 20 ideas by ARR"),
          ("categories", "Per-category metrics"),
      )),
    Route("GET", f"{E}/ideas", S, "export_ideas", "ideas:read", "Export ideas (CSV or JSON)",
          plan_gated=True, export=True, tags=("Export",)),
    Route("GET", f"{E}/customers", S, "export_customers", "customers:read",
          "Export customers (CSV or JSON)", plan_gated=True, export=True, tags=("Export",)),
    Route("GET", f"{E}/decisions", S, "export_decisions", "ideas:read",
          "Export decided ideas (CSV or JSON)", plan_gated=True, export=True, tags=("Export",)),
    Route("GET", f"{E}/signals", S, "export_signals", "ideas:read",
          "Export signals (CSV or JSON)", plan_gated=True, export=True, tags=("Export",)),
]
