"""charts/vllm-inference model sources (model.source huggingface | s3 | pvc | fsx | mountpointS3)
on every topology, rendered with Helm 3 and Helm 4 from the generated scenarios: every object
valid for every Kubernetes minor (the pinned LWS and KubeRay CRDs included), the same objects from
both Helm versions, Pod Security restricted, and what each source needs (docs/model-sources.md):
the model volume on every server pod, the static PersistentVolume of the FSx for Lustre or
Mountpoint for S3 CSI driver bound to the chart's claim, the runai_streamer argument of `vllm
serve` and the s3:// model_source Ray Serve LLM downloads."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.harness import KUBE_VERSIONS, helm, pod_security, validate_all
from tests.render.test_cache_render import TOPOLOGIES, server_pods
from tests.render.test_routing_render import CHART, FULLNAME, NAMESPACE, RELEASE

pytestmark = pytest.mark.render

FSX = {"model.source": "fsx", "model.name": "/models/qwen", "model.fsx.fileSystemId": "fs-0123456789abcdef0",
       "model.fsx.dnsName": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "model.fsx.mountName": "abcdef12"}
SOURCES: dict[str, dict[str, Any]] = {
    "huggingface": {},
    "s3": {"model.source": "s3", "model.name": "s3://models-bucket/qwen/"},
    "pvc": {"model.source": "pvc", "model.name": "/weights/qwen", "model.pvc.claimName": "weights",
            "model.pvc.mountPath": "/weights"},
    "fsx": FSX,
    "mountpointS3": {"model.source": "mountpointS3", "model.name": "/models/qwen", "model.mountpointS3.bucket":
                     "models-bucket", "model.mountpointS3.prefix": "hub/", "model.mountpointS3.region": "us-east-1"},
}
CASES = {f"{s}-{t}": (TOPOLOGIES[t], SOURCES[s]) for s in SOURCES for t in TOPOLOGIES}
PV_NAME = f"{NAMESPACE}-{FULLNAME}-model"
CLAIM = f"{FULLNAME}-model"


def rendered(case: str, helm_version: str = "helm4") -> list[dict[str, Any]]:
    values_file, set_values = CASES[case]
    return helm.render_case(CHART, values_file, set_values, helm_version, RELEASE, NAMESPACE)


def _source_topology(case: str) -> tuple[str, str]:
    topology = next(t for t in TOPOLOGIES if case.endswith(t))
    return case[: -len(topology) - 1], topology


@pytest.mark.parametrize("case", list(CASES))
def test_both_helms_render_the_same_valid_restricted_objects(case: str, crd_registry) -> None:
    # Helm 3 and Helm 4 give the same objects, so validating one set covers both.
    objects = rendered(case, "helm4")
    assert rendered(case, "helm3") == objects
    for kube_version in KUBE_VERSIONS:
        assert validate_all(objects, crd_registry, kube_version).total == len(objects), kube_version
    # and every pod template passes Pod Security "restricted"
    problems = [f"{what}: {v}" for what, spec, ann in pod_security.rendered_pod_specs(objects)
                for v in pod_security.restricted_violations(spec, ann)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", list(CASES))
def test_every_server_pod_mounts_the_model_volume(case: str) -> None:
    source, _ = _source_topology(case)
    set_values = SOURCES[source]
    pods = server_pods(rendered(case))
    assert pods
    for role, spec in pods.items():
        volumes = [v for v in spec["volumes"] if v["name"] == "model"]
        if source in ("huggingface", "s3"):
            assert not volumes, role
            continue
        claim = set_values.get("model.pvc.claimName", CLAIM)
        assert volumes == [{"name": "model", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}], role
        mount_path = set_values.get("model.pvc.mountPath", "/models")
        # the containers that run the server or Ray (the ones on the cache volume)
        server = [c for c in spec["containers"] if any(m["name"] == "cache" for m in c.get("volumeMounts", []))]
        assert server, role
        for c in server:
            mounts = [m for m in c.get("volumeMounts", []) if m["name"] == "model"]
            assert mounts == [{"name": "model", "mountPath": mount_path, "readOnly": True}], (role, c["name"])


@pytest.mark.parametrize("case", list(CASES))
def test_static_volume_and_claim_only_for_fsx_and_mountpoint(case: str) -> None:
    source, _ = _source_topology(case)
    objects = rendered(case)
    pvs = [o for o in objects if o["kind"] == "PersistentVolume"]
    claims = [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
    if source not in ("fsx", "mountpointS3"):
        assert not pvs and not claims
        return
    (pv,), (pvc,) = pvs, claims
    assert pv["metadata"]["name"] == PV_NAME and "namespace" not in pv["metadata"]
    spec = pv["spec"]
    assert spec["storageClassName"] == "" and spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["claimRef"] == {"namespace": NAMESPACE, "name": CLAIM}
    assert spec["accessModes"] == ["ReadOnlyMany"]
    assert pvc["metadata"] == {**pvc["metadata"], "name": CLAIM, "namespace": NAMESPACE}
    assert pvc["spec"]["volumeName"] == PV_NAME and pvc["spec"]["storageClassName"] == ""
    assert pvc["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert pvc["spec"]["resources"]["requests"]["storage"] == spec["capacity"]["storage"]
    csi = spec["csi"]
    if source == "fsx":
        assert csi == {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123456789abcdef0", "readOnly": True,
                       "volumeAttributes": {"dnsname": FSX["model.fsx.dnsName"], "mountname": "abcdef12"}}
    else:
        assert csi == {"driver": "s3.csi.aws.com", "volumeHandle": PV_NAME,
                       "volumeAttributes": {"bucketName": "models-bucket"}}
        # read-only, and readable by the non-root server user the pods run as
        values = yaml.safe_load(CASES[case][0].read_text())
        sc = values.get("securityContext", {})
        uid, gid = sc.get("runAsUser", 10001), sc.get("runAsGroup", 10001)
        assert spec["mountOptions"] == ["read-only", "allow-other", f"uid={uid}", f"gid={gid}",
                                        "region us-east-1", "prefix hub/"]


def _serve_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (ray,) = [o for o in objects if o["kind"] == "RayService"]
    return yaml.safe_load(ray["spec"]["serveConfigV2"])


def _llm_configs(serve: dict[str, Any]) -> list[dict[str, Any]]:
    args = serve["applications"][0]["args"]
    return args["llm_configs"] if "llm_configs" in args else [args["prefill_config"], args["decode_config"]]


@pytest.mark.parametrize("case", list(CASES))
def test_what_the_engine_is_told_to_load(case: str) -> None:
    source, topology = _source_topology(case)
    name = SOURCES[source].get("model.name") or yaml.safe_load(CASES[case][0].read_text())["model"]["name"]
    objects = rendered(case)
    if topology in ("ray-serve", "disaggregated"):
        for cfg in _llm_configs(_serve_config(objects)):
            assert cfg["model_loading_config"]["model_source"] == name
            # Ray Serve LLM downloads an s3:// model_source itself; a streaming load_format would
            # make it hand vLLM the model_id instead (docs/model-sources.md)
            assert "load_format" not in cfg["engine_kwargs"], json.dumps(cfg["engine_kwargs"])
        # the workers, where Ray downloads, check the image has boto3 first (s3 only)
        for role, spec in server_pods(objects).items():
            if role.startswith("ray-worker-"):
                (worker,) = spec["containers"]
                checked = f"scripts/{topology}.sh" in worker["args"][0] and " s3-download" in worker["args"][0]
                assert checked == (source == "s3"), (role, worker["args"][0])
        return
    workloads = [o for o in objects if o["kind"] in ("Deployment", "LeaderWorkerSet")
                 and o["metadata"]["name"] == FULLNAME]
    (w,) = workloads
    template = w["spec"]["template"] if w["kind"] == "Deployment" else w["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    (server,) = [c for c in template["spec"]["containers"] if "args" in c and name in c["args"]]
    args = server["args"]
    assert args[0] == name
    streamed = "--load-format" in args and args[args.index("--load-format") + 1] == "runai_streamer"
    assert streamed == (source == "s3")
    # and the container checks the image has the streamer before vllm serve starts (s3 only)
    assert (f"scripts/{topology}.sh" in server["command"][2] and "s3-stream" in server["command"][2]) == streamed


def test_ray_s3_with_a_streaming_load_format_is_refused() -> None:
    values_file, set_values = CASES["s3-ray-serve"]
    with pytest.raises(helm.HelmError) as e:
        helm.render_case(CHART, values_file, {**set_values, "rayServe.engineKwargs.load_format": "runai_streamer"},
                         "helm4", RELEASE, NAMESPACE)
    assert "rayServe.engineKwargs.load_format: runai_streamer with model.source s3" in str(e.value)
