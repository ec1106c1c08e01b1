"""The KEDA operator on the test control plane: a child process like the other components.

The binary and KEDA's own CRDs come from `make cluster-tools` (tools/cluster/build.sh builds
github.com/kedacore/keda/v2 ./cmd/operator at KEDA_VERSION and copies config/crd/bases). How the
operator is run standalone follows its cmd/operator/main.go at that version:

- WATCH_NAMESPACE="" (all namespaces; the variable must be set), KEDA_CLUSTER_OBJECT_NAMESPACE and
  POD_NAMESPACE name the namespace of its Secret informer (pkg/util/env_resolver.go, watch.go);
- --enable-cert-rotation stays false (its default): no Secret, webhook or APIService patching.
  The operator's gRPC metrics service (pkg/metricsservice) still loads ca.crt/tls.crt/tls.key
  from --cert-dir and the manager stops when it cannot, so a throw-away CA and certificate are
  made with openssl;
- its Prometheus metrics endpoint is off, the health probe and the gRPC service bind loopback
  ports, and it reaches the API server through the session's kubeconfig.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

from .controlplane import ControlPlane, ControlPlaneError, _free_port, bin_dir, issue_cert
from .kube import Cluster, crd_documents

NAMESPACE = "keda"
OPERATOR = "keda-operator"


def crd_dir() -> Path:
    return bin_dir().parent / "keda-crds"


def missing(binaries: tuple[str, ...] = (OPERATOR,)) -> list[str]:
    out = [b for b in binaries if not (bin_dir() / b).is_file()]
    if not (crd_dir() / "VERSION").is_file():
        out.append("keda-crds")
    return out


def write_certs(d: Path, sans: str = "DNS:localhost,IP:127.0.0.1") -> None:
    """ca.crt and tls.crt/tls.key, the file names KEDA's mTLS between operator and adapter reads."""
    issue_cert(d, "tls", "keda", sans)


def missing_crds(cluster: Cluster) -> list[dict[str, Any]]:
    """KEDA's CRDs the cluster does not serve yet (the pinned ScaledObject and
    TriggerAuthentication CRDs of $VLLM_EKS_CRD_DIR are installed by the session)."""
    from kubernetes import client

    served = {c.metadata.name for c in client.ApiextensionsV1Api(cluster.api).list_custom_resource_definition().items}
    return [d for d in crd_documents(crd_dir()) if d["metadata"]["name"] not in served]


