"""The customers service's public routes."""

from libs.api.route import API, Route

from .schemas import (CreateCustomerRequest, CustomerIdeaListResponse, CustomerLinkResponse, CustomerListResponse,
                     CustomerResponse, LinkCustomerRequest, LinkedCustomerListResponse,
                     ListCustomersQuery, PageQuery, UpdateCustomerRequest)

S = "customers"
C = f"{API}/customers"

ROUTES = [
    Route("GET", C, S, "list_customers", "customers:read", "List customers", tags=("Customers",),
          query=ListCustomersQuery, responses={200: CustomerListResponse},
          description="`search` matches name, e-mail or domain (case-insensitive substring); "
                      "`min_arr` keeps customers whose ARR is at least the value."),
    Route("POST", C, S, "create_customer", "customers:write", "Create a customer",
          tags=("Customers",), body=CreateCustomerRequest, responses={200: CustomerResponse},
          description="`source` is `api`. A second customer with the same `externalId` in the "
                      "workspace: 409 `conflict`. Emits `customer.created`."),
    Route("GET", f"{C}/{{id}}", S, "get_customer", "customers:read", "Get a customer",
          tags=("Customers",), responses={200: CustomerResponse},
          description="The customer with the number of ideas linked to it."),
    Route("PATCH", f"{C}/{{id}}", S, "update_customer", "customers:write", "Update a customer",
          tags=("Customers",), body=UpdateCustomerRequest, responses={200: CustomerResponse},
          description="Omitted fields stay unchanged; `null` clears a nullable field. "
                      "Emits `customer.updated`."),
    Route("GET", f"{C}/{{id}}/ideas", S, "list_customer_ideas", "customers:read",
          "Ideas linked to a customer", tags=("Customers",), query=PageQuery,
          responses={200: CustomerIdeaListResponse},
          description="Newest link first; deleted ideas are left out."),
    Route("GET", f"{API}/ideas/{{id}}/customers", S, "list_idea_customers", "customers:read",
          "Customers linked to an idea", tags=("Customers",), query=PageQuery,
          responses={200: LinkedCustomerListResponse}, description="Newest link first."),
    Route("POST", f"{API}/ideas/{{id}}/customers", S, "link_customer", "customers:write",
          "Link a customer to an idea", tags=("Customers",), body=LinkCustomerRequest,
          responses={200: CustomerLinkResponse},
          description="A second link of the same pair: 409 `conflict`. The idea's "
                      "`totalCustomerARR` follows within a second."),
]
