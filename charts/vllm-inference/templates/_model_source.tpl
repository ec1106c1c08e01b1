{{/*
Where the weights come from (model.source) and where vLLM caches (cache.type): rules that tie the
source, model.name and the volumes together.
*/}}

{{/* model.source s3 and an s3:// model.name go together. */}}
{{- define "vllm-inference.validateValues.s3ModelName" -}}
{{- $s3Name := hasPrefix "s3://" (toString .Values.model.name) -}}
{{- if eq (toString .Values.model.source) "s3" -}}
{{- if not $s3Name -}}
{{- print "model.name: model.source s3 needs an s3:// URI\n" -}}
{{- end -}}
{{- else if $s3Name -}}
{{- printf "model.name: an s3:// URI needs model.source s3 (got %s)\n" (toString .Values.model.source) -}}
{{- end -}}
{{- end -}}

{{/* The volume sources: pvc needs a claim, fsx its file system id, DNS name and mount name,
mountpointS3 its bucket; model.name is a path under the source's mount path. */}}
{{- define "vllm-inference.validateValues.pvcModel" -}}
{{- $m := .Values.model -}}
{{- $src := toString $m.source -}}
{{- if and (eq $src "pvc") (not $m.pvc.claimName) -}}
{{- print "model.pvc.claimName: required when model.source is pvc\n" -}}
{{- end -}}
{{- if eq $src "fsx" -}}
{{- $missing := list -}}
{{- range $k := list "fileSystemId" "dnsName" "mountName" -}}
{{- if not (get $m.fsx $k) -}}{{- $missing = append $missing (printf "model.fsx.%s" $k) -}}{{- end -}}
{{- end -}}
{{- if $missing -}}
{{- printf "%s: required when model.source is fsx (aws fsx describe-file-systems: FileSystemId, DNSName, LustreConfiguration.MountName)\n" (join ", " $missing) -}}
{{- end -}}
{{- end -}}
{{- if and (eq $src "mountpointS3") (not $m.mountpointS3.bucket) -}}
{{- print "model.mountpointS3.bucket: required when model.source is mountpointS3\n" -}}
{{- end -}}
{{- with include "vllm-inference.modelVolume" . | fromJson -}}
{{- $name := toString $m.name -}}
{{- $mount := trimSuffix "/" (toString .mountPath) -}}
{{- if not (or (eq $name $mount) (hasPrefix (printf "%s/" $mount) $name)) -}}
{{- printf "model.name: with model.source %s it must be a path under %s (%s)\n" $src .key .mountPath -}}
{{- end -}}
{{- $key := .key -}}
{{- $at := .mountPath -}}
{{- $hit := "" -}}
{{- range $taken := include "vllm-inference.reservedMountPaths" $ | splitList " " -}}
{{- if and (not $hit) (or (eq $mount $taken) (hasPrefix (printf "%s/" $taken) $mount) (hasPrefix (printf "%s/" $mount) $taken)) -}}
{{- $hit = $taken -}}
{{- end -}}
{{- end -}}
{{- if $hit -}}
{{- printf "%s (%s) collides with %s, which the chart or the kernel mounts in the server container: give the model volume a directory of its own, e.g. /models\n" $key $at $hit -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Paths the server container already has a mount at (the caches, /tmp, /dev/shm, the scripts,
the diagnostics, the token and ServiceAccount secrets) or that the kernel provides: a model volume
at, under or above one of them would hide it or be hidden. */}}
{{- define "vllm-inference.reservedMountPaths" -}}
{{- list "/tmp" "/dev" "/proc" "/sys" (include "vllm-inference.cacheRoot" .) "/var/run/secrets" "/opt/vllm-eks" | join " " -}}
{{- end -}}

{{/* Why an S3 bucket name (the part of an s3:// URI before the first /) breaks the S3 naming
rules the schema's pattern cannot hold: two adjacent dots, an IPv4 form, a prefix or suffix S3
reserves (generator/vllm_eks/spec/s3.py holds the same rules). Empty when it is valid. */}}
{{- define "vllm-inference.s3BucketProblem" -}}
{{- $b := toString . -}}
{{- if or (lt (len $b) 3) (gt (len $b) 63) -}}has {{ len $b }} characters, not 3 to 63
{{- else if not (regexMatch "^[a-z0-9]([a-z0-9-]|[.][a-z0-9-])*[.]?[a-z0-9]$" $b) -}}has characters other than lowercase letters, digits, dots and hyphens, does not start and end with a letter or digit, or has two adjacent dots
{{- else if regexMatch "^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$" $b -}}is formatted as an IP address
{{- else if regexMatch "^(xn--|sthree-|amzn-s3-demo-)|(-s3alias|--ol-s3|[.]mrap|--x-s3)$" $b -}}starts or ends with a prefix or suffix S3 reserves
{{- end -}}
{{- end -}}

