"""Request and response models of the customers service (the OpenAPI schemas come from these)."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from libs.api.base import Out, data_of, example, page_of
from libs.api.ideas.schemas import Idea
from libs.common.pagination import DEFAULT_LIMIT, MAX_LIMIT, CursorParam
from libs.common.validation import Body, Query, stored_json_size

# Money is stored as numeric and answered as a JSON number; this bound keeps every value exact
# as a double on the way out.
MAX_MONEY = 1e15
Money = Field(default=None, ge=0, le=MAX_MONEY)
# `metadata` is at most 16 KiB, measured as the compact UTF-8 JSON text that is stored
# (docs/customers.md).
MAX_METADATA_BYTES = 16 * 1024


class _CustomerFields(Body):
    """The fields a client may set; shared by create and update."""

    email: str | None = Field(default=None, max_length=320, pattern=r"^[^@\s\x85]+@[^@\s\x85]+$")
    """Contact e-mail"""
    domain: str | None = Field(default=None, max_length=255)
    """Web domain, e.g. `globex.example`"""
    arr: float | None = Money
    """Annual recurring revenue"""
    mrr: float | None = Money
    """Monthly recurring revenue"""
    plan: str | None = Field(default=None, max_length=100)
    """The customer's plan with you"""
    externalId: str | None = Field(default=None, min_length=1, max_length=255)
    """Id in your CRM or billing system; unique in the workspace"""
    metadata: dict[str, Any] | None = None
    """Any JSON object, at most 16 KiB as compact UTF-8 JSON; null clears it"""

    @field_validator("metadata")
    @classmethod
    def _small(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        size = stored_json_size(value)
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"must be at most 16 KiB (16384 bytes) as JSON, got {size} bytes")
        return value

    @field_validator("arr", "mrr")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class CreateCustomerRequest(_CustomerFields):
    """A new customer; only `name` is required."""

    model_config = example(
        {
            "name": "Globex",
            "email": "it@globex.example",
            "domain": "globex.example",
            "arr": 120000,
            "mrr": 10000,
            "plan": "enterprise",
            "externalId": "crm-1042",
            "metadata": {"segment": "enterprise"},
        }
    )

    name: str = Field(min_length=1, max_length=255)
    """Customer name"""


class UpdateCustomerRequest(_CustomerFields):
    """Omitted fields stay unchanged; `null` clears a nullable field. At least one property."""

    model_config = example({"arr": 150000, "plan": "enterprise"})

    name: str = Field(default=None, min_length=1, max_length=255)  # type: ignore[assignment]
    """Customer name (not null)"""

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateCustomerRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        if "name" in self.model_fields_set and self.name is None:
            raise ValueError("name cannot be null")
        return self


class LinkCustomerRequest(Body):
    """Links an existing customer of the workspace to the idea in the path."""

    model_config = example({"customerId": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"})

    customerId: uuid.UUID
    """A customer of the workspace"""


class PageQuery(Query):
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    """Page size, 1 to 100"""
    cursor: CursorParam = None
    """`pagination.nextCursor` of the previous page. Empty or absent: the first page"""


class ListCustomersQuery(PageQuery):
    sort: Literal["createdAt", "arr", "name"] = "createdAt"
    """Sort key; ties are broken by `id`, nulls come last in both orders"""
    order: Literal["asc", "desc"] = "desc"
    """Sort order"""
    search: str | None = Field(default=None, max_length=200)
    """Text found in the name, e-mail or domain (case-insensitive)"""
    min_arr: float | None = Field(default=None, allow_inf_nan=False)
    """Only customers whose ARR is at least this"""
    plan: str | None = Field(default=None, max_length=100)
    """Only customers on this plan"""
    source: str | None = Field(default=None, max_length=100)
    """Only customers from this source (`api` for those created through the API)"""


CUSTOMER_ID = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
CUSTOMER: dict[str, Any] = {
    "id": CUSTOMER_ID,
    "name": "Globex",
    "email": "it@globex.example",
    "domain": "globex.example",
    "arr": 120000,
    "mrr": 10000,
    "plan": "enterprise",
    "source": "api",
    "externalId": "crm-1042",
    "crmCompanyId": None,
    "ideaCount": 3,
    "metadata": {"segment": "enterprise"},
    "createdAt": "2025-02-01T12:00:00.000000Z",
    "updatedAt": "2025-03-01T12:00:00.000000Z",
}


class _CustomerCore(Out):
    """The fields every form of a customer starts with, in this order."""

    id: uuid.UUID
    """The customer's id"""
    name: str
    """Customer name"""
    email: str | None
    """Contact e-mail"""
    domain: str | None
    """Web domain"""
    arr: float | None
    """Annual recurring revenue"""
    mrr: float | None
    """Monthly recurring revenue"""
    plan: str | None
    """The customer's plan with you"""
    source: str
    """Where the record came from: `api` for customers created through the API"""


class CustomerFull(_CustomerCore):
    """A standalone customer (also the `customer` of customer.* events)."""

    model_config = example(CUSTOMER)

    externalId: str | None
    """Id in your CRM or billing system"""
    crmCompanyId: str | None
    """Company id in a connected CRM"""
    ideaCount: int
    """Ideas linked to the customer"""
    metadata: dict[str, Any] | None
    """Any JSON object"""
    createdAt: datetime
    """When the customer was created"""
    updatedAt: datetime | None
    """When it last changed"""


class LinkedCustomer(_CustomerCore):
    """A customer as linked to an idea."""

    model_config = example(
        {k: CUSTOMER[k] for k in ("id", "name", "email", "domain", "arr", "mrr", "plan", "source")}
        | {"linkedAt": "2025-03-02T09:30:00.000000Z"}
    )

    linkedAt: datetime
    """When the customer was linked to the idea"""


class CustomerLink(Out):
    """A link between an idea and a customer."""

    model_config = example(
        {
            "ideaId": "3f1c2a9e-8b4d-4e61-9a57-0c2d5e7f8a91",
            "customerId": CUSTOMER_ID,
            "linkedAt": "2025-03-02T09:30:00.000000Z",
        }
    )

    ideaId: uuid.UUID
    """The idea's id"""
    customerId: uuid.UUID
    """The customer's id"""
    linkedAt: datetime
    """When they were linked"""


class CustomerUnlinked(Out):
    """A link between an idea and a customer, removed."""

    model_config = example(
        {
            "ideaId": "3f1c2a9e-8b4d-4e61-9a57-0c2d5e7f8a91",
            "customerId": CUSTOMER_ID,
            "unlinked": True,
        }
    )

    ideaId: uuid.UUID
    """The idea's id"""
    customerId: uuid.UUID
    """The customer's id"""
    unlinked: bool
    """Always true"""


CustomerResponse = data_of("CustomerResponse", CustomerFull, "A customer")
CustomerListResponse = page_of(
    "CustomerListResponse",
    CustomerFull,
    "A page of customers, with the total matching the filters",
    total=True,
)
LinkedCustomerListResponse = page_of(
    "LinkedCustomerListResponse", LinkedCustomer, "A page of the customers linked to an idea"
)
CustomerLinkResponse = data_of("CustomerLinkResponse", CustomerLink, "The new link")
CustomerUnlinkResponse = data_of("CustomerUnlinkResponse", CustomerUnlinked, "The link is gone")
CustomerIdeaListResponse = page_of(
    "CustomerIdeaListResponse", Idea, "A page of the ideas linked to a customer"
)
