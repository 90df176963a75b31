"""A small model of NetworkPolicy semantics: may this source talk to that destination on a port?

A pod is isolated in a direction as soon as one policy in its namespace selects it for that
direction; then only what some rule of such a policy admits gets through, and a connection needs
both the source's egress and the destination's ingress. Pods are matched by labels and namespace,
addresses outside the cluster's pods by ipBlock.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from .workload_rules import Obj, named, of_kind, pod_labels, selects


@dataclass(frozen=True)
class Pod:
    """A pod as policies see it: labels, namespace, named ports."""

    labels: dict[str, str]
    namespace: str | None
    ports: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Address:
    """An address outside the cluster's pods."""

    ip: str


Endpoint = Pod | Address


def _namespace(objs: list[Obj]) -> str | None:
    return next((obj["metadata"].get("namespace") for obj in of_kind(objs, "NetworkPolicy")), None)


def pod_of(workload: Obj) -> Pod:
    ports = {
        p["name"]: p["containerPort"]
        for c in workload["spec"]["template"]["spec"]["containers"]
        for p in c.get("ports", [])
        if "name" in p
    }
    return Pod(pod_labels(workload), workload["metadata"].get("namespace"), ports)


def process_pod(objs: list[Obj], name: str) -> Pod:
    deployment = named(objs, "Deployment", name)
    assert deployment is not None, f"no Deployment {name}"
    return pod_of(deployment)


def stranger(objs: list[Obj], elsewhere: str | None = None) -> Pod:
    """A pod that is not the application's: in its namespace, or in the one named `elsewhere`."""
    namespace = _namespace(objs) if elsewhere is None else elsewhere
    return Pod({"app.kubernetes.io/name": "stranger"}, namespace)


def _peer_matches(peer: Obj, source: Endpoint, policy_namespace: str | None) -> bool:
    if isinstance(source, Address):
        if "ipBlock" not in peer:
            return False
        ip = ipaddress.ip_address(source.ip)
        block = peer["ipBlock"]
        inside = ipaddress.ip_network(block["cidr"])
        return (
            ip.version == inside.version
            and ip in inside
            and not any(
                ip in ipaddress.ip_network(e)
                for e in block.get("except", [])
                if ipaddress.ip_network(e).version == ip.version
            )
        )
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        namespace_labels = {"kubernetes.io/metadata.name": source.namespace or ""}
        in_namespace = selects(peer["namespaceSelector"], namespace_labels)
    else:
        in_namespace = source.namespace == policy_namespace
    return in_namespace and selects(peer.get("podSelector", {}), source.labels)


def _port_matches(rule: Obj, port: int, protocol: str, named_ports: dict[str, int]) -> bool:
    if not rule.get("ports"):
        return True
    for allowed in rule["ports"]:
        if allowed.get("protocol", "TCP") != protocol:
            continue
        if "port" not in allowed:
            return True
        first = allowed["port"]
        first = named_ports.get(first, -1) if isinstance(first, str) else first
        if first <= port <= allowed.get("endPort", first):
            return True
    return False


def _side_allows(
    objs: list[Obj],
    pod: Pod,
    direction: str,
    other: Endpoint,
    port: int,
    protocol: str,
    named_ports: dict[str, int],
) -> bool:
    """Whether the policies of `pod` let traffic with `other` through in `direction`."""
    key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    isolated = False
    for policy in of_kind(objs, "NetworkPolicy"):
        spec = policy["spec"]
        types = spec.get("policyTypes") or (
            ["Ingress", "Egress"] if "egress" in spec else ["Ingress"]
        )
        namespace = policy["metadata"].get("namespace")
        if direction not in types or namespace != pod.namespace:
            continue
        if not selects(spec.get("podSelector", {}), pod.labels):
            continue
        isolated = True
        for rule in spec.get(key, []):
            peers = rule.get(peers_key) or [{}]
            if any(
                peer == {} or _peer_matches(peer, other, namespace) for peer in peers
            ) and _port_matches(rule, port, protocol, named_ports):
                return True
    return not isolated


def allowed(
    objs: list[Obj], source: Endpoint, destination: Endpoint, port: int, protocol: str = "TCP"
) -> bool:
    """Whether a connection from source to destination on port gets through every policy."""
    destination_ports = destination.ports if isinstance(destination, Pod) else {}
    if isinstance(source, Pod) and not _side_allows(
        objs, source, "Egress", destination, port, protocol, destination_ports
    ):
        return False
    if isinstance(destination, Pod):
        return _side_allows(objs, destination, "Ingress", source, port, protocol, destination_ports)
    return True
