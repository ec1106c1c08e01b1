{{/*
The vllm-inference release this chart watches: its topology, namespace and object names, from
which every selector of the monitors, rules and ScaledObject is built.
*/}}

{{/*
Namespace of the model server.
*/}}
{{- define "observability.targetNamespace" -}}
{{- default .Release.Namespace .Values.target.namespace -}}
{{- end -}}

{{/*
Name of the Deployment / LeaderWorkerSet / RayService of charts/vllm-inference. Mirrors the
fullname rule of that chart (charts/vllm-inference/templates/_names.tpl) and
generator/vllm_eks/values/observability.py:vllm_inference_fullname.
*/}}
{{- define "observability.targetName" -}}
{{- if .Values.target.name -}}
{{- .Values.target.name -}}
{{- else if contains "vllm-inference" .Values.target.release -}}
{{- .Values.target.release | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Values.target.release "vllm-inference" | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* topology is one the chart knows (schema: enum). */}}
{{- define "observability.validateValues.topology" -}}
{{- if not (has .Values.topology (list "single-node" "multi-node" "ray-serve" "disaggregated")) -}}
{{- printf "topology: %q is not one of single-node, multi-node, ray-serve, disaggregated\n" .Values.topology -}}
{{- end -}}
{{- end -}}

{{/* target.release names the vllm-inference release (schema: minLength 1). */}}
{{- define "observability.validateValues.targetRelease" -}}
{{- if not .Values.target.release -}}
{{- print "target.release: must name the vllm-inference release\n" -}}
{{- end -}}
{{- end -}}

{{/* metrics.job is not empty (schema: minLength 1). */}}
{{- define "observability.validateValues.metricsJob" -}}
{{- if not .Values.metrics.job -}}
{{- print "metrics.job: must not be empty (rules and the ScaledObject select on it)\n" -}}
{{- end -}}
{{- end -}}
