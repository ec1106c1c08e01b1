{{/*
The pools: poolDefaults applied to each, and the rules one pool, or the pools together, must
follow so that Karpenter can create their NodePools.
*/}}

{{/*
gpu-infra.withDefaults: (dict "value" $pool "defaults" $defaults) -> JSON of the pool with every
key it does not set taken from the defaults; maps merge key by key, anything else (lists, null)
set in the pool wins. Unlike sprig merge, an explicit false/0/null in the pool is kept.
*/}}
{{- define "gpu-infra.withDefaults" -}}
{{- $out := dict -}}
{{- range $k, $d := .defaults -}}
{{- if hasKey $.value $k -}}
{{- $v := index $.value $k -}}
{{- if and (kindIs "map" $d) (kindIs "map" $v) -}}
{{- $_ := set $out $k (include "gpu-infra.withDefaults" (dict "value" $v "defaults" $d) | fromJson) -}}
{{- else -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- else -}}
{{- $_ := set $out $k $d -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := .value -}}
{{- if not (hasKey $out $k) -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The pools with poolDefaults applied, as JSON {"pools": [...]}. */}}
{{- define "gpu-infra.pools" -}}
{{- $pools := list -}}
{{- range .Values.pools -}}
{{- $pools = append $pools (include "gpu-infra.withDefaults" (dict "value" . "defaults" $.Values.poolDefaults) | fromJson) -}}
{{- end -}}
{{- toJson (dict "pools" $pools) -}}
{{- end -}}

{{/* Names of the pools, as a YAML list, optionally only the EFA pools: (dict "ctx" $ "efaOnly" true). */}}
{{- define "gpu-infra.poolNames" -}}
{{- $names := list -}}
{{- range (include "gpu-infra.pools" .ctx | fromJson).pools -}}
{{- if or (not $.efaOnly) .efa -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- end -}}
{{- toYaml $names -}}
{{- end -}}

{{/* Pool names are unique (they name the NodePools and the pool label value). */}}
{{- define "gpu-infra.validateValues.uniquePoolNames" -}}
{{- $seen := dict -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if hasKey $seen $p.name -}}
{{- printf "pools[%d].name: %q is used by another pool\n" $i $p.name -}}
{{- end -}}
{{- $_ := set $seen $p.name true -}}
{{- end -}}
{{- end -}}

{{/* An EFA pool lives in exactly one availability zone (after poolDefaults). */}}
{{- define "gpu-infra.validateValues.efaZone" -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if $p.efa -}}
{{- if ne (len $p.zones) 1 -}}
{{- printf "pools[%d].zones: an EFA pool needs exactly one availability zone (EFA traffic does not cross zones), got %v\n" $i $p.zones -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Capacity type 'reserved' and capacityReservations go together (after poolDefaults). */}}
{{- define "gpu-infra.validateValues.reservedCapacity" -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- $reserved := has "reserved" $p.capacityTypes -}}
{{- if and $p.capacityReservations (not $reserved) -}}
{{- printf "pools[%d].capacityTypes: add 'reserved' to use capacityReservations\n" $i -}}
{{- end -}}
{{- if and $reserved (not $p.capacityReservations) -}}
{{- printf "pools[%d].capacityReservations: capacity type 'reserved' needs at least one reservation selector term\n" $i -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A disruption budget's schedule and duration are set together or not at all. */}}
{{- define "gpu-infra.validateValues.disruptionBudgets" -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- range $j, $b := $p.disruption.budgets -}}
{{- if ne (empty $b.schedule) (empty $b.duration) -}}
{{- printf "pools[%d].disruption.budgets[%d]: schedule and duration go together\n" $i $j -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Node label keys the API server accepts (metadataKeyErrors), in poolDefaults and every pool. */}}
{{- define "gpu-infra.validateValues.nodeLabelKeys" -}}
{{- include "gpu-infra.metadataKeyErrors" (dict "path" "poolDefaults.labels" "map" .Values.poolDefaults.labels) -}}
{{- range $i, $p := .Values.pools -}}
{{- include "gpu-infra.metadataKeyErrors" (dict "path" (printf "pools[%d].labels" $i) "map" $p.labels) -}}
{{- end -}}
{{- end -}}

{{/* The pool label is the chart's: a pool's labels (after poolDefaults) must not set it. */}}
{{- define "gpu-infra.validateValues.poolLabel" -}}
{{- $key := include "gpu-infra.poolLabel" . -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if hasKey ($p.labels | default dict) $key -}}
{{- printf "pools[%d].labels.%s: set by the chart to the pool name (%s); use another label key\n" $i $key $p.name -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Every pool instance type is one the vllm-eks catalog knows (files/instance-catalog.txt, generated
from it), unless the pool says allowUnlistedInstanceTypes: a misspelt or non-GPU type renders
fine and Karpenter then launches nothing, leaving the model server Pending with no error.
*/}}
{{- define "gpu-infra.validateValues.instanceTypes" -}}
{{- $catalog := list -}}
{{- range splitList "\n" (.Files.Get "files/instance-catalog.txt") -}}
{{- if and . (not (hasPrefix "#" .)) -}}
{{- $catalog = append $catalog . -}}
{{- end -}}
{{- end -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if not $p.allowUnlistedInstanceTypes -}}
{{- range $t := $p.instanceTypes -}}
{{- if not (has $t $catalog) -}}
{{- printf "pools[%d].instanceTypes: %q is not in the vllm-eks instance catalog (`vllm-eks catalog instances`); for a type newer than the catalog set pools[%d].allowUnlistedInstanceTypes: true\n" $i $t $i -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