{{/* The S3 locations the values name: model.name (source s3), model.mountpointS3.bucket and
staging.s3Uri, each a bucket S3 accepts. */}}
{{- define "vllm-inference.validateValues.s3Buckets" -}}
{{- $m := .Values.model -}}
{{- $buckets := list -}}
{{- if and (eq (toString $m.source) "s3") (hasPrefix "s3://" (toString $m.name)) -}}
{{- $buckets = append $buckets (list "model.name" (first (splitList "/" (trimPrefix "s3://" (toString $m.name))))) -}}
{{- end -}}
{{- if and (eq (toString $m.source) "mountpointS3") $m.mountpointS3.bucket -}}
{{- $buckets = append $buckets (list "model.mountpointS3.bucket" (toString $m.mountpointS3.bucket)) -}}
{{- end -}}
{{- if and .Values.staging.enabled (eq (toString .Values.staging.target) "s3") .Values.staging.s3Uri -}}
{{- $buckets = append $buckets (list "staging.s3Uri" (first (splitList "/" (trimPrefix "s3://" (toString .Values.staging.s3Uri))))) -}}
{{- end -}}
{{- range $kb := $buckets -}}
{{- with include "vllm-inference.s3BucketProblem" (last $kb) -}}
{{- printf "%s: bucket %q %s (S3 general purpose bucket naming rules)\n" (first $kb) (last $kb) . -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* cache.type pvc: one claim (existing or created, a created one with a size), and a
ReadWriteOnce claim only where one pod ever mounts it: single-node, replicas 1, not scaled from
outside, strategy Recreate (a RollingUpdate surge pod on another node would wait on the attach). */}}
{{- define "vllm-inference.validateValues.cacheVolume" -}}
{{- $c := .Values.cache -}}
{{- if eq (toString $c.type) "pvc" -}}
{{- $p := $c.pvc -}}
{{- if and $p.claimName $p.create -}}
{{- print "cache.pvc: set claimName (an existing claim) or create true, not both\n" -}}
{{- else if not (or $p.claimName $p.create) -}}
{{- print "cache.pvc: cache.type pvc needs claimName (an existing claim) or create true\n" -}}
{{- end -}}
{{- if and $p.create (not $p.claimName) (not $p.size) -}}
{{- print "cache.pvc.size: required when cache.pvc.create is true\n" -}}
{{- end -}}
{{- if and $p.create $p.size (include "vllm-inference.zeroQuantity" $p.size) -}}
{{- printf "cache.pvc.size (%s): a created claim must hold the cache (the generator writes the checkpoint plus compile caches)\n" (toString $p.size) -}}
{{- end -}}
{{- if and $p.create (eq (toString $p.accessMode) "ReadWriteMany") (not $p.storageClassName) -}}
{{- print "cache.pvc.storageClassName: required when cache.pvc.create makes a ReadWriteMany claim: EKS's default StorageClass (EBS) cannot provision ReadWriteMany, so the claim and the pods would stay Pending; name an EFS or FSx for Lustre class\n" -}}
{{- end -}}
{{- if eq (toString $p.accessMode) "ReadWriteOnce" -}}
{{- $why := list -}}
{{- if ne (toString .Values.topology) "single-node" -}}{{- $why = append $why (printf "topology %s runs several pods" (toString .Values.topology)) -}}{{- end -}}
{{- if gt (int .Values.replicas) 1 -}}{{- $why = append $why (printf "replicas %d" (int .Values.replicas)) -}}{{- end -}}
{{- if .Values.replicasManagedExternally -}}{{- $why = append $why "replicasManagedExternally true" -}}{{- end -}}
{{- if and (eq (toString .Values.topology) "single-node") (ne (toString .Values.strategy.type) "Recreate") -}}{{- $why = append $why (printf "strategy.type %s starts the new pod beside the old" (toString .Values.strategy.type)) -}}{{- end -}}
{{- if $why -}}
{{- printf "cache.pvc.accessMode: ReadWriteOnce attaches to one node, but %s: use ReadWriteMany (EFS, FSx for Lustre) or a single-node Recreate release with replicas 1\n" (join ", " $why) -}}
{{- end -}}
{{- end -}}
{{- else if or $c.pvc.claimName $c.pvc.create -}}
{{- printf "cache.pvc: set only with cache.type pvc (cache.type is %s)\n" (toString $c.type) -}}
{{- end -}}
{{- end -}}

{{/* "true" when a Kubernetes quantity is zero (0, 0Gi, 0.0Mi, 0e3): a claim of no storage. */}}
{{- define "vllm-inference.zeroQuantity" -}}
{{- if regexMatch "^[+]?0*([.]0*)?([eE][+-]?[0-9]+|[a-zA-Z]*)$" (toString .) -}}true{{- end -}}
{{- end -}}
