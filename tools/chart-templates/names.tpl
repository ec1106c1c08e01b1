{{/*
Names every chart gives its objects, written into each chart's templates/_names.tpl by `make
schemas` from tools/chart-templates/names.tpl (CHART: the chart's name), so the three charts name
things by one rule. nameOverride/fullnameOverride apply where the chart's values have them; a chart
without those keys gets the chart name.
*/}}

{{/* Chart name, DNS-1123 label sized. */}}
{{- define "CHART.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object name prefix: <release>-<name> unless the release name already contains the name. */}}
{{- define "CHART.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* helm.sh/chart label value: name-version; "+" is not allowed in label values. */}}
{{- define "CHART.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}
