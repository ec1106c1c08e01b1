"""Values of charts/observability (the source of its values.schema.json) and their builder.

Monitors per serving topology, the PrometheusRule (recording rules and alerts), Grafana dashboard
ConfigMaps and the KEDA ScaledObject. Field names and shapes were checked against the pinned
prometheus-operator v0.93.0 and KEDA v2.20.2 CRDs (see ../shared/crds/SOURCES.tsv)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from vllm_eks.core.topology import ON_RAY, Topology, keda_scales
from vllm_eks.planning.pools import HPA_MAX_PERIOD_SECONDS, KEDA_QUEUE_TARGET
from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import (
    DNS1123_LABEL,
    LABEL_VALUE,
    OPTIONAL_DNS1123_LABEL,
    OPTIONAL_DNS1123_SUBDOMAIN,
    AnnotationMap,
    ChartValues,
    Int32,
    KubernetesObject,
    LabelMap,
    ValuesModel,
)
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.hf_token import SECRET_KEY

# Chart name of the model server; its fullname helper (charts/vllm-inference/templates/_names.tpl)
# is mirrored by vllm_inference_fullname below and by observability.targetName in the chart.
VLLM_INFERENCE_CHART = "vllm-inference"
# Where alert runbook_url links point: docs/runbooks of the published repository.
RUNBOOK_BASE_URL = "https://github.com/vllm-eks/vllm-eks/blob/main/docs/runbooks"
# KEDA's cooldown: ten minutes, so a replica that took minutes to load is not dropped at once.
MIN_COOLDOWN_SECONDS = 600

# Topologies whose replicas KEDA scales on the queue; Ray Serve scales itself, and the prefill and
# decode pools of a disaggregated deployment need per-pool signals (left to their Plan replicas).
Duration = str  # Prometheus duration, validated by pattern below
DURATION_PATTERN = r"^([0-9]+(ms|s|m|h))+$"
# A port name (Kubernetes IANA_SVC_NAME, at most 15 characters): lower-case alphanumerics and
# single inner hyphens, at least one letter. Monitors refer to Service and container ports by it.
PORT_NAME = r"^([a-z0-9]+-)*[a-z0-9]*[a-z][a-z0-9]*(-[a-z0-9]+)*$"


class Target(ValuesModel):
    release: str = Field(default="vllm", min_length=1, max_length=53, pattern=DNS1123_LABEL,
                         description="Helm release name of charts/vllm-inference "
                                     "(its app.kubernetes.io/instance label)")
    namespace: str = Field(default="", max_length=63, pattern=OPTIONAL_DNS1123_LABEL,
                           description=(
                               "Namespace of the model server. The monitors look there and the ScaledObject is "
                               "created there (a scale target must be in the ScaledObject's namespace). Empty: the "
                               "release namespace"))
    name: str = Field(default="", max_length=63, pattern=OPTIONAL_DNS1123_LABEL,
                      description=(
                          "Name of the Deployment, LeaderWorkerSet or RayService (the vllm-inference fullname). "
                          "Empty: computed like charts/vllm-inference does (`<release>-vllm-inference`, or the "
                          "release name when it already contains `vllm-inference`)"))


class Prometheus(ValuesModel):
    monitor_labels: LabelMap = Field(
        default_factory=lambda: {"release": "kube-prometheus-stack"},
        description=(
            "Labels on every ServiceMonitor, PodMonitor and PrometheusRule so that the Prometheus selects them "
            "(kube-prometheus-stack selects `release: <its release name>`)"))
    server_address: str = Field(default="http://prometheus-operated.monitoring.svc:9090",
                                pattern=r"^https?://", description="URL of the Prometheus HTTP API that KEDA queries")


class Metrics(ValuesModel):
    job: str = Field(default="vllm", min_length=1, pattern=LABEL_VALUE,
                     description=(
                         "Value of the `job` label written on every vLLM series at scrape time. Rules and the "
                         "ScaledObject select `{namespace=\"<target namespace>\", job=\"<this>\"}`, the same on "
                         "every topology"))
    interval: Duration = Field(default="15s", pattern=DURATION_PATTERN, description=(
        "Scrape interval of the model-server endpoints"))
    scrape_timeout: Duration = Field(default="10s", pattern=DURATION_PATTERN, description=(
        "Scrape timeout (must not exceed the interval)"))


class VllmMonitor(ValuesModel):
    enabled: bool = Field(default=True, description=(
        "Render the ServiceMonitor (single-node) or PodMonitor (multi-node, ray-serve) of the model server"))
    port: str = Field(default="http", pattern=PORT_NAME, max_length=15, description=(
        "Name of the port serving /metrics: the vllm-inference Service / leader container port"))
    path: str = Field(default="/metrics", pattern=r"^/", description="HTTP path of the metrics endpoint")
    match_labels: LabelMap = Field(
        default_factory=dict,
        description=(
            "Labels selecting the Service (single-node) or pods (multi-node). Empty: the vllm-inference labels of "
            "`target.release` (name, instance, component; worker-index 0 on multi-node)"))


class RayServeMonitor(ValuesModel):
    port: str = Field(default="metrics", pattern=PORT_NAME, max_length=15,
                      description=(
                          "Name of the Ray container port of the metrics agent (KubeRay adds `metrics`, 8080, when "
                          "absent)"))
    match_labels: LabelMap = Field(
        default_factory=dict,
        description=(
            "Labels selecting the Ray pods of the RayService. Empty: `ray.io/is-ray-node: \"yes\"` and "
            "`app.kubernetes.io/instance: <target.release>`"))


class DcgmMonitor(ValuesModel):
    enabled: bool = Field(default=True, description=(
        "Render the ServiceMonitor of the DCGM exporter (charts/gpu-infra) and the GPU alerts"))
    namespaces: list[str] = Field(default_factory=list, description=(
        "Namespaces to look for the DCGM exporter Service in. Empty: every namespace"))
    match_labels: LabelMap = Field(
        default_factory=lambda: {"app.kubernetes.io/name": "gpu-infra",
                                 "app.kubernetes.io/component": "dcgm-exporter"},
        min_length=1, description="Labels selecting the DCGM exporter Service of charts/gpu-infra")
    port: str = Field(default="metrics", pattern=PORT_NAME, max_length=15, description=(
        "Name of the Service port serving /metrics"))
    job: str = Field(default="dcgm-exporter", min_length=1, pattern=LABEL_VALUE,
                     description="Value of the `job` label written on DCGM series; GPU alerts select on it")
    interval: Duration = Field(default="30s", pattern=DURATION_PATTERN, description="Scrape interval of the exporter")


class SecretKey(ValuesModel):
    name: str = Field(default="", max_length=253, pattern=OPTIONAL_DNS1123_SUBDOMAIN,
                      description=(
                          "Secret in the observability release namespace holding the token (the ServiceMonitor "
                          "endpoint's authorization.credentials). Empty: no token"))
    key: str = Field(default="token", min_length=1, pattern=SECRET_KEY, description="Key of the token in that Secret")


class PickerMonitor(ValuesModel):
    """The endpoint picker (Gateway API Inference Extension EPP) of a vllm-inference release with
    routing.mode gateway: its Service `<fullname>-epp` serves Prometheus metrics on port http-metrics
    (9090). The picker checks a bearer token on /metrics only when the vllm-inference value
    routing.gateway.picker.metricsAuth is true (flag --metrics-endpoint-auth)."""

    enabled: bool = Field(default=False, description=(
        "Render the ServiceMonitor of the endpoint picker of a vllm-inference release with `routing.mode: gateway` "
        "(Service `<fullname>-epp`). `vllm-eks values --routing gateway` sets it. Scraped at metrics.interval / "
        "metrics.scrapeTimeout"))
    port: str = Field(default="http-metrics", pattern=PORT_NAME, max_length=15,
                      description="Name of the picker Service port serving /metrics (9090)")
    job: str = Field(default="endpoint-picker", min_length=1, pattern=LABEL_VALUE,
                     description=(
                         "Value of the `job` label written on the picker's series (`inference_pool_*`, "
                         "`inference_objective_*`, `inference_extension_*`)"))
    match_labels: LabelMap = Field(
        default_factory=dict,
        description=(
            "Labels selecting the picker Service. Empty: `app.kubernetes.io/instance: <target.release>` and "
            "`app.kubernetes.io/component: endpoint-picker`"))
    bearer_token_secret: SecretKey = Field(
        default_factory=SecretKey,
        description=(
            "Bearer token Prometheus sends to the picker. Its /metrics is open when the vllm-inference value "
            "routing.gateway.picker.metricsAuth is false (the default). With metricsAuth true the picker checks a "
            "bearer token (TokenReview and a SubjectAccessReview of `get` on the nonResourceURL /metrics): put a "
            "token of a ServiceAccount allowed that in a Secret in this release's namespace and name it here"))


class Monitors(ValuesModel):
    vllm: VllmMonitor = Field(default_factory=VllmMonitor, description="Model-server monitor")
    ray_serve: RayServeMonitor = Field(default_factory=RayServeMonitor, description="Ray Serve pods monitor")
    dcgm: DcgmMonitor = Field(default_factory=DcgmMonitor, description="DCGM exporter monitor")
    picker: PickerMonitor = Field(default_factory=PickerMonitor, description="Endpoint picker monitor")


class Dashboards(ValuesModel):
    enabled: bool = Field(default=True, description=(
        "Render the Grafana dashboards (dashboards/*.json) as ConfigMaps for the Grafana sidecar; uid, title and "
        "file name are per release, so releases do not overwrite each other"))
    sidecar_labels: LabelMap = Field(default_factory=lambda: {"grafana_dashboard": "1"}, min_length=1,
                                           description=(
                                               "Label the Grafana dashboard sidecar watches for "
                                               "(kube-prometheus-stack: `grafana_dashboard: \"1\"`)"))
    annotations: AnnotationMap = Field(default_factory=dict, description=(
        "Annotations on the dashboard ConfigMaps, e.g. `grafana_folder: LLM` for the sidecar's folder annotation"))


class Slo(ValuesModel):
    ttft_p99_seconds: float = Field(default=2.0, gt=0, description=(
        "p99 time to first token (seconds) above which VllmTtftP99OverSlo fires; the generator derives it from the "
        "Plan"))
    tpot_p99_seconds: float = Field(default=0.1, gt=0, description=(
        "p99 time per output token (seconds) above which VllmTpotP99OverSlo fires; the generator derives it from "
        "the Plan"))


class Thresholds(ValuesModel):
    kv_cache_usage: float = Field(default=0.9, gt=0, le=1,
                                  description=(
                                      "KV cache usage (fraction 0-1) that, with requests waiting, counts as \"short "
                                      "on memory\""))
    queue_depth_per_replica: Int32 = Field(default=64, ge=1,
                                         description=(
                                             "Requests waiting per engine, sustained, that count as \"short on "
                                             "compute\""))
    error_ratio: float = Field(default=0.05, gt=0, le=1, description=(
        "Fraction of finished requests that ended in an engine error"))
    preemptions_per_second: float = Field(default=0.1, gt=0, description=(
        "Preemptions per second (vLLM evicting running requests to free KV cache)"))
    restarts: Int32 = Field(default=3, ge=1, description=(
        "Container restarts in 30 minutes that count as a restart loop"))


class Rules(ValuesModel):
    enabled: bool = Field(default=True, description=(
        "Render the PrometheusRule (rules/*.yaml): recording rules and alerts"))
    runbook_base_url: str = Field(default=RUNBOOK_BASE_URL, pattern=r"^https?://",
                                  description=(
                                      "Base URL of docs/runbooks in the repository; each alert's runbook_url is "
                                      "`<this>/<alert page>.md`"))
    slo: Slo = Field(default_factory=Slo, description="Latency SLOs")
    thresholds: Thresholds = Field(default_factory=Thresholds, description="Alert thresholds")
    pod_regex: str = Field(default="", description=(
        "Regular expression of the model-server pod names for the restart alert (kube-state-metrics), which "
        "counts only their serving containers (vllm, ray-head, ray-worker). Empty: `<target name>-.*`"))
    kube_state_metrics: bool = Field(default=True, description=(
        "Render the restart-loop alert (needs kube-state-metrics)"))
    additional_alert_labels: dict[str, str] = Field(default_factory=dict, description=(
        "Extra labels on every alert (e.g. `team: ml-platform` for Alertmanager routing). Not `severity` or "
        "`alertname`: each alert sets its own (critical or warning)"))

    @model_validator(mode="after")
    def _alert_labels_keep_each_alerts_own(self) -> Rules:
        # Mirrors observability.validateValues.additionalAlertLabels (templates/_rules.tpl).
        taken = [key for key in ("severity", "alertname") if key in self.additional_alert_labels]
        if taken:
            raise ValueError(f"rules.additionalAlertLabels.{taken[0]}: set by each alert (severity critical or "
                             "warning); route on another label, e.g. team")
        return self


class Cost(ValuesModel):
    price_per_replica_hour_usd: float = Field(default=0, ge=0, description=(
        "USD per hour of one model replica (all its nodes, or its share of one node's GPUs): the generator writes "
        "the Plan's cost_per_hour_usd. The recording rule "
        "namespace_job_model:vllm_cost_usd_per_million_output_tokens:rate5m divides it, times the pods exporting "
        "vLLM token counts, by their output token rate. 0: no cost rules (the dashboard's cost panel stays empty)"))


class ScalingPolicy(ValuesModel):
    stabilization_window_seconds: int = Field(ge=0, le=3600, description=(
        "Seconds of recommendations the HPA looks back over: scale-up takes the lowest (ignores short spikes), "
        "scale-down the highest (at least 600)"))
    replicas: Int32 = Field(ge=1, description=(
        "Replicas added (scaleUp) or removed (scaleDown) at most per periodSeconds"))
    period_seconds: int = Field(ge=1, le=HPA_MAX_PERIOD_SECONDS, description=(
        "Period of the policy (seconds). Scale-up: about one replica's start-up time, so the HPA sees the effect of "
        "new replicas before adding more"))


class Behavior(ValuesModel):
    scale_up: ScalingPolicy = Field(
        default_factory=lambda: ScalingPolicy(stabilization_window_seconds=60, replicas=2, period_seconds=600),
        description="Scale-up policy")
    scale_down: ScalingPolicy = Field(
        default_factory=lambda: ScalingPolicy(stabilization_window_seconds=600, replicas=1, period_seconds=300),
        description="Scale-down policy")

    @model_validator(mode="after")
    def _no_flapping(self) -> Behavior:
        if self.scale_down.stabilization_window_seconds < MIN_COOLDOWN_SECONDS:
            raise ValueError(f"scaleDown.stabilizationWindowSeconds must be >= {MIN_COOLDOWN_SECONDS}")
        return self


class Fallback(ValuesModel):
    enabled: bool = Field(default=True, description=(
        "Use KEDA's fallback when the query fails failureThreshold times (Prometheus unreachable, or no series "
        "while ignoreNullValues is false)"))
    failure_threshold: Int32 = Field(default=3, ge=1, description=(
        "Consecutive failed queries before the fallback applies"))
    replicas: Int32 = Field(default=1, ge=0, description="Replicas during fallback")
    behavior: Literal["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"] = Field(
        default="currentReplicasIfHigher", description=(
            "KEDA fallback behavior; currentReplicasIfHigher keeps a scaled-out deployment scaled out"))


class SecretTargetRef(ValuesModel):
    parameter: str = Field(min_length=1, description="KEDA scaler parameter, e.g. bearerToken")
    name: str = Field(min_length=1, description="Secret name")
    key: str = Field(min_length=1, description="Key in the Secret")


class TriggerAuthentication(ValuesModel):
    enabled: bool = Field(default=False, description=(
        "Render a TriggerAuthentication and reference it from the Prometheus trigger"))
    auth_modes: str = Field(default="", description=(
        "KEDA prometheus scaler authModes (e.g. `bearer`, `basic`, `tls`); empty with podIdentity"))
    secret_target_ref: list[SecretTargetRef] = Field(default_factory=list, description=(
        "Secret keys mapped to scaler parameters, e.g. `[{parameter: bearerToken, name: prom-token, key: token}]`"))
    pod_identity_provider: Literal["", "aws", "aws-eks"] = Field(default="", description=(
        "Pod identity provider (`aws` for Amazon Managed Service for Prometheus with EKS Pod Identity/IRSA); empty: "
        "none"))
    aws_region: str = Field(default="", description=(
        "AWS region of Amazon Managed Service for Prometheus (sets the trigger's awsRegion); empty: not AMP"))


class KedaTrigger(KubernetesObject):
    """A KEDA ScaleTriggers entry, passed on as written: type and metadata are required."""

    type: str = Field(min_length=1, description="Scaler type, e.g. prometheus, cron")
    metadata: dict[str, str] = Field(description="Scaler parameters (strings)")


class Autoscaling(ValuesModel):
    enabled: bool = Field(default=True, description=(
        "Render the KEDA ScaledObject (topologies single-node and multi-node only)"))
    min_replica_count: Int32 = Field(default=1, ge=0, description=(
        "Fewest replicas (for multi-node: LeaderWorkerSet groups). 0 only with allowScaleToZero"))
    max_replica_count: Int32 = Field(default=4, ge=1, description="Most replicas (groups)")
    allow_scale_to_zero: bool = Field(default=False, description=(
        "Allow minReplicaCount 0. vLLM exports nothing while no replica runs, so scale-to-zero also needs an entry "
        "in extraTriggers that sees incoming traffic"))
    threshold: Int32 = Field(default=KEDA_QUEUE_TARGET, ge=1, description=(
        "Requests waiting per replica the HPA aims for (trigger threshold, AverageValue)"))
    activation_threshold: Int32 = Field(default=0, ge=0, description=(
        "Queue length above which KEDA activates the target from zero (scale-to-zero only)"))
    polling_interval: Int32 = Field(default=30, ge=5, description="Seconds between KEDA's queries")
    cooldown_period: Int32 = Field(default=MIN_COOLDOWN_SECONDS, ge=MIN_COOLDOWN_SECONDS,
                                 description=(
                                     "Seconds after the last activity before scaling to zero (used only when "
                                     "scaling to zero)"))
    behavior: Behavior = Field(default_factory=Behavior, description="HPA behavior")
    fallback: Fallback = Field(default_factory=Fallback, description="Behaviour when Prometheus is unreachable")
    ignore_null_values: bool = Field(default=False, description=(
        "false: an empty query result is an error, so the fallback applies (Prometheus has no series); true: it "
        "reads as 0. Rendered true whenever minReplicaCount is 0 (scaling to zero)"))
    extra_triggers: list[KedaTrigger] = Field(default_factory=list, description=(
        "Extra KEDA triggers appended as-is (e.g. a traffic trigger for scale-to-zero)"))
    trigger_authentication: TriggerAuthentication = Field(default_factory=TriggerAuthentication,
                                                          description="Optional TriggerAuthentication")

    @model_validator(mode="after")
    def _replica_bounds(self) -> Autoscaling:
        if self.min_replica_count < 1 and not self.allow_scale_to_zero:
            raise ValueError("minReplicaCount 0 needs allowScaleToZero: true")
        if self.min_replica_count < 1 and not self.extra_triggers:
            raise ValueError("scale-to-zero needs extraTriggers: vLLM exports no queue while no replica runs")
        if self.max_replica_count < self.min_replica_count:
            raise ValueError("maxReplicaCount must be >= minReplicaCount")
        if self.fallback.enabled and self.fallback.replicas > self.max_replica_count:
            raise ValueError("fallback.replicas must be <= maxReplicaCount")
        return self


class ObservabilityValues(ChartValues):
    """Values of the observability chart. `vllm-eks values` writes a file of these for a Plan; the
    defaults describe a single-node release named `vllm` in the release namespace."""

    topology: Topology = Field(default="single-node", description=(
        "Serving topology of the vllm-inference release. `single-node`: Deployment behind a Service "
        "(ServiceMonitor). `multi-node`: LeaderWorkerSet; only the leader pods (worker-index 0) serve the API and "
        "/metrics (PodMonitor). `ray-serve`: KubeRay RayService; vLLM's metrics are exported by the Ray metrics "
        "agent on every Ray pod as `ray_vllm_*` and renamed back to `vllm:*` at scrape time (PodMonitor); Ray "
        "Serve's own autoscaler scales it, so no ScaledObject is rendered. `disaggregated`: prefill and decode "
        "pools behind their Services (ServiceMonitor on every Service of the release); the pools keep their planned "
        "replicas (no ScaledObject)"))
    target: Target = Field(default_factory=Target, description="The vllm-inference release observed")
    prometheus: Prometheus = Field(default_factory=Prometheus, description="Prometheus selection and address")
    metrics: Metrics = Field(default_factory=Metrics, description="Scrape settings of the model server")
    monitors: Monitors = Field(default_factory=Monitors, description="ServiceMonitors and PodMonitors")
    dashboards: Dashboards = Field(default_factory=Dashboards, description="Grafana dashboards")
    rules: Rules = Field(default_factory=Rules, description="Recording rules and alerts")
    cost: Cost = Field(default_factory=Cost, description="Price behind the cost-per-million-tokens recording rule")
    autoscaling: Autoscaling = Field(default_factory=Autoscaling, description="KEDA ScaledObject")


def vllm_inference_fullname(release: str) -> str:
    """Object name charts/vllm-inference gives its Deployment, Service and LeaderWorkerSet: the
    release name when it already contains the chart name, else `<release>-vllm-inference`,
    cut to 63 characters (its `vllm-inference.fullname` helper, without overrides)."""
    name = release if VLLM_INFERENCE_CHART in release else f"{release}-{VLLM_INFERENCE_CHART}"
    return name[:63].rstrip("-")


def autoscaling_for(plan: Plan) -> Autoscaling:
    """KEDA bounds from the Plan (pools.py): the planned replicas are the floor and the
    fallback, the Plan's autoscaling maximum the ceiling (the NodePool limit admits it); scale-up
    adds at most two replicas per replica start-up time. The threshold is the measured one when a
    benchmark sweep made the Plan (plan.measured)."""
    floor = plan.pool.autoscaling_min_replicas
    warmup = plan.pool.scale_up_period_seconds
    return Autoscaling(
        # a benchmark sweep's threshold (values --from-benchmark), else the KEDA target of pools.py
        threshold=plan.measured.keda_queue_threshold if plan.measured else KEDA_QUEUE_TARGET,
        min_replica_count=floor,
        max_replica_count=plan.pool.autoscaling_max_replicas,
        behavior=Behavior(
            scale_up=ScalingPolicy(stabilization_window_seconds=60, replicas=2, period_seconds=warmup),
            scale_down=ScalingPolicy(stabilization_window_seconds=MIN_COOLDOWN_SECONDS, replicas=1,
                                     period_seconds=300),
        ),
        fallback=Fallback(replicas=floor),
        enabled=keda_scales(plan.topology),
    )


# The Ray Serve PodMonitor exists only for the RayService topologies (templates/podmonitor.yaml).
TOPOLOGY_SECTIONS: dict[str, frozenset[str]] = {"monitors.rayServe": frozenset(ON_RAY)}


def monitors_for(options: ValuesOptions) -> Monitors | None:
    """The picker's ServiceMonitor when the vllm-inference release routes through a Gateway
    (`--routing gateway`: an InferencePool and its endpoint picker); None keeps the defaults."""
    if options.routing == "gateway":
        return Monitors(picker=PickerMonitor(enabled=True))
    return None


def build_values(plan: Plan, options: ValuesOptions) -> ObservabilityValues:
    topology: Topology = plan.topology
    monitors = monitors_for(options)
    return ObservabilityValues(
        **({"monitors": monitors} if monitors is not None else {}),
        topology=topology,
        target=Target(release=options.release, namespace=options.namespace,
                      name=vllm_inference_fullname(options.release)),
        prometheus=Prometheus(monitor_labels={"release": options.prometheus_release_label}),
        metrics=Metrics(job=options.release),
        rules=Rules(thresholds=Thresholds(queue_depth_per_replica=plan.pool.queue_alert_threshold),
                    slo=Slo(ttft_p99_seconds=plan.slo.slo_ttft_p99_seconds,
                            tpot_p99_seconds=plan.slo.slo_tpot_p99_seconds)),
        cost=Cost(price_per_replica_hour_usd=plan.cost.cost_per_hour_usd or 0),
        autoscaling=autoscaling_for(plan),
    )
