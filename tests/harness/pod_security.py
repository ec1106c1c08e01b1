"""The Kubernetes Pod Security Standards, "restricted" profile (which includes "baseline"), as checks
over one pod spec: https://kubernetes.io/docs/concepts/security/pod-security-standards/ (policy
version latest). Each check returns the violations it finds as "<field path>: <what is wrong>";
an empty list means the pod would be admitted by `pod-security.kubernetes.io/enforce=restricted`.

Containers means containers, initContainers and ephemeralContainers, as in the standard.
The checks follow the standard's tables:
- baseline: HostProcess, host namespaces, privileged, capabilities, hostPath volumes, host ports,
  AppArmor, SELinux, /proc mount type, seccomp (not Unconfined), sysctls;
- restricted: volume types, privilege escalation, running as non-root, running as non-root user,
  seccomp (RuntimeDefault or Localhost required), capabilities (drop ALL, add only NET_BIND_SERVICE).

Also: the pods KubeRay adds containers to (`kuberay_pod_specs`), so a chart is checked on what
will actually run, not only on its templates."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Spec = dict[str, Any]
Check = Callable[[Spec, dict[str, str]], list[str]]

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
# restricted, "Volume Types": the only volume sources allowed.
ALLOWED_VOLUME_SOURCES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                                    "persistentVolumeClaim", "projected", "secret"})
# baseline, "Sysctls": the safe set.
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes"})
SELINUX_TYPES = frozenset({"container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def containers(spec: Spec) -> list[tuple[str, dict[str, Any]]]:
    """(path, container) of every container of the pod."""
    return [(f"spec.{kind}[{c.get('name', i)}]", c)
            for kind in CONTAINER_LISTS for i, c in enumerate(spec.get(kind) or [])]


def _sc(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("securityContext") or {}


def host_process(spec: Spec, _: dict[str, str]) -> list[str]:
    out = []
    if (_sc(spec).get("windowsOptions") or {}).get("hostProcess"):
        out.append("spec.securityContext.windowsOptions.hostProcess: must be unset or false")
    for path, c in containers(spec):
        if (_sc(c).get("windowsOptions") or {}).get("hostProcess"):
            out.append(f"{path}.securityContext.windowsOptions.hostProcess: must be unset or false")
    return out


def host_namespaces(spec: Spec, _: dict[str, str]) -> list[str]:
    return [f"spec.{key}: must be unset or false" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]


def privileged(spec: Spec, _: dict[str, str]) -> list[str]:
    return [f"{path}.securityContext.privileged: must be unset or false"
            for path, c in containers(spec) if _sc(c).get("privileged")]


def host_path_volumes(spec: Spec, _: dict[str, str]) -> list[str]:
    return [f"spec.volumes[{v.get('name')}].hostPath: hostPath volumes are forbidden"
            for v in spec.get("volumes") or [] if "hostPath" in v]


def host_ports(spec: Spec, _: dict[str, str]) -> list[str]:
    return [f"{path}.ports[{p.get('name', p.get('containerPort'))}].hostPort: must be unset or 0"
            for path, c in containers(spec) for p in c.get("ports") or [] if p.get("hostPort")]


def app_armor(spec: Spec, annotations: dict[str, str]) -> list[str]:
    out = []
    ok_types = {"RuntimeDefault", "Localhost"}
    profiles = [("spec.securityContext", _sc(spec).get("appArmorProfile"))]
    profiles += [(f"{path}.securityContext", _sc(c).get("appArmorProfile")) for path, c in containers(spec)]
    for path, profile in profiles:
        if profile and profile.get("type") not in ok_types:
            out.append(f"{path}.appArmorProfile.type: {profile.get('type')}; allowed: RuntimeDefault, Localhost")
    for key, value in annotations.items():
        if key.startswith(APPARMOR_ANNOTATION) and value != "runtime/default" and not value.startswith("localhost/"):
            out.append(f"metadata.annotations[{key}]: {value}; allowed: runtime/default, localhost/*")
    return out


def se_linux(spec: Spec, _: dict[str, str]) -> list[str]:
    out = []
    options = [("spec.securityContext", _sc(spec).get("seLinuxOptions"))]
    options += [(f"{path}.securityContext", _sc(c).get("seLinuxOptions")) for path, c in containers(spec)]
    for path, opts in options:
        if not opts:
            continue
        if opts.get("type") and opts["type"] not in SELINUX_TYPES:
            out.append(f"{path}.seLinuxOptions.type: {opts['type']}; allowed: {', '.join(sorted(SELINUX_TYPES))}")
        for key in ("user", "role"):
            if opts.get(key):
                out.append(f"{path}.seLinuxOptions.{key}: must be unset")
    return out


def proc_mount(spec: Spec, _: dict[str, str]) -> list[str]:
    return [f"{path}.securityContext.procMount: {_sc(c)['procMount']}; allowed: Default"
            for path, c in containers(spec) if _sc(c).get("procMount") not in (None, "Default")]


def sysctls(spec: Spec, _: dict[str, str]) -> list[str]:
    return [f"spec.securityContext.sysctls[{s.get('name')}]: not in the safe set"
            for s in _sc(spec).get("sysctls") or [] if s.get("name") not in SAFE_SYSCTLS]


def volume_types(spec: Spec, _: dict[str, str]) -> list[str]:
    out = []
    for v in spec.get("volumes") or []:
        sources = set(v) - {"name"}
        bad = sorted(sources - ALLOWED_VOLUME_SOURCES)
        if bad or not sources:
            out.append(f"spec.volumes[{v.get('name')}]: volume type {', '.join(bad) or '(none)'} is not allowed; "
                       f"allowed: {', '.join(sorted(ALLOWED_VOLUME_SOURCES))}")
    return out


def privilege_escalation(spec: Spec, _: dict[str, str]) -> list[str]:
    return [f"{path}.securityContext.allowPrivilegeEscalation: must be false"
            for path, c in containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]


def run_as_non_root(spec: Spec, _: dict[str, str]) -> list[str]:
    pod_level = _sc(spec).get("runAsNonRoot")
    out = []
    for path, c in containers(spec):
        own = _sc(c).get("runAsNonRoot")
        if own is False:
            out.append(f"{path}.securityContext.runAsNonRoot: must not be false")
        elif own is not True and pod_level is not True:
            out.append(f"{path}: runAsNonRoot must be true in spec.securityContext or the container's securityContext")
    return out


def run_as_user(spec: Spec, _: dict[str, str]) -> list[str]:
    out = []
    if _sc(spec).get("runAsUser") == 0:
        out.append("spec.securityContext.runAsUser: must not be 0")
    for path, c in containers(spec):
        if _sc(c).get("runAsUser") == 0:
            out.append(f"{path}.securityContext.runAsUser: must not be 0")
    return out


def seccomp(spec: Spec, _: dict[str, str]) -> list[str]:
    ok = {"RuntimeDefault", "Localhost"}
    pod_type = (_sc(spec).get("seccompProfile") or {}).get("type")
    out = []
    if pod_type is not None and pod_type not in ok:
        out.append(f"spec.securityContext.seccompProfile.type: {pod_type}; allowed: RuntimeDefault, Localhost")
    for path, c in containers(spec):
        own = (_sc(c).get("seccompProfile") or {}).get("type")
        if own is not None and own not in ok:
            out.append(f"{path}.securityContext.seccompProfile.type: {own}; allowed: RuntimeDefault, Localhost")
        elif own is None and pod_type not in ok:
            out.append(f"{path}: seccompProfile RuntimeDefault or Localhost must be set on the pod or the container")
    return out


def capabilities(spec: Spec, _: dict[str, str]) -> list[str]:
    out = []
    for path, c in containers(spec):
        caps = _sc(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"{path}.securityContext.capabilities.drop: must include ALL")
        extra = sorted(set(caps.get("add") or []) - {"NET_BIND_SERVICE"})
        if extra:
            out.append(f"{path}.securityContext.capabilities.add: {', '.join(extra)}; only NET_BIND_SERVICE may be added")
    return out


BASELINE: dict[str, Check] = {
    "HostProcess": host_process, "Host Namespaces": host_namespaces, "Privileged Containers": privileged,
    "HostPath Volumes": host_path_volumes, "Host Ports": host_ports, "AppArmor": app_armor,
    "SELinux": se_linux, "/proc Mount Type": proc_mount, "Sysctls": sysctls,
}
RESTRICTED_ONLY: dict[str, Check] = {
    "Volume Types": volume_types, "Privilege Escalation": privilege_escalation,
    "Running as Non-root": run_as_non_root, "Running as Non-root user": run_as_user,
    "Seccomp": seccomp, "Capabilities": capabilities,
}
RESTRICTED: dict[str, Check] = {**BASELINE, **RESTRICTED_ONLY}


def restricted_violations(spec: Spec, annotations: dict[str, str] | None = None) -> list[str]:
    """Every violation of the restricted profile, each prefixed with the standard's control name."""
    return [f"{name}: {v}" for name, check in RESTRICTED.items() for v in check(spec, annotations or {})]


