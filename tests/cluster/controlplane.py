"""A throw-away Kubernetes control plane on loopback: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and the kwok controller, each a child process, plus
optional components a test module starts and stops itself (the KubeRay operator, the
LeaderWorkerSet controller).

The binaries come from `make cluster-tools` (tools/cluster/build.sh). Flags follow what
controller-runtime's envtest and kwokctl's binary runtime pass (tests/cluster/README.md cites them).
Every process runs in its own process group so teardown can kill it and anything it spawned.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.harness.paths import ROOT

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl")
KUBERAY_OPERATOR = "ray-operator"
LWS_CONTROLLER = "lws-controller"
PROMETHEUS_OPERATOR = "prometheus-operator"
_TOKEN_USER = "vllm-eks-admin"


class ControlPlaneError(RuntimeError):
    """A component failed to start; the message carries the tail of its log."""


def pinned_versions() -> dict[str, str]:
    """tools/cluster/versions.env as a dict (K8S_VERSION, ETCD_VERSION, ...)."""
    out: dict[str, str] = {}
    for line in (ROOT / "tools/cluster/versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


def bin_dir() -> Path:
    return Path(os.environ.get("VLLM_EKS_CLUSTER_BIN") or ROOT / ".tools/cluster/bin")


def missing_binaries() -> list[str]:
    d = bin_dir()
    missing = [b for b in BINARIES if not os.access(d / b, os.X_OK)]
    if not (d.parent / "kwok-stages.yaml").is_file():
        missing.append("kwok-stages.yaml")
    return missing


def issue_cert(d: Path, name: str, cn: str, sans: str = "", ca: str = "ca") -> None:
    """<d>/<name>.crt/.key signed by <d>/<ca>.crt (made first when absent), usable for server
    and client authentication; sans like "DNS:localhost,IP:127.0.0.1"."""
    d.mkdir(parents=True, exist_ok=True)
    ext = d / f"{name}.ext"
    ext.write_text((f"subjectAltName={sans}\n" if sans else "") + "extendedKeyUsage=serverAuth,clientAuth\n")
    steps = [] if (d / f"{ca}.crt").exists() else [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
         "-days", "1", "-subj", f"/CN=vllm-eks-test-{ca}"]]
    steps += [
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}"],
        ["x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
         "-out", f"{name}.crt", "-days", "1", "-extfile", ext.name],
    ]
    for cmd in steps:
        subprocess.run(["openssl", *cmd], cwd=d, check=True, capture_output=True)


def kuberay_crd_dir() -> Path:
    """The KubeRay operator's own CRDs (build.sh copies them from the pinned module)."""
    return bin_dir().parent / "kuberay-crds"


def missing_kuberay() -> list[str]:
    missing = [] if os.access(bin_dir() / KUBERAY_OPERATOR, os.X_OK) else [KUBERAY_OPERATOR]
    version = kuberay_crd_dir() / "VERSION"
    if not version.is_file() or version.read_text().strip() != pinned_versions()["KUBERAY_VERSION"]:
        missing.append(f"kuberay-crds {pinned_versions()['KUBERAY_VERSION']}")
    return missing


def lws_dir() -> Path:
    """The LWS controller's own CRDs and webhook manifests (build.sh copies them from the module)."""
    return bin_dir().parent / "lws"


def missing_lws() -> list[str]:
    missing = [] if os.access(bin_dir() / LWS_CONTROLLER, os.X_OK) else [LWS_CONTROLLER]
    version = lws_dir() / "VERSION"
    if not version.is_file() or version.read_text().strip() != pinned_versions()["LWS_VERSION"]:
        missing.append(f"lws CRDs and webhook manifests {pinned_versions()['LWS_VERSION']}")
    return missing


@dataclass(frozen=True)
class WebhookServer:
    """Where a controller's admission webhooks listen, and the CA that signed their certificate
    (the caBundle of the webhook configurations that point at them)."""
    url: str
    ca_file: Path


def prometheus_operator_crd_dir() -> Path:
    """The Prometheus Operator's own CRDs (build.sh copies them from the pinned module)."""
    return bin_dir().parent / "prometheus-operator-crds"


def missing_prometheus_operator() -> list[str]:
    missing = [] if os.access(bin_dir() / PROMETHEUS_OPERATOR, os.X_OK) else [PROMETHEUS_OPERATOR]
    version = prometheus_operator_crd_dir() / "VERSION"
    pinned = pinned_versions()["PROMETHEUS_OPERATOR_VERSION"]
    if not version.is_file() or version.read_text().strip() != pinned:
        missing.append(f"prometheus-operator-crds {pinned}")
    return missing


