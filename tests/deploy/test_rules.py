"""Every rule holds for every rendered variant of deploy/k8s."""

from __future__ import annotations

import secrets

import pytest

from libs.common.settings import SECRET_NAMES, secret_problem

from . import network_rules, workload_rules
from .conftest import ROOT
from .netpol import Pod, allowed, process_pod
from .workload_rules import (
    GATEWAY_METRICS_PORT,
    PROCESSES,
    WORKERS,
    Check,
    Obj,
    autoscaler_targets,
)


@pytest.mark.parametrize(
    "check", workload_rules.CHECKS + network_rules.CHECKS, ids=lambda check: check.__name__
)
def test_rule_holds_for_every_variant(check: Check, rendered: dict[str, list[Obj]]) -> None:
    """Each rule finds nothing wrong in any rendered variant."""
    found = {variant: check(objs) for variant, objs in rendered.items()}
    assert {variant: problems for variant, problems in found.items() if problems} == {}


def test_every_overlay_and_component_is_rendered(rendered: dict[str, list[Obj]]) -> None:
    """The dev and prod overlays are rendered alone and with each optional component."""
    parts = {part for variant in rendered for part in variant.split("+")}
    assert {"dev", "prod", "prod+keda", "prod+operators"} <= set(rendered)
    assert {"keda", "operators"} <= parts


@pytest.mark.parametrize("process", ["webhooks", "similar-embedder"])
def test_keda_component_replaces_the_queue_consumers_hpas(
    process: str, rendered: dict[str, list[Obj]]
) -> None:
    """With components/keda the webhooks and similar-embedder Deployments are each scaled by
    their ScaledObject alone, on their own queue."""
    for variant, objs in rendered.items():
        scalers = [scaler for scaler, target in autoscaler_targets(objs) if target == process]
        keda = "keda" in variant.split("+")
        expected = "ScaledObject" if keda else "HorizontalPodAutoscaler"
        assert scalers == [f"{expected}/{process}"], variant
        if keda:
            scaled = next(
                o for o in objs if o["kind"] == "ScaledObject" and o["metadata"]["name"] == process
            )
            queue = {"webhooks": "ims.webhooks", "similar-embedder": "ims.similar"}[process]
            queues = [t["metadata"].get("queueName") for t in scaled["spec"]["triggers"]]
            assert queue in queues, (variant, queues)


def test_prometheus_scrapes_each_process_on_its_own_port_in_prod(
    rendered: dict[str, list[Obj]],
) -> None:
    """overlays/prod lets Prometheus reach every process's port, and only that port."""
    objs = rendered["prod"]
    prometheus = Pod({"app.kubernetes.io/name": "prometheus"}, "monitoring")
    for name, port in {**PROCESSES, **WORKERS}.items():
        process = process_pod(objs, name)
        if name == "gateway":  # the public port answers 404 on /metrics
            port = GATEWAY_METRICS_PORT
        assert allowed(objs, prometheus, process, port), name
        other_port = port + 1 if port < 8084 else 8081
        assert not allowed(objs, prometheus, process, other_port), name


def test_prod_secrets_example_is_refused_until_filled_in() -> None:
    """overlays/prod's example holds placeholders the processes refuse (so it cannot be
    applied unchanged), and the generator it names makes values they accept."""
    example = ROOT / "deploy" / "k8s" / "overlays" / "prod" / "secrets.env.example"
    values = dict(
        line.split("=", 1)
        for line in example.read_text().splitlines()
        if line and not line.startswith("#")
    )
    for name in SECRET_NAMES:
        assert secret_problem(name, values[name]) is not None, name
    assert "secrets.token_urlsafe(48)" in example.read_text()
    assert secret_problem("INTERNAL_TOKEN", secrets.token_urlsafe(48)) is None