def kuberay_pod_specs(rayservice: dict[str, Any]) -> list[tuple[str, Spec, dict[str, str]]]:
    """(what, pod spec, pod annotations) of the pods KubeRay creates for a RayService, with the
    containers KubeRay adds (ray-project/kuberay ray-operator/controllers/ray/common/pod.go):
    - every worker pod gets the `wait-gcs-ready` init container, a copy of the Ray container's
      image, securityContext, env and volumeMounts (DefaultWorkerPodTemplate, when
      ENABLE_INIT_CONTAINER_INJECTION is on, its default);
    - with in-tree autoscaling the head pod gets the `autoscaler` sidecar with
      autoscalerOptions' securityContext, env and volumeMounts (BuildAutoscalerContainer)."""
    cluster = rayservice["spec"]["rayClusterConfig"]
    name = rayservice["metadata"]["name"]
    out = []
    head = copy.deepcopy(cluster["headGroupSpec"]["template"])
    if cluster.get("enableInTreeAutoscaling"):
        opts = cluster.get("autoscalerOptions") or {}
        sidecar = {"name": "autoscaler", "image": head["spec"]["containers"][0].get("image")}
        for key in ("securityContext", "env", "volumeMounts"):
            if key in opts:
                sidecar[key] = copy.deepcopy(opts[key])
        head["spec"]["containers"].append(sidecar)
    out.append((f"RayService/{name} head", head["spec"], head["metadata"].get("annotations") or {}))
    for group in cluster.get("workerGroupSpecs") or []:
        tpl = copy.deepcopy(group["template"])
        ray = tpl["spec"]["containers"][0]
        init = {"name": "wait-gcs-ready", "image": ray.get("image")}
        for key in ("securityContext", "env", "volumeMounts"):
            if key in ray:
                init[key] = copy.deepcopy(ray[key])
        tpl["spec"].setdefault("initContainers", []).append(init)
        out.append((f"RayService/{name} {group['groupName']}", tpl["spec"], tpl["metadata"].get("annotations") or {}))
    return out


