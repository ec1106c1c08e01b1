"""charts/vllm-inference rendered with Helm 3 and Helm 4 for every ci/*-values.yaml: lint --strict,
strict validation of every object for Kubernetes 1.31-1.35, checkov, and the chart's promises
(labels, ports, GPUs, probes, drain, writable paths, model sources, no secrets in the output)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import KUBE_VERSIONS, chart_contract, checkov, helm, validate_all
from tests.harness.args import value_of
from tests.harness.paths import CHARTS, VALUES
from vllm_eks.core import contract

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
CI_FILES = sorted((CHART / "ci").glob("*-values.yaml"))
# Generated scenarios (`make values`): rendered, linted, validated and scanned like the ci files.
SCENARIO_FILES = sorted(VALUES.glob("*/vllm-inference.yaml"))
ALL_FILES = CI_FILES + SCENARIO_FILES
NAMESPACE = "llm"
RELEASE = "vllm"
# What a credential looks like: Hugging Face user tokens and AWS access key ids.
CREDENTIAL = re.compile(r"hf_[A-Za-z0-9]{20,}|(AKIA|ASIA)[0-9A-Z]{16}")


@lru_cache(maxsize=None)
def _render(values_file: str, helm_version: str) -> tuple[dict[str, Any], ...]:
    files = [values_file] if values_file else []
    return tuple(helm.render(CHART, files, helm=helm_version, release=RELEASE, namespace=NAMESPACE))


def rendered(values_file: Path | None, helm_version: str = "helm4") -> list[dict[str, Any]]:
    return list(_render(str(values_file) if values_file else "", helm_version))


def values_of(values_file: Path) -> dict[str, Any]:
    """Chart defaults deep-merged with one ci file (what Helm hands the templates)."""
    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, dict) and isinstance(over, dict):
            return {k: merge(base.get(k), over[k]) if k in base else over[k] for k in over} | {
                k: v for k, v in base.items() if k not in over}
        return over
    return merge(yaml.safe_load((CHART / "values.yaml").read_text()), yaml.safe_load(values_file.read_text()) or {})


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod spec an object carries (Deployment, LeaderWorkerSet leader/worker, Ray groups, Pod)."""
    spec = obj.get("spec", {})
    if obj["kind"] == "Pod":
        return [spec]
    if obj["kind"] == "LeaderWorkerSet":
        lwt = spec["leaderWorkerTemplate"]
        return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]
    if obj["kind"] == "RayService":
        cluster = spec["rayClusterConfig"]
        return [cluster["headGroupSpec"]["template"]["spec"]] + [
            g["template"]["spec"] for g in cluster["workerGroupSpecs"]]
    return [spec["template"]["spec"]] if "template" in spec else []


PICKER = "endpoint-picker"


def is_picker(obj: dict[str, Any]) -> bool:
    """The endpoint picker's own objects (routing.mode gateway), selected by their own labels."""
    return obj["metadata"].get("labels", {}).get("app.kubernetes.io/component") == PICKER


def one(objects: list[dict[str, Any]], kind: str, component: str | None = None) -> dict[str, Any]:
    """The one object of KIND; without COMPONENT, the model server's (not the picker's)."""
    found = [o for o in objects if o["kind"] == kind and (
        not is_picker(o) if component is None else o["metadata"]["labels"].get("app.kubernetes.io/component") == component)]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def server(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]


ids = [f.stem for f in CI_FILES]
all_ids = ids + [f"values/{f.parent.name}" for f in SCENARIO_FILES]
SINGLE_NODE_CI = [f for f in CI_FILES if values_of(f)["topology"] == "single-node"]
single_ids = [f.stem for f in SINGLE_NODE_CI]
# The object that runs the model copies, per topology.
WORKLOAD = {"single-node": "Deployment", "multi-node": "LeaderWorkerSet", "ray-serve": "RayService",
            "disaggregated": "RayService"}


# ------------------------------------------------------------------- render, lint, validate

def test_ci_scenarios_exist_with_purpose_lines() -> None:
    assert len(CI_FILES) >= 5
    for f in CI_FILES:
        assert re.fullmatch(r"\d\d-[a-z0-9-]+-values\.yaml", f.name), f.name
        assert f.read_text().startswith("# Purpose: "), f"{f.name}: first line must say its purpose"


