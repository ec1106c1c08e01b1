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

import subprocess
from pathlib import Path
from typing import Any

from .controlplane import ControlPlane, ControlPlaneError, _free_port, bin_dir
from .kube import Cluster, crd_documents

NAMESPACE = "keda"
OPERATOR = "keda-operator"


def crd_dir() -> Path:
    return bin_dir().parent / "keda-crds"


def missing() -> list[str]:
    out = [] if (bin_dir() / OPERATOR).is_file() else [OPERATOR]
    if not (crd_dir() / "VERSION").is_file():
        out.append("keda-crds")
    return out


def write_certs(d: Path, names: str = "DNS:localhost,IP:127.0.0.1") -> None:
    """A CA and one certificate it signs for both ends of KEDA's mTLS (server and client auth)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "ext.cnf").write_text(f"subjectAltName={names}\nextendedKeyUsage=serverAuth,clientAuth\n")
    for cmd in (
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
         "-days", "1", "-subj", "/CN=vllm-eks-test-keda-ca"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
         "-subj", "/CN=keda-operator"],
        ["x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "tls.crt", "-days", "1", "-extfile", "ext.cnf"],
    ):
        subprocess.run(["openssl", *cmd], cwd=d, check=True, capture_output=True)


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
    write_certs(certs)
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
    return ports


def check_running(plane: ControlPlane) -> None:
    """Fail with the operator's log tail when it has exited."""
    proc = plane.procs.get(OPERATOR)
    if proc is None or proc.poll() is not None:
        raise ControlPlaneError(f"{OPERATOR} is not running; last log lines:\n" + plane.log_tail(OPERATOR))
