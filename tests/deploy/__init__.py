"""Checks of the rendered Kubernetes manifests in deploy/k8s."""
