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
