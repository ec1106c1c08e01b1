{{/*
Value rules checked while rendering. One helper per rule, named observability.validateValues.<rule>,
defined beside the templates of its domain (_target, _autoscaling, _monitors, _rules, _helpers for
labels): each prints one line per violation, naming the key, and nothing when the values follow
the rule. observability.validate calls each once, in this order, and fails once with every message
(templates/validate.yaml).

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
{{- $out = print $out (include "observability.validateValues.additionalAlertLabels" .) -}}
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
