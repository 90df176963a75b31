"""Rules for the workloads of a rendered variant: processes, probes, resources, security,
autoscaling, graceful stop and exposure.

Every `check_*` takes the objects of one rendered variant and returns the violations it finds as
readable lines (none when the rule holds), so that a test can run it on the real render and on a
deliberately broken copy alike.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from typing import Any

from libs.common.settings import SECRET_NAMES, Settings, secret_problem

Obj = dict[str, Any]
Check = Callable[[list[Obj]], list[str]]

# Every process of the application, with the port it listens on.
PROCESSES = {
    "gateway": 8080,
    "ideas": 8081,
    "customers": 8082,
    "webhooks": 8083,
    "analytics": 8084,
    "mcp": 8085,
    "similar": 8087,
}
# Processes no one calls: their port serves their probes and Prometheus alone.
WORKERS = {"similar-embedder": 8086}
# The gateway serves /metrics on an internal port of its own (docs/gateway.md).
GATEWAY_METRICS_PORT = 8089
PART_OF = "idea-management"
CONFIG_MAP = "ims-config"
SECRET = "ims-secrets"
# SHUTDOWN_TIMEOUT_S when the ConfigMap does not set it (docs/running.md), and Kubernetes's
# default grace period.
DEFAULT_SHUTDOWN_TIMEOUT_S = 15.0
DEFAULT_GRACE_S = 30


def of_kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [obj for obj in objs if obj.get("kind") == kind]


def named(objs: list[Obj], kind: str, name: str) -> Obj | None:
    return next((obj for obj in of_kind(objs, kind) if obj["metadata"]["name"] == name), None)


def workloads(objs: list[Obj]) -> list[Obj]:
    """The Deployments and Jobs: every object that runs pods of the application."""
    return of_kind(objs, "Deployment") + of_kind(objs, "Job")


def pod_labels(workload: Obj) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"].get("metadata", {}).get("labels", {})
    return labels


def containers(workload: Obj) -> Iterator[tuple[str, Obj]]:
    """(workload/container, container) for every container of the workload's pods."""
    spec = workload["spec"]["template"]["spec"]
    for container in spec.get("initContainers", []) + spec.get("containers", []):
        yield f"{workload['metadata']['name']}/{container['name']}", container


