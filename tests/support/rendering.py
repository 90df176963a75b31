"""Checks of the one rendering (docs/api.md) on any JSON the API writes.

`FormCheck.body` walks a body alongside its schema in the served OpenAPI document and records
every place where the rendering differs from the rule: an object whose keys are not in the
order of the schema's `properties`, a date-time not written `YYYY-MM-DDTHH:MM:SS.ffffffZ` (any
string that looks like a date-time counts, whatever the schema says), or a body that is not
compact (its bytes differ from the compact serialization of what they parse to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
# Anything a reader would take for a date-time (with a time of day), in any form.
LOOKS_LIKE_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


@dataclass
class FormCheck:
    document: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    objects: int = 0  # objects whose key order was checked against a schema
    date_times: int = 0  # date-time strings seen

    def schema(self, name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{name}"}

    def response_schema(
        self, method: str, path: str, status: int, media: str = "application/json"
    ) -> dict[str, Any]:
        from tests.support.openapi_check import OpenApi

        op = OpenApi(self.document).operation(method, path)
        assert op is not None, f"{method} {path} is not documented"
        answer = op["responses"][str(status)]
        if "$ref" in answer:  # a shared answer: components/responses/<name>
            answer = self.document["components"]["responses"][answer["$ref"].rsplit("/", 1)[1]]
        return answer["content"][media]["schema"]  # type: ignore[no-any-return]

    def body(self, raw: bytes, schema: dict[str, Any], where: str) -> Any:
        """Check a whole JSON body; return what it parses to."""
        value = orjson.loads(raw)
        if orjson.dumps(value) != raw:
            self.problems.append(f"{where}: not compact: {raw[:120]!r}")
        self.value(value, schema, where)
        return value

    def value(self, value: Any, schema: dict[str, Any] | None, where: str) -> None:
        schema = self._resolve(schema or {})
        if value is None:
            return
        if isinstance(value, dict):
            self._object(value, schema, where)
        elif isinstance(value, list):
            items = schema.get("items") if schema else None
            for n, item in enumerate(value):
                self.value(item, items, f"{where}[{n}]")
        elif isinstance(value, str):
            self.string(value, where, schema.get("format") == "date-time")

    def string(self, text: str, where: str, is_date_time: bool = False) -> None:
        if is_date_time or LOOKS_LIKE_DATE_TIME.match(text):
            self.date_times += 1
            if not DATE_TIME.match(text):
                self.problems.append(f"{where}: date-time {text!r} not in the one form")

    def _object(self, value: dict[str, Any], schema: dict[str, Any], where: str) -> None:
        props = schema.get("properties")
        if props:
            self.objects += 1
            want = [k for k in props if k in value]
            if list(value) != want:
                self.problems.append(
                    f"{where}: keys {list(value)} not in the document's order {want}"
                )
            for key, item in value.items():
                self.value(item, props.get(key), f"{where}.{key}")
            return
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            self.value(item, extra if isinstance(extra, dict) else None, f"{where}.{key}")

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            schema = self.document["components"]["schemas"][name]
        for key in ("anyOf", "oneOf", "allOf"):
            branches = [self._resolve(b) for b in schema.get(key, [])]
            typed = [b for b in branches if b.get("type") != "null"]
            if typed:
                # Nullable fields are anyOf [X, null]; a union of objects takes the first whose
                # properties it has (no union of objects here has two that overlap).
                objects = [b for b in typed if "properties" in b]
                return objects[0] if objects else typed[0]
        return schema
