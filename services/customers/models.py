"""Request and response models of the customers service (the OpenAPI schemas come from these)."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Any, Literal

import orjson

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from libs.common.pagination import (DEFAULT_LIMIT, MAX_LIMIT, CursorParam, Pagination,
                                     PaginationWithTotal)
from libs.common.validation import Body, Query
from services.ideas.models import Idea

# Money is stored as numeric and answered as a JSON number; this bound keeps every value exact
# as a double on the way out.
MAX_MONEY = 1e15
Money = Field(default=None, ge=0, le=MAX_MONEY)
# CONTRACT section 11: `metadata` is at most 16 KiB as JSON, measured as the compact UTF-8 JSON
# text that is stored (docs/customers.md).
MAX_METADATA_BYTES = 16 * 1024


class _CustomerFields(Body):
    """The fields a client may set; shared by create and update."""

    email: str | None = Field(default=None, max_length=320,
                              pattern=r"^[^@\s]+@[^@\s]+$")
    domain: str | None = Field(default=None, max_length=255)
    arr: float | None = Money
    mrr: float | None = Money
    plan: str | None = Field(default=None, max_length=100)
    externalId: str | None = Field(default=None, min_length=1, max_length=255)
    metadata: dict[str, Any] | None = Field(
        default=None, description="A JSON object of your own, at most 16 KiB as compact UTF-8 "
                                  "JSON; null clears it")

    @field_validator("metadata")
    @classmethod
    def _small(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        try:
            size = len(orjson.dumps(value))
        except orjson.JSONEncodeError:  # e.g. an integer beyond 64 bits
            raise ValueError("cannot be stored (integers must fit in 64 bits)") from None
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

    name: str = Field(min_length=1, max_length=255)


class UpdateCustomerRequest(_CustomerFields):
    """Omitted fields stay unchanged; `null` clears a nullable field. At least one property."""

    name: str = Field(default=None, min_length=1, max_length=255)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _not_empty(self) -> UpdateCustomerRequest:
        if not self.model_fields_set:
            raise ValueError("at least one property is required")
        if "name" in self.model_fields_set and self.name is None:
            raise ValueError("name cannot be null")
        return self


class LinkCustomerRequest(Body):
    """Links an existing customer of the workspace to the idea in the path."""

    customerId: uuid.UUID


class PageQuery(Query):
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    cursor: CursorParam = None


class ListCustomersQuery(PageQuery):
    sort: Literal["createdAt", "arr", "name"] = "createdAt"
    order: Literal["asc", "desc"] = "desc"
    search: str | None = Field(default=None, max_length=200)
    min_arr: float | None = Field(default=None, allow_inf_nan=False)
    plan: str | None = Field(default=None, max_length=100)
    source: str | None = Field(default=None, max_length=100)


class CustomerFull(BaseModel):
    """A standalone customer (also the `customer` of customer.* events)."""

    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID
    name: str
    email: str | None
    domain: str | None
    arr: float | None
    mrr: float | None
    plan: str | None
    source: str
    externalId: str | None
    crmCompanyId: str | None
    ideaCount: int
    metadata: dict[str, Any] | None
    createdAt: datetime
    updatedAt: datetime | None


class LinkedCustomer(BaseModel):
    """A customer as linked to an idea."""

    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID
    name: str
    email: str | None
    domain: str | None
    arr: float | None
    mrr: float | None
    plan: str | None
    source: str
    linkedAt: datetime


class CustomerLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ideaId: uuid.UUID
    customerId: uuid.UUID
    linkedAt: datetime


class CustomerResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: CustomerFull


class CustomerListResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: list[CustomerFull]
    pagination: PaginationWithTotal


class LinkedCustomerListResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: list[LinkedCustomer]
    pagination: Pagination


class CustomerLinkResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: CustomerLink


class CustomerIdeaListResponse(BaseModel):
    """A customer's linked ideas (the ideas service's Idea bodies)."""

    model_config = ConfigDict(extra="forbid")
    data: list[Idea]
    pagination: Pagination
