{{/*
Names and labels. The pool label and the GPU taint are defined here only, for this chart;
charts/vllm-inference selects on the label and tolerates the taint in its own templates, and
tests read both from the rendered output to check that the two charts agree.
*/}}

{{/* Node label each pool gives its nodes, valued with the pool name; the model-server pods select on it. */}}
{{- define "gpu-infra.poolLabel" -}}vllm-eks.io/pool{{- end -}}
{{/* Taint on every GPU node (effect NoSchedule); the model-server pods tolerate it. */}}
{{- define "gpu-infra.gpuTaintKey" -}}nvidia.com/gpu{{- end -}}
{{/* Karpenter's own GPU label: device plugins select on it, not on NFD labels. */}}
{{- define "gpu-infra.gpuCountLabel" -}}karpenter.k8s.aws/instance-gpu-count{{- end -}}

{{/*
Kubernetes recommended labels. Call with (dict "ctx" $ "component" "<component>").
*/}}
{{- define "gpu-infra.labels" -}}
helm.sh/chart: {{ include "gpu-infra.chart" .ctx }}
{{ include "gpu-infra.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: vllm-eks
{{- end -}}

{{/* Minimal selector labels: name, instance, component. */}}
{{- define "gpu-infra.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-infra.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
gpu-infra.withDefaults: (dict "value" $pool "defaults" $defaults) -> JSON of the pool with every
key it does not set taken from the defaults; maps merge key by key, anything else (lists, null)
set in the pool wins. Unlike sprig merge, an explicit false/0/null in the pool is kept.
*/}}
{{- define "gpu-infra.withDefaults" -}}
{{- $out := dict -}}
{{- range $k, $d := .defaults -}}
{{- if hasKey $.value $k -}}
{{- $v := index $.value $k -}}
{{- if and (kindIs "map" $d) (kindIs "map" $v) -}}
{{- $_ := set $out $k (include "gpu-infra.withDefaults" (dict "value" $v "defaults" $d) | fromJson) -}}
{{- else -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- else -}}
{{- $_ := set $out $k $d -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := .value -}}
{{- if not (hasKey $out $k) -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The pools with poolDefaults applied, as JSON {"pools": [...]}. */}}
{{- define "gpu-infra.pools" -}}
{{- $pools := list -}}
{{- range .Values.pools -}}
{{- $pools = append $pools (include "gpu-infra.withDefaults" (dict "value" . "defaults" $.Values.poolDefaults) | fromJson) -}}
{{- end -}}
{{- toJson (dict "pools" $pools) -}}
{{- end -}}

{{/* AMI alias family@version (EC2NodeClass amiSelectorTerms[].alias). */}}
{{- define "gpu-infra.amiAlias" -}}
{{- printf "%s@%s" .Values.amiFamily .Values.amiVersion -}}
{{- end -}}

{{/* Names of the pools, as a YAML list, optionally only the EFA pools: (dict "ctx" $ "efaOnly" true). */}}
{{- define "gpu-infra.poolNames" -}}
{{- $names := list -}}
{{- range (include "gpu-infra.pools" .ctx | fromJson).pools -}}
{{- if or (not $.efaOnly) .efa -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- end -}}
{{- toYaml $names -}}
{{- end -}}

{{/* Tolerations of the node DaemonSets: the GPU taint, and any NoSchedule/NoExecute taint an
operator adds while draining, so device plugins keep serving until the node goes. */}}
{{- define "gpu-infra.daemonSetTolerations" -}}
- key: {{ include "gpu-infra.gpuTaintKey" . }}
  operator: Exists
  effect: NoSchedule
- key: CriticalAddonsOnly
  operator: Exists
{{- end -}}

{{/* Pod security shared by the DaemonSets: seccomp RuntimeDefault, no service-account token. */}}
{{- define "gpu-infra.podSecurityContext" -}}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The nodes' IAM role: nodeRole, else the Karpenter getting-started name for clusterName. */}}
{{- define "gpu-infra.nodeRole" -}}
{{- .Values.nodeRole | default (printf "KarpenterNodeRole-%s" .Values.clusterName) -}}
{{- end -}}

{{/* The discovery tag value: discovery.tagValue, else clusterName. */}}
{{- define "gpu-infra.discoveryTagValue" -}}
{{- .Values.discovery.tagValue | default .Values.clusterName -}}
{{- end -}}
