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
