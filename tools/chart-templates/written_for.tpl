{{/*
One line when the values were written by `vllm-eks values` for another version of this chart
(writtenForChartVersion); empty otherwise. The chart's NOTES.txt prints it first.
*/}}
{{- define "CHART.writtenForWarning" -}}
{{- $for := .Values.writtenForChartVersion | default "" | toString -}}
{{- if and $for (ne $for .Chart.Version) -}}
WARNING: these values were written by `vllm-eks values` for {{ .Chart.Name }} {{ $for }}, and this is {{ .Chart.Name }} {{ .Chart.Version }}: write them again with the vllm-eks release that matches this chart.
{{- end -}}
{{- end }}
