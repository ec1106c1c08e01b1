{{/*
KEDA autoscaling of the model server (ScaledObject, TriggerAuthentication): where it applies, and
the rules that keep it from scaling to zero blind, flapping, or failing to authenticate.
*/}}

{{/*
"true" when KEDA scales this topology on the queue (Deployment or LeaderWorkerSet), else "".
Ray Serve scales itself; the prefill and decode pools of a disaggregated deployment keep the
replicas of their Plan (a shared queue signal would scale both pools alike).
*/}}
{{- define "observability.kedaTopology" -}}
{{- if has .Values.topology (list "single-node" "multi-node") -}}true{{- end -}}
{{- end -}}

{{/* autoscaling.minReplicaCount below 1 only with autoscaling.allowScaleToZero. */}}
{{- define "observability.validateValues.scaleToZeroAllowed" -}}
{{- $a := .Values.autoscaling -}}
{{- if and (lt (int $a.minReplicaCount) 1) (not $a.allowScaleToZero) -}}
{{- printf "autoscaling.minReplicaCount: %v scales to zero; set autoscaling.allowScaleToZero: true to allow it (the first request then waits for a node and a model load)\n" $a.minReplicaCount -}}
{{- end -}}
{{- end -}}

{{/* Scale to zero needs an extra trigger that sees traffic while no replica runs. */}}
{{- define "observability.validateValues.scaleToZeroTrigger" -}}
{{- $a := .Values.autoscaling -}}
{{- if and (lt (int $a.minReplicaCount) 1) $a.allowScaleToZero (not $a.extraTriggers) -}}
{{- print "autoscaling.extraTriggers: scale-to-zero needs a trigger that sees incoming traffic; vLLM exports no queue metric while no replica runs\n" -}}
{{- end -}}
{{- end -}}

{{/* autoscaling.maxReplicaCount is at least autoscaling.minReplicaCount. */}}
{{- define "observability.validateValues.replicaBounds" -}}
{{- $a := .Values.autoscaling -}}
{{- if lt (int $a.maxReplicaCount) (int $a.minReplicaCount) -}}
{{- printf "autoscaling.maxReplicaCount: %v is below autoscaling.minReplicaCount %v\n" $a.maxReplicaCount $a.minReplicaCount -}}
{{- end -}}
{{- end -}}

{{/* autoscaling.cooldownPeriod at least 600 s (schema: minimum 600). */}}
{{- define "observability.validateValues.cooldownPeriod" -}}
{{- $a := .Values.autoscaling -}}
{{- if lt (int $a.cooldownPeriod) 600 -}}
{{- printf "autoscaling.cooldownPeriod: %v is below 600 s; a GPU node plus a model load takes minutes\n" $a.cooldownPeriod -}}
{{- end -}}
{{- end -}}

{{/* The scale-down stabilization window is at least 600 s. */}}
{{- define "observability.validateValues.scaleDownWindow" -}}
{{- $w := .Values.autoscaling.behavior.scaleDown.stabilizationWindowSeconds -}}
{{- if lt (int $w) 600 -}}
{{- printf "autoscaling.behavior.scaleDown.stabilizationWindowSeconds: %v is below 600 s; shorter windows flap\n" $w -}}
{{- end -}}
{{- end -}}

{{/* With fallback enabled, autoscaling.fallback.replicas is at most autoscaling.maxReplicaCount. */}}
{{- define "observability.validateValues.fallbackReplicas" -}}
{{- $a := .Values.autoscaling -}}
{{- if and $a.fallback.enabled (gt (int $a.fallback.replicas) (int $a.maxReplicaCount)) -}}
{{- printf "autoscaling.fallback.replicas: %v is above autoscaling.maxReplicaCount %v\n" $a.fallback.replicas $a.maxReplicaCount -}}
{{- end -}}
{{- end -}}

{{/* An enabled TriggerAuthentication sets secretTargetRef or podIdentityProvider. */}}
{{- define "observability.validateValues.triggerAuthentication" -}}
{{- $a := .Values.autoscaling -}}
{{- if and $a.triggerAuthentication.enabled (not $a.triggerAuthentication.secretTargetRef) (not $a.triggerAuthentication.podIdentityProvider) -}}
{{- print "autoscaling.triggerAuthentication: enabled but neither secretTargetRef nor podIdentityProvider is set\n" -}}
{{- end -}}
{{- end -}}