@pytest.mark.parametrize("values_file", ALL_FILES, ids=all_ids)
def test_lint_strict(values_file: Path, helm_version: str) -> None:
    helm.lint(CHART, [values_file], helm=helm_version)


@pytest.mark.parametrize("values_file", ALL_FILES, ids=all_ids)
def test_every_object_valid_for_every_kubernetes_minor(values_file: Path, helm_version: str,
                                                       crd_registry) -> None:
    objects = rendered(values_file, helm_version)
    kinds = {o["kind"] for o in objects}
    topology = values_of(values_file)["topology"]
    assert WORKLOAD[topology] in kinds
    # ray-serve / disaggregated: KubeRay creates the Services of the RayService.
    assert ("Service" in kinds) == (topology in ("single-node", "multi-node"))
    for kube_version in KUBE_VERSIONS:
        report = validate_all(objects, crd_registry, kube_version)
        assert report.total == len(objects)


@pytest.mark.parametrize("values_file", ALL_FILES, ids=all_ids)
def test_helm3_and_helm4_render_the_same_objects(values_file: Path) -> None:
    assert rendered(values_file, "helm3") == rendered(values_file, "helm4")


def test_kube_version_floor(helm_version: str) -> None:
    helm.render(CHART, helm=helm_version, namespace=NAMESPACE, kube_version="1.31.0")
    with pytest.raises(helm.HelmError, match="kubeVersion|Kubernetes version"):
        helm.render(CHART, helm=helm_version, namespace=NAMESPACE, kube_version="1.30.0")


# ------------------------------------------------------------------- checkov

def test_checkov_no_unskipped_failures_and_every_skip_has_a_reason() -> None:
    texts = {name.replace("/", "-"): helm.template_text(CHART, [f], release=RELEASE, namespace=NAMESPACE)
             for name, f in zip(all_ids, ALL_FILES)}
    result = checkov.scan(texts)
    objects = [o for f in ALL_FILES for o in rendered(f)]
    assert result.resource_count > 0 and not result.parsing_errors, result.summary()
    assert result.resource_count >= len(objects), result.summary()
    assert not result.failed_checks, f"{result.summary()}\n{result.failures_text()}"
    skips = checkov.skip_annotations(objects)
    assert skips, "expected the documented skips (image tag pin, root image, ...)"
    for skip in skips:
        assert re.fullmatch(r"CKV2?_K8S_\d+", skip.check_id), skip.annotation
        assert skip.has_reason and len(skip.reason) > 20, f"skip without a real reason: {skip.annotation}"
    for finding in result.skipped_checks:
        assert finding.reason and finding.reason != checkov.NO_REASON, str(finding)


def test_hardened_scenario_needs_only_the_test_pod_skips() -> None:
    """With every hardening value set, the server Deployment carries no checkov skip at all."""
    objects = rendered(CHART / "ci" / "03-hardened-values.yaml")
    deployment = one(objects, "Deployment")
    assert not [k for k in deployment["metadata"].get("annotations", {}) if k.startswith("checkov.io/")]


# ------------------------------------------------------------------- labels, names, ports

@pytest.mark.parametrize("values_file", SINGLE_NODE_CI, ids=single_ids)
def test_labels_and_selectors(values_file: Path) -> None:
    objects = rendered(values_file)
    v = values_of(values_file)
    name = v.get("nameOverride") or "vllm-inference"
    component = one(objects, "Deployment")["metadata"]["labels"]["app.kubernetes.io/component"]
    selector = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": RELEASE,
                "app.kubernetes.io/component": component}
    for obj in objects:
        labels = obj["metadata"]["labels"]
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
                    "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by", "helm.sh/chart"):
            assert key in labels, f"{obj['kind']} lacks {key}"
        # a PersistentVolume (model.source fsx, mountpointS3) is cluster-scoped: no namespace
        assert obj["metadata"].get("namespace") == (None if obj["kind"] == "PersistentVolume" else NAMESPACE)
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    service = one(objects, "Service")
    assert service["spec"]["selector"] == selector
    assert service["metadata"]["labels"]["app.kubernetes.io/version"] == "v0.32.0"
    for obj in (o for o in objects if not is_picker(o)):
        if obj["kind"] == "PodDisruptionBudget":
            assert obj["spec"]["selector"]["matchLabels"] == selector
        if obj["kind"] == "NetworkPolicy":
            assert obj["spec"]["podSelector"]["matchLabels"] == selector
        if obj["kind"] == "Pod":  # the test pod must never be behind the Service
            assert not selector.items() <= obj["metadata"]["labels"].items()


