{{/*
Names and labels. Label keys shared with charts/vllm-inference come from
generator/vllm_eks/contract.py (a render test asserts they agree).
*/}}

{{- define "gpu-infra.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-infra.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Node label the model-server pods select (contract.POOL_LABEL). */}}
{{- define "gpu-infra.poolLabel" -}}vllm-eks.io/pool{{- end -}}
{{/* Taint on every GPU node (contract.GPU_TAINT_KEY / GPU_TAINT_EFFECT). */}}
{{- define "gpu-infra.gpuTaintKey" -}}nvidia.com/gpu{{- end -}}
{{/* Karpenter's own GPU label (contract.GPU_COUNT_LABEL): device plugins select on it, not on NFD labels. */}}
{{- define "gpu-infra.gpuCountLabel" -}}karpenter.k8s.aws/instance-gpu-count{{- end -}}

{{/*
Kubernetes recommended labels. Call with (dict "ctx" $ "component" "<component>").
*/}}
{{- define "gpu-infra.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gpu-infra.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: vllm-eks
{{- end -}}

{{/* Minimal selector labels: name, instance, component. */}}
{{- define "gpu-infra.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-infra.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

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

{{/* AMI alias family@version (EC2NodeClass amiSelectorTerms[].alias). */}}
{{- define "gpu-infra.amiAlias" -}}
{{- printf "%s@%s" .Values.amiFamily .Values.amiVersion -}}
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

{{/* Tolerations of the node DaemonSets: the GPU taint, and any NoSchedule/NoExecute taint an
operator adds while draining, so device plugins keep serving until the node goes. */}}
{{- define "gpu-infra.daemonSetTolerations" -}}
- key: {{ include "gpu-infra.gpuTaintKey" . }}
  operator: Exists
  effect: NoSchedule
- key: CriticalAddonsOnly
  operator: Exists
{{- end -}}

{{/* Pod security shared by the DaemonSets: seccomp RuntimeDefault, no service-account token. */}}
{{- define "gpu-infra.podSecurityContext" -}}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
gpu-infra.validate: every cross-field rule the schema cannot express. Collects all errors and
fails once, naming the keys.
*/}}
{{- define "gpu-infra.validate" -}}
{{- $errors := list -}}
{{- if and (eq .Values.amiVersion "latest") (not .Values.allowLatestAmi) -}}
{{- $errors = append $errors "amiVersion: 'latest' drifts every GPU node on each AMI release; pin a release (e.g. v20260903 for al2023, v1.65.0 for bottlerocket) or set allowLatestAmi: true" -}}
{{- end -}}
{{- if and (eq .Values.amiFamily "bottlerocket") .Values.nvidiaDevicePlugin.enabled -}}
{{- $errors = append $errors "nvidiaDevicePlugin.enabled: must be false with amiFamily: bottlerocket (the Bottlerocket NVIDIA AMI runs its own device plugin; a second one conflicts)" -}}
{{- end -}}
{{- $seen := dict -}}
{{- $anyEfa := false -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- $key := printf "pools[%d]" $i -}}
{{- if hasKey $seen $p.name -}}
{{- $errors = append $errors (printf "%s.name: %q is used by another pool" $key $p.name) -}}
{{- end -}}
{{- $_ := set $seen $p.name true -}}
{{- if $p.efa -}}
{{- $anyEfa = true -}}
{{- if ne (len $p.zones) 1 -}}
{{- $errors = append $errors (printf "%s.zones: an EFA pool needs exactly one availability zone (EFA traffic does not cross zones), got %v" $key $p.zones) -}}
{{- end -}}
{{- end -}}
{{- $reserved := has "reserved" $p.capacityTypes -}}
{{- if and $p.capacityReservations (not $reserved) -}}
{{- $errors = append $errors (printf "%s.capacityTypes: add 'reserved' to use capacityReservations" $key) -}}
{{- end -}}
{{- if and $reserved (not $p.capacityReservations) -}}
{{- $errors = append $errors (printf "%s.capacityReservations: capacity type 'reserved' needs at least one reservation selector term" $key) -}}
{{- end -}}
{{- range $j, $t := $p.capacityReservations -}}
{{- if and $t.id (or $t.tags $t.ownerId $t.instanceMatchCriteria) -}}
{{- $errors = append $errors (printf "%s.capacityReservations[%d]: id cannot be combined with tags, ownerId or instanceMatchCriteria" $key $j) -}}
{{- end -}}
{{- if not (or $t.id $t.tags $t.instanceMatchCriteria) -}}
{{- $errors = append $errors (printf "%s.capacityReservations[%d]: set id, tags or instanceMatchCriteria" $key $j) -}}
{{- end -}}
{{- end -}}
{{- with $p.placementGroup -}}
{{- if or (and .name .id) (not (or .name .id)) -}}
{{- $errors = append $errors (printf "%s.placementGroup: set exactly one of name or id" $key) -}}
{{- end -}}
{{- end -}}
{{- if gt (int $p.rootVolume.throughput) (div (int $p.rootVolume.iops) 4) -}}
{{- $errors = append $errors (printf "%s.rootVolume.throughput: gp3 allows at most iops/4 = %d MiB/s, got %v" $key (div (int $p.rootVolume.iops) 4) $p.rootVolume.throughput) -}}
{{- end -}}
{{- range $j, $b := $p.disruption.budgets -}}
{{- if ne (empty $b.schedule) (empty $b.duration) -}}
{{- $errors = append $errors (printf "%s.disruption.budgets[%d]: schedule and duration go together" $key $j) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $anyEfa (not .Values.efaDevicePlugin.enabled) -}}
{{- $errors = append $errors "efaDevicePlugin.enabled: must be true when a pool has efa: true (nothing else advertises vpc.amazonaws.com/efa)" -}}
{{- end -}}
{{- if $errors -}}
{{- fail (printf "\n\ngpu-infra values are invalid:\n  - %s\n" (join "\n  - " $errors)) -}}
{{- end -}}
{{- end -}}
