"""What every public model shares: the response base, examples, and the `{"data": ...}` shapes.

A field's description is its docstring (the line under it); a model's example is given once,
with `example(...)`, and the envelopes built here derive theirs from what they wrap, so the
document shows an example for every response without repeating one.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from libs.common.pagination import Pagination, PaginationWithTotal


class Out(BaseModel):
    """Base of response models: every field required (nullable where a value may be missing)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


def flat_members(model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """A model's members as the columns of one flat row (a CSV export's), in the model's order:
    each column's name and its path in the model's JSON object. A nested model's members are
    named by the field's name and theirs (`rice.reach` is `riceReach`)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, info in model.model_fields.items():
        tp = info.annotation
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            for sub, path in flat_members(tp).items():
                out[name + sub[0].upper() + sub[1:]] = (name, *path)
        else:
            out[name] = (name,)
    return out


def example(value: Any) -> ConfigDict:
    """The `model_config` entry that gives a model its example (added to its own config)."""
    return ConfigDict(json_schema_extra={"examples": [value]})


def example_of(tp: Any) -> Any:
    """The example of a model, or of a list of one; None when it has none."""
    if typing.get_origin(tp) is list:
        inner = example_of(typing.get_args(tp)[0])
        return None if inner is None else [inner]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        extra = tp.model_config.get("json_schema_extra")
        if isinstance(extra, dict) and extra.get("examples"):
            return extra["examples"][0]  # type: ignore[index]
    return None


def _config(value: Any) -> ConfigDict:
    return example(value) if value is not None else ConfigDict()


def data_of(name: str, tp: Any, description: str) -> type[BaseModel]:
    """`{"data": tp}` as a named model (component names must be plain identifiers)."""
    inner = example_of(tp)
    base = type(
        f"_{name}", (Out,), {"model_config": _config(None if inner is None else {"data": inner})}
    )
    return create_model(
        name, __base__=base, __doc__=description, data=(tp, Field(description="The result"))
    )


PAGE_EXAMPLE = {"limit": 25, "hasMore": True, "nextCursor": "eyJzIjoiNWQ0MSIsInYiOltdfQ.c2ln"}


def page_of(name: str, tp: Any, description: str, total: bool = False) -> type[BaseModel]:
    """`{"data": [tp], "pagination": ...}`: one keyset page."""
    inner = example_of(tp)
    pagination = {**PAGE_EXAMPLE, "total": 1234} if total else PAGE_EXAMPLE
    base = type(
        f"_{name}",
        (Out,),
        {
            "model_config": _config(
                None if inner is None else {"data": [inner], "pagination": pagination}
            )
        },
    )
    return create_model(
        name,
        __base__=base,
        __doc__=description,
        data=(list[tp], Field(description="The records of this page, in the listing's order")),
        pagination=(
            PaginationWithTotal if total else Pagination,
            Field(description="Where this page ends and how to ask for the next"),
        ),
    )
