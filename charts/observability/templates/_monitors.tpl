{{/* Rules of the ServiceMonitors and PodMonitors: scrape settings Prometheus would refuse. */}}

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
