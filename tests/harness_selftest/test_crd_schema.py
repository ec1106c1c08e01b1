"""crd_schema: custom resources validated strictly against the pinned CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import CrdRegistry, crd_schema, load_crds
from vllm_eks.verify.errors import NoSchemaError, SchemaError

EXPECTED_KINDS = {
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("karpenter.sh/v1", "NodePool"),
    ("karpenter.k8s.aws/v1", "EC2NodeClass"),
    ("keda.sh/v1alpha1", "ScaledObject"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PodMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
    ("ray.io/v1", "RayService"),
    ("inference.networking.k8s.io/v1", "InferencePool"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"),
}


def pod_template(role: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"role": role}, "annotations": {"example.com/note": "x"}},
        "spec": {
            "containers": [{
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.10.0",
                "args": ["--tensor-parallel-size", "8"],
                "resources": {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}},
                "ports": [{"containerPort": 8000, "name": "http"}],
            }],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}],
        },
    }


def leaderworkerset() -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "llama-405b", "namespace": "serving", "labels": {"app": "vllm"}},
        "spec": {
            "replicas": 1,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": 2,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": pod_template("leader"),
                "workerTemplate": pod_template("worker"),
            },
            "rolloutStrategy": {"type": "RollingUpdate",
                                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": "50%"}},
        },
    }


def nodepool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-p5"},
        "spec": {
            "template": {
                "metadata": {"labels": {"vllm-eks/pool": "p5"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In",
                         "values": ["p5.48xlarge"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    ],
                    "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                    "expireAfter": "720h",
                },
            },
            "limits": {"nvidia.com/gpu": 16, "cpu": "1000"},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
        },
    }


def test_registry_has_every_pinned_kind(crd_registry: CrdRegistry) -> None:
    assert EXPECTED_KINDS <= set(crd_registry)
    entry = crd_registry[("karpenter.sh/v1", "NodePool")]
    assert entry.scope == "Cluster" and entry.source.name == "karpenter.sh_nodepools.yaml"


@pytest.mark.parametrize("build", [leaderworkerset, nodepool], ids=["LeaderWorkerSet", "NodePool"])
def test_valid_objects_pass(build, crd_registry: CrdRegistry) -> None:  # noqa: ANN001
    crd_schema.validate(build(), crd_registry)


@pytest.mark.parametrize(
    "build, path, field",
    [
        (leaderworkerset, ["spec"], "replica"),
        (leaderworkerset, ["spec", "leaderWorkerTemplate"], "workers"),
        (leaderworkerset, ["spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", 0],
         "gpus"),
        (leaderworkerset, ["spec", "leaderWorkerTemplate", "leaderTemplate", "metadata"], "label"),
        (nodepool, ["spec", "template", "spec"], "instanceType"),
        (nodepool, ["spec", "template", "spec", "requirements", 0], "value"),
        (nodepool, ["metadata"], "labelz"),
    ],
)
def test_unknown_fields_are_rejected(build, path: list, field: str, crd_registry: CrdRegistry) -> None:  # noqa: ANN001
    obj = build()
    node = obj
    for part in path:
        node = node[part]
    node[field] = "x"
    dotted = ".".join(str(p) for p in path).replace(".0", "[0]")
    with pytest.raises(SchemaError) as info:
        crd_schema.validate(obj, crd_registry)
    msg = str(info.value)
    assert f"{dotted}.{field}: unknown field" in msg, msg
    assert f"{obj['kind']}/{obj['metadata']['name']}" in msg


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda o: o["spec"].__setitem__("replicas", "1"), r"spec\.replicas: '1' is not of type 'integer'"),
        (lambda o: o["spec"].__setitem__("replicas", 2**31), r"spec\.replicas: .*int32"),
        (lambda o: o["spec"].__setitem__("startupPolicy", "Eventually"), r"spec\.startupPolicy: 'Eventually' is not one of"),
        (lambda o: o["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].__setitem__("maxSurge", 1.5),
         r"maxSurge: 1\.5 is not of type"),
        (lambda o: o["spec"]["leaderWorkerTemplate"].pop("workerTemplate"), r"'workerTemplate' is a required property"),
        (lambda o: o["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
         ["resources"]["limits"].__setitem__("memory", "1 TB"), r"limits\.memory: '1 TB'"),
        (lambda o: o["spec"].__setitem__("networkConfig", None), r"spec\.networkConfig: None is not of type 'object'"),
        (lambda o: o["metadata"].pop("name"), r"'name' is a required property"),
        (lambda o: o["metadata"]["labels"].__setitem__("app", 5), r"metadata\.labels\.app: 5 is not of type 'string'"),
    ],
    ids=["string-replicas", "int32-overflow", "enum", "int-or-string", "required", "quantity",
         "null-not-nullable", "no-name", "label-type"],
)
def test_lws_constraints(mutate, expected: str, crd_registry: CrdRegistry) -> None:  # noqa: ANN001
    obj = leaderworkerset()
    mutate(obj)
    with pytest.raises(SchemaError, match=expected):
        crd_schema.validate(obj, crd_registry)


def test_int_or_string_accepts_both(crd_registry: CrdRegistry) -> None:
    obj = leaderworkerset()
    obj["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"] = 2
    crd_schema.validate(obj, crd_registry)
    obj["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"] = "25%"
    crd_schema.validate(obj, crd_registry)


def test_nodepool_limits_quantity_pattern(crd_registry: CrdRegistry) -> None:
    obj = nodepool()
    obj["spec"]["limits"]["memory"] = "2 TiB"
    with pytest.raises(SchemaError, match=r"spec\.limits\.memory: '2 TiB' does not match"):
        crd_schema.validate(obj, crd_registry)


def test_unserved_or_unknown_version_is_no_schema(crd_registry: CrdRegistry) -> None:
    obj = nodepool()
    obj["apiVersion"] = "karpenter.sh/v1beta1"
    with pytest.raises(NoSchemaError, match=r"no CRD serves karpenter\.sh/v1beta1 NodePool; served versions of that kind: karpenter\.sh/v1 NodePool"):
        crd_schema.validate(obj, crd_registry)


def test_missing_crd_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(crd_schema.CrdDirError, match="VLLM_EKS_CRD_DIR"):
        load_crds(tmp_path / "absent")
    with pytest.raises(crd_schema.CrdDirError, match="no CustomResourceDefinition"):
        load_crds(tmp_path)


def test_env_var_selects_the_directory(monkeypatch: pytest.MonkeyPatch, crd_dir: Path, tmp_path: Path) -> None:
    monkeypatch.setenv(crd_schema.CRD_DIR_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(crd_schema.CrdDirError, match="elsewhere"):
        load_crds()
    monkeypatch.setenv(crd_schema.CRD_DIR_ENV, str(crd_dir))
    assert load_crds().directory == crd_dir.resolve()


# Conversion rules on small synthetic schemas.
def _validator(schema: dict[str, Any]):  # noqa: ANN202
    from vllm_eks.verify.formats import FORMAT_CHECKER
    from vllm_eks.verify.listmap import StrictValidator
    return StrictValidator(crd_schema.to_json_schema(schema), format_checker=FORMAT_CHECKER)


def test_conversion_rules() -> None:
    schema = {
        "type": "object",
        "required": ["mode", "size"],
        "properties": {
            "mode": {"type": "string", "default": "auto"},
            "size": {"type": "integer", "format": "int32"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "port": {"x-kubernetes-int-or-string": True,
                     "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "note": {"type": "string", "nullable": True},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "pick": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                     "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        },
    }
    v = _validator(schema)
    ok = {"size": 1, "free": {"anything": {"goes": 1}}, "port": "http", "note": None,
          "tags": ["x", "y"], "pick": {"a": "1"}}
    assert not list(v.iter_errors(ok)), "defaulted `mode` must not be required"
    assert not list(v.iter_errors({**ok, "port": 8080}))
    bad = [
        {**ok, "extra": 1},                       # closed object
        {**ok, "pick": {"a": "1", "c": "2"}},     # closed nested object
        {**ok, "pick": {"a": "1", "b": "2"}},     # oneOf still applies
        {**ok, "port": 1.5},                      # int-or-string
        {**ok, "size": None},                     # not nullable
        {**ok, "size": 2**31},                    # int32
        {**ok, "tags": ["x", "x"]},               # set
        {k: v_ for k, v_ in ok.items() if k != "size"},  # required without default
    ]
    for instance in bad:
        assert list(v.iter_errors(instance)), instance
