{{/*
An image reference from an image values object: repository@digest when a digest is pinned (the
digest wins over the tag: it is what the kubelet pulls), else repository:tag. defaultTag stands in
for an empty tag where a chart defaults the tag (to its appVersion); without it the tag is used
as set. Every chart carries this helper in templates/_image.tpl, which `make schemas` writes from
tools/chart-templates/image.tpl (CHART: the chart's name).
Usage: include "CHART.imageRef" (dict "image" .Values.image "defaultTag" .Chart.AppVersion)
*/}}
{{- define "CHART.imageRef" -}}
{{- $img := .image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- $tag := $img.tag -}}
{{- if and (not $tag) (hasKey . "defaultTag") -}}
{{- $tag = .defaultTag -}}
{{- end -}}
{{- printf "%s:%s" $img.repository $tag -}}
{{- end -}}
{{- end -}}
