{{/*
Value rules checked while rendering. One helper per rule, named observability.validateValues.<rule>:
each prints one line per violation, naming the key, and nothing when the values follow the rule.
observability.validate calls each once and fails once with every message (templates/validate.yaml).

topology, targetRelease, metricsJob and cooldownPeriod restate single-field constraints of
values.schema.json (generated from the pydantic models): the schema does not require those keys, so
a key set to null passes it, and renders with --skip-schema-validation rely on these helpers.
*/}}

{{- define "observability.validate" -}}
{{- $out := "" -}}
{{- $out = print $out (include "observability.validateValues.topology" .) -}}
{{- $out = print $out (include "observability.validateValues.targetRelease" .) -}}
{{- $out = print $out (include "observability.validateValues.metricsJob" .) -}}
{{- $out = print $out (include "observability.validateValues.runbookBaseUrl" .) -}}
{{- $out = print $out (include "observability.validateValues.scrapeTimeout" .) -}}
{{- $out = print $out (include "observability.validateValues.podRegex" .) -}}
{{- $out = print $out (include "observability.validateValues.pickerMonitor" .) -}}
{{- $out = print $out (include "observability.validateValues.metadataKeys" .) -}}
{{- $out = print $out (include "observability.validateValues.chartLabels" .) -}}
{{- /* The autoscaling rules apply only where the ScaledObject renders. */ -}}
{{- if and .Values.autoscaling.enabled (include "observability.kedaTopology" .) -}}
{{- $out = print $out (include "observability.validateValues.scaleToZeroAllowed" .) -}}
{{- $out = print $out (include "observability.validateValues.scaleToZeroTrigger" .) -}}
{{- $out = print $out (include "observability.validateValues.replicaBounds" .) -}}
{{- $out = print $out (include "observability.validateValues.cooldownPeriod" .) -}}
{{- $out = print $out (include "observability.validateValues.scaleDownWindow" .) -}}
{{- $out = print $out (include "observability.validateValues.fallbackReplicas" .) -}}
{{- $out = print $out (include "observability.validateValues.triggerAuthentication" .) -}}
{{- end -}}
{{- $errors := compact (splitList "\n" $out) -}}
{{- if $errors -}}
{{- fail (printf "\n\nobservability: invalid values:\n  - %s\n" (join "\n  - " $errors)) -}}
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

{{/* Alerts link to runbooks: rules.enabled needs rules.runbookBaseUrl. */}}
{{- define "observability.validateValues.runbookBaseUrl" -}}
{{- if and .Values.rules.enabled (not .Values.rules.runbookBaseUrl) -}}
{{- print "rules.runbookBaseUrl: must be set when rules.enabled (alerts link to runbooks)\n" -}}
{{- end -}}
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

{{/* A Prometheus duration (1h30m, 15s, 500ms; the schema has checked its form) in milliseconds. */}}
{{- define "observability.durationMs" -}}
{{- $ms := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 "w" 604800000 "y" 31536000000 -}}
{{- $total := 0 -}}
{{- range $part := regexFindAll "[0-9]+(ms|s|m|h|d|w|y)" (toString .) -1 -}}
{{- $unit := regexFind "(ms|s|m|h|d|w|y)$" $part -}}
{{- $total = add $total (mul (atoi (trimSuffix $unit $part)) (get $ms $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/* Prometheus refuses a scrape config whose scrapeTimeout exceeds its interval. */}}
{{- define "observability.validateValues.scrapeTimeout" -}}
{{- $m := .Values.metrics -}}
{{- if and $m.interval $m.scrapeTimeout -}}
{{- if gt (int (include "observability.durationMs" $m.scrapeTimeout)) (int (include "observability.durationMs" $m.interval)) -}}
{{- printf "metrics.scrapeTimeout: %s exceeds metrics.interval %s (Prometheus rejects the scrape config)\n" $m.scrapeTimeout $m.interval -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
rules.podRegex compiles in Go's RE2 syntax, as PromQL anchors it (^(?:regex)$). regexMatch returns
false, not an error, for a pattern that does not compile; the empty alternative after it matches
every string, so the match is false only when the pattern cannot compile.
*/}}
{{- define "observability.validateValues.podRegex" -}}
{{- $regex := .Values.rules.podRegex -}}
{{- if and $regex (not (regexMatch (printf "^(?:%s)$|" $regex) "")) -}}
{{- printf "rules.podRegex: %q is not a regular expression Prometheus can compile (RE2 syntax: no lookaround, no backreferences)\n" $regex -}}
{{- end -}}
{{- end -}}

{{/* The picker ServiceMonitor writes a job label and, with a token Secret, names its key
(schema: minLength 1 on both). */}}
{{- define "observability.validateValues.pickerMonitor" -}}
{{- $p := .Values.monitors.picker -}}
{{- if $p.enabled -}}
{{- if not $p.job -}}
{{- print "monitors.picker.job: must not be empty (the picker's series are labelled with it)\n" -}}
{{- end -}}
{{- if and $p.bearerTokenSecret.name (not $p.bearerTokenSecret.key) -}}
{{- print "monitors.picker.bearerTokenSecret.key: must name the token's key in Secret monitors.picker.bearerTokenSecret.name\n" -}}
{{- end -}}
{{- end -}}
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
