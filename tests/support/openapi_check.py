"""Check responses against the served OpenAPI document (JSON Schema 2020-12, as 3.1 uses)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import jsonschema


class OpenApi:
    def __init__(self, document: dict[str, Any]) -> None:
        self.doc = document
        self._paths = [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", p) + "$"), p) for p in document["paths"]
        ]

    def operation(self, method: str, path: str) -> dict[str, Any] | None:
        path = path.split("?", 1)[0]
        # Literal segments beat templated ones: /ideas/batch is not /ideas/{id}.
        matches = sorted(
            (tpl for rx, tpl in self._paths if rx.match(path)), key=lambda t: t.count("{")
        )
        for tpl in matches:
            op = self.doc["paths"][tpl].get(method.lower())
            if op is not None:
                return op  # type: ignore[no-any-return]
        return None

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """A `$ref` to a component, followed (responses, headers, parameters)."""
        while "$ref" in node:
            _, _, kind, name = node["$ref"].split("/")
            node = self.doc["components"][kind][name]
        return node

    def check(
        self, method: str, path: str, status: int, content_type: str, body: Any, headers: Any = None
    ) -> None:
        """Raise AssertionError when the response is not what the document promises."""
        op = self.operation(method, path)
        if op is None:
            if status >= 400:  # an unknown path still answers with the error envelope
                schema = {
                    "$ref": "#/components/schemas/Error",
                    "components": self.doc["components"],
                }
                jsonschema.Draft202012Validator(schema).validate(body)
                return
            raise AssertionError(f"{method} {path} is not in the OpenAPI document")
        resp = op["responses"].get(str(status))
        assert resp is not None, f"{method} {path}: status {status} not documented"
        resp = self.resolve(resp)
        if headers is not None:
            for name, header in resp.get("headers", {}).items():
                if self.resolve(header).get("required"):
                    assert name in headers, f"{method} {path} {status}: no {name} header"
        media = (content_type or "").split(";")[0].strip()
        content = resp.get("content", {})
        if not content:
            return
        assert media in content, f"{method} {path} {status}: {media} not documented"
        if media == "application/json":
            self._validator(id(self), str(status), op["operationId"], media).validate(body)

    @cache  # noqa: B019 - one document per test run
    def _validator(self, _: int, status: str, operation_id: str, media: str) -> Any:
        op = next(
            o
            for p in self.doc["paths"].values()
            for o in p.values()
            if o.get("operationId") == operation_id
        )
        schema = dict(self.resolve(op["responses"][status])["content"][media]["schema"])
        schema["components"] = self.doc["components"]
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return cls(schema, format_checker=cls.FORMAT_CHECKER)
