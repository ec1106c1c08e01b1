"""The pods a rendered release will create, as the controllers create them, and the label
selector and NetworkPolicy semantics the API server and a network plugin apply to them.

Workload objects carry pod templates (vllm_eks.check.workloads finds them); the LeaderWorkerSet
controller and KubeRay add labels of their own to the pods they create (not in the templates),
which monitors and policies select on:
- LWS: `leaderworkerset.sigs.k8s.io/worker-index`, "0" on the leader (kubernetes-sigs/lws
  `api/leaderworkerset/v1/leaderworkerset_types.go`, WorkerIndexLabelKey);
- KubeRay: `ray.io/is-ray-node: "yes"` on every Ray pod (ray-project/kuberay
  `ray-operator/controllers/ray/common/pod.go`).

NetworkPolicy ingress (networking.k8s.io/v1, https://kubernetes.io/docs/concepts/services-networking/network-policies/):
a pod selected by a policy with policyType Ingress admits a connection when some rule admits it;
a rule admits it when its `ports` are empty or one matches (number, or a name matched against the
destination container's port names; protocol TCP by default; `endPort` makes a range), and its
`from` is empty or one peer matches. A peer with only `podSelector` means pods of the policy's
namespace; only `namespaceSelector`, every pod of the selected namespaces; both, the selected pods
of the selected namespaces. An `ipBlock` peer matches a source address inside its `cidr` and
outside its `except` blocks; an address outside the cluster (source namespace "", e.g. an ALB's
ENI) matches only `ipBlock` peers."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from vllm_eks.check.workloads import pod_templates
from vllm_eks.core import contract

KUBERAY_POD_LABELS = {"ray.io/is-ray-node": "yes"}
# Namespace label the API server sets on every namespace (Kubernetes >= 1.21).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class CreatedPod:
    what: str                       # e.g. "LeaderWorkerSet/vllm leader"
    namespace: str
    labels: dict[str, str]
    spec: dict[str, Any] = field(repr=False)

    def container_ports(self) -> list[dict[str, Any]]:
        return [p for c in self.spec.get("containers", []) for p in c.get("ports", [])]

    def port_number(self, name: str) -> int | None:
        """Container port number of a named port, or None when no container declares it."""
        numbers = {int(p["containerPort"]) for p in self.container_ports() if p.get("name") == name}
        assert len(numbers) <= 1, f"{self.what}: port name {name} declared with numbers {sorted(numbers)}"
        return numbers.pop() if numbers else None


def selects(match_labels: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in match_labels.items())


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions); {} selects everything."""
    selector = selector or {}
    if not selects(selector.get("matchLabels") or {}, labels):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {"In": key in labels and labels[key] in values,
              "NotIn": key not in labels or labels[key] not in values,
              "Exists": key in labels,
              "DoesNotExist": key not in labels}.get(op)
        assert ok is not None, f"unknown label selector operator {op}"
        if not ok:
            return False
    return True


# The workloads whose pods these checks look at (vllm_eks.check.workloads walks them).
CREATED_POD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "LeaderWorkerSet", "RayService"}


def created_pods(objects: list[dict[str, Any]]) -> list[CreatedPod]:
    """Every pod the workload objects of a rendered release will create, with the labels the
    controllers add: one per pod template of vllm_eks.check.workloads.pod_templates."""
    pods: list[CreatedPod] = []
    for t in pod_templates(objects, daemonsets=True):
        if t.kind not in CREATED_POD_KINDS:
            continue
        extra: dict[str, str] = {}
        if t.kind == "LeaderWorkerSet":
            extra = {contract.LWS_WORKER_INDEX_LABEL: "0" if t.role == "leader" else "1"}
        elif t.kind == "RayService":
            # KubeRay's labelPod (ray-operator/controllers/ray/common/pod.go): node type and group
            # on every pod, the head's group being "headgroup".
            head = t.role == "head"
            extra = {**KUBERAY_POD_LABELS, "ray.io/node-type": "head" if head else "worker",
                     "ray.io/group": "headgroup" if head else str(t.group)}
        what = "" if t.role == "pod" else f" {t.group or t.role}"
        pods.append(CreatedPod(f"{t.workload}{what}", t.namespace, {**t.labels, **extra}, t.spec))
    return pods


def _port_matches(rule_port: dict[str, Any], pod: CreatedPod, number: int, protocol: str) -> bool:
    if rule_port.get("protocol", "TCP") != protocol:
        return False
    port = rule_port.get("port")
    if port is None:
        return True
    if isinstance(port, str):
        return pod.port_number(port) == number
    return int(port) <= number <= int(rule_port.get("endPort", port))


def _ip_block_matches(block: dict[str, Any], source_ip: str | None) -> bool:
    if source_ip is None:
        return False
    address = ipaddress.ip_address(source_ip)
    return (address in ipaddress.ip_network(block["cidr"])
            and not any(address in ipaddress.ip_network(e) for e in block.get("except") or []))


def _peer_matches(peer: dict[str, Any], policy_ns: str, source_ns: str, source_labels: dict[str, str],
                  source_ip: str | None = None) -> bool:
    if "ipBlock" in peer:
        return _ip_block_matches(peer["ipBlock"], source_ip)
    if not source_ns:
        return False
    pod_sel, ns_sel = peer.get("podSelector"), peer.get("namespaceSelector")
    if ns_sel is None:
        in_namespace = source_ns == policy_ns
    else:
        in_namespace = selector_matches(ns_sel, {NAMESPACE_NAME_LABEL: source_ns})
    return in_namespace and (pod_sel is None or selector_matches(pod_sel, source_labels))


def ingress_admits(policies: list[dict[str, Any]], pod: CreatedPod, number: int, source_ns: str,
                   source_labels: dict[str, str], protocol: str = "TCP", source_ip: str | None = None) -> bool:
    """Whether the NetworkPolicies admit a connection to `pod` on port `number` from a pod with
    `source_labels` in namespace `source_ns`, or from `source_ip` outside the cluster with source_ns ""
    (a pod no Ingress policy selects admits everything)."""
    selecting = [p for p in policies if p["metadata"].get("namespace", "") == pod.namespace
                 and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
                 and selector_matches(p["spec"]["podSelector"], pod.labels)]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress") or []:
            ports = rule.get("ports") or []
            peers = rule.get("from") or []
            if ports and not any(_port_matches(rp, pod, number, protocol) for rp in ports):
                continue
            if peers and not any(_peer_matches(peer, policy["metadata"].get("namespace", ""), source_ns, source_labels,
                                               source_ip) for peer in peers):
                continue
            return True
    return False
