{{/* Rollout and drain: a rolling update that progresses, a drain that fits the grace period. */}}

{{/* Graceful drain: preStop sleep, then vLLM's own shutdown timeout, both inside the grace period. */}}
{{- define "vllm-inference.validateValues.drainWithinGrace" -}}
{{- $d := .Values.drain -}}
{{- $drain := add (int $d.preStopSeconds) (int $d.shutdownTimeoutSeconds) -}}
{{- if gt $drain (int $d.terminationGracePeriodSeconds) -}}
{{- printf "drain.terminationGracePeriodSeconds (%d) must be >= drain.preStopSeconds + drain.shutdownTimeoutSeconds (%d)\n" (int $d.terminationGracePeriodSeconds) $drain -}}
{{- end -}}
{{- end -}}

{{/* A rolling update that may neither add nor remove a pod never progresses. */}}
{{- define "vllm-inference.validateValues.rolloutProgress" -}}
{{- if eq (toString .Values.strategy.type) "RollingUpdate" -}}
{{- $surge := toString .Values.strategy.rollingUpdate.maxSurge -}}
{{- $unavail := toString .Values.strategy.rollingUpdate.maxUnavailable -}}
{{- if and (has $surge (list "0" "0%")) (has $unavail (list "0" "0%")) -}}
{{- print "strategy.rollingUpdate: maxSurge and maxUnavailable cannot both be 0\n" -}}
{{- end -}}
{{- end -}}
{{- end -}}