def _free_port() -> int:
    # The kernel picks a free port; the tiny race until the component binds it is acceptable
    # because every component start is checked and reported.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ControlPlane:
    workdir: Path
    bins: Path = field(default_factory=bin_dir)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    # --- process handling -------------------------------------------------------------
    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [str(self.bins / name), *args],
            env=None if env is None else {**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.workdir,
        )
        log.close()
        self.procs[name] = proc
        return proc

    def log_lines(self, name: str) -> list[str]:
        """A component's whole log so far (empty before it started)."""
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.workdir / f"{name}.log"
        if not path.exists():
            return "(no log)"
        return "\n".join(self.log_lines(name)[-lines:])

    def _check_alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise ControlPlaneError(
                f"{name} exited with {proc.returncode} during start-up; last log lines:\n"
                + self.log_tail(name)
            )

    def _wait(self, name: str, probe, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._check_alive(name)
            try:
                if probe():
                    return
            except Exception as exc:  # noqa: BLE001 - any probe failure means "not yet"
                last = str(exc)
            time.sleep(0.25)
        raise ControlPlaneError(
            f"{name} not ready after {timeout:.0f}s ({last}); last log lines:\n" + self.log_tail(name)
        )

    def _get(self, url: str, token: str | None = None) -> tuple[int, str]:
        if url.startswith(self.server):
            ctx = ssl.create_default_context(cafile=str(self.workdir / "pki/apiserver.crt"))
        else:
            # The scheduler's and kwok's health ports serve their own throw-away self-signed certs.
            ctx = ssl._create_unverified_context()  # noqa: S323
        req = urllib.request.Request(url)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")

    # --- start / stop ---------------------------------------------------------------
    def start(self) -> None:
        t0 = time.monotonic()
        for port in ("etcd", "etcd_peer", "apiserver", "scheduler", "kwok"):
            self.ports[port] = _free_port()
        (self.workdir / "pki").mkdir()
        self._write_credentials()
        self._start_etcd()
        self._start_apiserver()
        self._write_kubeconfig()
        self._start_controller_manager()
        self._start_scheduler()
        self._start_kwok()
        self.timings["start_s"] = time.monotonic() - t0

    def _write_credentials(self) -> None:
        pki = self.workdir / "pki"
        # One RSA key signs and verifies service-account tokens (kwokctl does the same).
        if not shutil.which("openssl"):
            raise ControlPlaneError("openssl is needed to create the service-account key (apt-get install openssl)")
        subprocess.run(
            ["openssl", "genrsa", "-out", str(pki / "sa.key"), "2048"],
            check=True, capture_output=True,
        )
        # API aggregation (an extension API server such as KEDA's metrics adapter): the
        # apiserver proxies requests with this client certificate and the X-Remote-* headers.
        issue_cert(pki, "front-proxy-client", "front-proxy-client", ca="front-proxy-ca")
        # Static token auth: the user is in system:masters, so RBAC grants everything.
        (pki / "tokens.csv").write_text(f'{self.token},{_TOKEN_USER},{_TOKEN_USER},"system:masters"\n')

    def _start_etcd(self) -> None:
        t0 = time.monotonic()
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd_peer']}"
        self._spawn("etcd", [
            "--name=vllm-eks",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=vllm-eks={peer}",
            # A test cluster does not need durability; fsync on a shared disk is the slow part.
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ])
        self._wait("etcd", lambda: self._get(f"{client}/health")[0] == 200, 30)
        self.timings["etcd_s"] = time.monotonic() - t0

    def _start_apiserver(self) -> None:
        t0 = time.monotonic()
        pki = self.workdir / "pki"
        port = self.ports["apiserver"]
        self._spawn("kube-apiserver", [
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1",
            # Without it a loopback-bound apiserver picks a host interface to advertise.
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            # No --tls-cert-file: the apiserver writes a self-signed serving cert here.
            f"--cert-dir={pki}",
            f"--token-auth-file={pki / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.key'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--allow-privileged=true",
            # Aggregation layer, as kubeadm configures it; routing to the endpoint address because
            # no kube-proxy serves Service ClusterIPs here.
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            "--enable-aggregator-routing=true",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
        ])
        self._wait(
            "kube-apiserver",
            lambda: self._get(f"https://127.0.0.1:{port}/readyz", self.token)[0] == 200,
            120,
        )
        self.timings["apiserver_s"] = time.monotonic() - t0

    def _write_kubeconfig(self) -> None:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kwok", "cluster": {
                "server": self.server,
                "certificate-authority": str(self.workdir / "pki/apiserver.crt"),
            }}],
            "users": [{"name": _TOKEN_USER, "user": {"token": self.token}}],
            "contexts": [{"name": "kwok", "context": {"cluster": "kwok", "user": _TOKEN_USER}}],
            "current-context": "kwok",
        }
        self.kubeconfig.write_text(yaml.safe_dump(cfg))
        self.kubeconfig.chmod(0o600)

    def _start_controller_manager(self) -> None:
        pki = self.workdir / "pki"
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            # 0 turns the (optional) secure serving port off: nothing scrapes it here.
            "--secure-port=0",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'apiserver.crt'}",
            "--controllers=*",
        ])

    def _start_scheduler(self) -> None:
        self._spawn("kube-scheduler", [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['scheduler']}",
        ])
        self._wait(
            "kube-scheduler",
            lambda: self._get(f"https://127.0.0.1:{self.ports['scheduler']}/healthz")[0] == 200,
            60,
        )

    def _start_kwok(self) -> None:
        self._spawn("kwok", [
            f"--kubeconfig={self.kubeconfig}",
            # Only nodes the tests create (annotated) are simulated.
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--node-lease-duration-seconds=40",
            "--cidr=10.244.0.0/16",
            "--node-ip=10.0.0.1",
            f"--server-address=127.0.0.1:{self.ports['kwok']}",
            # v0.8.0 has no built-in Stages; build.sh extracts kwokctl's set from the module.
            f"--config={self.bins.parent / 'kwok-stages.yaml'}",
        ])
        self._wait("kwok", lambda: self._get(f"http://127.0.0.1:{self.ports['kwok']}/healthz")[0] == 200, 60)

    # --- optional components --------------------------------------------------------
    def start_kuberay_operator(self) -> float:
        """The KubeRay operator (leader election off, metrics and probes on free loopback ports);
        returns its start time in seconds (until /readyz answers)."""
        t0 = time.monotonic()
        probe = self.ports["ray-operator-probe"] = _free_port()
        self.ports["ray-operator-metrics"] = _free_port()
        self._spawn(KUBERAY_OPERATOR, [
            f"--kubeconfig={self.kubeconfig}",
            "--enable-leader-election=false",
            f"--metrics-addr=127.0.0.1:{self.ports['ray-operator-metrics']}",
            f"--health-probe-bind-address=127.0.0.1:{probe}",
            "--log-stdout-encoder=console",
        ])
        self._wait(KUBERAY_OPERATOR, lambda: self._get(f"http://127.0.0.1:{probe}/readyz")[0] == 200, 60)
        return time.monotonic() - t0

    def start_lws_controller(self) -> tuple[WebhookServer, float]:
        """The LeaderWorkerSet controller with its webhooks on a loopback port. Its internal cert
        rotation is off: it would write a Secret and the caBundle for a webhook Service, and no
        kube-proxy routes a Service here. The test CA signs the serving certificate (SAN
        127.0.0.1) and the webhook configurations call the URL directly, as envtest does.
        Returns the webhook server and the start time (until /readyz answers and the pod
        webhook's path is served)."""
        t0 = time.monotonic()
        certs = self.workdir / "lws-webhook"
        # controller-runtime's webhook server reads tls.crt / tls.key from its certDir.
        issue_cert(certs, "tls", "lws-webhook", "IP:127.0.0.1", ca="lws-ca")
        webhook = self.ports["lws-webhook"] = _free_port()
        probe = self.ports["lws-probe"] = _free_port()
        config = self.workdir / "lws-config.yaml"
        # api/config/v1alpha1 of the pinned module: leader election off, metrics off ("0").
        config.write_text(yaml.safe_dump({
            "apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(certs)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{probe}"},
        }))
        self._spawn(LWS_CONTROLLER, [f"--kubeconfig={self.kubeconfig}", f"--config={config}"])
        server = WebhookServer(f"https://127.0.0.1:{webhook}", certs / "lws-ca.crt")
        self._wait(LWS_CONTROLLER, lambda: self._get(f"http://127.0.0.1:{probe}/readyz")[0] == 200, 60)
        # The webhooks are registered once the controllers are set up (cmd/main.go
        # setupControllers); before that the path answers 404.
        self._wait(LWS_CONTROLLER, lambda: self._webhook_status(server, "/mutate--v1-pod") not in (None, 404), 60)
        return server, time.monotonic() - t0

    @staticmethod
    def _webhook_status(server: WebhookServer, path: str) -> int | None:
        ctx = ssl.create_default_context(cafile=str(server.ca_file))
        req = urllib.request.Request(server.url + path, data=b"{}", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None
    def start_prometheus_operator(self) -> float:
        """The Prometheus Operator on the admin kubeconfig (KUBECONFIG: the operator reads it from
        the environment, pkg/k8s/k8s.go), its web server on a free loopback port without TLS;
        returns its start time in seconds (until /metrics answers)."""
        t0 = time.monotonic()
        port = self.ports[PROMETHEUS_OPERATOR] = _free_port()
        self._spawn(PROMETHEUS_OPERATOR, [
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-tls=false",
            "--log-format=logfmt",
        ], env={"KUBECONFIG": str(self.kubeconfig)})
        self._wait(PROMETHEUS_OPERATOR, lambda: self._get(f"http://127.0.0.1:{port}/metrics")[0] == 200, 60)
        return time.monotonic() - t0

    def stop_component(self, name: str) -> None:
        """Stop one component's process group: SIGTERM, then SIGKILL after 10 s."""
        proc = self.procs.get(name)
        if proc is None:
            return
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                continue

    def stop(self) -> None:
        """Stop in reverse start order (clients before etcd), each process group in turn."""
        for name in reversed(list(self.procs)):
            self.stop_component(name)


def new_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="vllm-eks-cluster-"))
