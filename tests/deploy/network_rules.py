"""Rules for the NetworkPolicies of a rendered variant, checked by asking who may talk to whom
(see netpol.py): the application's pods, strangers in the namespace and elsewhere, and addresses
on the internet and in private ranges.

Like workload_rules, every `check_*` takes the objects of one rendered variant and returns the
violations it finds as readable lines.
"""

from __future__ import annotations

from .netpol import Address, Endpoint, Pod, allowed, pod_of, process_pod, stranger
from .workload_rules import (
    GATEWAY_METRICS_PORT,
    PROCESSES,
    WORKERS,
    Check,
    Obj,
    of_kind,
    workloads,
)

PUBLIC_ADDRESS = "93.184.215.14"
PRIVATE_ADDRESSES = [
    "10.1.2.3",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "127.0.0.1",
    "100.64.0.1",
    "fd00::1",
    "fe80::1",
    "::1",
]
# A managed PostgreSQL or RabbitMQ inside the cloud network.
MANAGED_SERVICE_ADDRESS = "10.20.30.40"


def _outsiders(objs: list[Obj]) -> dict[str, Endpoint]:
    """What must never reach the application's internals, by description."""
    return {
        "a stranger pod in the namespace": stranger(objs),
        "a pod of another namespace": stranger(objs, "elsewhere"),
        "the internet": Address(PUBLIC_ADDRESS),
        "a private address": Address(PRIVATE_ADDRESSES[0]),
    }


def _reached_by(
    objs: list[Obj], intruders: dict[str, Endpoint], pod: Pod, name: str, port: int
) -> list[str]:
    return [
        f"{what} reaches {name} on {port}"
        for what, intruder in intruders.items()
        if allowed(objs, intruder, pod, port)
    ]


def check_default_deny(objs: list[Obj]) -> list[str]:
    """One policy isolates every pod in both directions and allows nothing by itself, so a pod
    that is not the application's can neither be reached nor reach out (but for DNS)."""
    problems = []
    deny_all = [
        policy
        for policy in of_kind(objs, "NetworkPolicy")
        if not policy["spec"].get("podSelector")
        and {"Ingress", "Egress"} <= set(policy["spec"].get("policyTypes", []))
        and not policy["spec"].get("ingress")
        and not policy["spec"].get("egress")
    ]
    if not deny_all:
        problems.append("no default deny-all NetworkPolicy")
    if allowed(objs, Address(PUBLIC_ADDRESS), stranger(objs), 8080):
        problems.append("the internet reaches a stranger pod in the namespace")
    if allowed(objs, stranger(objs), Address(PUBLIC_ADDRESS), 443):
        problems.append("a stranger pod in the namespace reaches the internet")
    return problems


def check_gateway_ingress(objs: list[Obj]) -> list[str]:
    """Anyone reaches the gateway on 8080, and on no other port (its metrics port included)."""
    problems = []
    gateway = process_pod(objs, "gateway")
    sources: dict[str, Endpoint] = {
        "the internet": Address(PUBLIC_ADDRESS),
        "an ingress controller": stranger(objs, "ingress-nginx"),
    }
    for what, source in sources.items():
        if not allowed(objs, source, gateway, 8080):
            problems.append(f"{what} cannot reach the gateway on 8080")
        problems += [
            f"{what} reaches the gateway on {port}"
            for port in (22, 8081, 8084, GATEWAY_METRICS_PORT, 9090)
            if allowed(objs, source, gateway, port)
        ]
    return problems


def check_internal_services(objs: list[Obj]) -> list[str]:
    """The gateway reaches every internal service on its port, the services reach one another
    (internal API calls), and nothing else does: not the migration Job, not a stranger pod here or
    in another namespace, not an address inside or outside the cluster network."""
    problems = []
    gateway = process_pod(objs, "gateway")
    internal = [name for name in PROCESSES if name != "gateway"]
    intruders = _outsiders(objs)
    for job in of_kind(objs, "Job"):
        intruders[f"the Job {job['metadata']['name']}"] = pod_of(job)
    for name in internal:
        service, port = process_pod(objs, name), PROCESSES[name]
        if not allowed(objs, gateway, service, port):
            problems.append(f"the gateway cannot reach {name} on {port}")
        problems += [
            f"{other} cannot reach {name} on {port}"
            for other in internal
            if other != name and not allowed(objs, process_pod(objs, other), service, port)
        ]
        problems += _reached_by(objs, intruders, service, name, port)
    return problems


