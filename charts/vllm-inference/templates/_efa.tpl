{{/*
EFA and libfabric: what the placement and the image must provide once a pod has EFA interfaces or
NIXL uses LIBFABRIC.
*/}}

{{/* EFA traffic does not cross availability zones: the whole group in one zone. */}}
{{- define "vllm-inference.validateValues.efaZone" -}}
{{- if and (gt (int .Values.efa.devices) 0) (not .Values.scheduling.zone) -}}
{{- printf "scheduling.zone: required with efa.devices %d (EFA does not cross availability zones)\n" (int .Values.efa.devices) -}}
{{- end -}}
{{- end -}}

{{/* The image must declare what EFA and NIXL's LIBFABRIC backend need (files/contracts checks
     the same at container start). */}}
{{- define "vllm-inference.validateValues.imageCapabilities" -}}
{{- $v := .Values -}}
{{- $ray := eq (include "vllm-inference.onRay" .) "true" -}}
{{- $imageKey := ternary "ray.image" "image" $ray -}}
{{- $declared := ternary $v.ray.image.provides $v.image.provides $ray | default (list) -}}
{{- $shown := ternary (include "vllm-inference.rayImage" .) (include "vllm-inference.image" .) $ray -}}
{{- range $cap := include "vllm-inference.requiredCapabilities" . | fromJsonArray -}}
{{- if not (has $cap $declared) -}}
{{- if eq $cap "efa" -}}
{{- printf "%s.provides: efa.devices is %d, but %s does not declare efa (libfabric with the efa provider and aws-ofi-nccl; without them NCCL falls back to TCP). %s\n" $imageKey (int $v.efa.devices) $shown (ternary "Use the AWS Ray LLM DLC (ray.image.repository public.ecr.aws/deep-learning-containers/ray, tag serve-llm-cuda-v1.0.0, provides [efa, nixl-libfabric]) or set efa.devices 0" "Build images/vllm-efa, set image.repository/image.tag to it and image.provides [efa], or set efa.devices 0" $ray) -}}
{{- else -}}
{{- printf "%s.provides: a kv_transfer_config selects NIXL's LIBFABRIC backend, but %s does not declare nixl-libfabric (NIXL's LIBFABRIC plugin and libfabric; rayproject/ray-llm has neither). Use the AWS Ray LLM DLC (ray.image.repository public.ecr.aws/deep-learning-containers/ray, tag serve-llm-cuda-v1.0.0, provides [efa, nixl-libfabric]) or the UCX backend (kv_connector_extra_config.backends [UCX]: KV transfer at TCP speed)\n" $imageKey $shown -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
