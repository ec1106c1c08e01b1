{{/*
Value rules the schema cannot express (values.schema.json, generated from the pydantic models,
holds every single-field constraint). One helper per cross-key rule, named
gpu-infra.validateValues.<rule>: each prints one line per violation, naming the key, and nothing
when the values follow the rule. gpu-infra.validate calls each once and fails once with every
message.
*/}}

{{- define "gpu-infra.validate" -}}
{{- $out := "" -}}
{{- $out = print $out (include "gpu-infra.validateValues.latestAmi" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.bottlerocketDevicePlugin" .) -}}
{{- $out = print $out (include "gpu-infra.validateValues.uniquePoolNames" .) -}}
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

{{/* amiVersion 'latest' only with allowLatestAmi: true. */}}
{{- define "gpu-infra.validateValues.latestAmi" -}}
{{- if and (eq .Values.amiVersion "latest") (not .Values.allowLatestAmi) -}}
{{- print "amiVersion: 'latest' drifts every GPU node on each AMI release; pin a release (e.g. v20260903 for al2023, v1.65.0 for bottlerocket) or set allowLatestAmi: true\n" -}}
{{- end -}}
{{- end -}}

{{/* Bottlerocket runs its own NVIDIA device plugin: the chart's must be off. */}}
{{- define "gpu-infra.validateValues.bottlerocketDevicePlugin" -}}
{{- if and (eq .Values.amiFamily "bottlerocket") .Values.nvidiaDevicePlugin.enabled -}}
{{- print "nvidiaDevicePlugin.enabled: must be false with amiFamily: bottlerocket (the Bottlerocket NVIDIA AMI runs its own device plugin; a second one conflicts)\n" -}}
{{- end -}}
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

{{/* A capacity reservation selector term selects by id alone, or by tags / instanceMatchCriteria. */}}
{{- define "gpu-infra.validateValues.reservationTerms" -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- range $j, $t := $p.capacityReservations -}}
{{- if and $t.id (or $t.tags $t.ownerId $t.instanceMatchCriteria) -}}
{{- printf "pools[%d].capacityReservations[%d]: id cannot be combined with tags, ownerId or instanceMatchCriteria\n" $i $j -}}
{{- end -}}
{{- if not (or $t.id $t.tags $t.instanceMatchCriteria) -}}
{{- printf "pools[%d].capacityReservations[%d]: set id, tags or instanceMatchCriteria\n" $i $j -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A placement group is selected by exactly one of name or id. */}}
{{- define "gpu-infra.validateValues.placementGroup" -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- with $p.placementGroup -}}
{{- if or (and .name .id) (not (or .name .id)) -}}
{{- printf "pools[%d].placementGroup: set exactly one of name or id\n" $i -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* gp3 root volume: throughput (MiB/s) at most iops/4. */}}
{{- define "gpu-infra.validateValues.rootVolumeThroughput" -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if gt (int $p.rootVolume.throughput) (div (int $p.rootVolume.iops) 4) -}}
{{- printf "pools[%d].rootVolume.throughput: gp3 allows at most iops/4 = %d MiB/s, got %v\n" $i (div (int $p.rootVolume.iops) 4) $p.rootVolume.throughput -}}
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

{{/* A pool with efa: true needs the chart's EFA device plugin (nothing else advertises EFA). */}}
{{- define "gpu-infra.validateValues.efaDevicePlugin" -}}
{{- $anyEfa := false -}}
{{- range (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if .efa -}}
{{- $anyEfa = true -}}
{{- end -}}
{{- end -}}
{{- if and $anyEfa (not .Values.efaDevicePlugin.enabled) -}}
{{- print "efaDevicePlugin.enabled: must be true when a pool has efa: true (nothing else advertises vpc.amazonaws.com/efa)\n" -}}
{{- end -}}
{{- end -}}

{{/* IMDSv1, an IMDS hop limit above 1 and unencrypted volumes only with their securityExceptions key. */}}
{{- define "gpu-infra.validateValues.securityExceptions" -}}
{{- $allow := .Values.securityExceptions -}}
{{- if and (ne .Values.metadataOptions.httpTokens "required") (not $allow.imdsv1) -}}
{{- print "metadataOptions.httpTokens: 'optional' allows IMDSv1 (credentials without a session token); keep 'required' or set securityExceptions.imdsv1: true\n" -}}
{{- end -}}
{{- if and (gt (int .Values.metadataOptions.httpPutResponseHopLimit) 1) (not $allow.podImdsAccess) -}}
{{- printf "metadataOptions.httpPutResponseHopLimit: %v lets pods read the node role's credentials; keep 1 (pods use IRSA or Pod Identity) or set securityExceptions.podImdsAccess: true\n" .Values.metadataOptions.httpPutResponseHopLimit -}}
{{- end -}}
{{- range $i, $p := (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if and (not $p.rootVolume.encrypted) (not $allow.unencryptedVolumes) -}}
{{- printf "pools[%d].rootVolume.encrypted: false leaves the model and node data unencrypted; keep true or set securityExceptions.unencryptedVolumes: true\n" $i -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
ec2Tags keys EC2 accepts (1 to 128 characters; the schema cannot name ec2Tags in a propertyNames
error), and keys nobody may set: AWS reserves the aws: prefix (any case), and Karpenter's EC2NodeClass
refuses the tags it writes itself (CEL rules on spec.tags). Same list as RESERVED_TAG_KEYS in
generator/vllm_eks/values/gpu_infra.py.
*/}}
{{- define "gpu-infra.validateValues.ec2Tags" -}}
{{- $reservedKeys := list "eks:eks-cluster-name" "karpenter.sh/nodepool" "karpenter.sh/nodeclaim" "karpenter.k8s.aws/ec2nodeclass" -}}
{{- range $key, $_ := .Values.ec2Tags -}}
{{- if or (not $key) (gt (len $key) 128) -}}
{{- printf "ec2Tags: key %q must have 1 to 128 characters (EC2 tag key limit)\n" (trunc 140 $key) -}}
{{- else if hasPrefix "aws:" (lower $key) -}}
{{- printf "ec2Tags: key %q uses the aws: prefix, which AWS reserves\n" $key -}}
{{- else if hasPrefix "kubernetes.io/cluster" $key -}}
{{- printf "ec2Tags: key %q is reserved (Karpenter and the EKS cloud provider own kubernetes.io/cluster*)\n" $key -}}
{{- else if has $key $reservedKeys -}}
{{- printf "ec2Tags: key %q is set by Karpenter itself; Karpenter refuses it in an EC2NodeClass\n" $key -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
A Kubernetes quantity (the schema has checked its form) as a float in base units: 1500m -> 1.5,
16Gi -> 17179869184. Used only to compare two quantities.
*/}}
{{- define "gpu-infra.quantityValue" -}}
{{- $q := toString . -}}
{{- $number := regexFind "^[0-9]+([.][0-9]+)?" $q -}}
{{- $scale := dict "" 1.0 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18
    "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0
    "Ei" 1152921504606846976.0 -}}
{{- mulf (float64 $number) (get $scale (trimPrefix $number $q)) -}}
{{- end -}}

{{/* Each DaemonSet's resource requests at most its limits (the API server rejects the pods otherwise). */}}
{{- define "gpu-infra.validateValues.requestsWithinLimits" -}}
{{- range $ds := list "nvidiaDevicePlugin" "efaDevicePlugin" "dcgmExporter" -}}
{{- $r := (index $.Values $ds).resources -}}
{{- range $name := list "cpu" "memory" -}}
{{- $req := get $r.requests $name -}}
{{- $lim := get $r.limits $name -}}
{{- if gt (float64 (include "gpu-infra.quantityValue" $req)) (float64 (include "gpu-infra.quantityValue" $lim)) -}}
{{- printf "%s.resources.requests.%s: %v is above %s.resources.limits.%s %v (a request may not exceed its limit)\n" $ds $name $req $ds $name $lim -}}
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
