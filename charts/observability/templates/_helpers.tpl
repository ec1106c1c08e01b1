{{/*
Kubernetes recommended labels.
*/}}
{{- define "observability.labels" -}}
helm.sh/chart: {{ include "observability.chart" . }}
{{ include "observability.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: monitoring
app.kubernetes.io/part-of: vllm-eks
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/*
Minimal selector labels.
*/}}
{{- define "observability.selectorLabels" -}}
app.kubernetes.io/name: {{ include "observability.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
Labels of objects a Prometheus must pick up (monitors and rules).
*/}}
{{- define "observability.monitorLabels" -}}
{{ include "observability.labels" . }}
{{- with .Values.prometheus.monitorLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Labels selecting the model-server Service (single-node) or leader pods (multi-node).
*/}}
{{- define "observability.vllmMatchLabels" -}}
{{- if .Values.monitors.vllm.matchLabels -}}
{{ toYaml .Values.monitors.vllm.matchLabels }}
{{- else -}}
app.kubernetes.io/name: vllm-inference
app.kubernetes.io/instance: {{ .Values.target.release | quote }}
{{- if ne .Values.topology "disaggregated" }}
app.kubernetes.io/component: server
{{- end }}
{{- if eq .Values.topology "multi-node" }}
leaderworkerset.sigs.k8s.io/worker-index: "0"
{{- end }}
{{- end -}}
{{- end -}}

{{/*
Labels selecting the Ray pods of the RayService.
*/}}
{{- define "observability.rayMatchLabels" -}}
{{- if .Values.monitors.rayServe.matchLabels -}}
{{ toYaml .Values.monitors.rayServe.matchLabels }}
{{- else -}}
ray.io/is-ray-node: "yes"
app.kubernetes.io/instance: {{ .Values.target.release | quote }}
{{- end -}}
{{- end -}}

{{/*
Labels selecting the endpoint picker Service of the vllm-inference release (routing.mode gateway).
*/}}
{{- define "observability.pickerMatchLabels" -}}
{{- if .Values.monitors.picker.matchLabels -}}
{{ toYaml .Values.monitors.picker.matchLabels }}
{{- else -}}
app.kubernetes.io/instance: {{ .Values.target.release | quote }}
app.kubernetes.io/component: endpoint-picker
{{- end -}}
{{- end -}}

{{/*
Relabeling shared by every model-server endpoint: a fixed `job` label, so that rules and the
ScaledObject select the same series whether a ServiceMonitor or a PodMonitor scraped them.
*/}}
{{- define "observability.jobRelabeling" -}}
- action: replace
  targetLabel: job
  replacement: {{ .job | quote }}
{{- end -}}

{{/*
PromQL label matchers of this release's vLLM series, e.g. namespace="llm",job="vllm".
*/}}
{{- define "observability.vllmSelector" -}}
{{- printf "namespace=%q,job=%q" (include "observability.targetNamespace" .) .Values.metrics.job -}}
{{- end -}}

{{/*
PromQL label matchers of this release's model-server containers in kube-state-metrics series:
its pods by name, and of those the containers that serve (vllm-inference names them vllm in the
Deployment and LeaderWorkerSet, ray-head and ray-worker on Ray), so the endpoint picker, the
staging and benchmark Jobs and the helm test pods, whose names share the prefix, do not count.
kube-state-metrics exposes no pod labels by default (--metric-labels-allowlist), so the
container name is the matcher every installation has.
*/}}
{{- define "observability.podSelector" -}}
{{- $regex := default (printf "%s-.*" (include "observability.targetName" .)) .Values.rules.podRegex -}}
{{- printf "namespace=%q,pod=~%q,container=~%q" (include "observability.targetNamespace" .) $regex "vllm|ray-head|ray-worker" -}}
{{- end -}}

{{/*
PromQL label matchers of the DCGM exporter series.
*/}}
{{- define "observability.dcgmSelector" -}}
{{- printf "job=%q" .Values.monitors.dcgm.job -}}
{{- end -}}

{{/*
Query of the KEDA trigger: requests waiting summed over every engine of the release.
*/}}
{{- define "observability.scalerQuery" -}}
{{- printf "sum(vllm:num_requests_waiting{%s})" (include "observability.vllmSelector" .) -}}
{{- end -}}

