"""The chart packages (`make package`, tools/package_charts.py) and the Artifact Hub metadata they
carry: a package holds what the folder renders and nothing of its test scaffolding, and Chart.yaml
names every image and custom resource kind the chart's defaults and ci/ cases render."""

from __future__ import annotations

import importlib.util
import tarfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS, ROOT, TOOLS, VALUES

pytestmark = pytest.mark.render

_spec = importlib.util.spec_from_file_location("package_charts", TOOLS / "package_charts.py")
package_charts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(package_charts)  # type: ignore[union-attr]

CHART_NAMES = sorted(p.parent.name for p in CHARTS.glob("*/Chart.yaml"))
# Artifact Hub's kinds for artifacthub.io/changes (artifacthub.io/docs/topics/annotations/helm).
CHANGE_KINDS = {"added", "changed", "deprecated", "removed", "fixed", "security"}
# API groups the API server serves itself; a kind in any other group needs a CRD in the cluster.
BUILTIN_GROUPS = {"", "apps", "batch", "policy", "rbac.authorization.k8s.io", "networking.k8s.io",
                  "autoscaling", "storage.k8s.io", "scheduling.k8s.io", "admissionregistration.k8s.io",
                  "coordination.k8s.io", "discovery.k8s.io"}


@lru_cache(maxsize=1)
def packages(tmp_root: str) -> dict[str, Path]:
    out = Path(tmp_root)
    return {c.name: package_charts.package(helm.HELM_VERSIONS["helm4"], c, out) for c in package_charts.charts(ROOT)}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return packages(str(tmp_path_factory.mktemp("packages")))


def ci_cases(chart: str) -> list[Path]:
    return sorted((CHARTS / chart / "ci").glob("*-values.yaml"))


def chart_meta(chart: str) -> dict[str, Any]:
    return yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())


def annotation(chart: str, key: str) -> Any:
    raw = (chart_meta(chart).get("annotations") or {}).get(f"artifacthub.io/{key}")
    return yaml.safe_load(raw) if isinstance(raw, str) and key not in ("license", "category") else raw


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_package_is_named_by_its_version_and_leaves_out_ci(chart: str, built: dict[str, Path]) -> None:
    pkg = built[chart]
    assert pkg.name == f"{chart}-{chart_meta(chart)['version']}.tgz"
    with tarfile.open(pkg) as tar:
        names = tar.getnames()
    assert not [n for n in names if "/ci/" in n], f"{pkg.name} carries its ci/ cases: add ci/ to .helmignore"
    for required in ("Chart.yaml", "values.yaml", "values.schema.json"):
        assert f"{chart}/{required}" in names, f"{pkg.name} lacks {required}"
    folder = {str(p.relative_to(CHARTS)) for p in (CHARTS / chart / "templates").rglob("*") if p.is_file()}
    assert folder <= set(names), f"{pkg.name} lacks templates: {sorted(folder - set(names))}"


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_package_renders_what_the_folder_renders(chart: str, built: dict[str, Path]) -> None:
    cases = ci_cases(chart)
    assert cases, f"charts/{chart}/ci has no *-values.yaml"
    for case in cases:
        from_folder = helm.template_text(CHARTS / chart, [case], namespace="llm")
        from_package = helm.template_text(built[chart], [case], namespace="llm")
        assert from_package == from_folder, f"{chart} package renders {case.name} differently from the folder"


def _images(obj: Any) -> set[str]:
    """Every container image in an object (Pods inside Deployments, LWS, RayService, Jobs...)."""
    found: set[str] = set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                found |= {c["image"] for c in value if isinstance(c, dict) and isinstance(c.get("image"), str)}
            else:
                found |= _images(value)
    elif isinstance(obj, list):
        for item in obj:
            found |= _images(item)
    return found


def _normalise(image: str) -> str:
    """docker.io/library/x, docker.io/x and x are one image to the kubelet and to Artifact Hub."""
    for prefix in ("docker.io/library/", "docker.io/"):
        if image.startswith(prefix):
            image = image[len(prefix):]
    return image.removeprefix("library/")


# Kinds no ci/ case renders because `ct install` on kind would need their CRDs (Istio's).
EXTRA_CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "vllm-inference": [("15-gateway-values.yaml", {"routing.gateway.provider": "istio"})],
}


