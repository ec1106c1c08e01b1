"""The README's "Install on a cluster" commands (the block marked install:commands), run as
written against the tier's control plane, so the README cannot drift from what installs: the
chart packages `make package` builds, pulled from an OCI registry, and the CLI from its wheel.

What differs from a user's shell, and why:
- `export CHARTS=...` names a local OCI registry (tests/cluster/chart_registry.py) that holds the
  packages, pushed by the release's own step; it serves plain HTTP on loopback, so each
  `helm install "$CHARTS/..."` gets `--plain-http` (a real registry has TLS);
- `pipx install vllm-eks==V` becomes the wheel of this checkout (`python -m build --wheel`)
  installed into a fresh venv whose bin goes first on PATH, as pipx's does (nothing is on PyPI
  before a release); the checkout's .venv/bin is taken off PATH so only that CLI answers;
- `my-values` becomes a folder under pytest's tmp_path, so the run writes nothing into the
  repository;
- the shell's environment: KUBECONFIG points at the test cluster, Helm gets a private home, and
  the tier's kubectl (.tools/cluster/bin) and the pinned Helm 4 (.tools/bin) are on PATH;
- after the command that writes the values folder, the test creates the kwok GPU nodes Karpenter
  would launch for the folder's pool (the cloud's part, not a README command).
Every command runs in one bash process, in order; the first failure fails the test with that
command and its output. The API server enforces the namespaces' Pod Security labels, so the run
also shows gpu-infra's DaemonSets admitted where the README installs them (their pods reach every
GPU node) and the model server admitted under `restricted`."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cluster.controlplane import bin_dir
from tests.cluster.flows import cleanup, ready_pods
from tests.cluster.kube import Cluster
from tests.cluster.scenarios import Scenario
from tests.cluster.shapes import (
    daemonset_requests,
    nodes_for,
    pod_groups,
    render_scenario_chart,
    scenario_shapes,
    shape_for,
)
from tests.harness.build_lock import source_tree_build
from tests.harness.paths import ROOT
from tests.harness.readme_blocks import argv, blocks, commands
from vllm_eks.check.charts_source import CHARTS_ENV

pytestmark = pytest.mark.cluster

FOLDER = "my-values"          # the README's values folder
COMMAND_TIMEOUT_S = 300


class Shell:
    """One bash process fed one command at a time; stdout and stderr merged."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=env, cwd=cwd, start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.marker = f"__readme_rc_{os.getpid()}__"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def run(self, command: str) -> tuple[int, str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{command}\necho \"{self.marker}$?\"\n")
        self.proc.stdin.flush()
        out: list[str] = []
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                return 124, "".join(out) + f"\n(timed out after {COMMAND_TIMEOUT_S} s)"
            if line is None:
                return 255, "".join(out) + "\n(the shell exited)"
            if line.startswith(self.marker):
                return int(line[len(self.marker):].strip()), "".join(out)
            out.append(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)


def _without_checkout_bins(path: str) -> list[str]:
    """PATH entries minus the checkout's .venv/bin and .tools/bin (`make` puts them there)."""
    own = {(ROOT / ".venv" / "bin").resolve(), (ROOT / ".tools" / "bin").resolve()}
    return [p for p in path.split(os.pathsep) if p and Path(p).resolve() not in own]


def _install_wheel(base: Path) -> Path:
    """This checkout's wheel in a fresh venv (what `pipx install` gives); its bin folder."""
    def run(cmd: list[str]) -> None:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"

    with source_tree_build():
        run([sys.executable, "-m", "build", "--wheel", "--outdir", str(base / "dist"), str(ROOT)])
    (wheel,) = (base / "dist").glob("vllm_eks-*.whl")
    run([sys.executable, "-m", "venv", str(base / "venv")])
    run([str(base / "venv" / "bin" / "pip"), "install", "--quiet", str(wheel)])
    return base / "venv" / "bin"


def _as_run_here(step: str, folder: Path, registry_url: str, cli_bin: Path) -> str:
    """The README command with this test's substitutions (the module docstring says why)."""
    words = argv(step)
    if words[0] == "export" and words[1].startswith("CHARTS="):
        return f"export CHARTS={registry_url}"
    if words[:2] == ["pipx", "install"]:
        return f'export PATH="{cli_bin}:$PATH"'
    if words[:2] == ["helm", "install"] and words[3].startswith("$CHARTS/"):
        step += " --plain-http"
    return step.replace(FOLDER, str(folder))