@pytest.mark.parametrize("topology", ["single-node", "ray-serve"])
def test_names_that_look_like_numbers_stay_strings(tmp_path: Path, topology: str, crd_registry) -> None:
    """A priorityClassName, subPath, nameOverride, ServiceAccount or claim named "1" is
    valid; rendered unquoted each became a YAML number the API server refuses."""
    values = tmp_path / "numbers.yaml"
    values.write_text(yaml.safe_dump({
        "topology": topology, "scheduling": {"priorityClassName": "1"}, "nameOverride": "2",
        "serviceAccount": {"name": "3"},
        "model": {"source": "pvc", "name": "/models/x", "pvc": {"claimName": "4", "subPath": "1"}},
        "networkPolicy": {"rayOperator": {"namespaces": ["5"]}}}))
    objects = helm.render(CHART, [values], namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    assert all(o["metadata"]["labels"]["app.kubernetes.io/name"] == "2" for o in objects if o["kind"] != "Pod")
    specs = [spec for o in objects if o["kind"] != "Pod" for spec in pod_templates(o)]
    assert specs
    for spec in specs:
        assert spec["priorityClassName"] == "1"
        assert all(m.get("subPath") in (None, "1") for c in spec["containers"] for m in c.get("volumeMounts", []))


@pytest.mark.parametrize("mount_as", ["env", "file"])
def test_a_token_secret_named_like_a_number_stays_a_string(tmp_path: Path, mount_as: str, crd_registry) -> None:
    values = tmp_path / "token.yaml"
    values.write_text(yaml.safe_dump({"model": {"huggingface": {"tokenSecret": {"name": "123", "mountAs": mount_as}}}}))
    objects = helm.render(CHART, [values], namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    assert '"123"' in json.dumps(one(objects, "Deployment")["spec"]["template"]["spec"])


def test_pod_labels_win_over_labels_and_the_version_label_is_a_label_value(tmp_path: Path, crd_registry) -> None:
    """podLabels and labels with one key were both written into the pod template (a duplicate key);
    an image tag with '_' at an end made the version label invalid."""
    values = tmp_path / "labels.yaml"
    values.write_text(yaml.safe_dump({"labels": {"team": "a"}, "podLabels": {"team": "b"}, "image": {"tag": "_v1.0_"}}))
    objects = helm.render(CHART, [values], namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    deployment = one(objects, "Deployment")
    assert deployment["metadata"]["labels"]["team"] == "a"
    assert deployment["spec"]["template"]["metadata"]["labels"]["team"] == "b"
    assert deployment["metadata"]["labels"]["app.kubernetes.io/version"] == "v1.0"


@pytest.mark.parametrize("values_file", SINGLE_NODE_CI, ids=single_ids)
def test_service_port_contract(values_file: Path) -> None:
    objects = rendered(values_file)
    v = values_of(values_file)
    contract_ = chart_contract.rendered()
    (port,) = one(objects, "Service")["spec"]["ports"]
    assert port["name"] == contract_.serving_port_name and port["targetPort"] == contract_.serving_port_name
    assert port["port"] == v["service"]["port"]
    (cport,) = server(objects)["ports"]
    assert cport == {"name": contract_.serving_port_name, "containerPort": contract_.serving_port, "protocol": "TCP"}
    assert value_of(server(objects)["args"], "--port") == str(contract_.serving_port)


def test_default_names_are_stable() -> None:
    """charts/observability derives object names from the release: keep them."""
    objects = rendered(None)
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("Deployment", "vllm-vllm-inference") in names and ("Service", "vllm-vllm-inference") in names
    same = helm.render(CHART, release="my-vllm-inference", namespace=NAMESPACE)
    assert one(same, "Service")["metadata"]["name"] == "my-vllm-inference"


# ------------------------------------------------------------------- the pod

@pytest.mark.parametrize("values_file", SINGLE_NODE_CI, ids=single_ids)
def test_gpus_scheduling_and_args(values_file: Path) -> None:
    objects = rendered(values_file)
    v = values_of(values_file)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    c = server(objects)
    # the image contract first, then exec `vllm serve` with the args ("$@")
    assert c["command"][:2] == ["/bin/sh", "-ec"] and c["command"][3] == "vllm-server"
    # (an s3 source also checks vLLM's Run:ai streamer: docs/model-sources.md)
    check = " s3-stream" if v["model"].get("source") == "s3" else ""
    assert c["command"][2] == (f"sh /opt/vllm-eks/scripts/single-node.sh{check}\n"
                               "exec 'vllm' 'serve' \"$@\"\n")
    args = c["args"]
    tp = v["engine"]["tensorParallelSize"]
    assert c["resources"]["limits"][contract.GPU_RESOURCE] == tp
    assert value_of(args, "--tensor-parallel-size") == str(tp)
    assert value_of(args, "--pipeline-parallel-size") == str(v["engine"]["pipelineParallelSize"]) == "1"
    assert value_of(args, "--served-model-name") == (v["model"]["servedModelName"] or v["model"]["name"])
    assert c["args"][0] == v["model"]["name"], "the model is vllm serve's positional argument"
    assert chart_contract.rendered().gpu_toleration in pod["tolerations"]
    selector = pod.get("nodeSelector", {})
    if v["scheduling"]["pool"]:
        assert selector[chart_contract.rendered().pool_label] == v["scheduling"]["pool"]
    if v["scheduling"]["instanceType"]:
        assert selector[contract.INSTANCE_TYPE_LABEL] == v["scheduling"]["instanceType"]
    for extra in v["engine"]["args"] + v["engine"]["extraArgs"]:
        assert extra in c["args"]
    assert pod["enableServiceLinks"] is False
    assert pod["automountServiceAccountToken"] is False


@pytest.mark.parametrize("values_file", SINGLE_NODE_CI, ids=single_ids)
def test_probes_drain_and_shm(values_file: Path) -> None:
    objects = rendered(values_file)
    v = values_of(values_file)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    c = server(objects)
    for probe in ("startupProbe", "readinessProbe"):
        assert c[probe]["httpGet"] == {"path": chart_contract.rendered().health_path,
                                       "port": chart_contract.rendered().serving_port_name}
    # liveness: the engine-progress check (tests/render/test_probes_render.py)
    assert c["livenessProbe"]["exec"]["command"][1].endswith("/engine_alive.py")
    start = c["startupProbe"]
    assert start["failureThreshold"] == v["probes"]["startup"]["failureThreshold"]
    assert start["periodSeconds"] == v["probes"]["startup"]["periodSeconds"]
    d = v["drain"]
    assert c["lifecycle"]["preStop"]["sleep"]["seconds"] == d["preStopSeconds"]
    assert value_of(c["args"], "--shutdown-timeout") == str(d["shutdownTimeoutSeconds"])
    assert pod["terminationGracePeriodSeconds"] == d["terminationGracePeriodSeconds"]
    assert d["preStopSeconds"] + d["shutdownTimeoutSeconds"] <= pod["terminationGracePeriodSeconds"]
    shm = next(vol for vol in pod["volumes"] if vol["name"] == "shm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": v["shm"]["sizeLimit"]}
    assert {"name": "shm", "mountPath": "/dev/shm"} in c["volumeMounts"]


@pytest.mark.parametrize("values_file", SINGLE_NODE_CI, ids=single_ids)
def test_security_context_and_writable_paths_on_volumes(values_file: Path) -> None:
    objects = rendered(values_file)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    c = server(objects)
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    env = {e["name"]: e.get("value") for e in c["env"]}
    mounts = [m["mountPath"] for m in c["volumeMounts"]]
    for var in ("HOME", "HF_HOME", "VLLM_CACHE_ROOT", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TMPDIR"):
        path = env[var]
        assert any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts), f"{var}={path} is not on a volume"


def test_hardened_scenario() -> None:
    objects = rendered(CHART / "ci" / "03-hardened-values.yaml")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    c = server(objects)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    assert c["image"] == "vllm/vllm-openai@sha256:" + "0" * 64 and c["imagePullPolicy"] == "Always"
    env = {e["name"]: e for e in c["env"]}
    assert "HF_TOKEN" not in env
    token_dir = env["HF_TOKEN_PATH"]["value"].rsplit("/", 1)[0]
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == token_dir)
    assert mount["readOnly"] is True
    volume = next(vol for vol in pod["volumes"] if vol["name"] == mount["name"])
    assert volume["secret"]["secretName"] == "hf-token"
    assert volume["secret"]["items"] == [{"key": "token", "path": "token"}]
    policy = one(objects, "NetworkPolicy")
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": chart_contract.rendered().serving_port, "protocol": "TCP"}]
    namespaces = rule["from"][1]["namespaceSelector"]["matchExpressions"][0]["values"]
    assert namespaces == ["envoy-gateway-system", "monitoring"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]


def test_huggingface_token_from_secret_ref() -> None:
    c = server(rendered(CHART / "ci" / "02-huggingface-token-env-values.yaml"))
    (token,) = [e for e in c["env"] if e["name"] == "HF_TOKEN"]
    assert token == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN", "optional": True}}}


def test_no_token_env_without_secret() -> None:
    c = server(rendered(CHART / "ci" / "01-defaults-values.yaml"))
    assert not {"HF_TOKEN", "HF_TOKEN_PATH"} & {e["name"] for e in c["env"]}


def test_s3_source() -> None:
    objects = rendered(CHART / "ci" / "04-s3-runai-streamer-values.yaml")
    args = server(objects)["args"]
    assert args[0].startswith("s3://") and value_of(args, "--load-format") == "runai_streamer"
    sa = one(objects, "ServiceAccount")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::")
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    assert not [e for e in server(objects)["env"] if e["name"].startswith("HF_TOKEN")]


def test_pvc_source() -> None:
    objects = rendered(CHART / "ci" / "05-pvc-recreate-values.yaml")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    volume = next(vol for vol in pod["volumes"] if vol["name"] == "model")
    assert volume["persistentVolumeClaim"] == {"claimName": "fsx-models", "readOnly": True}
    mount = next(m for m in server(objects)["volumeMounts"] if m["name"] == "model")
    assert mount == {"name": "model", "mountPath": "/models", "readOnly": True, "subPath": "hub"}
    assert one(objects, "Deployment")["spec"]["strategy"] == {"type": "Recreate"}
    assert {o["kind"] for o in objects} == {"Deployment", "Service", "ServiceAccount", "ConfigMap", "NetworkPolicy"}


def test_default_rollout_needs_no_spare_gpu_node() -> None:
    deployment = one(rendered(None), "Deployment")
    assert deployment["spec"]["strategy"] == {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    pdb = one(rendered(None), "PodDisruptionBudget")  # one replica: a drain waits (test_disruption_budgets_render)
    assert pdb["spec"]["minAvailable"] == 1 and pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_pass_through_keys() -> None:
    objects = rendered(CHART / "ci" / "06-scheduling-and-extras-values.yaml")
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "llm-serving"
    assert pod["serviceAccountName"] == "shared-llm"
    assert not [o for o in objects if o["kind"] == "ServiceAccount"]
    assert pod["affinity"]["podAntiAffinity"]
    (tsc,) = pod["topologySpreadConstraints"]
    assert tsc["labelSelector"] == {"matchLabels": deployment["spec"]["selector"]["matchLabels"]}
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in pod["tolerations"]
    assert pod["nodeSelector"]["karpenter.sh/capacity-type"] == "on-demand"
    for obj in objects:
        assert obj["metadata"]["labels"]["team"] == "ml-platform"
    assert deployment["metadata"]["annotations"]["owner"] == "ml-platform@example.com"
    template = deployment["spec"]["template"]["metadata"]
    assert template["labels"]["cost-center"] == "1234"
    assert template["annotations"]["karpenter.sh/do-not-disrupt"] == "true"
    c = server(objects)
    assert {"name": "chat-templates", "mountPath": "/etc/vllm/templates", "readOnly": True} in c["volumeMounts"]
    assert c["args"][-2:] == ["--chat-template", "/etc/vllm/templates/chatml.jinja"]
    service = one(objects, "Service")
    assert service["spec"]["type"] == "LoadBalancer" and service["spec"]["ports"][0]["port"] == 80


# ------------------------------------------------------------------- helm test pod

@pytest.mark.parametrize("values_file", [f for f in CI_FILES if values_of(f)["test"]["enabled"]],
                         ids=lambda f: f.stem)
def test_helm_test_pod_reads_the_served_name(values_file: Path) -> None:
    objects = rendered(values_file)
    v = values_of(values_file)
    (pod,) = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].endswith("-test")]
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}  # API_KEY: a secretKeyRef
    served = v["model"]["servedModelName"] or v["model"]["name"]
    assert env["SERVED_MODEL"] == served
    body = json.loads(env["BODY"])
    assert body["model"] == served and body["max_tokens"] == v["test"]["maxTokens"]
    if v["topology"] in ("single-node", "multi-node"):
        service = one(objects, "Service")
        assert env["BASE_URL"] == (f"http://{service['metadata']['name']}.{NAMESPACE}.svc:"
                                   f"{service['spec']['ports'][0]['port']}")
    else:  # the Serve Service KubeRay creates for the RayService, on the Serve port
        rayservice = one(objects, "RayService")
        assert env["BASE_URL"] == f"http://{rayservice['metadata']['name']}-serve-svc.{NAMESPACE}.svc:8000"
    script = pod["spec"]["containers"][0]["command"][-1]
    assert "/v1/models" in script and "/v1/completions" in script
    assert pod["spec"]["restartPolicy"] == "Never"


