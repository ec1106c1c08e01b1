"""charts/observability rules with the real promtool: `check rules` on the PrometheusRule of
every ci/ and values/<scenario>/ file, `test rules` with the unit tests in tests/promtool/, and
coverage: every alert has at least one firing and one silent case, and a runbook page."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.harness import helm, promtool
from tests.harness.paths import CHARTS, DOCS, ROOT, VALUES

pytestmark = pytest.mark.render

CHART = CHARTS / "observability"
PROMTOOL_DIR = ROOT / "tests" / "promtool"
TEST_VALUES = PROMTOOL_DIR / "values.yaml"
UNIT_TESTS = sorted(PROMTOOL_DIR.glob("*.test.yaml"))
RUNBOOKS = DOCS / "runbooks"
VALUES_FILES = sorted((CHART / "ci").glob("*-values.yaml")) + sorted(VALUES.glob("*/observability.yaml"))


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _rule(values_files: list[Path], set_values: dict | None = None) -> dict | None:
    objects = helm.render(CHART, values_files, set_values=set_values, namespace="llm")
    rules = [o for o in objects if o["kind"] == "PrometheusRule"]
    assert len(rules) <= 1
    return rules[0] if rules else None


def _alerts(rule: dict) -> list[dict]:
    return [r for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r]


@pytest.mark.parametrize("values_file", VALUES_FILES, ids=_id)
def test_promtool_check_rules(values_file: Path, tmp_path: Path) -> None:
    rule = _rule([values_file])
    if rule is None:
        assert yaml.safe_load(values_file.read_text()).get("rules", {}).get("enabled") is False
        return
    out = promtool.check_rules(promtool.write_rule_file(rule, tmp_path / "rules.yaml"))
    assert "SUCCESS" in out, out


def test_pod_regex_reaches_the_restart_alert_as_written(tmp_path: Path) -> None:
    """A valid RE2 pattern, with the escapes and classes users write, passes the chart's compile
    check and arrives in the PromQL matcher unchanged; promtool accepts the rule."""
    regex = r"vllm-(prefill|decode)-[0-9a-f]+\.x"
    rule = _rule([VALUES_FILES[0]], set_values={"rules.podRegex": regex})
    exprs = [a["expr"] for a in _alerts(rule) if "kube_pod_container_status_restarts_total" in a["expr"]]
    assert exprs and all(f"pod=~{json.dumps(regex)}" in e for e in exprs), exprs
    assert "SUCCESS" in promtool.check_rules(promtool.write_rule_file(rule, tmp_path / "rules.yaml"))


@pytest.mark.parametrize("values_file", VALUES_FILES, ids=_id)
def test_alerts_have_severity_summary_description_and_runbook(values_file: Path) -> None:
    rule = _rule([values_file])
    if rule is None:
        return
    for alert in _alerts(rule):
        name = alert["alert"]
        assert alert["labels"]["severity"] in {"critical", "warning", "info"}, name
        annotations = alert["annotations"]
        assert annotations.get("summary") and annotations.get("description"), name
        page = annotations["runbook_url"].rsplit("/", 1)[-1]
        assert (RUNBOOKS / page).is_file(), f"{name}: runbook {page} missing from docs/runbooks"
        assert "${" not in str(alert), f"{name}: unfilled placeholder"


def _unit_test_cases() -> tuple[Counter[str], Counter[str]]:
    """alert name -> number of firing / silent alert_rule_test cases in tests/promtool."""
    firing: Counter[str] = Counter()
    silent: Counter[str] = Counter()
    for path in UNIT_TESTS:
        for test in yaml.safe_load(path.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else silent)[case["alertname"]] += 1
    return firing, silent


def _run_unit_tests(rule: dict, workdir: Path) -> str:
    promtool.write_rule_file(rule, workdir / "rules.yaml")
    copies = [Path(shutil.copy(path, workdir / path.name)) for path in UNIT_TESTS]
    return promtool.test_rules(*copies)


def test_promtool_unit_tests_pass(tmp_path: Path) -> None:
    assert UNIT_TESTS, "no tests/promtool/*.test.yaml"
    rule = _rule([TEST_VALUES])
    assert rule is not None
    out = _run_unit_tests(rule, tmp_path)
    assert out.count("SUCCESS") == len(UNIT_TESTS), out


def test_every_alert_has_firing_and_silent_cases() -> None:
    rule = _rule([TEST_VALUES])
    assert rule is not None
    names = {a["alert"] for a in _alerts(rule)}
    firing, silent = _unit_test_cases()
    missing = sorted(n for n in names if firing[n] < 1 or silent[n] < 1)
    assert not missing, f"alerts without both a firing and a silent promtool case: {missing}"
    unknown = sorted((set(firing) | set(silent)) - names)
    assert not unknown, f"promtool cases for alerts the chart does not render: {unknown}"
    assert len(names) >= 10, sorted(names)


def test_every_alert_has_a_runbook_page() -> None:
    rule = _rule([TEST_VALUES])
    pages = {a["annotations"]["runbook_url"].rsplit("/", 1)[-1] for a in _alerts(rule)}
    on_disk = {p.name for p in RUNBOOKS.glob("*.md")}
    assert pages <= on_disk, sorted(pages - on_disk)
    assert on_disk - {"README.md"} <= pages, f"runbooks for no alert: {sorted(on_disk - pages - {'README.md'})}"


@pytest.mark.parametrize("change", [
    {"rules.thresholds.kvCacheUsage": 0.99},
    {"rules.slo.ttftP99Seconds": 10},
    {"rules.thresholds.errorRatio": 0.5},
    {"metrics.job": "other"},
], ids=["kv-threshold", "ttft-slo", "error-ratio", "job-label"])
def test_unit_tests_notice_a_changed_rule(tmp_path: Path, change: dict) -> None:
    """The unit tests are tied to the rendered thresholds and selectors: change one, they fail."""
    rule = _rule([TEST_VALUES], set_values=change)
    with pytest.raises(promtool.PromtoolError):
        _run_unit_tests(rule, tmp_path)


ALERT_SEVERITIES = {"critical", "warning"}


def test_every_alert_has_a_paging_or_warning_severity() -> None:
    """Severities come from the rule sources only, each critical or warning (what Alertmanager routes
    on), and at least one alert pages; extra labels add to them and never replace them."""
    rule = _rule([TEST_VALUES], set_values={"rules.additionalAlertLabels.team": "ml-platform"})
    assert rule is not None
    alerts = _alerts(rule)
    severities = {a["alert"]: a["labels"].get("severity") for a in alerts}
    assert set(severities.values()) <= ALERT_SEVERITIES, severities
    assert "critical" in severities.values(), severities
    assert all(a["labels"].get("team") == "ml-platform" for a in alerts)
