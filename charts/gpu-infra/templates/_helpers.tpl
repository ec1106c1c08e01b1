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
app.kubernetes.io/name: {{ include "gpu-infra.name" .ctx | quote }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}
