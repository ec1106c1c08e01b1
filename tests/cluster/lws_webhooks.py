"""The LeaderWorkerSet controller's admission webhooks on the test control plane.

The pinned module's config/webhook/manifests.yaml gives each webhook's path, rules and failure
policy, addressed to a Service (`webhook-service`). No kube-proxy routes a Service here, so the
configurations registered point at the controller's loopback URL with the test CA as caBundle
(what controller-runtime's envtest does); names, paths and rules are upstream's. They must be
registered: the pod webhook (pkg/webhooks/pod_webhook.go) is what sets the worker-index label
and LWS_LEADER_ADDRESS / LWS_GROUP_SIZE / LWS_WORKER_INDEX, and the LeaderWorkerSet webhook
defaults and validates the spec."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from .controlplane import WebhookServer
from .kube import Cluster, wait_for

# The names the controller's cert rotator looks for (pkg/cert/cert.go), kustomize's `lws-` prefix.
NAMES = {"MutatingWebhookConfiguration": "lws-mutating-webhook-configuration",
         "ValidatingWebhookConfiguration": "lws-validating-webhook-configuration"}
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def configurations(manifests: Path, server: WebhookServer) -> list[dict[str, Any]]:
    ca = base64.b64encode(server.ca_file.read_bytes()).decode()
    out = []
    for doc in yaml.safe_load_all(manifests.read_text()):
        if not doc:
            continue
        doc = copy.deepcopy(doc)
        doc["metadata"] = {"name": NAMES[doc["kind"]]}
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": server.url + path, "caBundle": ca}
        out.append(doc)
    return out


def register(c: Cluster, docs: list[dict[str, Any]]) -> None:
    api = client.AdmissionregistrationV1Api(c.api)
    create = {"MutatingWebhookConfiguration": api.create_mutating_webhook_configuration,
              "ValidatingWebhookConfiguration": api.create_validating_webhook_configuration}
    for doc in docs:
        create[doc["kind"]](body=doc)
    wait_for("the API server to call the LWS pod webhook", lambda: _pod_webhook_answers(c), timeout=30)


def unregister(c: Cluster) -> None:
    api = client.AdmissionregistrationV1Api(c.api)
    for delete, name in ((api.delete_mutating_webhook_configuration, NAMES["MutatingWebhookConfiguration"]),
                         (api.delete_validating_webhook_configuration, NAMES["ValidatingWebhookConfiguration"])):
        try:
            delete(name)
        except ApiException as exc:
            if exc.status != 404:
                raise


def _pod_webhook_answers(c: Cluster) -> bool:
    """A dry-run pod labelled as an LWS pod but without the size annotation: the pod webhook
    refuses it ("size annotation is unexpectedly missing"), so a refusal naming it shows the API
    server calls the webhook (it picks up new configurations asynchronously)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "lws-webhook-probe", "labels": {SET_NAME_LABEL: "probe"}},
           "spec": {"containers": [{"name": "c", "image": "probe"}]}}
    try:
        c.core.create_namespaced_pod("default", pod, dry_run="All")
    except ApiException as exc:
        return "size annotation" in (exc.body or "")
    return False
