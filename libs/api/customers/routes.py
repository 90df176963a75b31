"""The customers service's public routes."""

from libs.api.route import API, Route, Tool

from .schemas import (
    CreateCustomerRequest,
    CustomerIdeaListResponse,
    CustomerLinkResponse,
    CustomerListResponse,
    CustomerResponse,
    CustomerUnlinkResponse,
    LinkCustomerRequest,
    LinkedCustomerListResponse,
    ListCustomersQuery,
    PageQuery,
    UpdateCustomerRequest,
)

SERVICE = "customers"
CUSTOMERS_PATH = f"{API}/customers"

# MCP tools (docs/mcp.md), each beside the route it calls.
LIST_CUSTOMERS = Tool(
    "list_customers",
    "List the workspace's customers, newest first, with their plan, ARR and MRR. `search` "
    "matches name, e-mail or domain (case-insensitive). Pass `nextCursor` back as `cursor` for "
    "the next page; `total` counts every match.",
    inputs=("search", "limit", "cursor"),
    limit=(10, 50),
    key="customers",
    page=True,
    descriptions={
        "search": "Part of a name, e-mail address or domain.",
        "limit": "Customers per page (1 to 50).",
        "cursor": "`nextCursor` of the previous page, with the same `search`.",
    },
)
LINK_CUSTOMER = Tool(
    "link_customer",
    "Link a customer to an idea (the customer asked for it): the customer's ARR then counts "
    "in the idea's `totalCustomerARR`. A pair already linked is a conflict.",
    path_input="ideaId",
    idea_inputs=("ideaId",),
    inputs=("customerId",),
    descriptions={
        "ideaId": "The idea: its uuid or its `IDEA-<n>` id.",
        "customerId": "The customer's uuid.",
    },
)

ROUTES = [
    Route(
        "GET",
        CUSTOMERS_PATH,
        SERVICE,
        "list_customers",
        "customers:read",
        "List customers",
        tags=("Customers",),
        query=ListCustomersQuery,
        responses={200: CustomerListResponse},
        tool=LIST_CUSTOMERS,
        description="`search` matches name, e-mail or domain (case-insensitive substring); "
        "`min_arr` keeps customers whose ARR is at least the value.",
    ),
    Route(
        "POST",
        CUSTOMERS_PATH,
        SERVICE,
        "create_customer",
        "customers:write",
        "Create a customer",
        tags=("Customers",),
        body=CreateCustomerRequest,
        responses={200: CustomerResponse},
        description="`source` is `api`. A second customer with the same `externalId` in the "
        "workspace: 409 `conflict`. Emits `customer.created`.",
    ),
    Route(
        "GET",
        f"{CUSTOMERS_PATH}/{{id}}",
        SERVICE,
        "get_customer",
        "customers:read",
        "Get a customer",
        tags=("Customers",),
        responses={200: CustomerResponse},
        description="The customer with the number of ideas linked to it.",
    ),
    Route(
        "PATCH",
        f"{CUSTOMERS_PATH}/{{id}}",
        SERVICE,
        "update_customer",
        "customers:write",
        "Update a customer",
        tags=("Customers",),
        body=UpdateCustomerRequest,
        responses={200: CustomerResponse},
        description="Omitted fields stay unchanged; `null` clears a nullable field. "
        "Emits `customer.updated`.",
    ),
    Route(
        "GET",
        f"{CUSTOMERS_PATH}/{{id}}/ideas",
        SERVICE,
        "list_customer_ideas",
        "customers:read",
        "Ideas linked to a customer",
        tags=("Customers",),
        query=PageQuery,
        responses={200: CustomerIdeaListResponse},
        description="Newest link first; deleted ideas are left out.",
    ),
    Route(
        "GET",
        f"{API}/ideas/{{id}}/customers",
        SERVICE,
        "list_idea_customers",
        "customers:read",
        "Customers linked to an idea",
        tags=("Customers",),
        query=PageQuery,
        responses={200: LinkedCustomerListResponse},
        description="Newest link first.",
    ),
    Route(
        "POST",
        f"{API}/ideas/{{id}}/customers",
        SERVICE,
        "link_customer",
        "customers:write",
        "Link a customer to an idea",
        tags=("Customers",),
        body=LinkCustomerRequest,
        responses={200: CustomerLinkResponse},
        tool=LINK_CUSTOMER,
        description="A second link of the same pair: 409 `conflict`. The idea's "
        "`totalCustomerARR` follows within a second.",
    ),
    Route(
        "DELETE",
        f"{API}/ideas/{{id}}/customers/{{customerId}}",
        SERVICE,
        "unlink_customer",
        "customers:write",
        "Unlink a customer from an idea",
        tags=("Customers",),
        responses={200: CustomerUnlinkResponse},
        description="Removes the link: the customer's ARR leaves the idea's `totalCustomerARR` "
        "within a second. A pair that is not linked: 404 `not_found`. A link that a merge "
        "copied to the primary goes like any other (the unmerge then has nothing to remove "
        "for it).",
    ),
]
