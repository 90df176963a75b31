"""The workload rules hold for every rendered variant, and catch a manifest that breaks them."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from . import workload_rules as rules
from .workload_rules import Check, Obj

Mutation = Callable[[list[Obj]], None]


def _violations(check: Check, rendered: dict[str, list[Obj]]) -> dict[str, list[str]]:
    found = {variant: check(objs) for variant, objs in rendered.items()}
    return {variant: problems for variant, problems in found.items() if problems}


@pytest.mark.parametrize("check", rules.CHECKS, ids=lambda check: check.__name__)
def test_rule_holds_for_every_variant(check: Check, rendered: dict[str, list[Obj]]) -> None:
    """Each workload rule finds nothing wrong in any rendered variant."""
    assert _violations(check, rendered) == {}


def test_every_overlay_and_component_is_rendered(rendered: dict[str, list[Obj]]) -> None:
    """The dev and prod overlays are rendered alone and with each optional component."""
    parts = {part for variant in rendered for part in variant.split("+")}
    assert {"dev", "prod", "prod+keda", "prod+operators"} <= set(rendered)
    assert {"keda", "operators"} <= parts


def test_keda_component_replaces_the_webhooks_hpa(rendered: dict[str, list[Obj]]) -> None:
    """With components/keda the webhooks Deployment is scaled by the ScaledObject alone."""
    for variant, objs in rendered.items():
        scalers = [
            scaler for scaler, target in rules.autoscaler_targets(objs) if target == "webhooks"
        ]
        expected = (
            "ScaledObject/webhooks"
            if "keda" in variant.split("+")
            else "HorizontalPodAutoscaler/webhooks"
        )
        assert scalers == [expected], variant


def _object(objs: list[Obj], kind: str, name: str) -> Obj:
    found = rules.named(objs, kind, name)
    assert found is not None, f"no {kind} {name}"
    return found


def _deployment(objs: list[Obj], name: str) -> Obj:
    return _object(objs, "Deployment", name)


def _container(objs: list[Obj], name: str) -> Obj:
    container: Obj = _deployment(objs, name)["spec"]["template"]["spec"]["containers"][0]
    return container


def _drop_process(objs: list[Obj], name: str) -> None:
    objs[:] = [
        obj
        for obj in objs
        if obj["metadata"].get("labels", {}).get("app.kubernetes.io/name") != name
    ]


def _second_hpa(objs: list[Obj]) -> None:
    extra = copy.deepcopy(_object(objs, "HorizontalPodAutoscaler", "ideas"))
    extra["metadata"]["name"] = "ideas-extra"
    objs.append(extra)


MUTATIONS: dict[str, tuple[Mutation, Check, str]] = {
    "readiness probe removed": (
        lambda objs: _container(objs, "ideas").pop("readinessProbe"),
        rules.check_probes,
        "ideas/ideas: readinessProbe",
    ),
    "liveness probe on the wrong path": (
        lambda objs: _container(objs, "gateway")["livenessProbe"]["httpGet"].update(path="/"),
        rules.check_probes,
        "gateway/gateway: livenessProbe",
    ),
    "memory limit removed": (
        lambda objs: _container(objs, "webhooks")["resources"]["limits"].pop("memory"),
        rules.check_resources,
        "webhooks/webhooks: no memory in limits",
    ),
    "whole process removed": (
        lambda objs: _drop_process(objs, "customers"),
        rules.check_processes,
        "customers: no Deployment",
    ),
    "runs as root": (
        lambda objs: _container(objs, "analytics")["securityContext"].update(runAsNonRoot=False),
        rules.check_security,
        "analytics/analytics: runAsNonRoot is not true",
    ),
    "replicas under an autoscaler": (
        lambda objs: _deployment(objs, "gateway")["spec"].update(replicas=3),
        rules.check_autoscaling,
        "gateway: spec.replicas set",
    ),
    "second autoscaler": (_second_hpa, rules.check_autoscaling, "ideas: 2 autoscalers"),
    "grace period too short": (
        lambda objs: _deployment(objs, "ideas")["spec"]["template"]["spec"].update(
            terminationGracePeriodSeconds=15
        ),
        rules.check_graceful_stop,
        "ideas/ideas: grace period 15 s",
    ),
    "pods without the part-of label": (
        lambda objs: _deployment(objs, "customers")["spec"]["template"]["metadata"]["labels"].pop(
            "app.kubernetes.io/part-of"
        ),
        rules.check_labels,
        "pods of customers: app.kubernetes.io/part-of",
    ),
    "service exposed": (
        lambda objs: _object(objs, "Service", "analytics")["spec"].update(type="NodePort"),
        rules.check_exposure,
        "Service/analytics: type NodePort",
    ),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_rule_catches_a_broken_manifest(
    mutation: tuple[Mutation, Check, str], rendered: dict[str, list[Obj]]
) -> None:
    """A copy of the prod render, broken on purpose, fails the rule that guards the change."""
    mutate, check, expected = mutation
    objs = copy.deepcopy(rendered["prod"])
    assert check(objs) == []
    mutate(objs)
    assert any(problem.startswith(expected) for problem in check(objs)), check(objs)
