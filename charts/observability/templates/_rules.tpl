{{/* Rules of the PrometheusRule: alerts that link to runbooks and select the right pods. */}}

{{/* Alerts link to runbooks: rules.enabled needs rules.runbookBaseUrl. */}}
{{- define "observability.validateValues.runbookBaseUrl" -}}
{{- if and .Values.rules.enabled (not .Values.rules.runbookBaseUrl) -}}
{{- print "rules.runbookBaseUrl: must be set when rules.enabled (alerts link to runbooks)\n" -}}
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

{{/*
Each alert carries its own severity (critical pages, warning does not; docs/runbooks/README.md) and
its own alertname. rules.additionalAlertLabels adds labels around them and cannot replace them: a
severity or alertname there would be silently dropped (the rule's own label wins), or, if it won,
would give every alert one severity, e.g. none, so nothing pages. Refused by key instead.
*/}}
{{- define "observability.validateValues.additionalAlertLabels" -}}
{{- range $key := list "severity" "alertname" -}}
{{- if hasKey $.Values.rules.additionalAlertLabels $key -}}
{{- printf "rules.additionalAlertLabels.%s: set by each alert (severity critical or warning, see docs/runbooks/README.md); route on another label, e.g. team\n" $key -}}
{{- end -}}
{{- end -}}
{{- end -}}
