"""A real Prometheus server (Debian's `prometheus` package) on a free loopback port, with a
generated config that scrapes the engine the way the chart's ServiceMonitor would make the
Prometheus operator scrape it, and the chart's rule groups loaded."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .server import free_port

SCRAPE_INTERVAL = "1s"
# Rule groups run at this interval here (their own interval may be 30 s or more): the
# expressions are unchanged, the short run just sees them evaluated often enough.
RULE_INTERVAL = "2s"


def prometheus_binary() -> str:
    found = shutil.which("prometheus") or ("/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None)
    if not found:
        raise FileNotFoundError("no prometheus binary: run make engine-setup")
    return found


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def relabel_configs(relabelings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """prometheus-operator RelabelConfig (camelCase) -> Prometheus relabel_config (snake_case)."""
    out = []
    for r in relabelings or []:
        cfg = {_snake(k): v for k, v in r.items()}
        if "action" in cfg:
            cfg["action"] = str(cfg["action"]).lower()
        out.append(cfg)
    return out


@dataclass
class ScrapeTarget:
    address: str  # host:port
    labels: dict[str, str]  # target labels before relabeling (__meta-free, as the operator sets)
    relabelings: list[dict[str, Any]] = field(default_factory=list)
    metric_relabelings: list[dict[str, Any]] = field(default_factory=list)
    path: str = "/metrics"


@dataclass
class PrometheusServer:
    workdir: Path
    targets: list[ScrapeTarget]
    rule_groups: list[dict[str, Any]]
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        rules_path = self.workdir / "rules.yaml"
        groups = [dict(g, interval=RULE_INTERVAL) for g in self.rule_groups]
        rules_path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
        scrape_configs = []
        for i, t in enumerate(self.targets):
            # The operator starts from the Service's job/namespace/pod/... labels, then applies
            # the monitor's relabelings; static labels + relabel_configs reproduce that.
            scrape_configs.append({
                "job_name": f"target-{i}",
                "scrape_interval": SCRAPE_INTERVAL,
                "scrape_timeout": SCRAPE_INTERVAL,
                "metrics_path": t.path,
                "static_configs": [{"targets": [t.address], "labels": t.labels}],
                "relabel_configs": relabel_configs(t.relabelings),
                "metric_relabel_configs": relabel_configs(t.metric_relabelings),
            })
        config = {"global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": RULE_INTERVAL},
                  "rule_files": [str(rules_path)], "scrape_configs": scrape_configs}
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def start(self, timeout: float = 60) -> "PrometheusServer":
        config = self.write_config()
        self.port = free_port()
        log = open(self.workdir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [prometheus_binary(), f"--config.file={config}",
             f"--storage.tsdb.path={self.workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}",
             "--storage.tsdb.retention.time=1h", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"prometheus not ready within {timeout} s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        p = self.workdir / "prometheus.log"
        return "\n".join(p.read_text(errors="replace").splitlines()[-30:]) if p.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def _get(self, path: str, params: dict[str, str] | None = None) -> Any:
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as err:
            body = json.loads(err.read() or b"{}") or {"status": "error", "error": str(err)}
        if body.get("status") != "success":
            raise AssertionError(f"Prometheus {path} {params}: {body.get('errorType')} {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self._get("/api/v1/query", {"query": expr})
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def label_values(self, label: str, match: str | None = None) -> list[str]:
        return self._get(f"/api/v1/label/{label}/values", {"match[]": match} if match else None)

    def alerts(self) -> list[dict[str, Any]]:
        return self._get("/api/v1/alerts")["alerts"]

    def rules(self) -> list[dict[str, Any]]:
        return self._get("/api/v1/rules")["groups"]

    def targets_health(self) -> list[dict[str, Any]]:
        return self._get("/api/v1/targets")["activeTargets"]
