{{/*
Value rules the schema cannot express (values.schema.json, generated from the pydantic models,
holds every single-field constraint). One helper per cross-key rule, named
vllm-inference.validateValues.<rule>: each prints one line per violation, naming the key, and
nothing when the values follow the rule. vllm-inference.validate calls each once and fails once
with every message. It also runs when a user skips schema validation (helm
--skip-schema-validation).
*/}}
{{- define "vllm-inference.validate" -}}
{{- $out := "" -}}
{{- $out = print $out (include "vllm-inference.validateValues.gpusPerTensorParallelGroup" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.pipelineParallel" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.groupRollout" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.efaZone" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.imageCapabilities" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayEngineArgs" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayModelSource" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayServeReplicas" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.engineKwargsChartOwned" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.kvTransfer" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.literalSecrets" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.extraEnvNames" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.extraEnvSource" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.engineArgsChartOwned" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.drainWithinGrace" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.s3ModelName" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.pvcModel" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.cacheVolume" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rolloutProgress" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.networkPolicyClients" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.serviceAccountName" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.nonRootUser" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.requestsWithinLimits" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.shmWithinMemoryLimit" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.metadataKeys" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.routing" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.apiKey" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayRequestRouter" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.benchmark" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.staging" .) -}}
{{- $errors := compact (splitList "\n" $out) -}}
{{- if $errors -}}
{{- fail (printf "\n\nvllm-inference: invalid values:\n- %s\n" (join "\n- " $errors)) -}}
{{- end -}}
{{- end -}}

{{/* Topologies that run on Ray (KubeRay RayService). */}}
{{- define "vllm-inference.onRay" -}}
{{- if has (toString .Values.topology) (list "ray-serve" "disaggregated") }}true{{ end -}}
{{- end -}}

{{/* Every topology runs one tensor-parallel group per pod (TP never crosses pods). */}}
{{- define "vllm-inference.validateValues.gpusPerTensorParallelGroup" -}}
{{- $v := .Values -}}
{{- if ne (int $v.gpu.count) (int $v.engine.tensorParallelSize) -}}
{{- printf "gpu.count (%d) must equal engine.tensorParallelSize (%d) for topology %s\n" (int $v.gpu.count) (int $v.engine.tensorParallelSize) (toString $v.topology) -}}
{{- end -}}
{{- end -}}

{{/* multi-node runs one pipeline stage per pod (group size x GPUs per pod = TP x PP); the
     other topologies run pipeline parallel size 1. */}}
{{- define "vllm-inference.validateValues.pipelineParallel" -}}
{{- $v := .Values -}}
{{- if eq (toString $v.topology) "multi-node" -}}
{{- if ne (int $v.multiNode.groupSize) (int $v.engine.pipelineParallelSize) -}}
{{- printf "multiNode.groupSize (%d) must equal engine.pipelineParallelSize (%d): one pipeline stage per pod of the group\n" (int $v.multiNode.groupSize) (int $v.engine.pipelineParallelSize) -}}
{{- end -}}
{{- else if ne (int $v.engine.pipelineParallelSize) 1 -}}
{{- printf "engine.pipelineParallelSize (%d) needs topology multi-node; %s runs pipeline parallel size 1\n" (int $v.engine.pipelineParallelSize) (toString $v.topology) -}}
{{- end -}}
{{- end -}}

{{/* A LeaderWorkerSet (topology multi-node) only rolls groups. */}}
{{- define "vllm-inference.validateValues.groupRollout" -}}
{{- if and (eq (toString .Values.topology) "multi-node") (ne (toString .Values.strategy.type) "RollingUpdate") -}}
{{- print "strategy.type: a LeaderWorkerSet only rolls groups (RollingUpdate)\n" -}}
{{- end -}}
{{- end -}}

{{/* EFA traffic does not cross availability zones: the whole group in one zone. */}}
{{- define "vllm-inference.validateValues.efaZone" -}}
{{- if and (gt (int .Values.efa.devices) 0) (not .Values.scheduling.zone) -}}
{{- printf "scheduling.zone: required with efa.devices %d (EFA does not cross availability zones)\n" (int .Values.efa.devices) -}}
{{- end -}}
{{- end -}}

{{/* The image must declare what EFA and NIXL's LIBFABRIC backend need (files/contracts checks
     the same at container start). */}}
{{- define "vllm-inference.validateValues.imageCapabilities" -}}
{{- $v := .Values -}}
{{- $ray := eq (include "vllm-inference.onRay" .) "true" -}}
{{- $imageKey := ternary "ray.image" "image" $ray -}}
{{- $declared := ternary $v.ray.image.provides $v.image.provides $ray | default (list) -}}
{{- $shown := ternary (include "vllm-inference.rayImage" .) (include "vllm-inference.image" .) $ray -}}
{{- range $cap := include "vllm-inference.requiredCapabilities" . | fromJsonArray -}}
{{- if not (has $cap $declared) -}}
{{- if eq $cap "efa" -}}
{{- printf "%s.provides: efa.devices is %d, but %s does not declare efa (libfabric with the efa provider and aws-ofi-nccl; without them NCCL falls back to TCP). %s\n" $imageKey (int $v.efa.devices) $shown (ternary "Use the AWS Ray LLM DLC (ray.image.repository public.ecr.aws/deep-learning-containers/ray, tag serve-llm-cuda-v1.0.0, provides [efa, nixl-libfabric]) or set efa.devices 0" "Build images/vllm-efa, set image.repository/image.tag to it and image.provides [efa], or set efa.devices 0" $ray) -}}
{{- else -}}
{{- printf "%s.provides: a kv_transfer_config selects NIXL's LIBFABRIC backend, but %s does not declare nixl-libfabric (NIXL's LIBFABRIC plugin and libfabric; rayproject/ray-llm has neither). Use the AWS Ray LLM DLC (ray.image.repository public.ecr.aws/deep-learning-containers/ray, tag serve-llm-cuda-v1.0.0, provides [efa, nixl-libfabric]) or the UCX backend (kv_connector_extra_config.backends [UCX]: KV transfer at TCP speed)\n" $imageKey $shown -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Ray Serve takes engine keyword arguments, not `vllm serve` flags. */}}
{{- define "vllm-inference.validateValues.rayEngineArgs" -}}
{{- $v := .Values -}}
{{- if eq (include "vllm-inference.onRay" .) "true" -}}
{{- range $key := list "args" "extraArgs" -}}
{{- if index $v.engine $key -}}
{{- printf "engine.%s: not used by topology %s (Ray Serve takes engine keyword arguments: %s)\n" $key (toString $v.topology) (ternary "rayServe.engineKwargs" "disaggregated.*.engineKwargs" (eq (toString $v.topology) "ray-serve")) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* model.source s3 on Ray: Ray Serve LLM (2.58) downloads the s3:// model_source into the
Hugging Face cache before vLLM starts. A streaming load_format would make Ray skip that download
and hand vLLM the model_id instead of the URI (ray/llm/_internal/serve/engines/vllm/vllm_models.py
from_llm_config sets hf_model_id to model_id for a remote model_source; llm_config.py
get_or_create_callback downloads nothing for STREAMING_LOAD_FORMATS), so it is refused. */}}
{{- define "vllm-inference.validateValues.rayModelSource" -}}
{{- if and (eq (include "vllm-inference.onRay" .) "true") (eq (toString .Values.model.source) "s3") -}}
{{- $sets := include "vllm-inference.engineKwargSets" . | fromJson -}}
{{- range $path := keys $sets | sortAlpha -}}
{{- $lf := toString (get (get $sets $path) "load_format") -}}
{{- if has $lf (list "runai_streamer" "runai_streamer_sharded" "tensorizer") -}}
{{- printf "%s.load_format: %s with model.source s3 on Ray Serve LLM 2.58 loads model_id, not the s3:// URI (Ray skips its download for streaming formats); remove it: Ray downloads the checkpoint to the cache volume\n" $path $lf -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Ray Serve replica counts: minReplicas <= replicas <= maxReplicas for the worker group and
     the Serve autoscaler, one worker pod per model copy. */}}
{{- define "vllm-inference.validateValues.rayServeReplicas" -}}
{{- if eq (toString .Values.topology) "ray-serve" -}}
{{- $w := .Values.rayServe.workers -}}
{{- $a := .Values.rayServe.autoscaling -}}
{{- if or (gt (int $w.minReplicas) (int $w.replicas)) (gt (int $w.replicas) (int $w.maxReplicas)) -}}
{{- printf "rayServe.workers: need minReplicas (%d) <= replicas (%d) <= maxReplicas (%d)\n" (int $w.minReplicas) (int $w.replicas) (int $w.maxReplicas) -}}
{{- end -}}
{{- if gt (int $a.minReplicas) (int $a.maxReplicas) -}}
{{- printf "rayServe.autoscaling.minReplicas (%d) must be <= maxReplicas (%d)\n" (int $a.minReplicas) (int $a.maxReplicas) -}}
{{- end -}}
{{- if gt (int $a.maxReplicas) (int $w.maxReplicas) -}}
{{- printf "rayServe.workers.maxReplicas (%d) must be >= rayServe.autoscaling.maxReplicas (%d): one worker pod per model copy\n" (int $w.maxReplicas) (int $a.maxReplicas) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The engineKwargs maps of the Ray topologies, by values path (JSON). */}}
{{- define "vllm-inference.engineKwargSets" -}}
{{- $sets := dict -}}
{{- if eq (toString .Values.topology) "ray-serve" -}}
{{- $_ := set $sets "rayServe.engineKwargs" .Values.rayServe.engineKwargs -}}
{{- else if eq (toString .Values.topology) "disaggregated" -}}
{{- $_ := set $sets "disaggregated.prefill.engineKwargs" .Values.disaggregated.prefill.engineKwargs -}}
{{- $_ := set $sets "disaggregated.decode.engineKwargs" .Values.disaggregated.decode.engineKwargs -}}
{{- end -}}
{{- toJson $sets -}}
{{- end -}}

{{/* engineKwargs must not carry the keyword form of a chart-owned argument. */}}
{{- define "vllm-inference.validateValues.engineKwargsChartOwned" -}}
{{- $sets := include "vllm-inference.engineKwargSets" . | fromJson -}}
{{- $ownedBy := include "vllm-inference.chartOwnedArgs" . | fromYaml -}}
{{- range $path := keys $sets | sortAlpha -}}
{{- $kw := get $sets $path -}}
{{- range $flag, $from := $ownedBy -}}
{{- $owned := trimPrefix "--" $flag | replace "-" "_" -}}
{{- if and (hasPrefix "--" $flag) (hasKey $kw $owned) -}}
{{- printf "%s.%s: set by the chart from %s\n" $path $owned $from -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* disaggregated: prefill and decode exchange the KV cache through a kv_transfer_config, and
     NIXL's LIBFABRIC backend needs EFA interfaces. */}}
{{- define "vllm-inference.validateValues.kvTransfer" -}}
{{- $v := .Values -}}
{{- if eq (toString $v.topology) "disaggregated" -}}
{{- $sets := include "vllm-inference.engineKwargSets" . | fromJson -}}
{{- range $path := keys $sets | sortAlpha -}}
{{- $kv := get (get $sets $path) "kv_transfer_config" -}}
{{- $extra := and (kindIs "map" $kv) (get $kv "kv_connector_extra_config") -}}
{{- if not $kv -}}
{{- printf "%s.kv_transfer_config: required: prefill and decode exchange the KV cache through it (NixlConnector)\n" $path -}}
{{- else if not (kindIs "map" $kv) -}}
{{- printf "%s.kv_transfer_config: must be a map (vLLM's KVTransferConfig)\n" $path -}}
{{- else if and (hasKey $kv "kv_connector_extra_config") (not (kindIs "map" $extra)) -}}
{{- printf "%s.kv_transfer_config.kv_connector_extra_config: must be a map\n" $path -}}
{{- else if and (kindIs "map" $extra) (hasKey $extra "backends") (not (kindIs "slice" (get $extra "backends"))) -}}
{{- printf "%s.kv_transfer_config.kv_connector_extra_config.backends: must be a list of NIXL backends\n" $path -}}
{{- else if and (eq (int $v.efa.devices) 0) (has "LIBFABRIC" (include "vllm-inference.kvBackends" $kv | fromJsonArray)) -}}
{{- printf "efa.devices: 0, but %s.kv_transfer_config uses NIXL's LIBFABRIC backend, which needs EFA interfaces\n" $path -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Secrets never go into values: only references to existing Secrets. The paths are named,
     the values never echoed. */}}
{{- define "vllm-inference.validateValues.literalSecrets" -}}
{{- $found := include "vllm-inference.secretPaths" (dict "path" "" "value" .Values) | trimSuffix ";" -}}
{{- range $path := splitList ";" $found -}}
{{- if $path -}}
{{- printf "%s: looks like a literal credential (Hugging Face token or AWS access key); put it in a Secret and reference it (model.huggingface.tokenSecret, extraEnv[].valueFrom.secretKeyRef)\n" (trimPrefix "." $path) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* extraEnv: credentials come from a Secret, and the variables the chart sets are its own. */}}
{{- define "vllm-inference.validateValues.extraEnvNames" -}}
{{- $secretEnv := list "HF_TOKEN" "HUGGING_FACE_HUB_TOKEN" "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" "AWS_SESSION_TOKEN" -}}
{{- $chartEnv := list "HF_TOKEN" "HF_TOKEN_PATH" "HF_HOME" "VLLM_CACHE_ROOT" "XDG_CACHE_HOME" "XDG_CONFIG_HOME" "HOME" "TMPDIR" -}}
{{- $routingEnv := dict -}}
{{- if and .Values.apiKey.existingSecret (not (include "vllm-inference.onRay" .)) -}}
{{- $_ := set $routingEnv "VLLM_API_KEY" "apiKey.existingSecret" -}}
{{- end -}}
{{- if include "vllm-inference.backendKeepAlive" . -}}
{{- $_ := set $routingEnv "VLLM_HTTP_TIMEOUT_KEEP_ALIVE" "routing.alb.idleTimeoutSeconds" -}}
{{- end -}}
{{- range $i, $e := .Values.extraEnv -}}
{{- if hasKey $routingEnv (toString $e.name) -}}
{{- printf "extraEnv[%d].name: %s is set by the chart from %s\n" $i $e.name (get $routingEnv (toString $e.name)) -}}
{{- else if and (has $e.name $secretEnv) (hasKey $e "value") -}}
{{- printf "extraEnv[%d].value: %s must come from a Secret (valueFrom.secretKeyRef), not a literal\n" $i $e.name -}}
{{- else if has $e.name $chartEnv -}}
{{- printf "extraEnv[%d].name: %s is set by the chart (cache paths, model.huggingface.tokenSecret)\n" $i $e.name -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* An environment variable has a value or a valueFrom, not both (Kubernetes EnvVar). */}}
{{- define "vllm-inference.validateValues.extraEnvSource" -}}
{{- range $i, $e := .Values.extraEnv -}}
{{- if and (hasKey $e "value") (hasKey $e "valueFrom") -}}
{{- printf "extraEnv[%d]: set value or valueFrom, not both\n" $i -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Arguments the chart renders from their own keys must not be given twice. */}}
{{- define "vllm-inference.validateValues.engineArgsChartOwned" -}}
{{- $v := .Values -}}
{{- $ownedBy := include "vllm-inference.chartOwnedArgs" . | fromYaml -}}
{{- range $key := list "args" "extraArgs" -}}
{{- range $i, $a := index $v.engine $key -}}
{{- $flag := regexReplaceAll "=.*$" (toString $a) "" -}}
{{- if hasPrefix "--" $flag -}}
{{- $flag = printf "--%s" (trimPrefix "--" $flag | replace "_" "-") -}}
{{- end -}}
{{- if hasKey $ownedBy $flag -}}
{{- printf "engine.%s[%d]: %s is set by the chart from %s\n" $key $i $flag (get $ownedBy $flag) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Graceful drain: preStop sleep, then vLLM's own shutdown timeout, both inside the grace period. */}}
{{- define "vllm-inference.validateValues.drainWithinGrace" -}}
{{- $d := .Values.drain -}}
{{- $drain := add (int $d.preStopSeconds) (int $d.shutdownTimeoutSeconds) -}}
{{- if gt $drain (int $d.terminationGracePeriodSeconds) -}}
{{- printf "drain.terminationGracePeriodSeconds (%d) must be >= drain.preStopSeconds + drain.shutdownTimeoutSeconds (%d)\n" (int $d.terminationGracePeriodSeconds) $drain -}}
{{- end -}}
{{- end -}}

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

{{/* A rolling update that may neither add nor remove a pod never progresses. */}}
{{- define "vllm-inference.validateValues.rolloutProgress" -}}
{{- if eq (toString .Values.strategy.type) "RollingUpdate" -}}
{{- $surge := toString .Values.strategy.rollingUpdate.maxSurge -}}
{{- $unavail := toString .Values.strategy.rollingUpdate.maxUnavailable -}}
{{- if and (has $surge (list "0" "0%")) (has $unavail (list "0" "0%")) -}}
{{- print "strategy.rollingUpdate: maxSurge and maxUnavailable cannot both be 0\n" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A NetworkPolicy admits at least one client. */}}
{{- define "vllm-inference.validateValues.networkPolicyClients" -}}
{{- $np := .Values.networkPolicy -}}
{{- if and $np.enabled (not $np.allowedNamespaces) (not $np.allowSameNamespace) -}}
{{- print "networkPolicy.allowedNamespaces: empty with allowSameNamespace false would admit no client at all\n" -}}
{{- end -}}
{{- end -}}

{{/* An existing ServiceAccount is named. */}}
{{- define "vllm-inference.validateValues.serviceAccountName" -}}
{{- if and (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) -}}
{{- print "serviceAccount.name: required when serviceAccount.create is false\n" -}}
{{- end -}}
{{- end -}}

{{/* Non-root unless securityContext.allowRoot opts out: runAsNonRoot true and runAsUser not 0. */}}
{{- define "vllm-inference.validateValues.nonRootUser" -}}
{{- $sc := .Values.securityContext -}}
{{- if not $sc.allowRoot -}}
{{- if not $sc.runAsNonRoot -}}
{{- print "securityContext.runAsNonRoot: false would run the pods as root; keep it true, or set securityContext.allowRoot: true to opt out of the non-root default\n" -}}
{{- else if eq (int $sc.runAsUser) 0 -}}
{{- print "securityContext.runAsUser: 0 (root) contradicts securityContext.runAsNonRoot true; give a non-zero id (default 10001), or set securityContext.allowRoot: true to opt out\n" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Paths (";"-separated) of string values that look like a credential. Recursive over maps and lists.
*/}}
{{- define "vllm-inference.secretPaths" -}}
{{- $path := .path }}
{{- if kindIs "map" .value }}
{{- range $k, $x := .value }}
{{- include "vllm-inference.secretPaths" (dict "path" (printf "%s.%s" $path $k) "value" $x) }}
{{- end }}
{{- else if kindIs "slice" .value }}
{{- range $i, $x := .value }}
{{- include "vllm-inference.secretPaths" (dict "path" (printf "%s[%d]" $path $i) "value" $x) }}
{{- end }}
{{- else if kindIs "string" .value }}
{{- if regexMatch "hf_[A-Za-z0-9]{20,}|(AKIA|ASIA)[0-9A-Z]{16}" .value }}
{{- $path }};
{{- end }}
{{- end }}
{{- end }}

{{/*
vllm-inference.chartOwnedArgs: the one list of `vllm serve` arguments the chart renders from
its own keys (flag: the key it comes from), as YAML. engine.args/extraArgs must not repeat
them, and Ray Serve engineKwargs must not carry their keyword form.
*/}}
{{- define "vllm-inference.chartOwnedArgs" -}}
--model: model.name
--served-model-name: model.servedModelName
--port: service.port (the container port is fixed)
--tensor-parallel-size: engine.tensorParallelSize
-tp: engine.tensorParallelSize
--pipeline-parallel-size: engine.pipelineParallelSize
-pp: engine.pipelineParallelSize
--shutdown-timeout: drain.shutdownTimeoutSeconds
--hf-token: model.huggingface.tokenSecret
{{- if .Values.apiKey.existingSecret }}
--api-key: apiKey.existingSecret
{{- end }}
{{- if eq (toString .Values.topology) "multi-node" }}
--distributed-executor-backend: topology multi-node (vLLM's own multi-node launcher, no Ray)
{{- range $f := list "--nnodes" "-n" "--node-rank" "-r" "--master-addr" "--headless" }}
{{ $f }}: topology multi-node (LWS_GROUP_SIZE, LWS_WORKER_INDEX, LWS_LEADER_ADDRESS)
{{- end }}
--master-port: multiNode.masterPort
{{- end }}
{{- if and (eq (toString .Values.model.source) "s3") (ne (include "vllm-inference.onRay" .) "true") }}
--load-format: model.source s3 (runai_streamer)
{{- end }}
{{- end }}

{{/*
A Kubernetes quantity (the schema has checked its form) as a float in base units: 1500m -> 1.5,
16Gi -> 17179869184, 2e3 -> 2000. Used only to compare two quantities.
*/}}
{{- define "vllm-inference.quantityValue" -}}
{{- $q := toString . -}}
{{- $number := regexFind "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?" $q -}}
{{- $suffix := trimPrefix $number $q -}}
{{- $scale := dict "" 1.0 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18
    "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0
    "Ei" 1152921504606846976.0 -}}
{{- mulf (float64 $number) (get $scale $suffix) -}}
{{- end -}}

{{/* Each resource request at most its limit (the API server rejects the pod otherwise): the
     server container, and on the Ray topologies the head container. */}}
{{- define "vllm-inference.validateValues.requestsWithinLimits" -}}
{{- $sets := dict "resources" .Values.resources -}}
{{- if eq (include "vllm-inference.onRay" .) "true" -}}
{{- $_ := set $sets "ray.head.resources" .Values.ray.head.resources -}}
{{- end -}}
{{- range $path := keys $sets | sortAlpha -}}
{{- $r := get $sets $path -}}
{{- range $name := list "cpu" "memory" "ephemeralStorage" -}}
{{- $req := get $r.requests $name -}}
{{- $lim := get $r.limits $name -}}
{{- if and $req $lim -}}
{{- if gt (float64 (include "vllm-inference.quantityValue" $req)) (float64 (include "vllm-inference.quantityValue" $lim)) -}}
{{- printf "%s.requests.%s: %v is above %s.limits.%s %v (a request may not exceed its limit)\n" $path $name $req $path $name $lim -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* /dev/shm is memory-backed and counted against the memory limit of every container that
     mounts it: the server's, and on the Ray topologies the head's too. */}}
{{- define "vllm-inference.validateValues.shmWithinMemoryLimit" -}}
{{- $limits := dict "resources.limits.memory" .Values.resources.limits.memory -}}
{{- if eq (include "vllm-inference.onRay" .) "true" -}}
{{- $_ := set $limits "ray.head.resources.limits.memory" .Values.ray.head.resources.limits.memory -}}
{{- end -}}
{{- range $path := keys $limits | sortAlpha -}}
{{- $lim := get $limits $path -}}
{{- if and $lim $.Values.shm.sizeLimit -}}
{{- if gt (float64 (include "vllm-inference.quantityValue" $.Values.shm.sizeLimit)) (float64 (include "vllm-inference.quantityValue" $lim)) -}}
{{- printf "shm.sizeLimit: %v is above %s %v; /dev/shm is memory-backed and counts against that limit\n" $.Values.shm.sizeLimit $path $lim -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Label, annotation and nodeSelector keys the API server accepts (metadataKeyErrors). Extra labels
must not repeat a label the chart sets: the rendered map would hold the key twice, and a changed
selector label leaves the pods outside their workload's selector. Extra annotations must not
repeat one the chart sets on the pods.
*/}}
{{- define "vllm-inference.validateValues.metadataKeys" -}}
{{- $v := .Values -}}
{{- $maps := dict "labels" $v.labels "podLabels" $v.podLabels "annotations" $v.annotations "podAnnotations" $v.podAnnotations "service.annotations" $v.service.annotations "serviceAccount.annotations" $v.serviceAccount.annotations "scheduling.nodeSelector" $v.scheduling.nodeSelector "ray.head.nodeSelector" $v.ray.head.nodeSelector "routing.alb.annotations" $v.routing.alb.annotations -}}
{{- range $path := keys $maps | sortAlpha -}}
{{- include "vllm-inference.metadataKeyErrors" (dict "path" $path "map" (get $maps $path)) -}}
{{- end -}}
{{- $chartLabels := include "vllm-inference.chartLabels" . | fromYaml | keys -}}
{{- range $path := list "labels" "podLabels" -}}
{{- range $key := keys (get $maps $path | default dict) | sortAlpha -}}
{{- if has $key $chartLabels -}}
{{- printf "%s: %q is a label the chart sets itself (selector and recommended labels); choose another key\n" $path $key -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $path := list "annotations" "podAnnotations" -}}
{{- if hasKey (get $maps $path | default dict) "ray.io/overwrite-container-cmd" -}}
{{- printf "%s: \"ray.io/overwrite-container-cmd\" is an annotation the chart sets on the Ray pods; choose another key\n" $path -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
routing.mode: gateway needs pods the InferencePool can select and a Gateway to attach to; alb an
ACM certificate (the Ingress listens on HTTPS only).
*/}}
{{- define "vllm-inference.validateValues.routing" -}}
{{- $r := .Values.routing -}}
{{- $mode := toString $r.mode -}}
{{- if eq $mode "gateway" -}}
{{- if include "vllm-inference.onRay" . -}}
{{- printf "routing.mode: gateway needs topology single-node or multi-node, not %s (Ray Serve's own router balances inside the cluster; use service or alb)\n" (toString .Values.topology) -}}
{{- end -}}
{{- if not $r.gateway.parentRefs -}}
{{- print "routing.gateway.parentRefs: at least one Gateway (name, optional namespace and sectionName) is required when routing.mode is gateway\n" -}}
{{- end -}}
{{- $w := $r.gateway.picker.scorers -}}
{{- if and (eq (int $w.queue) 0) (eq (int $w.kvCacheUtilization) 0) (eq (int $w.prefixCache) 0) -}}
{{- print "routing.gateway.picker.scorers: every weight is 0, so the picker would choose pods at random; give queue, kvCacheUtilization or prefixCache a weight above 0\n" -}}
{{- end -}}
{{- else if eq $mode "alb" -}}
{{- if not $r.alb.certificateArn -}}
{{- print "routing.alb.certificateArn: required when routing.mode is alb (an ACM certificate ARN: the ALB listens on HTTPS 443 only)\n" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The API key is vLLM's own check, which Ray Serve's OpenAI app does not run. */}}
{{- define "vllm-inference.validateValues.apiKey" -}}
{{- if and .Values.apiKey.existingSecret (include "vllm-inference.onRay" .) -}}
{{- printf "apiKey.existingSecret: not supported on topology %s (Ray Serve's OpenAI app does not check vLLM's API key); authenticate at the load balancer instead (routing.mode alb with routing.alb.annotations auth-type oidc or cognito)\n" (toString .Values.topology) -}}
{{- end -}}
{{- end -}}

{{/* PrefixCacheAffinityRouter is public in ray.serve.llm.request_router from Ray 2.49. */}}
{{- define "vllm-inference.validateValues.rayRequestRouter" -}}
{{- $v := .Values -}}
{{- if and (include "vllm-inference.onRay" .) (eq (toString $v.rayServe.requestRouter) "prefix-cache-affinity") -}}
{{- $version := toString $v.ray.version -}}
{{- $parts := regexFind "^[0-9]+[.][0-9]+" $version | splitList "." -}}
{{- if or (ne (len $parts) 2) (lt (int (index $parts 0)) 2) (and (eq (int (index $parts 0)) 2) (lt (int (index $parts 1)) 49)) -}}
{{- printf "rayServe.requestRouter: prefix-cache-affinity needs Ray 2.49 or later (ray.version is %s); use power-of-two-choices or a newer ray.image and ray.version\n" $version -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The benchmark sweep (templates/benchmark-job.yaml): checked only when it is rendered. The schema
     holds the single-field rules; these repeat the ones a skipped schema would let through. */}}
{{- define "vllm-inference.validateValues.benchmark" -}}
{{- $b := .Values.benchmark -}}
{{- if $b.enabled -}}
{{- if not $b.concurrencies -}}
{{- print "benchmark.concurrencies: give at least one concurrency level, e.g. [1, 2, 4, 8]\n" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $i, $c := $b.concurrencies -}}
{{- if lt (int $c) 1 -}}
{{- printf "benchmark.concurrencies[%d]: %v is not a positive concurrency\n" $i $c -}}
{{- else if hasKey $seen (toString (int $c)) -}}
{{- printf "benchmark.concurrencies[%d]: %d is listed twice (each level runs once)\n" $i (int $c) -}}
{{- end -}}
{{- $_ := set $seen (toString (int $c)) true -}}
{{- end -}}
{{- range $k := list "inputLen" "outputLen" -}}
{{- if lt (int (index $b.requestShape $k)) 1 -}}
{{- printf "benchmark.requestShape.%s: must be >= 1 tokens, got %v\n" $k (index $b.requestShape $k) -}}
{{- end -}}
{{- end -}}
{{- if and $b.output.claimName $b.output.s3Uri -}}
{{- print "benchmark.output.claimName, benchmark.output.s3Uri: set one of them, not both\n" -}}
{{- end -}}
{{- if and (not $b.tokenizer) (ne (toString .Values.model.source) "huggingface") -}}
{{- printf "benchmark.tokenizer: required with model.source %s (model.name %s is not a Hugging Face model id); give a Hugging Face id or a path in the benchmark image\n" (toString .Values.model.source) .Values.model.name -}}
{{- end -}}
{{- $ds := $b.requestShape.dataset -}}
{{- if and $ds.name (not $ds.path) -}}
{{- printf "benchmark.requestShape.dataset.path: required with dataset.name %s\n" $ds.name -}}
{{- end -}}
{{- if and $ds.path (not $ds.name) -}}
{{- print "benchmark.requestShape.dataset.name: required with dataset.path (custom or sharegpt)\n" -}}
{{- end -}}
{{- if and $ds.claimName (not (hasPrefix "/datasets/" $ds.path)) -}}
{{- printf "benchmark.requestShape.dataset.path: with dataset.claimName the file is under /datasets/, got %q\n" $ds.path -}}
{{- end -}}
{{- end -}}
{{- end -}}
