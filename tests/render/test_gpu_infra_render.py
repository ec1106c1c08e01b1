"""charts/gpu-infra: render and lint every ci/ and values/<scenario>/ file with Helm 3 and 4,
validate every object strictly (Karpenter CRDs, Kubernetes 1.31-1.35), scan with checkov, and
check the chart against the contract the model-server chart relies on."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import yaml

from tests.harness import chart_contract, checkov, helm, validate_all
from tests.harness.paths import CHARTS, ROOT, VALUES
from vllm_eks.core import contract
from vllm_eks.values.gpu_infra import GpuInfraValues, reserved_tag_key
from vllm_eks.values.schema import render_schema

pytestmark = pytest.mark.render

CHART = CHARTS / "gpu-infra"
NAMESPACE = "gpu-infra"
CI_FILES = sorted((CHART / "ci").glob("*-values.yaml"))
SCENARIO_FILES = sorted(VALUES.glob("*/gpu-infra.yaml"))
ALL_FILES = CI_FILES + SCENARIO_FILES


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@functools.lru_cache(maxsize=None)
def _render(values_file: Path, helm_name: str) -> tuple[dict, ...]:
    return tuple(helm.render(CHART, [values_file], helm=helm_name, release="gpu-infra", namespace=NAMESPACE))


def test_ci_files_exist() -> None:
    assert len(CI_FILES) >= 4, f"expected the ci/NN-purpose-values.yaml scenarios in {CHART / 'ci'}"
    for path in CI_FILES:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# Purpose:"), f"{_id(path)}: first line must state its purpose"


def test_committed_scenarios_exist() -> None:
    assert SCENARIO_FILES, "no values/<scenario>/gpu-infra.yaml committed: run `make values`"


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_lint_strict(values_file: Path, helm_version: str) -> None:
    helm.lint(CHART, [values_file], helm=helm_version)


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_render_validates_strictly(values_file: Path, helm_version: str, crd_registry, kube_version: str) -> None:
    objects = list(_render(values_file, helm_version))
    kinds = {o["kind"] for o in objects}
    assert {"NodePool", "EC2NodeClass", "DaemonSet", "Service"} <= kinds, kinds
    report = validate_all(objects, crd_registry, kube_version=kube_version)
    assert report.custom["NodePool"] >= 1 and report.custom["EC2NodeClass"] >= 1, report.summary()
    assert report.builtin["DaemonSet"] >= 1, report.summary()


def test_helm3_and_helm4_render_the_same() -> None:
    for values_file in ALL_FILES:
        assert _render(values_file, "helm3") == _render(values_file, "helm4"), _id(values_file)


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_pools_follow_the_contract(values_file: Path) -> None:
    objects = _render(values_file, "helm4")
    values = yaml.safe_load(values_file.read_text()) or {}
    pools = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NodePool"}
    classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "EC2NodeClass"}
    assert set(pools) == set(classes)
    rendered = chart_contract.rendered()
    for name, np in pools.items():
        tmpl = np["spec"]["template"]
        # every pool labels its nodes with its name under one key and taints them the same way
        assert chart_contract.nodepool_pool_label(np) == rendered.pool_label
        assert chart_contract.nodepool_gpu_taint(np) == {"key": rendered.gpu_taint_key,
                                                         "effect": rendered.gpu_taint_effect}
        ref = tmpl["spec"]["nodeClassRef"]
        assert ref == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name}
        assert np["spec"]["limits"][contract.GPU_RESOURCE] >= 1
        assert np["spec"]["disruption"]["consolidationPolicy"] in ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
        keys = {r["key"] for r in tmpl["spec"]["requirements"]}
        assert contract.INSTANCE_TYPE_LABEL in keys and contract.CAPACITY_TYPE_LABEL in keys
        nc = classes[name]["spec"]
        (alias,) = [t["alias"] for t in nc["amiSelectorTerms"]]
        assert not alias.endswith("@latest") or values.get("allowLatestAmi"), alias
        assert nc["metadataOptions"]["httpTokens"] == "required"
        assert nc["tags"]["workload"] == "llm-inference"
        roots = [b for b in nc["blockDeviceMappings"] if b.get("rootVolume")]
        assert len(roots) == 1 and roots[0]["ebs"]["volumeType"] == "gp3"
    # EFA pools: exactly one zone, and the EFA device plugin runs on them.
    efa_pools = [p for p in (values.get("pools") or []) if p.get("efa")]
    for p in efa_pools:
        zone_req = [r for r in pools[p["name"]]["spec"]["template"]["spec"]["requirements"]
                    if r["key"] == contract.ZONE_LABEL]
        assert len(zone_req) == 1 and len(zone_req[0]["values"]) == 1
    if efa_pools:
        assert any(o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("efa-device-plugin") for o in objects)


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_daemonsets_are_node_critical_and_tolerate_the_gpu_taint(values_file: Path) -> None:
    objects = _render(values_file, "helm4")
    daemonsets = [o for o in objects if o["kind"] == "DaemonSet"]
    assert daemonsets
    for ds in daemonsets:
        spec = ds["spec"]["template"]["spec"]
        assert spec["priorityClassName"] == "system-node-critical"
        assert any(t.get("key") == chart_contract.rendered().gpu_taint_key and t.get("operator") == "Exists"
                   for t in spec["tolerations"])
        for c in spec["containers"]:
            image = c["image"]
            assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image
            assert c["resources"]["requests"] and c["resources"]["limits"]
    amis = {t["alias"].split("@")[0] for o in objects if o["kind"] == "EC2NodeClass" for t in o["spec"]["amiSelectorTerms"]}
    nvidia = [d for d in daemonsets if d["metadata"]["name"].endswith("nvidia-device-plugin")]
    if "bottlerocket" in amis:
        assert not nvidia, "Bottlerocket NVIDIA AMIs run their own device plugin"
    for ds in nvidia:
        terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        keys = {e["key"] for t in terms for e in t["matchExpressions"]}
        assert contract.GPU_COUNT_LABEL in keys and not any(k.startswith("feature.node.kubernetes.io") for k in keys)


def test_dcgm_service_port() -> None:
    objects = _render(CI_FILES[0], "helm4")
    (svc,) = [o for o in objects if o["kind"] == "Service"]
    assert svc["spec"]["ports"] == [{"name": "metrics", "port": 9400, "targetPort": "metrics", "protocol": "TCP"}]


def test_checkov_only_annotated_skips_on_daemonsets() -> None:
    renders = {f"{path.parent.name}-{path.stem}.yaml": helm.template_text(
        CHART, [path], helm="helm4", release="gpu-infra", namespace=NAMESPACE) for path in ALL_FILES}
    result = checkov.scan(renders)
    assert result.resource_count > 0, result.summary()
    assert not result.parsing_errors, result.parsing_errors
    assert result.failed == 0, result.summary() + "\n" + result.failures_text()
    objects = [o for path in ALL_FILES for o in _render(path, "helm4")]
    skips = checkov.skip_annotations(objects)
    assert skips
    for skip in skips:
        assert skip.resource.startswith("DaemonSet/"), f"skip outside a DaemonSet: {skip.annotation}"
        assert skip.has_reason and len(skip.reason) > 20, f"skip without a written reason: {skip.annotation}"
    for finding in result.skipped_checks:
        assert finding.resource.startswith("DaemonSet."), str(finding)
        assert finding.reason and finding.reason != checkov.NO_REASON, str(finding)


def test_values_yaml_is_the_model_defaults() -> None:
    """values.yaml parses with the pydantic model, and every default the model has is the one
    values.yaml documents (they are two views of one source)."""
    raw = yaml.safe_load((CHART / "values.yaml").read_text())
    parsed = GpuInfraValues.model_validate(raw)
    dumped = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped == raw


def test_values_schema_is_generated_from_the_model() -> None:
    on_disk = json.loads((CHART / "values.schema.json").read_text())
    assert on_disk == json.loads(render_schema(GpuInfraValues, on_disk.get("title", "gpu-infra values")))


@pytest.mark.parametrize("bad, message", [
    ({"pools": [{"name": "x", "instanceTypes": ["g5.xlarge"], "gpuLimit": 0}]}, "gpuLimit"),
    ({"pools": [{"name": "x", "instanceTypes": ["g5.xlarge"], "gpuLimit": 1, "bogus": 1}]}, "bogus"),
    ({"amiFamily": "al2"}, "amiFamily"),
    ({"metadataOptions": {"httpTokens": "off"}}, "httpTokens"),
    ({"poolDefaults": {"disruption": {"consolidateAfter": "ten minutes"}}}, "consolidateAfter"),
    ({"dcgmExporter": {"resources": {"requests": {"cpu": "lots", "memory": "512Mi"},
                                     "limits": {"cpu": "500m", "memory": "1Gi"}}}}, "cpu"),
    ({"pools": [{"name": "x", "instanceTypes": ["g5.xlarge"], "gpuLimit": 1, "zones": ["mars-1a"]}]}, "zones"),
    ({"pools": [{"name": "x", "instanceTypes": ["big gpu box"], "gpuLimit": 1}]}, "instanceTypes"),
    ({"clusterName": "prod/east"}, "clusterName"),
    ({"nodeRole": "arn:aws:iam::111122223333:role/nodes"}, "nodeRole"),
    ({"ec2Tags": {"team": "x" * 257}}, "ec2Tags"),
    ({"pools": [{"name": "x", "instanceTypes": ["g5.xlarge"], "gpuLimit": 1, "labels": {"Team_A/x": "a"}}]},
     "labels"),
    # rendered `budgets:` with no value, which the NodePool refuses
    ({"poolDefaults": {"disruption": {"budgets": []}}}, "budgets"),
    ({"pools": [{"name": "x", "instanceTypes": ["g5.xlarge"], "gpuLimit": 2**40}]}, "gpuLimit"),
    ({"priorityClassName": "Node_Critical"}, "priorityClassName"),
    # the EC2NodeClass alias family@version is at most 30 characters
    ({"amiVersion": "release-2026-09-03-with-fixes"}, "amiVersion"),
    ({"discovery": {"tagKey": "line\nbreak"}}, "tagKey"),
    ({"networkPolicy": {"metricsFrom": [{}]}}, "metricsFrom"),  # an empty peer: the API server refuses it
], ids=["gpuLimit-0", "unknown-key", "al2-family", "imds-tokens", "duration", "bad-quantity", "zone",
        "instance-type", "cluster-name", "node-role-arn", "long-tag-value", "node-label-key", "no-budgets", "beyond-int32",
        "priority-class", "ami-version", "tag-key", "empty-peer"])
def test_schema_rejects_bad_values(tmp_path: Path, helm_version: str, bad: dict, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE)
    assert message in str(err.value)


@pytest.mark.parametrize("bad, keys", [
    ({"amiVersion": "latest"}, ["amiVersion"]),
    ({"amiFamily": "bottlerocket", "amiVersion": "v1.65.0"}, ["nvidiaDevicePlugin.enabled"]),
    ({"pools": [{"name": "p", "instanceTypes": ["p5.48xlarge"], "gpuLimit": 8, "efa": True}]},
     ["pools[0].zones", "efaDevicePlugin.enabled"]),
    ({"pools": [{"name": "p", "instanceTypes": ["p5.48xlarge"], "gpuLimit": 8,
                 "capacityReservations": [{"id": "cr-0abc", "instanceMatchCriteria": "open"}]}]},
     ["pools[0].capacityTypes", "pools[0].capacityReservations[0]"]),
    ({"pools": [{"name": "p", "instanceTypes": ["g5.xlarge"], "gpuLimit": 1, "capacityTypes": ["reserved"]},
                {"name": "p", "instanceTypes": ["g5.xlarge"], "gpuLimit": 1,
                 "placementGroup": {"name": "a", "id": "pg-0123456789abcdef0"}, "rootVolume": {"iops": 3000}}]},
     ["pools[0].capacityReservations", "pools[1].name", "pools[1].placementGroup", "pools[1].rootVolume.throughput"]),
    ({"metadataOptions": {"httpTokens": "optional", "httpPutResponseHopLimit": 2},
      "poolDefaults": {"rootVolume": {"encrypted": False}}},
     ["metadataOptions.httpTokens", "metadataOptions.httpPutResponseHopLimit", "pools[0].rootVolume.encrypted"]),
    ({"nvidiaDevicePlugin": {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                           "limits": {"cpu": "200m", "memory": "256Mi"}}},
      "dcgmExporter": {"resources": {"requests": {"cpu": "100m", "memory": "2Gi"},
                                     "limits": {"cpu": "500m", "memory": "1Gi"}}}},
     ["nvidiaDevicePlugin.resources.requests.cpu", "dcgmExporter.resources.requests.memory"]),
    ({"poolDefaults": {"labels": {"vllm-eks.io/pool": "other"}}}, ["pools[0].labels.vllm-eks.io/pool"]),
    # a misspelt type and a non-GPU one: well-formed names Karpenter would never launch a GPU node for
    ({"pools": [{"name": "a", "instanceTypes": ["p5.48xlarg"], "gpuLimit": 8},
                {"name": "b", "instanceTypes": ["g5.xlarge", "m5.large"], "gpuLimit": 1}]},
     ["pools[0].instanceTypes", "pools[1].instanceTypes"]),
], ids=["latest-ami", "bottlerocket-plus-plugin", "efa-zone-plugin", "reservations", "several", "insecure-nodes",
        "requests-above-limits", "pool-label", "unknown-instance-types"])
def test_validate_helper_names_every_key(tmp_path: Path, bad: dict, keys: list[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [path], helm="helm4", namespace=NAMESPACE)
    text = str(err.value)
    assert "gpu-infra values are invalid" in text
    for key in keys:
        assert f"- {key}" in text, f"{key} not named in:\n{text}"


def _karpenter_restricted_tag_keys(crd_dir: Path) -> list[str]:
    """The tag keys the pinned EC2NodeClass CRD refuses, read from its CEL messages."""
    crd = yaml.safe_load((crd_dir / "karpenter.k8s.aws_ec2nodeclasses.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = spec["properties"]["tags"]["x-kubernetes-validations"]
    marker = "restricted tag matching "
    return [r["message"].split(marker, 1)[1] for r in rules if marker in r["message"]]


def test_reserved_ec2_tag_keys_are_refused_by_name(tmp_path: Path, crd_dir: Path) -> None:
    """Every key the pinned Karpenter CRD restricts, plus AWS's aws: prefix in any case, is refused
    by the chart (naming the key) and by the values model, before Karpenter's admission would."""
    restricted = _karpenter_restricted_tag_keys(crd_dir)
    assert len(restricted) >= 5, restricted
    keys = [k.rstrip("/") + ("/prod" if k.endswith("/") else "") for k in restricted] + ["aws:cost", "AWS:team"]
    keys += ["", "k" * 129]  # outside EC2's 1-128 characters
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"ec2Tags": {k: "x" for k in keys}}))
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [path], helm="helm4", namespace=NAMESPACE)
    for key in keys:
        assert f"- ec2Tags: key {json.dumps(key)}" in str(err.value), key
    for key in keys[:-2]:
        assert reserved_tag_key(key), key
    assert not reserved_tag_key("team") and not reserved_tag_key("kubernetes.io/created-for/pv/name")


