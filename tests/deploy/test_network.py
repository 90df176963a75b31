"""The NetworkPolicy rules hold for every rendered variant, and catch a policy that breaks them."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from . import network_rules as rules
from .netpol import Pod, allowed, process_pod
from .workload_rules import PROCESSES, Check, Obj, named

Mutation = Callable[[list[Obj]], None]


@pytest.mark.parametrize("check", rules.CHECKS, ids=lambda check: check.__name__)
def test_rule_holds_for_every_variant(check: Check, rendered: dict[str, list[Obj]]) -> None:
    """Each network rule finds nothing wrong in any rendered variant."""
    found = {variant: check(objs) for variant, objs in rendered.items()}
    assert {variant: problems for variant, problems in found.items() if problems} == {}


def _policy(objs: list[Obj], name: str) -> Obj:
    found = named(objs, "NetworkPolicy", name)
    assert found is not None
    return found


def _drop_policy(objs: list[Obj], name: str) -> None:
    objs.remove(_policy(objs, name))


def _open_internal_services(objs: list[Obj]) -> None:
    _policy(objs, "internal-services")["spec"]["ingress"].append({"ports": [{"port": 8081}]})


def _drop_private_exceptions(objs: list[Obj]) -> None:
    for peer in _policy(objs, "webhooks-receivers")["spec"]["egress"][0]["to"]:
        peer["ipBlock"].pop("except")


def _internet_for_everyone(objs: list[Obj]) -> None:
    _policy(objs, "webhooks-receivers")["spec"]["podSelector"] = {}


MUTATIONS: dict[str, tuple[Mutation, Check, str]] = {
    "deny-all removed": (
        lambda objs: _drop_policy(objs, "default-deny-all"),
        rules.check_default_deny,
        "no default deny-all",
    ),
    "internal service open to all": (
        _open_internal_services,
        rules.check_internal_services,
        "the internet reaches ideas",
    ),
    "gateway policy removed": (
        lambda objs: _drop_policy(objs, "gateway"),
        rules.check_internal_services,
        "the gateway cannot reach ideas",
    ),
    "DNS policy removed": (
        lambda objs: _drop_policy(objs, "allow-dns"),
        rules.check_dns,
        "gateway cannot reach DNS",
    ),
    "data stores policy removed": (
        lambda objs: _drop_policy(objs, "allow-datastores"),
        rules.check_data_stores,
        "gateway cannot reach a managed data store on 5432",
    ),
    "private ranges reachable by webhooks": (
        _drop_private_exceptions,
        rules.check_webhook_receivers,
        "webhooks reaches 10.1.2.3",
    ),
    "internet for every process": (
        _internet_for_everyone,
        rules.check_webhook_receivers,
        "gateway reaches the internet",
    ),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_rule_catches_a_broken_policy(
    mutation: tuple[Mutation, Check, str], rendered: dict[str, list[Obj]]
) -> None:
    """A copy of the prod render, broken on purpose, fails the rule that guards the change."""
    mutate, check, expected = mutation
    objs = copy.deepcopy(rendered["prod"])
    assert check(objs) == []
    mutate(objs)
    assert any(problem.startswith(expected) for problem in check(objs)), check(objs)


def test_operator_data_stores_admit_only_the_application(rendered: dict[str, list[Obj]]) -> None:
    """With components/operators, an open PostgreSQL policy is caught."""
    objs = copy.deepcopy(rendered["prod+operators"])
    assert rules.check_data_stores(objs) == []
    _policy(objs, "ideas-db")["spec"]["ingress"].append({})
    assert "the internet reaches ideas-db on 5432" in rules.check_data_stores(objs)


def test_prometheus_scrapes_each_process_on_its_own_port_in_prod(
    rendered: dict[str, list[Obj]],
) -> None:
    """overlays/prod lets Prometheus reach every process's port, and only that port."""
    objs = rendered["prod"]
    prometheus = Pod({"app.kubernetes.io/name": "prometheus"}, "monitoring")
    for name, port in PROCESSES.items():
        process = process_pod(objs, name)
        assert allowed(objs, prometheus, process, port), name
        assert not allowed(objs, prometheus, process, port + 1 if port < 8084 else 8081), name