{{/*
Values substituted for ${name} placeholders in rules/*.yaml.
*/}}
{{- define "observability.ruleParameters" -}}
vllmSelector: {{ include "observability.vllmSelector" . | quote }}
podSelector: {{ include "observability.podSelector" . | quote }}
dcgmSelector: {{ include "observability.dcgmSelector" . | quote }}
runbookBaseUrl: {{ .Values.rules.runbookBaseUrl | trimSuffix "/" | quote }}
ttftP99Seconds: {{ .Values.rules.slo.ttftP99Seconds | toString | quote }}
tpotP99Seconds: {{ .Values.rules.slo.tpotP99Seconds | toString | quote }}
kvCacheUsage: {{ .Values.rules.thresholds.kvCacheUsage | toString | quote }}
queueDepthPerReplica: {{ .Values.rules.thresholds.queueDepthPerReplica | toString | quote }}
errorRatio: {{ .Values.rules.thresholds.errorRatio | toString | quote }}
preemptionsPerSecond: {{ .Values.rules.thresholds.preemptionsPerSecond | toString | quote }}
restarts: {{ .Values.rules.thresholds.restarts | toString | quote }}
pricePerReplicaHourUsd: {{ .Values.cost.pricePerReplicaHourUsd | toString | quote }}
{{- end -}}

{{/*
One rule file of rules/ with its ${name} placeholders replaced, as a list of groups. Alert labels
from rules.additionalAlertLabels are merged into every alerting rule.
Usage: include "observability.ruleGroups" (dict "root" $ "file" "rules/x.yaml")
*/}}
{{- define "observability.ruleGroups" -}}
{{- $root := .root -}}
{{- $text := $root.Files.Get .file -}}
{{- if not $text -}}
{{- fail (printf "observability: rule source %s is missing from the chart" .file) -}}
{{- end -}}
{{- $params := include "observability.ruleParameters" $root | fromYaml -}}
{{- range $key, $value := $params -}}
{{- $text = replace (printf "${%s}" $key) (toString $value) $text -}}
{{- end -}}
{{- if contains "${" $text -}}
{{- fail (printf "observability: %s has a placeholder with no value: %s" .file (regexFind "\\$\\{[^}]*\\}" $text)) -}}
{{- end -}}
{{- $doc := $text | fromYaml -}}
{{- if hasKey $doc "Error" -}}
{{- fail (printf "observability: %s is not valid YAML after substitution: %s" .file $doc.Error) -}}
{{- end -}}
{{- $groups := list -}}
{{- range $group := $doc.groups -}}
{{- $rules := list -}}
{{- range $rule := $group.rules -}}
{{- if and (hasKey $rule "alert") $root.Values.rules.additionalAlertLabels -}}
{{- $_ := set $rule "labels" (merge (deepCopy (default dict $rule.labels)) $root.Values.rules.additionalAlertLabels) -}}
{{- end -}}
{{- $rules = append $rules $rule -}}
{{- end -}}
{{- $_ := set $group "rules" $rules -}}
{{- $groups = append $groups $group -}}
{{- end -}}
{{- toYaml $groups -}}
{{- end -}}

{{/*
observability.dashboardUid: (dict "ctx" $ "stem" "<dashboards/ file name without .json>") -> the
Grafana uid of that dashboard for this release: the stem and a hash of namespace/release, at most
40 characters (Grafana's uid limit). Grafana keys dashboards by uid, so two releases (two models)
each keep their own; the ConfigMap key uses it too, because the dashboard sidecar writes every key
as a file into one folder.
*/}}
{{- define "observability.dashboardUid" -}}
{{- $hash := printf "%s/%s" .ctx.Release.Namespace .ctx.Release.Name | sha256sum | trunc 10 -}}
{{- printf "%s-%s" (.stem | trunc 29 | trimSuffix "-") $hash -}}
{{- end -}}

{{/* Label and annotation keys the API server accepts (metadataKeyErrors). */}}
{{- define "observability.validateValues.metadataKeys" -}}
{{- $v := .Values -}}
{{- $maps := dict "prometheus.monitorLabels" $v.prometheus.monitorLabels "monitors.vllm.matchLabels" $v.monitors.vllm.matchLabels "monitors.rayServe.matchLabels" $v.monitors.rayServe.matchLabels "monitors.dcgm.matchLabels" $v.monitors.dcgm.matchLabels "monitors.picker.matchLabels" $v.monitors.picker.matchLabels "dashboards.sidecarLabels" $v.dashboards.sidecarLabels "dashboards.annotations" $v.dashboards.annotations -}}
{{- range $path := keys $maps | sortAlpha -}}
{{- include "observability.metadataKeyErrors" (dict "path" $path "map" (get $maps $path)) -}}
{{- end -}}
{{- end -}}

{{/* The chart's own labels are not the user's: a monitor or dashboard label of the same key was
written twice into the object. */}}
{{- define "observability.validateValues.chartLabels" -}}
{{- $own := include "observability.labels" . | fromYaml -}}
{{- range $key := list "prometheus.monitorLabels" "dashboards.sidecarLabels" -}}
{{- $labels := index $.Values (splitList "." $key | first) (splitList "." $key | last) | default dict -}}
{{- range $label := keys $labels | sortAlpha -}}
{{- if hasKey $own $label -}}
{{- printf "%s.%s: set by the chart (%s: %s); use another label key\n" $key $label $label (get $own $label) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
