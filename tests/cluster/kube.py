"""A running test cluster: the control plane, an API client and the helpers the tests share
(apply CRDs and nodes, wait for conditions, run helm against the cluster)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from tests.harness.helm import HelmError, load_documents
from tests.harness.tools import require_tool

from .controlplane import ControlPlane
from .nodes import NodeShape, node_manifest, node_name

T = TypeVar("T")


class WaitTimeout(AssertionError):
    pass


def wait_for(what: str, fn: Callable[[], T | None], timeout: float = 60, interval: float = 0.5) -> T:
    """Poll fn until it returns something truthy; fail naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r:.500})")


class _CrdLoader(yaml.SafeLoader):
    """PyYAML's safe loader, reading a plain `=` as the string it is in YAML 1.2 (as the API server
    reads it): the Prometheus Operator's CRDs list `=` among label-matcher enum values, which
    PyYAML would otherwise tag as YAML 1.1's obsolete value type and refuse."""


_CrdLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def crd_documents(crd_dir: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in the directory's YAML files, in file-name order."""
    docs = []
    for f in sorted(crd_dir.iterdir()):
        if f.suffix in (".yaml", ".yml"):
            docs += [d for d in yaml.load_all(f.read_text(), Loader=_CrdLoader)  # noqa: S506 - a safe loader
                     if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    return docs


@dataclass
class Stats:
    """Figures for the tier's closing summary."""

    scenarios_installed: set[str] = field(default_factory=set)
    objects_accepted: int = 0
    crds_installed: int = 0
    nodes_created: int = 0
    pods_scheduled: int = 0
    upgrades: int = 0
    rollbacks: int = 0
    uninstalls: int = 0
    rejections_shown: int = 0
    # KubeRay operator (test_kuberay.py)
    rayservices_reconciled: int = 0
    rayclusters_created: int = 0
    ray_pods_ready: int = 0
    ray_upgrades_admitted: int = 0
    helm_versions: set[str] = field(default_factory=set)
    keda_hpas: int = 0
    keda_rescales: int = 0
    lws_groups: int = 0
    lws_pods_created: int = 0
    lws_recreates: int = 0
    lws_resizes: int = 0
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Cluster:
    plane: ControlPlane
    api: client.ApiClient
    stats: Stats = field(default_factory=Stats)

    @classmethod
    def connect(cls, plane: ControlPlane) -> Cluster:
        api = config.new_client_from_config(config_file=str(plane.kubeconfig))
        return cls(plane, api)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    @property
    def rbac(self) -> client.RbacAuthorizationV1Api:
        return client.RbacAuthorizationV1Api(self.api)

    @property
    def dynamic(self) -> DynamicClient:
        if not hasattr(self, "_dynamic"):
            self._dynamic = DynamicClient(self.api)
        return self._dynamic

    def invalidate_discovery(self) -> None:
        if hasattr(self, "_dynamic"):
            del self._dynamic

    # --- generic objects --------------------------------------------------------------
    def resource(self, api_version: str, kind: str):
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> Any:
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = namespace or obj.get("metadata", {}).get("namespace")
        return res.create(body=obj, namespace=ns if res.namespaced else None)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any | None:
        res = self.resource(api_version, kind)
        try:
            return res.get(name=name, namespace=namespace if res.namespaced else None)
        except NotFoundError:
            return None

    def exists(self, obj: dict[str, Any], namespace: str) -> bool:
        ns = obj.get("metadata", {}).get("namespace") or namespace
        return self.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], ns) is not None

    # --- CRDs -------------------------------------------------------------------------
    def install_crds(self, crd_dir: Path) -> list[str]:
        return self.install_crd_objects(crd_documents(crd_dir))

    def install_crd_objects(self, crds: Sequence[dict[str, Any]]) -> list[str]:
        """Create the CRDs (replacing any of the same name) and wait until each is Established."""
        names = list(self.apply_crd_objects(crds))
        self.stats.crds_installed += len(names)
        return names

    def apply_crds(self, crd_dir: Path, only: Sequence[str] | None = None) -> dict[str, bool]:
        """apply_crd_objects for every CRD of crd_dir (or only those named)."""
        docs = crd_documents(crd_dir)
        return self.apply_crd_objects([d for d in docs if only is None or d["metadata"]["name"] in only])

    def apply_crd_objects(self, crds: Sequence[dict[str, Any]]) -> dict[str, bool]:
        """Create each CRD, replacing one of the same name; wait until all are Established.
        Returns {name: True if it replaced an existing one}."""
        ext = client.ApiextensionsV1Api(self.api)
        done: dict[str, bool] = {}
        for doc in crds:
            name = doc["metadata"]["name"]
            try:
                current = ext.read_custom_resource_definition(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                ext.create_custom_resource_definition(body=doc)
                done[name] = False
                continue
            doc = {**doc, "metadata": {**doc["metadata"], "resourceVersion": current.metadata.resource_version}}
            ext.replace_custom_resource_definition(name, body=doc)
            done[name] = True

        def established() -> bool:
            for n in done:
                crd = ext.read_custom_resource_definition(n)
                conds = {c.type: c.status for c in (crd.status.conditions or [])}
                if conds.get("Established") != "True":
                    return False
            return True

        wait_for(f"CRDs {list(done)} to be Established", established, timeout=60)
        self.invalidate_discovery()
        return done

    def delete_crds(self, names: Sequence[str]) -> None:
        ext = client.ApiextensionsV1Api(self.api)
        for n in names:
            try:
                ext.delete_custom_resource_definition(n)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        self.invalidate_discovery()

    # --- nodes ------------------------------------------------------------------------
    def create_nodes(self, shape: NodeShape, count: int) -> list[str]:
        names = []
        for i in range(count):
            name = node_name(shape.pool, i)
            self.core.create_node(body=node_manifest(shape, name))
            names.append(name)
        for name in names:
            wait_for(f"kwok to mark node {name} Ready", lambda n=name: self.node_ready(n), timeout=60)
        self.stats.nodes_created += count
        return names

    def node_ready(self, name: str) -> bool:
        node = self.core.read_node(name)
        return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))

    def delete_nodes(self, names: Sequence[str]) -> None:
        for name in names:
            try:
                self.core.delete_node(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise

    # --- namespaces -------------------------------------------------------------------
    def ensure_namespace(self, name: str) -> None:
        try:
            self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        except ApiException as exc:
            if exc.status != 409:
                raise
        # The ServiceAccount admission plugin rejects pods until the controller-manager has
        # created the namespace's default ServiceAccount.
        wait_for(f"ServiceAccount default in {name}", lambda: self._has_default_sa(name), timeout=30)

    def _has_default_sa(self, ns: str) -> bool:
        try:
            self.core.read_namespaced_service_account("default", ns)
            return True
        except ApiException:
            return False

    def delete_namespace(self, name: str, wait: bool = True) -> None:
        try:
            self.core.delete_namespace(name)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        if wait:
            def gone() -> bool:
                try:
                    self.core.read_namespace(name)
                    return False
                except ApiException as exc:
                    return exc.status == 404
            wait_for(f"namespace {name} to be deleted", gone, timeout=120)

    # --- pods -------------------------------------------------------------------------
    def pods(self, namespace: str, selector: str = "") -> list[client.V1Pod]:
        return self.core.list_namespaced_pod(namespace, label_selector=selector).items

    def scheduler_reason(self, pod: client.V1Pod) -> str:
        """The scheduler's message for an unschedulable pod (PodScheduled condition or event)."""
        for c in pod.status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False":
                return f"{c.reason}: {c.message}"
        events = self.core.list_namespaced_event(
            pod.metadata.namespace, field_selector=f"involvedObject.name={pod.metadata.name}").items
        return "; ".join(f"{e.reason}: {e.message}" for e in events if e.reason == "FailedScheduling")

    # --- helm -------------------------------------------------------------------------
    def helm(self, helm: str, args: Sequence[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run Helm 3 or 4 against this cluster with a private Helm home; raise HelmError."""
        home = self.plane.workdir / f"helm-home-{helm}"
        env = dict(os.environ)
        env.update(
            KUBECONFIG=str(self.plane.kubeconfig),
            HELM_CONFIG_HOME=str(home / "config"),
            HELM_CACHE_HOME=str(home / "cache"),
            HELM_DATA_HOME=str(home / "data"),
        )
        cmd = [str(require_tool(helm)), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        if proc.returncode != 0:
            raise HelmError([helm, *args], proc.returncode, proc.stdout, proc.stderr)
        self.stats.helm_versions.add(helm)
        return proc

    def helm_manifest(self, helm: str, release: str, namespace: str) -> list[dict[str, Any]]:
        """The objects of a deployed release, as Helm recorded them."""
        out = self.helm(helm, ["get", "manifest", release, "--namespace", namespace]).stdout
        return load_documents(out)

    def helm_releases(self, helm: str, namespace: str) -> list[str]:
        # Every state, spelled out: Helm 4 dropped `list --all`, both accept the state flags.
        states = ["--deployed", "--failed", "--pending", "--superseded", "--uninstalling", "--uninstalled"]
        out = self.helm(helm, ["list", "--namespace", namespace, "--short", *states]).stdout
        return [line for line in out.splitlines() if line.strip()]