@lru_cache(maxsize=None)
def rendered(chart: str) -> tuple[dict[str, Any], ...]:
    """Everything the chart's ci/ cases, the committed values/ scenarios and EXTRA_CASES render."""
    objs: list[dict[str, Any]] = []
    for case in [*ci_cases(chart), *sorted(VALUES.glob(f"*/{chart}.yaml"))]:
        objs += helm.render(CHARTS / chart, [case], namespace="llm")
    for case, overrides in EXTRA_CASES.get(chart, []):
        objs += helm.render(CHARTS / chart, [CHARTS / chart / "ci" / case], set_values=overrides, namespace="llm")
    return tuple(objs)


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_images_annotation_names_the_default_images(chart: str) -> None:
    annotated = {_normalise(i["image"]) for i in annotation(chart, "images") or []}
    defaults = _default_images(chart)
    assert annotated == defaults, (
        f"charts/{chart}/Chart.yaml artifacthub.io/images: missing {sorted(defaults - annotated)}, "
        f"not a default of values.yaml {sorted(annotated - defaults)}")
    # The defaults read from values.yaml are what the pods run: every image a ci/ case renders
    # from a default repository without a digest or tag override is one of them.
    repos = {d.rsplit(":", 1)[0] for d in defaults}
    for obj in rendered(chart):
        for image in map(_normalise, _images(obj)):
            if "@" not in image and image.rsplit(":", 1)[0] in repos:
                assert image in defaults or _overridden_tag(chart, image), (
                    f"charts/{chart}: a ci/ case renders {image}, which values.yaml's defaults do not give")


def _overridden_tag(chart: str, image: str) -> bool:
    """A ci/ case that sets the tag itself (not the chart's default)."""
    tag = image.rsplit(":", 1)[1]
    return any(f"tag: {tag}" in c.read_text() or f'tag: "{tag}"' in c.read_text() for c in ci_cases(chart))


def _default_images(chart: str) -> set[str]:
    """repository:tag of every image block in values.yaml with a repository; an empty tag is the
    chart's appVersion (the server image's documented default)."""
    meta = chart_meta(chart)
    images: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("repository"), str) and node["repository"] and "tag" in node:
                images.add(_normalise(f"{node['repository']}:{node['tag'] or meta['appVersion']}"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load((CHARTS / chart / "values.yaml").read_text()))
    return images


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_crds_annotation_names_every_custom_kind_rendered(chart: str) -> None:
    annotated = {(c["kind"], c["version"]) for c in annotation(chart, "crds") or []}
    custom = {(o["kind"], o["apiVersion"]) for o in rendered(chart)
              if o["apiVersion"].rpartition("/")[0] not in BUILTIN_GROUPS}
    assert annotated == custom, (
        f"charts/{chart}/Chart.yaml artifacthub.io/crds: missing {sorted(custom - annotated)}, "
        f"never rendered {sorted(annotated - custom)}")
    for entry in annotation(chart, "crds") or []:
        assert entry.get("description"), f"charts/{chart} artifacthub.io/crds {entry['kind']}: say who installs it"


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_release_metadata_is_complete(chart: str) -> None:
    meta = chart_meta(chart)
    assert annotation(chart, "license") == "Apache-2.0"
    changes = annotation(chart, "changes") or []
    assert changes, f"charts/{chart}: artifacthub.io/changes is empty (what changed in {meta['version']})"
    for change in changes:
        assert change.get("kind") in CHANGE_KINDS, f"charts/{chart}: change kind {change.get('kind')!r} not in {sorted(CHANGE_KINDS)}"
        assert change.get("description")
    links = annotation(chart, "links") or []
    assert links and all(str(link.get("url", "")).startswith("https://") for link in links), f"charts/{chart}: links"


def test_artifacthub_repository_file() -> None:
    meta = yaml.safe_load((ROOT / "artifacthub-repo.yml").read_text())
    unknown = set(meta) - {"repositoryID", "owners", "ignore"}
    assert not unknown, f"artifacthub-repo.yml: keys Artifact Hub does not read: {sorted(unknown)}"
    assert isinstance(meta.get("ignore"), list), "artifacthub-repo.yml: ignore must be a list"
