{{/*
Value rules the schema cannot express (values.schema.json, generated from the pydantic models,
holds every single-field constraint). One helper per cross-key rule, named
gpu-infra.validateValues.<rule>, defined beside the templates of its domain (_pools,
_node_class, _daemonsets): each prints one line per violation, naming the key, and nothing when
the values follow the rule. gpu-infra.validate calls each once, in this order, and fails once
with every message (templates/validate.yaml).
*/}}
{{- define "gpu-infra.validate" -}}
{{- $out := "" -}}
{{- $out = print $out (include "gpu-infra.validateValues.latestAmi" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.bottlerocketDevicePlugin" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.uniquePoolNames" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.instanceTypes" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.efaZone" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.reservedCapacity" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.reservationTerms" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.placementGroup" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.rootVolumeThroughput" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.disruptionBudgets" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.efaDevicePlugin" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.securityExceptions" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.ec2Tags" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.nodeLabelKeys" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.requestsWithinLimits" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.poolLabel" .) -}}
{{- $errors := compact (splitList "\n" $out) -}}
{{- if $errors -}}
{{- fail (printf "\n\ngpu-infra values are invalid:\n  - %s\n" (join "\n  - " $errors)) -}}
{{- end -}}
{{- end -}}
