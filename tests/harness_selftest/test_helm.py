"""helm.render / lint / template_text against a throwaway chart, with both pinned Helm versions."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from tests.harness import KUBE_VERSIONS, helm, load_crds, validate_all
from tests.harness.timing import TIMINGS

pytestmark = pytest.mark.render

TEMPLATES = {
    "Chart.yaml": """\
        apiVersion: v2
        name: tiny
        description: throwaway chart for the harness self-test
        version: 0.1.0
        appVersion: "1.0"
        kubeVersion: ">=1.31.0-0"
        icon: https://example.com/icon.png
        """,
    "values.yaml": """\
        # -- replicas of the Deployment
        replicas: 2
        # -- container image
        image: registry.example.com/tiny:1.0
        # -- when set, the chart fails with this message
        failWith: ""
        # -- an extra field put into the container (tests the schema)
        extraContainerField: {}
        """,
    "templates/deployment.yaml": """\
        {{- if .Values.failWith }}{{ fail .Values.failWith }}{{ end }}
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ .Release.Name }}-tiny
          labels:
            app.kubernetes.io/name: tiny
            app.kubernetes.io/instance: {{ .Release.Name }}
        spec:
          replicas: {{ .Values.replicas }}
          selector:
            matchLabels:
              app.kubernetes.io/name: tiny
          template:
            metadata:
              labels:
                app.kubernetes.io/name: tiny
            spec:
              containers:
                - name: tiny
                  image: {{ .Values.image }}
                  {{- with .Values.extraContainerField }}
                  {{- toYaml . | nindent 10 }}
                  {{- end }}
                  ports:
                    - name: http
                      containerPort: 8000
        """,
    "templates/service.yaml": """\
        ---
        # an empty document before the object must be dropped
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: {{ .Release.Name }}-tiny
          namespace: {{ .Release.Namespace }}
        spec:
          selector:
            app.kubernetes.io/name: tiny
          ports:
            - name: http
              port: 80
              targetPort: http
        """,
}


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny")
    for name, text in TEMPLATES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_render_parses_all_objects(chart: Path, helm_version: str) -> None:
    objects = helm.render(chart, helm=helm_version, release="demo", namespace="serving")
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Service", "demo-tiny"), ("Deployment", "demo-tiny")
    ]
    assert objects[0]["metadata"]["namespace"] == "serving"


def test_values_files_and_set_values(chart: Path, helm_version: str, tmp_path: Path) -> None:
    values = tmp_path / "v.yaml"
    values.write_text("replicas: 5\n")
    objects = helm.render(chart, [values], helm=helm_version)
    (deploy,) = [o for o in objects if o["kind"] == "Deployment"]
    assert deploy["spec"]["replicas"] == 5
    objects = helm.render(chart, [values], set_values={"replicas": 7}, helm=helm_version)
    (deploy,) = [o for o in objects if o["kind"] == "Deployment"]
    assert deploy["spec"]["replicas"] == 7


def test_kube_version_is_passed(chart: Path, helm_version: str) -> None:
    helm.render(chart, helm=helm_version, kube_version="1.31.0")
    with pytest.raises(helm.HelmError, match="kubeVersion|incompatible"):
        helm.render(chart, helm=helm_version, kube_version="1.30.0")


def test_failure_raises_helm_error_with_stderr(chart: Path, helm_version: str) -> None:
    with pytest.raises(helm.HelmError) as info:
        helm.render(chart, set_values={"failWith": "values: key foo.bar must be positive"},
                    helm=helm_version)
    assert "key foo.bar must be positive" in info.value.stderr
    assert info.value.returncode != 0


def test_missing_values_file_is_an_error(chart: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        helm.render(chart, [tmp_path / "nope.yaml"])


def test_duplicate_keys_are_rejected(chart: Path, helm_version: str) -> None:
    # `image` rendered twice into one container mapping: a plain YAML load keeps the last one.
    with pytest.raises(helm.DuplicateKeyError, match="image"):
        helm.render(chart, set_values={"extraContainerField": {"image": "other:2"}}, helm=helm_version)


def test_lint_strict(chart: Path, helm_version: str, tmp_path: Path) -> None:
    assert "0 chart(s) failed" in helm.lint(chart, helm=helm_version)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "Chart.yaml").write_text("apiVersion: v2\nname: broken\nversion: not-semver\n")
    with pytest.raises(helm.HelmError, match="version"):
        helm.lint(broken, helm=helm_version)


def test_template_text_and_show_only(chart: Path, helm_version: str) -> None:
    text = helm.template_text(chart, helm=helm_version, show_only=["templates/service.yaml"])
    assert "kind: Service" in text and "kind: Deployment" not in text


def test_render_and_validate_everything_with_timing(chart: Path, helm_version: str) -> None:
    registry = load_crds()
    start = time.perf_counter()
    objects = helm.render(chart, helm=helm_version)
    rendered = time.perf_counter()
    total = 0
    for version in KUBE_VERSIONS:
        total += validate_all(objects, registry, version).total
    done = time.perf_counter()
    assert total == len(objects) * len(KUBE_VERSIONS)
    TIMINGS.append((f"{helm_version}: render tiny chart", rendered - start))
    TIMINGS.append((f"{helm_version}: validate {len(objects)} objects x {len(KUBE_VERSIONS)} "
                    "Kubernetes minors", done - rendered))


def test_rendered_unknown_field_fails_validation(chart: Path, helm_version: str) -> None:
    objects = helm.render(chart, set_values={"extraContainerField": {"imagePullPolice": "Always"}},
                          helm=helm_version)
    with pytest.raises(AssertionError, match=r"containers\[0\]\.imagePullPolice: unknown field"):
        validate_all(objects, load_crds(), "1.33")
