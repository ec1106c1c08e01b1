"""Each Pod Security "restricted" check (tests/harness/pod_security.py) passes a compliant pod and
fails on the pod changed in the one way its control forbids, naming the field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.harness import pod_security

COMPLIANT: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
    "initContainers": [{"name": "init", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
    "containers": [{"name": "app", "ports": [{"name": "http", "containerPort": 8000}], "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        "readOnlyRootFilesystem": True}}],
    "volumes": [{"name": "cache", "emptyDir": {}}, {"name": "cm", "configMap": {"name": "x"}},
                {"name": "pvc", "persistentVolumeClaim": {"claimName": "m"}}],
}


def _app(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["containers"][0]


def _init(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["initContainers"][0]


Mutation = Callable[[dict[str, Any]], None]
# control name -> (mutation, text the violation must contain)
CASES: dict[str, list[tuple[Mutation, str]]] = {
    "HostProcess": [(lambda s: _app(s)["securityContext"].update(windowsOptions={"hostProcess": True}),
                     "windowsOptions.hostProcess")],
    "Host Namespaces": [(lambda s: s.update(hostNetwork=True), "spec.hostNetwork"),
                        (lambda s: s.update(hostPID=True), "spec.hostPID"),
                        (lambda s: s.update(hostIPC=True), "spec.hostIPC")],
    "Privileged Containers": [(lambda s: _init(s)["securityContext"].update(privileged=True),
                               "initContainers[init].securityContext.privileged")],
    "HostPath Volumes": [(lambda s: s["volumes"].append({"name": "h", "hostPath": {"path": "/"}}), "volumes[h].hostPath")],
    "Host Ports": [(lambda s: _app(s)["ports"][0].update(hostPort=8000), "hostPort")],
    "AppArmor": [(lambda s: _app(s)["securityContext"].update(appArmorProfile={"type": "Unconfined"}),
                  "appArmorProfile.type")],
    "SELinux": [(lambda s: s["securityContext"].update(seLinuxOptions={"type": "spc_t"}), "seLinuxOptions.type"),
                (lambda s: _app(s)["securityContext"].update(seLinuxOptions={"user": "root"}), "seLinuxOptions.user")],
    "/proc Mount Type": [(lambda s: _app(s)["securityContext"].update(procMount="Unmasked"), "procMount")],
    "Sysctls": [(lambda s: s["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
                 "sysctls[kernel.msgmax]")],
    "Volume Types": [(lambda s: s["volumes"].append({"name": "n", "nfs": {"server": "x", "path": "/"}}),
                      "volumes[n]: volume type nfs")],
    "Privilege Escalation": [(lambda s: _init(s)["securityContext"].pop("allowPrivilegeEscalation"),
                              "initContainers[init].securityContext.allowPrivilegeEscalation"),
                             (lambda s: _app(s)["securityContext"].update(allowPrivilegeEscalation=True),
                              "containers[app].securityContext.allowPrivilegeEscalation")],
    "Running as Non-root": [(lambda s: s["securityContext"].pop("runAsNonRoot"), "runAsNonRoot must be true"),
                            (lambda s: _app(s)["securityContext"].update(runAsNonRoot=False),
                             "containers[app].securityContext.runAsNonRoot")],
    "Running as Non-root user": [(lambda s: s["securityContext"].update(runAsUser=0), "spec.securityContext.runAsUser"),
                                 (lambda s: _init(s)["securityContext"].update(runAsUser=0),
                                  "initContainers[init].securityContext.runAsUser")],
    "Seccomp": [(lambda s: s["securityContext"].pop("seccompProfile"), "seccompProfile RuntimeDefault or Localhost"),
                (lambda s: _app(s)["securityContext"].update(seccompProfile={"type": "Unconfined"}),
                 "containers[app].securityContext.seccompProfile.type")],
    "Capabilities": [(lambda s: _init(s)["securityContext"]["capabilities"].update(drop=["NET_RAW"]),
                      "initContainers[init].securityContext.capabilities.drop"),
                     (lambda s: _app(s)["securityContext"]["capabilities"].update(add=["NET_BIND_SERVICE", "SYS_ADMIN"]),
                      "capabilities.add: SYS_ADMIN")],
}


def test_compliant_pod_passes() -> None:
    assert pod_security.restricted_violations(COMPLIANT) == []


def test_every_control_has_a_failing_case() -> None:
    assert set(CASES) == set(pod_security.RESTRICTED)


@pytest.mark.parametrize(("control", "index"), [(c, i) for c, cases in CASES.items() for i in range(len(cases))],
                         ids=lambda x: str(x))
def test_each_check_fails_on_its_violation(control: str, index: int) -> None:
    mutate, expected = CASES[control][index]
    spec = copy.deepcopy(COMPLIANT)
    mutate(spec)
    violations = pod_security.restricted_violations(spec)
    assert any(v.startswith(f"{control}: ") and expected in v for v in violations), violations
    # only a hostPath volume is also an unlisted volume type; every other change breaks one control
    others = {v.split(": ", 1)[0] for v in violations} - {control}
    assert others <= ({"Volume Types"} if control == "HostPath Volumes" else set()), violations


def test_apparmor_annotation_is_checked() -> None:
    ann = {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}
    assert pod_security.restricted_violations(COMPLIANT, ann) == [
        "AppArmor: metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: unconfined; "
        "allowed: runtime/default, localhost/*"]


def test_kuberay_injected_containers_are_checked() -> None:
    """The init container KubeRay adds copies the Ray container's securityContext; an autoscaler
    sidecar without one fails."""
    tpl = {"metadata": {}, "spec": copy.deepcopy(COMPLIANT)}
    tpl["spec"].pop("initContainers")
    rayservice = {"metadata": {"name": "r"}, "spec": {"rayClusterConfig": {
        "enableInTreeAutoscaling": True, "autoscalerOptions": {},
        "headGroupSpec": {"template": copy.deepcopy(tpl)},
        "workerGroupSpecs": [{"groupName": "gpu", "template": copy.deepcopy(tpl)}]}}}
    pods = {what: spec for what, spec, _ in pod_security.rendered_pod_specs([{"kind": "RayService", **rayservice}])}
    assert set(pods) == {"RayService/r head", "RayService/r gpu"}
    (init,) = pods["RayService/r gpu"]["initContainers"]
    assert init["name"] == "wait-gcs-ready" and init["securityContext"] == _app(tpl["spec"])["securityContext"]
    assert pod_security.restricted_violations(pods["RayService/r gpu"]) == []
    head = pod_security.restricted_violations(pods["RayService/r head"])
    assert any("containers[autoscaler].securityContext.allowPrivilegeEscalation" in v for v in head), head