def check_workers(objs: list[Obj]) -> list[str]:
    """No one reaches a worker (the embedder) on its port, not the gateway, not a service,
    not an outsider; and a worker reaches no service (it needs only the data stores)."""
    problems = []
    intruders = _outsiders(objs)
    for name in PROCESSES:
        intruders[name] = process_pod(objs, name)
    for name, port in WORKERS.items():
        worker = process_pod(objs, name)
        problems += _reached_by(objs, intruders, worker, name, port)
        problems += [
            f"{name} reaches {other} on {other_port}"
            for other, other_port in PROCESSES.items()
            if allowed(objs, worker, process_pod(objs, other), other_port)
        ]
    return problems


def check_dns(objs: list[Obj]) -> list[str]:
    """Every pod of the application resolves names through the cluster DNS."""
    dns = Pod({"k8s-app": "kube-dns"}, "kube-system")
    return [
        f"{workload['metadata']['name']} cannot reach DNS over {protocol}"
        for workload in workloads(objs)
        for protocol in ("UDP", "TCP")
        if not allowed(objs, pod_of(workload), dns, 53, protocol)
    ]


def _data_stores(objs: list[Obj]) -> dict[str, tuple[Pod, int]]:
    """The PostgreSQL and RabbitMQ pods the operators run for the optional component."""
    stores = {}
    for cluster in of_kind(objs, "Cluster"):
        name = cluster["metadata"]["name"]
        stores[name] = (Pod({"cnpg.io/cluster": name}, cluster["metadata"].get("namespace")), 5432)
    for cluster in of_kind(objs, "RabbitmqCluster"):
        name = cluster["metadata"]["name"]
        labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "rabbitmq"}
        stores[name] = (Pod(labels, cluster["metadata"].get("namespace")), 5672)
    return stores


def check_data_stores(objs: list[Obj]) -> list[str]:
    """Every pod of the application reaches PostgreSQL (5432) and RabbitMQ (5672), wherever they
    run, and pods that are not the application's reach neither."""
    problems = []
    managed = Address(MANAGED_SERVICE_ADDRESS)
    app_pods = {w["metadata"]["name"]: pod_of(w) for w in workloads(objs)}
    for name, pod in app_pods.items():
        problems += [
            f"{name} cannot reach a managed data store on {port}"
            for port in (5432, 5672)
            if not allowed(objs, pod, managed, port)
        ]
    problems += [
        f"a stranger pod reaches a managed data store on {port}"
        for port in (5432, 5672)
        if allowed(objs, stranger(objs), managed, port)
    ]
    for store, (store_pod, port) in _data_stores(objs).items():
        problems += [
            f"{name} cannot reach {store} on {port}"
            for name, pod in app_pods.items()
            if not allowed(objs, pod, store_pod, port)
        ]
        problems += _reached_by(objs, _outsiders(objs), store_pod, store, port)
    return problems


def check_webhook_receivers(objs: list[Obj]) -> list[str]:
    """The webhooks dispatcher reaches receivers on the internet over HTTPS but no private,
    loopback or link-local address; no other process reaches the internet."""
    problems = []
    webhooks = process_pod(objs, "webhooks")
    if not allowed(objs, webhooks, Address(PUBLIC_ADDRESS), 443):
        problems.append("webhooks cannot reach a receiver on the internet on 443")
    problems += [
        f"webhooks reaches {ip} on 443"
        for ip in PRIVATE_ADDRESSES
        if allowed(objs, webhooks, Address(ip), 443)
    ]
    problems += [
        f"{w['metadata']['name']} reaches the internet on 443"
        for w in workloads(objs)
        if w["metadata"]["name"] != "webhooks"
        and allowed(objs, pod_of(w), Address(PUBLIC_ADDRESS), 443)
    ]
    return problems


CHECKS: list[Check] = [
    check_default_deny,
    check_gateway_ingress,
    check_internal_services,
    check_workers,
    check_dns,
    check_data_stores,
    check_webhook_receivers,
]
