"""The tool catalogue built from the route table's declarations: every tool once, its inputs
mapped to its route's path and body."""

from __future__ import annotations

import uuid

from libs.api.route import API
from libs.api.table import TOOL_ROUTES
from services.mcp.catalogue import build, idea_ref


def test_thirteen_tools_are_served() -> None:
    """The route table declares the thirteen tools, each once."""
    assert [r.tool.name for r in TOOL_ROUTES if r.tool] == list(build(TOOL_ROUTES))
    assert set(build(TOOL_ROUTES)) == {
        "search_ideas",
        "get_idea",
        "create_idea",
        "update_idea",
        "vote_idea",
        "find_similar_ideas",
        "merge_ideas",
        "list_customers",
        "link_customer",
        "analytics_summary",
        "list_roadmap_stages",
        "record_signal",
        "add_comment",
    }


def test_merge_ideas_declaration_maps_to_its_route() -> None:
    """merge_ideas takes duplicateId (the path) and intoId (the body), both idea references."""
    tool = build(TOOL_ROUTES)["merge_ideas"]
    schema = tool.definition().input_schema
    assert set(schema["properties"]) == {"duplicateId", "intoId"}
    assert set(schema["required"]) == {"duplicateId", "intoId"}
    assert schema["properties"]["intoId"]["type"] == "string"
    dup, into = uuid.uuid4(), uuid.uuid4()
    call = tool.call(
        {"duplicateId": "IDEA-2", "intoId": "IDEA-1"}, {"duplicateId": dup, "intoId": into}
    )
    assert (call.method, call.path) == ("POST", f"{API}/ideas/{dup}/merge")
    assert call.body == {"intoId": str(into)}
    output = tool.definition().output_schema
    assert output is not None and set(output["required"]) == {"primary", "duplicate"}
    assert tool.result({"data": {"primary": 1, "duplicate": 2}}) == {"primary": 1, "duplicate": 2}


def test_find_similar_ideas_declaration_maps_to_its_route() -> None:
    """find_similar_ideas sends `text` as the title, no minimum similarity, and answers under
    `results`; a REST error on `title` names `text`."""
    tool = build(TOOL_ROUTES)["find_similar_ideas"]
    schema = tool.definition().input_schema
    assert set(schema["properties"]) == {"text", "limit"} and schema["required"] == ["text"]
    assert schema["properties"]["limit"]["maximum"] == 50
    call = tool.call({"text": "Dark mode"}, {})
    assert (call.method, call.path) == ("POST", f"{API}/ideas/similar")
    assert call.body == {"title": "Dark mode", "limit": 10}
    assert tool.result({"data": [{"similarity": 0.9}]}) == {"results": [{"similarity": 0.9}]}
    assert tool.input_name("title") == "text"
    assert tool.input_name("minSimilarity") is None
    output = tool.definition().output_schema
    assert output is not None and output["required"] == ["results"]


def test_rest_fields_are_named_as_the_tool_names_them() -> None:
    """A REST error's field becomes the tool's input; one no input stands for is dropped."""
    tools = build(TOOL_ROUTES)
    assert tools["search_ideas"].input_name("search") == "query"
    assert tools["search_ideas"].input_name("query") is None  # the query string as a whole
    assert tools["update_idea"].input_name("riceEffort") == "riceEffort"
    assert tools["update_idea"].input_name("body") is None
    assert tools["update_idea"].input_name("id") is None


def test_idea_references() -> None:
    """A uuid or IDEA-<n> (n a positive bigint) names an idea; nothing else does."""
    some = uuid.uuid4()
    assert idea_ref(str(some)) == some
    assert idea_ref("IDEA-42") == 42
    for value in (
        "IDEA-0",
        "IDEA-042",
        "idea-42",
        "IDEA-9223372036854775808",
        "42",
        42,
        None,
        "IDEA-4 2",
    ):
        assert idea_ref(value) is None, value


def test_add_comment_declaration_maps_to_its_route() -> None:
    """add_comment sends `ideaId` as the path's idea and `body`, `internal`, `userId` in the
    body (no `parentId`: a tool writes top-level comments), answering the Comment."""
    tool = build(TOOL_ROUTES)["add_comment"]
    schema = tool.definition().input_schema
    assert set(schema["properties"]) == {"ideaId", "body", "internal", "userId"}
    assert set(schema["required"]) == {"ideaId", "body"}
    idea, user = uuid.uuid4(), uuid.uuid4()
    call = tool.call(
        {"ideaId": "IDEA-7", "body": "Hi", "internal": True, "userId": str(user)}, {"ideaId": idea}
    )
    assert (call.method, call.path) == ("POST", f"{API}/ideas/{idea}/comments")
    assert call.body == {"body": "Hi", "internal": True, "userId": str(user)}
    output = tool.definition().output_schema
    assert output is not None and "author" in output["required"]
