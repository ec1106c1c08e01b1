{{/*
Keys of one label/annotation map that the API server refuses: an optional DNS-subdomain prefix (at
most 253 characters) and '/', then a name of at most 63 characters (alphanumerics at both ends;
'-', '_', '.' inside). Every chart carries this helper in templates/_metadata_keys.tpl, which
`make schemas` writes from tools/chart-templates/metadata_keys.tpl (CHART: the chart's name).
Usage: include "CHART.metadataKeyErrors" (dict "path" "labels" "map" .Values.labels)
*/}}
{{- define "CHART.metadataKeyErrors" -}}
{{- $path := .path -}}
{{- range $key := keys (.map | default dict) | sortAlpha -}}
{{- $prefix := "" -}}{{- $name := $key -}}
{{- if contains "/" $key -}}
{{- $prefix = regexReplaceAll "/.*$" $key "" -}}{{- $name = regexReplaceAll "^[^/]*/" $key "" -}}
{{- end -}}
{{- $nameOk := and (regexMatch "^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$" $name) (le (len $name) 63) -}}
{{- $prefixOk := or (not (contains "/" $key)) (and (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" $prefix) (le (len $prefix) 253)) -}}
{{- if not (and $nameOk $prefixOk) -}}
{{- printf "%s: key %q is not a Kubernetes key (optional DNS-subdomain prefix and '/', then at most 63 characters: alphanumerics at both ends, '-', '_', '.' inside)\n" $path (trunc 330 $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