def rendered_pod_specs(objects: list[dict[str, Any]]) -> list[tuple[str, Spec, dict[str, str]]]:
    """(what, pod spec, pod annotations) of every pod a rendered release creates: bare Pods (helm
    test), the pod templates of Deployments, StatefulSets, DaemonSets, Jobs, LeaderWorkerSets,
    and RayService pods as KubeRay builds them. A workload kind this does not know fails."""
    out: list[tuple[str, Spec, dict[str, str]]] = []
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        if kind == "Pod":
            out.append((f"Pod/{name}", spec, obj["metadata"].get("annotations") or {}))
        elif kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"):
            tpl = spec["template"]
            out.append((f"{kind}/{name}", tpl["spec"], tpl["metadata"].get("annotations") or {}))
        elif kind == "CronJob":
            tpl = spec["jobTemplate"]["spec"]["template"]
            out.append((f"{kind}/{name}", tpl["spec"], tpl["metadata"].get("annotations") or {}))
        elif kind == "LeaderWorkerSet":
            lwt = spec["leaderWorkerTemplate"]
            for role in ("leaderTemplate", "workerTemplate"):
                if role in lwt:
                    tpl = lwt[role]
                    out.append((f"{kind}/{name} {role}", tpl["spec"], tpl["metadata"].get("annotations") or {}))
        elif kind == "RayService":
            out.extend(kuberay_pod_specs(obj))
        elif kind in ("RayCluster", "RayJob"):
            raise AssertionError(f"{kind}/{name}: pod specs of {kind} are not walked yet")
    return out