def config(objs: list[Obj]) -> dict[str, str]:
    """The application's settings from its (generated, hash-suffixed) ConfigMap."""
    data: dict[str, str] = {}
    for config_map in of_kind(objs, "ConfigMap"):
        if config_map["metadata"]["name"].startswith(CONFIG_MAP):
            data.update(config_map.get("data", {}))
    return data


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels and matchExpressions) selects these labels."""
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = (
            expression["key"],
            expression["operator"],
            expression.get("values", []),
        )
        matched = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not matched:
            return False
    return True


def scalers(objs: list[Obj]) -> Iterator[tuple[Obj, str]]:
    """(autoscaler, Deployment name) for every HorizontalPodAutoscaler and KEDA ScaledObject
    aimed at a Deployment."""
    for kind in ("HorizontalPodAutoscaler", "ScaledObject"):
        for scaler in of_kind(objs, kind):
            ref = scaler["spec"]["scaleTargetRef"]
            if ref.get("kind", "Deployment") == "Deployment":
                yield scaler, ref["name"]


def autoscaler_targets(objs: list[Obj]) -> list[tuple[str, str]]:
    """(kind/name of the autoscaler, Deployment name), as `scalers`."""
    return [(f"{s['kind']}/{s['metadata']['name']}", target) for s, target in scalers(objs)]


def _gateway_metrics_port(objs: list[Obj], container: Obj) -> list[str]:
    """The gateway declares its metrics port as "metrics", and the settings agree on it."""
    declared = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    problems = []
    if declared.get("metrics") != GATEWAY_METRICS_PORT:
        problems.append(f"gateway: does not declare port {GATEWAY_METRICS_PORT} as metrics")
    if config(objs).get("GATEWAY_METRICS_PORT", str(GATEWAY_METRICS_PORT)) != str(
        GATEWAY_METRICS_PORT
    ):
        problems.append("gateway: GATEWAY_METRICS_PORT differs from its metrics port")
    service = named(objs, "Service", "gateway")
    if service is not None and any(
        p.get("targetPort") in ("metrics", GATEWAY_METRICS_PORT)
        or p.get("port") == GATEWAY_METRICS_PORT
        for p in service["spec"].get("ports", [])
    ):
        problems.append("gateway: its Service exposes the metrics port")
    return problems


def check_processes(objs: list[Obj]) -> list[str]:
    """Every process runs its own entry point on its port behind a Service, with a disruption
    budget; a Job runs `ideasctl migrate`."""
    problems = []
    for name, port in {**PROCESSES, **WORKERS}.items():
        deployment = named(objs, "Deployment", name)
        if deployment is None:
            problems.append(f"{name}: no Deployment")
            continue
        _, container = next(containers(deployment))
        if container.get("command", []) + container.get("args", []) != [f"ims-{name}"]:
            problems.append(f"{name}: does not run ims-{name}")
        if port not in [p.get("containerPort") for p in container.get("ports", [])]:
            problems.append(f"{name}: does not declare port {port}")
        if name == "gateway":
            problems += _gateway_metrics_port(objs, container)
        if named(objs, "Service", name) is None:
            problems.append(f"{name}: no Service")
        budgets = of_kind(objs, "PodDisruptionBudget")
        if not any(selects(pdb["spec"]["selector"], pod_labels(deployment)) for pdb in budgets):
            problems.append(f"{name}: no PodDisruptionBudget")
    migrations = [
        job
        for job in of_kind(objs, "Job")
        if any(
            c.get("command", []) + c.get("args", []) == ["ideasctl", "migrate"]
            for _, c in containers(job)
        )
    ]
    if not migrations:
        problems.append("no Job runs `ideasctl migrate`")
    return problems


def check_probes(objs: list[Obj]) -> list[str]:
    """Every long-running container has startup and liveness probes on /healthz and a
    readiness probe on /readyz, on a port it declares."""
    problems = []
    wanted = {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    for deployment in of_kind(objs, "Deployment"):
        for where, container in containers(deployment):
            ports = {p.get("name") for p in container.get("ports", [])}
            ports |= {p["containerPort"] for p in container.get("ports", [])}
            for probe, path in wanted.items():
                http = container.get(probe, {}).get("httpGet", {})
                if http.get("path") != path or http.get("port") not in ports:
                    problems.append(f"{where}: {probe} must GET {path} on a declared port")
    return problems


def check_resources(objs: list[Obj]) -> list[str]:
    """Every container requests and limits CPU and memory."""
    problems = []
    for workload in workloads(objs):
        for where, container in containers(workload):
            resources = container.get("resources", {})
            for bound in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in resources.get(bound, {}):
                        problems.append(f"{where}: no {resource} in {bound}")
    return problems


def check_security(objs: list[Obj]) -> list[str]:
    """Every container runs as a non-root user on a read-only root file system, without
    capabilities, privilege escalation or host namespaces, under the RuntimeDefault seccomp."""
    problems = []
    for workload in workloads(objs):
        pod = workload["spec"]["template"]["spec"]
        pod_context = pod.get("securityContext", {})
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            if pod.get(flag):
                problems.append(f"{workload['metadata']['name']}: {flag}")
        for where, container in containers(workload):
            context = {**pod_context, **container.get("securityContext", {})}
            capabilities = context.get("capabilities", {})
            wrong = {
                "runAsNonRoot is not true": context.get("runAsNonRoot") is not True,
                "runs as uid 0": context.get("runAsUser") == 0,
                "root file system is writable": context.get("readOnlyRootFilesystem") is not True,
                "privilege escalation allowed": context.get("allowPrivilegeEscalation")
                is not False,
                "privileged": context.get("privileged") is True,
                "capabilities not all dropped": "ALL" not in capabilities.get("drop", []),
                "capabilities added": bool(capabilities.get("add")),
                "seccomp is not RuntimeDefault": context.get("seccompProfile", {}).get("type")
                != "RuntimeDefault",
            }
            problems += [f"{where}: {what}" for what, bad in wrong.items() if bad]
    return problems


def check_configuration(objs: list[Obj]) -> list[str]:
    """Every container takes its settings from the ConfigMap and the Secret."""
    problems = []
    config_maps = {
        cm["metadata"]["name"]
        for cm in of_kind(objs, "ConfigMap")
        if cm["metadata"]["name"].startswith(CONFIG_MAP)
    }
    for workload in workloads(objs):
        for where, container in containers(workload):
            sources = container.get("envFrom", [])
            maps = {s["configMapRef"]["name"] for s in sources if "configMapRef" in s}
            secrets = {s["secretRef"]["name"] for s in sources if "secretRef" in s}
            if not maps & config_maps:
                problems.append(f"{where}: not configured from the ConfigMap {CONFIG_MAP}")
            if SECRET not in secrets:
                problems.append(f"{where}: not configured from the Secret {SECRET}")
    return problems


# What a workload sets for itself, beside the shared ConfigMap: the embedder keeps to no one
# CPU (a pod's CPU is its limit, not a CPU of the node): docs/similar.md.
OWN_ENV = {
    "similar-embedder": {"SIMILAR_EMBED_CPU": "none"},
}


def check_own_settings(objs: list[Obj]) -> list[str]:
    """Each workload's own variables (`OWN_ENV`) survive every overlay and component: a patch
    that sets the datastores' variables must add to a container's env, not replace it."""
    problems = []
    for name, wanted in OWN_ENV.items():
        workload = named(objs, "Deployment", name)
        if workload is None:
            continue
        for where, container in containers(workload):
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            for key, value in wanted.items():
                if env.get(key) != value:
                    problems.append(f"{where}: {key} is {env.get(key)!r}, not {value!r}")
    return problems


def check_datastore_settings(objs: list[Obj]) -> list[str]:
    """Where the variant runs PostgreSQL from its operator (components/operators), every
    container reads DATABASE_URL from the operator's Secret and has an AMQP_URL."""
    if not of_kind(objs, "Cluster"):
        return []
    problems = []
    for workload in workloads(objs):
        for where, container in containers(workload):
            env = {e["name"]: e for e in container.get("env", [])}
            ref = env.get("DATABASE_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
            if ref.get("name") != "ideas-db-app":
                problems.append(f"{where}: DATABASE_URL not from the Secret ideas-db-app")
            if "AMQP_URL" not in env:
                problems.append(f"{where}: no AMQP_URL")
    return problems


def check_shared_secrets(objs: list[Obj]) -> list[str]:
    """The Secret's INTERNAL_TOKEN and CURSOR_SECRET, where a variant renders them, pass the
    rule every process applies at start (docs/api.md): a variant whose values the
    processes would refuse could never start."""
    problems = []
    for secret in of_kind(objs, "Secret"):
        if secret["metadata"]["name"] != SECRET:
            continue
        values = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
        values.update(secret.get("stringData", {}))
        for name in SECRET_NAMES:
            problem = secret_problem(name, values.get(name, ""))
            if problem is not None:
                problems.append(f"Secret/{SECRET}: {problem.split(';')[0]}")
    return problems


def check_autoscaling(objs: list[Obj]) -> list[str]:
    """Exactly one autoscaler (HPA or KEDA ScaledObject) per Deployment, none aimed at a
    Deployment that does not exist, and no fixed replica count under an autoscaler."""
    problems = []
    targets = autoscaler_targets(objs)
    deployments = {d["metadata"]["name"]: d for d in of_kind(objs, "Deployment")}
    for name, deployment in deployments.items():
        scalers = [scaler for scaler, target in targets if target == name]
        if len(scalers) != 1:
            problems.append(f"{name}: {len(scalers)} autoscalers {scalers}, want exactly one")
        if scalers and "replicas" in deployment["spec"]:
            problems.append(f"{name}: spec.replicas set although {scalers[0]} owns the count")
    problems += [
        f"{scaler}: targets missing Deployment {target}"
        for scaler, target in targets
        if target not in deployments
    ]
    return problems


# PostgreSQL connections one replica of each process may hold (deploy/README.md, "Scale"): its
# pool (None: DB_POOL_MAX; the embedder's is 3), and the connections it opens outside
# the pool: the outbox relay's LISTEN (ideas, customers, webhooks), the similar-ideas
# indexes' LISTEN and their loads, two at a time (similar), the webhook dispatcher's
# LISTEN. mcp reaches the data through the gateway alone; a Job (the migrations) holds one
# connection.
DB_CONNECTIONS: dict[str, tuple[int | None, int]] = {
    "gateway": (None, 0),
    "ideas": (None, 1),
    "similar": (None, 3),
    "customers": (None, 1),
    "webhooks": (None, 2),
    "analytics": (None, 0),
    "similar-embedder": (3, 0),
    "mcp": (0, 0),
}
SUPERUSER_RESERVED = 3  # PostgreSQL's superuser_reserved_connections when not set


def _surge(deployment: Obj, replicas: int) -> int:
    """The pods a rollout adds on top of `replicas` (maxSurge, rounded up as Kubernetes does;
    its default 25%)."""
    strategy = deployment["spec"].get("strategy", {})
    surge = strategy.get("rollingUpdate", {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return -(-replicas * int(surge[:-1]) // 100)
    return int(surge)


def _max_replicas(objs: list[Obj]) -> dict[str, int]:
    """Each autoscaled Deployment's most replicas (an HPA's maxReplicas, a ScaledObject's
    maxReplicaCount: KEDA's default 100)."""
    return {
        target: int(s["spec"].get("maxReplicas", s["spec"].get("maxReplicaCount", 100)))
        for s, target in scalers(objs)
    }


def database_demand(objs: list[Obj]) -> tuple[int, list[str]]:
    """The PostgreSQL connections the variant's processes may hold at once: every Deployment
    at its autoscaler's maximum plus a rollout's surge (`DB_CONNECTIONS`), and each Job's.
    With the problems found on the way (a process it cannot count)."""
    pool_max = int(config(objs).get("DB_POOL_MAX", Settings.default("db_pool_max")))
    most, problems, total = _max_replicas(objs), [], 0
    for deployment in of_kind(objs, "Deployment"):
        name = deployment["metadata"]["name"]
        if name not in DB_CONNECTIONS:
            problems.append(f"{name}: its PostgreSQL connections are not in DB_CONNECTIONS")
            continue
        pool, outside = DB_CONNECTIONS[name]
        replicas = most.get(name, int(deployment["spec"].get("replicas", 1)))
        pods = replicas + _surge(deployment, replicas)
        total += pods * ((pool_max if pool is None else pool) + outside)
    return total + len(of_kind(objs, "Job")), problems


def check_database_connections(objs: list[Obj]) -> list[str]:
    """Where the variant runs PostgreSQL from its operator, its max_connections (less the
    superusers' reserve) holds every connection the processes may open at once
    (`database_demand`): past it, new connections fail, in the middle of a rollout at peak."""
    clusters = of_kind(objs, "Cluster")
    if not clusters:
        return []
    demand, problems = database_demand(objs)
    for cluster in clusters:
        parameters = cluster["spec"].get("postgresql", {}).get("parameters", {})
        limit = int(parameters.get("max_connections", 100)) - int(
            parameters.get("superuser_reserved_connections", SUPERUSER_RESERVED)
        )
        if demand > limit:
            problems.append(
                f"Cluster/{cluster['metadata']['name']}: the processes may open {demand}"
                f" connections, max_connections leaves {limit}"
            )
    return problems


def _pre_stop_seconds(container: Obj) -> float | None:
    pre_stop = container.get("lifecycle", {}).get("preStop")
    if pre_stop is None:
        return None
    if "sleep" in pre_stop:
        return float(pre_stop["sleep"]["seconds"])
    command = " ".join(pre_stop.get("exec", {}).get("command", []))
    found = re.search(r"sleep\s+(\d+(?:\.\d+)?)", command)
    return float(found.group(1)) if found else 0.0


def check_graceful_stop(objs: list[Obj]) -> list[str]:
    """Every long-running container pauses before SIGTERM (preStop), and the grace period covers
    that pause plus SHUTDOWN_TIMEOUT_S from the ConfigMap."""
    problems = []
    shutdown = float(config(objs).get("SHUTDOWN_TIMEOUT_S", DEFAULT_SHUTDOWN_TIMEOUT_S))
    for deployment in of_kind(objs, "Deployment"):
        grace = deployment["spec"]["template"]["spec"].get(
            "terminationGracePeriodSeconds", DEFAULT_GRACE_S
        )
        for where, container in containers(deployment):
            pause = _pre_stop_seconds(container)
            if pause is None:
                problems.append(f"{where}: no preStop pause")
            elif grace <= pause + shutdown:
                problems.append(
                    f"{where}: grace period {grace} s does not exceed preStop "
                    f"{pause:g} s + SHUTDOWN_TIMEOUT_S {shutdown:g} s"
                )
    return problems


def check_exposure(objs: list[Obj]) -> list[str]:
    """Nothing but the gateway is exposed: ClusterIP Services only, no host ports, and Ingress
    rules lead to the gateway alone."""
    problems = []
    for service in of_kind(objs, "Service"):
        if service["spec"].get("type", "ClusterIP") != "ClusterIP":
            problems.append(
                f"Service/{service['metadata']['name']}: type {service['spec']['type']}"
            )
    for workload in workloads(objs):
        for where, container in containers(workload):
            if any("hostPort" in port for port in container.get("ports", [])):
                problems.append(f"{where}: hostPort")
    for ingress in of_kind(objs, "Ingress"):
        backends = [
            path["backend"]["service"]["name"]
            for rule in ingress["spec"].get("rules", [])
            for path in rule.get("http", {}).get("paths", [])
        ]
        default = ingress["spec"].get("defaultBackend", {}).get("service", {}).get("name")
        backends += [default] if default else []
        problems += [
            f"Ingress/{ingress['metadata']['name']}: routes to {name}"
            for name in backends
            if name != "gateway"
        ]
    return problems


def check_labels(objs: list[Obj]) -> list[str]:
    """Every object of a process, and its pods, carry app.kubernetes.io/name and
    app.kubernetes.io/part-of."""
    kinds = (
        "Deployment",
        "Job",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "ScaledObject",
        "Ingress",
    )
    labelled = [
        (f"{o['kind']}/{o['metadata']['name']}", o["metadata"].get("labels", {}))
        for kind in kinds
        for o in of_kind(objs, kind)
    ]
    labelled += [(f"pods of {w['metadata']['name']}", pod_labels(w)) for w in workloads(objs)]
    problems = []
    for where, labels in labelled:
        if not labels.get("app.kubernetes.io/name"):
            problems.append(f"{where}: no app.kubernetes.io/name label")
        if labels.get("app.kubernetes.io/part-of") != PART_OF:
            problems.append(f"{where}: app.kubernetes.io/part-of is not {PART_OF}")
    return problems


CHECKS: list[Check] = [
    check_processes,
    check_probes,
    check_resources,
    check_security,
    check_configuration,
    check_own_settings,
    check_datastore_settings,
    check_shared_secrets,
    check_autoscaling,
    check_database_connections,
    check_graceful_stop,
    check_exposure,
    check_labels,
]
