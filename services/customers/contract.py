"""The customers service's public routes."""

from libs.common.contract import API, Route

S = "customers"
C = f"{API}/customers"

ROUTES = [
    Route("GET", C, S, "list_customers", "customers:read", "List customers", tags=("Customers",)),
    Route("POST", C, S, "create_customer", "customers:write", "Create a customer",
          tags=("Customers",)),
    Route("GET", f"{C}/{{id}}", S, "get_customer", "customers:read", "Get a customer",
          tags=("Customers",)),
    Route("PATCH", f"{C}/{{id}}", S, "update_customer", "customers:write", "Update a customer",
          tags=("Customers",)),
    Route("GET", f"{C}/{{id}}/ideas", S, "list_customer_ideas", "customers:read",
          "Ideas linked to a customer", tags=("Customers",)),
    Route("GET", f"{API}/ideas/{{id}}/customers", S, "list_idea_customers", "customers:read",
          "Customers linked to an idea", tags=("Customers",)),
    Route("POST", f"{API}/ideas/{{id}}/customers", S, "link_customer", "customers:write",
          "Link a customer to an idea", tags=("Customers",)),
]