def _create_pool_nodes(folder: Path, namespace: str, gpu_nodes) -> list[str]:
    """The GPU nodes Karpenter would launch for the values folder's pool, enough for its pods."""
    scenario = Scenario("readme-install", folder)
    shapes = scenario_shapes(scenario)
    overhead = daemonset_requests(render_scenario_chart(scenario, "gpu-infra", namespace))
    names: list[str] = []
    for group in pod_groups(render_scenario_chart(scenario, "vllm-inference", namespace)):
        shape = shape_for(group, shapes)
        names += gpu_nodes(shape, nodes_for(group, shape, overhead))
    return names


def test_readme_install_commands_run_as_written(cluster: Cluster, gpu_nodes, chart_registry, tmp_path: Path) -> None:
    block = blocks()["install:commands"]
    assert FOLDER in block, f"the install block no longer names {FOLDER}: update this test's substitution"
    steps = commands(block)
    namespaces = [a[3] for a in map(argv, steps) if a[:3] == ["kubectl", "create", "namespace"]]
    installs = {a[2]: _namespace_flag(a) for a in map(argv, steps) if a[:2] == ["helm", "install"]}
    assert len(installs) == 3, steps
    releases = list(installs)
    namespace = installs[releases[1]]                  # the model server's
    infra_namespace = installs[releases[0]]            # gpu-infra's, privileged
    assert infra_namespace != namespace, "gpu-infra must not share the model server's namespace " \
        "(its DaemonSets need the privileged Pod Security level)"
    folder = tmp_path / FOLDER

    home = tmp_path / "helm-home"
    env = dict(os.environ)
    env.update(KUBECONFIG=str(cluster.plane.kubeconfig), HELM_CONFIG_HOME=str(home / "config"),
               HELM_CACHE_HOME=str(home / "cache"), HELM_DATA_HOME=str(home / "data"),
               PATH=os.pathsep.join([str(bin_dir()), str(ROOT / ".tools" / "bin"),
                                     *_without_checkout_bins(env.get("PATH", ""))]))
    env.pop("VLLM_EKS_HELM", None)   # check-fit must find helm the way the README puts it on PATH
    env.pop(CHARTS_ENV, None)        # ... and render the charts the wheel carries
    cli_bin = _install_wheel(tmp_path / "cli")
    for ns in namespaces:
        cluster.delete_namespace(ns, wait=True)
    shell = Shell(env, ROOT)
    nodes: list[str] = []
    try:
        for step in steps:
            rc, output = shell.run(_as_run_here(step, folder, chart_registry.url, cli_bin))
            assert rc == 0, f"README install command failed (exit {rc}): {step}\n{output}"
            print(f"$ {step}\n{output}", end="")
            if not nodes and (folder / "gpu-infra.yaml").is_file():
                nodes = _create_pool_nodes(folder, namespace, gpu_nodes)
        assert nodes, f"no command wrote {FOLDER}/gpu-infra.yaml"

        for release, ns in installs.items():
            assert release in cluster.helm_releases("helm4", ns), (release, ns)
        print(f"installed from {chart_registry.url}: " + "; ".join(chart_registry.pushed.values()))
        pods = ready_pods(cluster, namespace, f"app.kubernetes.io/instance={releases[1]}")
        assert pods and all(p.spec.node_name in nodes for p in pods), \
            [(p.metadata.name, p.spec.node_name) for p in pods]
        _assert_daemon_pods_admitted(cluster, infra_namespace)
    finally:
        shell.close()
        for ns in dict.fromkeys(installs.values()):
            cleanup(cluster, "helm4", ns)
        for ns in namespaces:
            cluster.delete_namespace(ns, wait=True)


def _namespace_flag(args: list[str]) -> str:
    assert "--namespace" in args, f"a README helm install without --namespace: {args}"
    return args[args.index("--namespace") + 1]


def _assert_daemon_pods_admitted(cluster: Cluster, namespace: str, timeout_s: float = 120) -> None:
    """Every DaemonSet of gpu-infra got its pod onto each GPU node: Pod Security admitted them. In
    a namespace below privileged the controller's creates are refused (FailedCreate events) and the
    count stays 0."""
    deadline = time.monotonic() + timeout_s
    while True:
        daemon_sets = cluster.apps.list_namespaced_daemon_set(namespace).items
        counts = {d.metadata.name: (d.status.current_number_scheduled or 0, d.status.desired_number_scheduled or 0)
                  for d in daemon_sets}
        if daemon_sets and all(desired > 0 and current == desired for current, desired in counts.values()):
            return
        if time.monotonic() > deadline:
            refused = [e.message for e in cluster.core.list_namespaced_event(namespace).items
                       if e.reason == "FailedCreate"]
            pytest.fail(f"gpu-infra DaemonSets in {namespace} without their pods {counts}: {refused[:3]}")
        time.sleep(2)
