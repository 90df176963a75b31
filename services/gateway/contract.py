"""Routes the gateway answers itself."""

from libs.common.contract import API, Route

ROUTES = [
    Route("GET", f"{API}/automation/auth", "gateway", "automation_auth", None,
          "Test a key (automation API)", automation=True, tags=("Automation",)),
]
