"""A rendered variant broken on purpose fails the rule that guards what was broken: the rules
see real mistakes, not only pass on the real manifests."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable

import pytest

from . import network_rules as net
from . import workload_rules as work
from .workload_rules import Check, Obj


def _object(objs: list[Obj], kind: str, name: str) -> Obj:
    found = work.named(objs, kind, name)
    assert found is not None, f"no {kind} {name}"
    return found


def _pod_spec(objs: list[Obj], name: str) -> Obj:
    spec: Obj = _object(objs, "Deployment", name)["spec"]["template"]["spec"]
    return spec


def _container(objs: list[Obj], name: str) -> Obj:
    container: Obj = _pod_spec(objs, name)["containers"][0]
    return container


def _drop_process(objs: list[Obj], name: str) -> None:
    objs[:] = [
        o for o in objs if o["metadata"].get("labels", {}).get("app.kubernetes.io/name") != name
    ]


def _extra_hpa(objs: list[Obj], target: str) -> None:
    extra = copy.deepcopy(_object(objs, "HorizontalPodAutoscaler", "ideas"))
    extra["metadata"]["name"] = f"{target}-extra"
    extra["spec"]["scaleTargetRef"]["name"] = target
    objs.append(extra)


def _policy(objs: list[Obj], name: str) -> Obj:
    return _object(objs, "NetworkPolicy", name)


def _drop_private_exceptions(objs: list[Obj]) -> None:
    for peer in _policy(objs, "webhooks-receivers")["spec"]["egress"][0]["to"]:
        peer["ipBlock"].pop("except")


# name: (variant, what breaks it, the rule that must notice, the start of its complaint)
MUTATIONS: dict[str, tuple[str, Callable[[list[Obj]], object], Check, str]] = {
    "readiness probe removed": (
        "prod",
        lambda objs: _container(objs, "ideas").pop("readinessProbe"),
        work.check_probes,
        "ideas/ideas: readinessProbe",
    ),
    "liveness probe on the wrong path": (
        "prod",
        lambda objs: _container(objs, "gateway")["livenessProbe"]["httpGet"].update(path="/"),
        work.check_probes,
        "gateway/gateway: livenessProbe",
    ),
    "an autoscaler allowed past the database's connections": (
        "prod+operators",
        lambda objs: _object(objs, "HorizontalPodAutoscaler", "gateway")["spec"].update(
            maxReplicas=40
        ),
        work.check_database_connections,
        "Cluster/ideas-db: the processes may open",
    ),
    "a process whose connections nobody counted": (
        "prod+operators",
        lambda objs: objs.append(
            {**copy.deepcopy(_object(objs, "Deployment", "mcp")), "metadata": {"name": "extra"}}
        ),
        work.check_database_connections,
        "extra: its PostgreSQL connections are not in DB_CONNECTIONS",
    ),
    "memory limit removed": (
        "prod",
        lambda objs: _container(objs, "webhooks")["resources"]["limits"].pop("memory"),
        work.check_resources,
        "webhooks/webhooks: no memory in limits",
    ),
    "whole process removed": (
        "prod",
        lambda objs: _drop_process(objs, "customers"),
        work.check_processes,
        "customers: no Deployment",
    ),
    "runs as root": (
        "prod",
        lambda objs: _container(objs, "analytics")["securityContext"].update(runAsNonRoot=False),
        work.check_security,
        "analytics/analytics: runAsNonRoot is not true",
    ),
    "replicas under an autoscaler": (
        "prod",
        lambda objs: _object(objs, "Deployment", "gateway")["spec"].update(replicas=3),
        work.check_autoscaling,
        "gateway: spec.replicas set",
    ),
    "second autoscaler": (
        "prod",
        lambda objs: _extra_hpa(objs, "ideas"),
        work.check_autoscaling,
        "ideas: 2 autoscalers",
    ),
    "webhooks HPA kept beside KEDA": (
        "prod+keda",
        lambda objs: _extra_hpa(objs, "webhooks"),
        work.check_autoscaling,
        "webhooks: 2 autoscalers",
    ),
    "placeholder shared secret": (
        "dev",
        lambda objs: _object(objs, "Secret", "ims-secrets")["data"].update(
            CURSOR_SECRET=base64.b64encode(b"dev-cursor-secret-not-a-secret-but-long").decode()
        ),
        work.check_shared_secrets,
        "Secret/ims-secrets: CURSOR_SECRET is a placeholder",
    ),
    "shared secret missing": (
        "dev",
        lambda objs: _object(objs, "Secret", "ims-secrets")["data"].pop("INTERNAL_TOKEN"),
        work.check_shared_secrets,
        "Secret/ims-secrets: INTERNAL_TOKEN is not set",
    ),
    "grace period too short": (
        "prod",
        lambda objs: _pod_spec(objs, "ideas").update(terminationGracePeriodSeconds=15),
        work.check_graceful_stop,
        "ideas/ideas: grace period 15 s",
    ),
    "service exposed": (
        "prod",
        lambda objs: _object(objs, "Service", "analytics")["spec"].update(type="NodePort"),
        work.check_exposure,
        "Service/analytics: type NodePort",
    ),
    "pods without the part-of label": (
        "prod",
        lambda objs: _object(objs, "Deployment", "customers")["spec"]["template"]["metadata"][
            "labels"
        ].pop("app.kubernetes.io/part-of"),
        work.check_labels,
        "pods of customers: app.kubernetes.io/part-of",
    ),
    "deny-all removed": (
        "prod",
        lambda objs: objs.remove(_policy(objs, "default-deny-all")),
        net.check_default_deny,
        "no default deny-all",
    ),
    "internal service open to all": (
        "prod",
        lambda objs: _policy(objs, "internal-services")["spec"]["ingress"].append({}),
        net.check_internal_services,
        "the internet reaches ideas",
    ),
    "gateway policy removed": (
        "prod",
        lambda objs: objs.remove(_policy(objs, "gateway")),
        net.check_internal_services,
        "the gateway cannot reach ideas",
    ),
    "gateway open on every port": (
        "prod",
        lambda objs: _policy(objs, "gateway")["spec"]["ingress"][0].pop("ports"),
        net.check_gateway_ingress,
        "the internet reaches the gateway on 8081",
    ),
    "gateway metrics port in its Service": (
        "prod",
        lambda objs: _object(objs, "Service", "gateway")["spec"]["ports"].append(
            {"name": "metrics", "port": 8089, "targetPort": "metrics"}
        ),
        work.check_processes,
        "gateway: its Service exposes the metrics port",
    ),
    "gateway metrics port undeclared": (
        "prod",
        lambda objs: _container(objs, "gateway")["ports"].pop(),
        work.check_processes,
        "gateway: does not declare port 8089 as metrics",
    ),
    "DNS policy removed": (
        "prod",
        lambda objs: objs.remove(_policy(objs, "allow-dns")),
        net.check_dns,
        "gateway cannot reach DNS",
    ),
    "data stores policy removed": (
        "prod",
        lambda objs: objs.remove(_policy(objs, "allow-datastores")),
        net.check_data_stores,
        "gateway cannot reach a managed data store on 5432",
    ),
    "PostgreSQL open to all": (
        "prod+operators",
        lambda objs: _policy(objs, "ideas-db")["spec"]["ingress"].append({}),
        net.check_data_stores,
        "the internet reaches ideas-db on 5432",
    ),
    "private ranges reachable by webhooks": (
        "prod",
        _drop_private_exceptions,
        net.check_webhook_receivers,
        "webhooks reaches 10.1.2.3",
    ),
    "embedder labelled a service": (
        "prod",
        lambda objs: _object(objs, "Deployment", "similar-embedder")["spec"]["template"][
            "metadata"
        ]["labels"].update({"app.kubernetes.io/component": "service"}),
        net.check_workers,
        "similar-embedder reaches ideas on 8081",
    ),
    "internet for every process": (
        "prod",
        lambda objs: _policy(objs, "webhooks-receivers")["spec"].update(podSelector={}),
        net.check_webhook_receivers,
        "gateway reaches the internet",
    ),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_rule_catches_a_broken_manifest(
    mutation: tuple[str, Callable[[list[Obj]], object], Check, str],
    rendered: dict[str, list[Obj]],
) -> None:
    """A copy of a render, broken on purpose, fails the rule that guards the change."""
    variant, mutate, check, expected = mutation
    objs = copy.deepcopy(rendered[variant])
    assert check(objs) == []
    mutate(objs)
    problems = check(objs)
    assert any(problem.startswith(expected) for problem in problems), problems