# ------------------------------------------------------------------- secrets

@pytest.mark.parametrize("values_file", ALL_FILES, ids=all_ids)
def test_no_secret_value_in_rendered_output(values_file: Path) -> None:
    text = helm.template_text(CHART, [values_file], release=RELEASE, namespace=NAMESPACE)
    assert not CREDENTIAL.search(text)
    objects = helm.load_documents(text)
    assert "Secret" not in {o["kind"] for o in objects}, "the chart never renders a Secret"
    for o in objects:
        containers = [c for t in pod_templates(o) for c in t.get("containers", [])]
        for c in containers:
            for e in c.get("env", []):
                if re.search(r"TOKEN(?!IZER)|SECRET|PASSWORD|API_KEY", e["name"]) and not e["name"].endswith("_PATH"):
                    assert "value" not in e, f"{e['name']} carries a literal value"


SENTINEL = "hf_" + "RenderSentinel" * 3


@pytest.mark.parametrize("values", [
    {"podAnnotations": {"x": SENTINEL}},
    {"labels": {"x": SENTINEL}},
    {"service": {"annotations": {"x": SENTINEL}}},
    {"serviceAccount": {"annotations": {"x": SENTINEL}}},
    {"engine": {"extraArgs": ["--hf-token", SENTINEL]}},
    {"extraEnv": [{"name": "SOMETHING", "value": SENTINEL}]},
    {"extraVolumes": [{"name": "x", "configMap": {"name": SENTINEL}}]},
    # below the affinity keys the schema checks, where any map passes the schema
    {"scheduling": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"note": SENTINEL}}}}},
], ids=["podAnnotations", "labels", "service", "serviceAccount", "extraArgs", "extraEnv", "extraVolumes",
        "affinity"])
def test_token_anywhere_in_values_is_rejected_and_not_echoed(values: dict, helm_version: str,
                                                             tmp_path: Path) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    with pytest.raises(helm.HelmError) as info:
        helm.render(CHART, [values_file], helm=helm_version, namespace=NAMESPACE)
    assert "literal credential" in info.value.stderr
    assert SENTINEL not in info.value.stderr + info.value.stdout
