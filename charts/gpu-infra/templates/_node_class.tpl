{{/*
The EC2NodeClass of each pool: AMI, node role, discovery, and the rules EC2 and Karpenter would
otherwise reject only at node launch.
*/}}

{{/* AMI alias family@version (EC2NodeClass amiSelectorTerms[].alias). */}}
{{- define "gpu-infra.amiAlias" -}}
{{- printf "%s@%s" .Values.amiFamily .Values.amiVersion -}}
{{- end -}}

{{/* The nodes' IAM role: nodeRole, else the Karpenter getting-started name for clusterName. */}}
{{- define "gpu-infra.nodeRole" -}}
{{- .Values.nodeRole | default (printf "KarpenterNodeRole-%s" .Values.clusterName) -}}
{{- end -}}

{{/* The discovery tag value: discovery.tagValue, else clusterName. */}}
{{- define "gpu-infra.discoveryTagValue" -}}
{{- .Values.discovery.tagValue | default .Values.clusterName -}}
{{- end -}}

{{/* amiVersion 'latest' only with allowLatestAmi: true. */}}
{{- define "gpu-infra.validateValues.latestAmi" -}}
{{- if and (eq .Values.amiVersion "latest") (not .Values.allowLatestAmi) -}}
{{- print "amiVersion: 'latest' drifts every GPU node on each AMI release; pin a release (e.g. v20260903 for al2023, v1.65.0 for bottlerocket) or set allowLatestAmi: true\n" -}}
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
