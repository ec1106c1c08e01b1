"""tests/harness/pods.py: label selectors and NetworkPolicy ingress semantics on hand-made objects."""

from __future__ import annotations

from tests.harness.pods import CreatedPod, created_pods, ingress_admits, selector_matches

POD = CreatedPod("Deployment/x", "llm", {"app": "x"},
                 {"containers": [{"ports": [{"name": "http", "containerPort": 8000}]}]})


def policy(*rules: dict, namespace: str = "llm") -> dict:
    return {"metadata": {"namespace": namespace},
            "spec": {"podSelector": {"matchLabels": {"app": "x"}}, "policyTypes": ["Ingress"], "ingress": list(rules)}}


def ns(*names: str) -> dict:
    return {"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(names)}]}}


def test_selector_expressions() -> None:
    labels = {"a": "1"}
    assert selector_matches({}, labels)
    assert selector_matches({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, labels)
    assert not selector_matches({"matchLabels": {"a": "2"}}, labels)


def test_unselected_pod_admits_everything() -> None:
    other = CreatedPod("Deployment/y", "llm", {"app": "y"}, {"containers": []})
    assert ingress_admits([policy()], other, 1, "anywhere", {})


def test_ports_numbers_names_and_ranges() -> None:
    p = [policy({"ports": [{"port": "http"}, {"port": 9000, "endPort": 9010}], "from": [ns("mon")]})]
    assert ingress_admits(p, POD, 8000, "mon", {})          # named port resolved on the pod
    assert ingress_admits(p, POD, 9005, "mon", {})
    assert not ingress_admits(p, POD, 8080, "mon", {})
    assert not ingress_admits(p, POD, 8000, "mon", {}, protocol="UDP")


def test_peers() -> None:
    same_ns_pods = [policy({"from": [{"podSelector": {}}]})]
    assert ingress_admits(same_ns_pods, POD, 8000, "llm", {})
    assert not ingress_admits(same_ns_pods, POD, 8000, "mon", {})   # podSelector alone: policy's namespace
    both = [policy({"from": [{**ns("mon"), "podSelector": {"matchLabels": {"app": "prometheus"}}}]})]
    assert ingress_admits(both, POD, 8000, "mon", {"app": "prometheus"})
    assert not ingress_admits(both, POD, 8000, "mon", {"app": "grafana"})
    assert not ingress_admits([policy({"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]})], POD, 8000, "mon", {})
    assert not ingress_admits([policy()], POD, 8000, "llm", {})      # no rule: nothing admitted


def test_created_pods_add_controller_labels() -> None:
    tpl = {"metadata": {"labels": {"app": "x"}}, "spec": {}}
    lws = {"kind": "LeaderWorkerSet", "metadata": {"name": "g", "namespace": "llm"},
           "spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": tpl}}}
    ray = {"kind": "RayService", "metadata": {"name": "r", "namespace": "llm"},
           "spec": {"rayClusterConfig": {"headGroupSpec": {"template": tpl},
                                         "workerGroupSpecs": [{"groupName": "gpu", "template": tpl}]}}}
    pods = {p.what: p.labels for p in created_pods([lws, ray])}
    assert pods["LeaderWorkerSet/g leader"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert pods["LeaderWorkerSet/g worker"]["leaderworkerset.sigs.k8s.io/worker-index"] == "1"
    assert pods["RayService/r head"]["ray.io/is-ray-node"] == "yes"
    assert pods["RayService/r gpu"]["ray.io/is-ray-node"] == "yes"


def test_ip_block_admits_addresses_inside_cidr_outside_except() -> None:
    vpc = {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.9.0/24"]}}
    p = [policy({"from": [vpc], "ports": [{"port": 8000}]})]
    assert ingress_admits(p, POD, 8000, "", {}, source_ip="10.0.3.7")          # an ALB ENI in the VPC
    assert not ingress_admits(p, POD, 8000, "", {}, source_ip="10.0.9.4")      # in an except block
    assert not ingress_admits(p, POD, 8000, "", {}, source_ip="192.168.1.1")   # outside the VPC
    assert not ingress_admits(p, POD, 8000, "mon", {})                         # a pod with no address given


def test_external_address_matches_no_selector_peer() -> None:
    p = [policy({"from": [{"namespaceSelector": {}}]})]
    assert ingress_admits(p, POD, 8000, "anywhere", {})
    assert not ingress_admits(p, POD, 8000, "", {}, source_ip="10.0.3.7")