def _node_class(tmp_path: Path, values: dict) -> dict:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    objs = helm.render(CHART, [path], helm="helm4", namespace=NAMESPACE)
    return next(o for o in objs if o["kind"] == "EC2NodeClass")


def test_security_exceptions_admit_what_they_name(tmp_path: Path) -> None:
    nc = _node_class(tmp_path, {
        "metadataOptions": {"httpTokens": "optional", "httpPutResponseHopLimit": 2},
        "poolDefaults": {"rootVolume": {"encrypted": False}},
        "securityExceptions": {"imdsv1": True, "podImdsAccess": True, "unencryptedVolumes": True}})
    assert nc["spec"]["metadataOptions"]["httpTokens"] == "optional"
    assert nc["spec"]["metadataOptions"]["httpPutResponseHopLimit"] == 2
    assert not nc["spec"]["blockDeviceMappings"][0]["ebs"]["encrypted"]


def test_secure_node_defaults(tmp_path: Path) -> None:
    nc = _node_class(tmp_path, {})
    assert nc["spec"]["metadataOptions"]["httpTokens"] == "required"
    assert nc["spec"]["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert all(b["ebs"]["encrypted"] for b in nc["spec"]["blockDeviceMappings"])


def test_pool_defaults_take_a_placement_group_by_name(tmp_path: Path) -> None:
    """poolDefaults.placementGroup takes one of name or id; the schema used to require both."""
    nc = _node_class(tmp_path, {"poolDefaults": {"placementGroup": {"name": "pg-llm"}}})
    assert nc["spec"]["placementGroupSelector"] == {"name": "pg-llm"}


def test_a_pool_named_like_a_number_stays_a_string(tmp_path: Path, crd_registry) -> None:
    """Pool "1" is a valid name; rendered unquoted it became the YAML number 1 (NodePool, EC2NodeClass
    and the pool label were invalid)."""
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"pools": [{"name": "1", "instanceTypes": ["g5.xlarge"], "gpuLimit": 1}]}))
    objects = helm.render(CHART, [path], helm="helm4", namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    assert {o["metadata"]["name"] for o in objects if o["kind"] in ("NodePool", "EC2NodeClass")} == {"1"}


def test_a_priority_class_named_like_a_number_stays_a_string(tmp_path: Path, crd_registry) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"priorityClassName": "1"}))
    objects = helm.render(CHART, [path], helm="helm4", namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    assert {o["spec"]["template"]["spec"]["priorityClassName"] for o in objects if o["kind"] == "DaemonSet"} == {"1"}


def test_a_discovery_tag_key_with_colon_and_space_renders(tmp_path: Path, crd_registry) -> None:
    """AWS tag keys may hold ': ' (written unquoted, it broke the EC2NodeClass YAML)."""
    nc = _node_class(tmp_path, {"discovery": {"tagKey": "team: a", "tagValue": "1"}})
    assert nc["spec"]["subnetSelectorTerms"] == [{"tags": {"team: a": "1"}}]


def test_cluster_name_drives_role_and_discovery(tmp_path: Path) -> None:
    nc = _node_class(tmp_path, {"clusterName": "prod-east"})
    assert nc["spec"]["role"] == "KarpenterNodeRole-prod-east"
    assert nc["spec"]["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "prod-east"}}]
    assert nc["spec"]["securityGroupSelectorTerms"] == nc["spec"]["subnetSelectorTerms"]
    nc = _node_class(tmp_path, {"clusterName": "prod-east", "nodeRole": "MyNodes",
                                "discovery": {"tagValue": "shared"}})
    assert nc["spec"]["role"] == "MyNodes"
    assert nc["spec"]["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "shared"}}]


DAEMONSETS = {"nvidiaDevicePlugin": "nvidia-device-plugin", "efaDevicePlugin": "efa-device-plugin",
              "dcgmExporter": "dcgm-exporter"}


def test_a_digest_pins_every_daemonset_image(tmp_path: Path) -> None:
    """image.digest wins over the tag in each DaemonSet; the CKV_K8S_43 skip (pinned by tag) goes with it."""
    digests = {key: "sha256:" + f"{n:x}" * 64 for n, key in enumerate(DAEMONSETS, 10)}
    values = {key: {"enabled": True, "image": {"digest": digest}} for key, digest in digests.items()}
    path = tmp_path / "digests.yaml"
    path.write_text(yaml.safe_dump(values))
    default = yaml.safe_load((CHART / "values.yaml").read_text())
    pinned = {o["metadata"]["name"]: o for o in helm.render(CHART, [CI_FILES[0], path], release="gpu-infra",
                                                           namespace=NAMESPACE) if o["kind"] == "DaemonSet"}
    by_tag = {o["metadata"]["name"]: o for o in _render(CI_FILES[0], "helm4") if o["kind"] == "DaemonSet"}
    for key, component in DAEMONSETS.items():
        ds = pinned[f"gpu-infra-{component}"]
        [container] = ds["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"{default[key]['image']['repository']}@{digests[key]}", key
        assert not any(v.startswith("CKV_K8S_43=") for v in ds["metadata"]["annotations"].values()), key
    for name, ds in by_tag.items():
        [container] = ds["spec"]["template"]["spec"]["containers"]
        assert "@" not in container["image"], name
        assert any(v.startswith("CKV_K8S_43=") for v in ds["metadata"]["annotations"].values()), name


@pytest.mark.parametrize("key", sorted(DAEMONSETS))
def test_schema_refuses_a_malformed_digest(tmp_path: Path, key: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({key: {"image": {"digest": "sha256:not-a-digest"}}}))
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [path], namespace=NAMESPACE)
    assert f"/{key}/image/digest" in str(err.value), str(err.value)


def test_an_unlisted_instance_type_renders_when_the_pool_allows_it(tmp_path: Path, crd_registry) -> None:
    """A type newer than the catalog: refused with the key that admits it, rendered once it is set."""
    pool = {"name": "next", "instanceTypes": ["p7.48xlarge"], "gpuLimit": 8}
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump({"pools": [pool]}))
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [path], namespace=NAMESPACE)
    assert '"p7.48xlarge" is not in the vllm-eks instance catalog' in str(err.value)
    assert "pools[0].allowUnlistedInstanceTypes: true" in str(err.value)
    path.write_text(yaml.safe_dump({"pools": [{**pool, "allowUnlistedInstanceTypes": True}]}))
    objects = helm.render(CHART, [path], namespace=NAMESPACE)
    (node_pool,) = [o for o in objects if o["kind"] == "NodePool"]
    requirements = node_pool["spec"]["template"]["spec"]["requirements"]
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p7.48xlarge"]} in requirements
