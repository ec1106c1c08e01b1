"""The README's generated blocks (example plan, scenario list) match the tools' output."""

from tests.harness.paths import CHARTS, ROOT, SCENARIOS_FILE
from vllm_eks.cli import readme


def test_readme_generated_blocks_are_current():
    current = (ROOT / "README.md").read_text()
    assert readme.render(current, SCENARIOS_FILE) == current, "README.md is stale: run `make docs`"


def test_readme_states_the_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    assert "make render" in readme and "make test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\nmake test\n" in ci


# --- "Install on a cluster": the commands the cluster tier runs agree with the generator,
# the charts and the Makefile.

import re  # noqa: E402

import yaml  # noqa: E402

from tests.harness.readme_blocks import argv, blocks, commands  # noqa: E402
from vllm_eks.values.options import ValuesOptions  # noqa: E402
from vllm_eks.values.vllm_inference.hf_token import TokenSecret  # noqa: E402


def _install_argvs() -> list[list[str]]:
    return [argv(c) for c in commands(blocks()["install:commands"])]


def test_install_section_has_its_three_blocks():
    assert {"install:prerequisites", "install:commands", "install:gated-model-token"} <= blocks().keys()
    # third-party installs stay out of the block the tests run
    run = blocks()["install:commands"]
    assert "karpenter" not in run and "kube-prometheus-stack" not in run and "kuberay" not in run


def test_install_order_namespace_and_release_match_the_generated_values():
    options = ValuesOptions()
    installs = [a for a in _install_argvs() if a[:2] == ["helm", "install"]]
    assert [a[3] for a in installs] == ["$CHARTS/gpu-infra", "$CHARTS/vllm-inference", "$CHARTS/observability"]
    # the model server and its monitors where the values say; gpu-infra in a privileged namespace
    # of its own (its DaemonSets need host access, which restricted refuses)
    for a in installs[1:]:
        assert a[a.index("--namespace") + 1] == options.namespace
    infra = installs[0][installs[0].index("--namespace") + 1]
    assert infra != options.namespace
    assert installs[1][2] == options.release
    assert ["kubectl", "create", "namespace", options.namespace] in _install_argvs()
    assert ["kubectl", "create", "namespace", infra] in _install_argvs()
    assert ["kubectl", "label", "namespace", infra, "pod-security.kubernetes.io/enforce=privileged"] in _install_argvs()
    assert ["kubectl", "label", "namespace", options.namespace,
            "pod-security.kubernetes.io/enforce=restricted"] in _install_argvs()
    values = next(a for a in _install_argvs() if a[1:2] == ["values"] and a[0] == "vllm-eks")
    check = next(a for a in _install_argvs() if a[1:2] == ["check-fit"])
    assert check[2] == values[values.index("--out") + 1]
    assert _install_argvs().index(check) < _install_argvs().index(installs[0])


def test_make_render_uses_the_readme_namespace_and_release():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^NAMESPACE \?= (\S+)$", makefile, re.M).group(1) == ValuesOptions().namespace
    assert re.search(r"^RELEASE \?= (\S+)$", makefile, re.M).group(1) == ValuesOptions().release
    render = (ROOT / "mk" / "render.mk").read_text()
    assert "template $(RELEASE) charts/$$chart --namespace $(NAMESPACE)" in render
    assert "--namespace $(NAMESPACE) --release $(RELEASE)" in render


def test_readme_installs_the_released_packages_at_their_versions():
    """The block starts from the registry and the CLI a release publishes, at the versions of this
    checkout (what `make package` and `make dist` build), so the README moves with each bump."""
    argvs = _install_argvs()
    assert argvs[0][0] == "export" and argvs[0][1].startswith("CHARTS=oci://"), argvs[0]
    project = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert argvs[1] == ["pipx", "install", f"vllm-eks=={project}"]
    for a in (a for a in argvs if a[:2] == ["helm", "install"]):
        chart = a[3].removeprefix("$CHARTS/")
        version = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())["version"]
        assert a[a.index("--version") + 1] == version, (chart, version)


def test_gated_model_secret_is_the_one_the_values_name():
    (cmd,) = commands(blocks()["install:gated-model-token"])
    a = argv(cmd)
    assert a[:5] == ["kubectl", "--namespace", ValuesOptions().namespace, "create", "secret"]
    assert a[6] == ValuesOptions().hf_token_secret
    assert a[7].startswith(f"--from-literal={TokenSecret().key}=")


def test_readme_kubernetes_range_is_the_charts_kube_version():
    readme = (ROOT / "README.md").read_text()
    for chart in ("gpu-infra", "vllm-inference", "observability"):
        kube = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())["kubeVersion"]
        assert kube == ">=1.31.0-0", chart
    assert "Kubernetes 1.31 or newer (every chart's `kubeVersion` is `>=1.31.0-0`" in readme