def start_operator(plane: ControlPlane) -> dict[str, int]:
    """Start the operator and wait for its readiness probe; returns the ports it binds."""
    ports = {"probe": _free_port(), "grpc": _free_port()}
    certs = plane.workdir / "keda-certs"
    # One certificate serves the operator's gRPC service and, later, the adapter (its serving
    # name for the aggregator, the host address it binds) and its gRPC client.
    write_certs(certs, cert_names(host_ip()))
    (plane.workdir / "keda-ca").mkdir(exist_ok=True)
    plane._spawn(OPERATOR, [
        f"--kubeconfig={plane.kubeconfig}",
        "--leader-elect=false",
        "--enable-prometheus-metrics=false",
        f"--health-probe-bind-address=127.0.0.1:{ports['probe']}",
        f"--metrics-service-bind-address=127.0.0.1:{ports['grpc']}",
        f"--cert-dir={certs}",
        f"--ca-dir={plane.workdir / 'keda-ca'}",
        "--zap-log-level=info",
    ], env={"WATCH_NAMESPACE": "", "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE, "POD_NAMESPACE": NAMESPACE})
    probe = f"http://127.0.0.1:{ports['probe']}/readyz"
    plane._wait(OPERATOR, lambda: plane._get(probe)[0] == 200, 120)
    plane.ports.update(keda_probe=ports["probe"], keda_grpc=ports["grpc"])
    return ports


def check_running(plane: ControlPlane) -> None:
    """Fail with the operator's log tail when it has exited."""
    proc = plane.procs.get(OPERATOR)
    if proc is None or proc.poll() is not None:
        raise ControlPlaneError(f"{OPERATOR} is not running; last log lines:\n" + plane.log_tail(OPERATOR))


# --- the metrics adapter (external.metrics.k8s.io through API aggregation) -------------------
ADAPTER = "keda-adapter"
SERVICE = "keda-metrics-apiserver"
APISERVICE = "v1beta1.external.metrics.k8s.io"


def host_ip() -> str | None:
    """The machine's first global IPv4 address: Endpoints refuse loopback addresses, and the
    aggregator (--enable-aggregator-routing) dials the endpoint address."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in out.splitlines():
        fields = line.split()
        if "inet" in fields:
            return fields[fields.index("inet") + 1].split("/")[0]
    return None


def cert_names(ip: str | None) -> str:
    names = f"DNS:localhost,IP:127.0.0.1,DNS:{SERVICE}.{NAMESPACE}.svc"
    return names + (f",IP:{ip}" if ip else "")


def start_adapter(cluster: Cluster, grpc_port: int) -> int:
    """Start the adapter on the host address, register it as the external metrics API and wait
    until the aggregator reports the APIService Available. Returns its secure port."""
    from kubernetes import client

    plane = cluster.plane
    ip = host_ip()
    if not ip:
        raise ControlPlaneError("no global IPv4 address on this machine: the aggregator cannot reach an adapter on loopback")
    certs = plane.workdir / "keda-certs"
    port = _free_port()
    kc = str(plane.kubeconfig)
    plane._spawn(ADAPTER, [
        f"--kubeconfig={kc}", f"--lister-kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        f"--secure-port={port}", f"--bind-address={ip}",
        f"--cert-dir={certs}", f"--tls-cert-file={certs / 'tls.crt'}", f"--tls-private-key-file={certs / 'tls.key'}",
        f"--metrics-service-address=127.0.0.1:{grpc_port}", f"--port={_free_port()}",
    ], env={"WATCH_NAMESPACE": "", "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE, "POD_NAMESPACE": NAMESPACE})
    core = cluster.core
    core.create_namespaced_service(NAMESPACE, client.V1Service(
        metadata=client.V1ObjectMeta(name=SERVICE),
        spec=client.V1ServiceSpec(ports=[client.V1ServicePort(name="https", port=443, target_port=port)])))
    core.create_namespaced_endpoints(NAMESPACE, client.V1Endpoints(
        metadata=client.V1ObjectMeta(name=SERVICE),
        subsets=[client.V1EndpointSubset(addresses=[client.V1EndpointAddress(ip=ip)],
                                         ports=[client.CoreV1EndpointPort(name="https", port=port)])]))
    ca = (certs / "ca.crt").read_bytes()
    cluster.create({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": APISERVICE},
        "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100, "service": {"namespace": NAMESPACE, "name": SERVICE, "port": 443},
                 "caBundle": base64.b64encode(ca).decode()}})

    def available() -> bool:
        svc = cluster.get("apiregistration.k8s.io/v1", "APIService", APISERVICE)
        conds = {c["type"]: c["status"] for c in (svc.to_dict().get("status") or {}).get("conditions") or []}
        return conds.get("Available") == "True"

    plane._wait(ADAPTER, available, 120)
    cluster.invalidate_discovery()
    return port


def stop_adapter(cluster: Cluster) -> None:
    """Unregister the external metrics API, then stop the adapter. An APIService whose backend
    is gone makes discovery fail for every later client (helm, the dynamic client), so the
    registration must go with the process."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        client.ApiregistrationV1Api(cluster.api).delete_api_service(APISERVICE)
    except ApiException as exc:
        if exc.status != 404:
            raise
    cluster.plane.stop_component(ADAPTER)
    cluster.invalidate_discovery()
