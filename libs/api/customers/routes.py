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
from .users import (
    CreateUserRequest,
    IdentifyUserRequest,
    ListUsersQuery,
    UpdateUserRequest,
    UserDeletedResponse,
    UserExportResponse,
    UserListResponse,
    UserResponse,
)

SERVICE = "customers"
CUSTOMERS_PATH = f"{API}/customers"
USERS_PATH = f"{API}/users"

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
        description="A second link of the same pair: 409 `conflict`, but a pair that only "
        "the +1 votes of the customer's users link answers 200 and becomes a direct link, which "
        "stays when the votes go. The idea's `totalCustomerARR` follows within a second.",
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
        "for it). A link that +1 votes of the customer's users hold too stays, held by them; "
        "one that only they hold: 409 `conflict`.",
    ),
]

# End users (docs/customers.md, End users).
ROUTES += [
    Route(
        "POST",
        USERS_PATH,
        SERVICE,
        "create_user",
        "customers:write",
        "Create an end user",
        tags=("Users",),
        body=CreateUserRequest,
        responses={200: UserResponse},
        description="An end user: someone who asks for ideas and votes (not a team member), "
        "optionally of a customer. `externalId` and `email` are each unique in the workspace "
        "(e-mail ignoring case): a second one is 409 `conflict`. An unknown `customerId` is 404.",
    ),
    Route(
        "POST",
        f"{USERS_PATH}/identify",
        SERVICE,
        "identify_user",
        "customers:write",
        "Identify an end user",
        tags=("Users",),
        body=IdentifyUserRequest,
        responses={200: UserResponse},
        description="Finds the user by `externalId`, else by `email`, else creates one, then "
        "applies the given fields; 200 either way. Concurrent identifies of one new user make "
        "one user. An e-mail or `externalId` that another user has: 409 `conflict`; an "
        "unknown `customerId`: 404.",
    ),
    Route(
        "GET",
        USERS_PATH,
        SERVICE,
        "list_users",
        "customers:read",
        "List end users",
        tags=("Users",),
        query=ListUsersQuery,
        responses={200: UserListResponse},
        description="Newest first. `search` matches name or e-mail (case-insensitive "
        "substring); `customer_id` keeps one customer's users.",
    ),
    Route(
        "GET",
        f"{USERS_PATH}/{{id}}",
        SERVICE,
        "get_user",
        "customers:read",
        "Get an end user",
        tags=("Users",),
        responses={200: UserResponse},
        description="The user with `voteCount`, the ideas the user votes +1 on now.",
    ),
    Route(
        "PATCH",
        f"{USERS_PATH}/{{id}}",
        SERVICE,
        "update_user",
        "customers:write",
        "Update an end user",
        tags=("Users",),
        body=UpdateUserRequest,
        responses={200: UserResponse},
        description="Omitted fields stay unchanged; `null` clears one. A new `customerId` "
        "moves the user's company demand: the old customer's links that only this user's "
        "votes held go, the new customer is linked to the ideas the user votes +1 on "
        "(`totalCustomerARR` within a second).",
    ),
    Route(
        "DELETE",
        f"{USERS_PATH}/{{id}}",
        SERVICE,
        "delete_user",
        "customers:write",
        "Erase an end user",
        tags=("Users",),
        responses={200: UserDeletedResponse},
        description="Removes the user, their votes (each idea's `voteCount` follows, and "
        "company links held only by their votes go) and their comments (replies to them stay); "
        "ideas they asked for stay with `sourceUserId` and `sourceUserName` null; signals whose "
        "`userEmail` is the user's e-mail get `userId`, `userName` and `userEmail` null; the "
        "webhook delivery log's payloads that carry the e-mail or the name are redacted. The "
        "user is then 404 everywhere, and the e-mail can be used again.",
    ),
    Route(
        "GET",
        f"{USERS_PATH}/{{id}}/export",
        SERVICE,
        "export_user",
        "customers:read",
        "Export everything about an end user",
        tags=("Users",),
        responses={200: UserExportResponse},
        description="Exactly what `DELETE /users/{id}` removes or clears: the user, their "
        "votes (oldest first), their comments, the ideas they asked for and the signals that "
        "carry their e-mail.",
    ),
]
