{{/*
vllm-inference.validate: checks the schema cannot express (relations between keys, secrets
anywhere in the values). Collects every problem and fails once, naming each key. It also runs
when a user skips schema validation (helm --skip-schema-validation).
*/}}
{{- define "vllm-inference.validate" -}}
{{- $v := .Values }}
{{- $errors := list }}

{{- $topology := toString $v.topology }}
{{- $ray := has $topology (list "ray-serve" "disaggregated") }}

{{- /* Every topology runs one tensor-parallel group per pod (TP never crosses pods). */}}
{{- if ne (int $v.gpu.count) (int $v.engine.tensorParallelSize) }}
{{- $errors = append $errors (printf "gpu.count (%d) must equal engine.tensorParallelSize (%d) for topology %s" (int $v.gpu.count) (int $v.engine.tensorParallelSize) $topology) }}
{{- end }}
{{- if eq $topology "multi-node" }}
{{- /* One pipeline stage per pod: group size x GPUs per pod = TP x PP. */}}
{{- if ne (int $v.multiNode.groupSize) (int $v.engine.pipelineParallelSize) }}
{{- $errors = append $errors (printf "multiNode.groupSize (%d) must equal engine.pipelineParallelSize (%d): one pipeline stage per pod of the group" (int $v.multiNode.groupSize) (int $v.engine.pipelineParallelSize)) }}
{{- end }}
{{- if ne (toString $v.strategy.type) "RollingUpdate" }}
{{- $errors = append $errors "strategy.type: a LeaderWorkerSet only rolls groups (RollingUpdate)" }}
{{- end }}
{{- else if ne (int $v.engine.pipelineParallelSize) 1 }}
{{- $errors = append $errors (printf "engine.pipelineParallelSize (%d) needs topology multi-node; %s runs pipeline parallel size 1" (int $v.engine.pipelineParallelSize) $topology) }}
{{- end }}

{{- /* EFA traffic does not cross availability zones: the whole group in one zone. */}}
{{- if and (gt (int $v.efa.devices) 0) (not $v.scheduling.zone) }}
{{- $errors = append $errors (printf "scheduling.zone: required with efa.devices %d (EFA does not cross availability zones)" (int $v.efa.devices)) }}
{{- end }}

{{- /* The image must declare what EFA and NIXL's LIBFABRIC backend need (files/contracts checks
       the same at container start). */}}
{{- $imageKey := ternary "ray.image" "image" $ray }}
{{- $declared := ternary $v.ray.image.provides $v.image.provides $ray | default (list) }}
{{- $shown := ternary (include "vllm-inference.rayImage" .) (include "vllm-inference.image" .) $ray }}
{{- range $cap := include "vllm-inference.requiredCapabilities" . | fromJsonArray }}
{{- if not (has $cap $declared) }}
{{- if eq $cap "efa" }}
{{- $errors = append $errors (printf "%s.provides: efa.devices is %d, but %s does not declare efa (libfabric with the efa provider and aws-ofi-nccl; without them NCCL falls back to TCP). %s" $imageKey (int $v.efa.devices) $shown (ternary "Use the AWS Ray LLM DLC (ray.image.repository public.ecr.aws/deep-learning-containers/ray, tag serve-llm-cuda-v1.0.0, provides [efa, nixl-libfabric]) or set efa.devices 0" "Build images/vllm-efa, set image.repository/image.tag to it and image.provides [efa], or set efa.devices 0" $ray)) }}
{{- else }}
{{- $errors = append $errors (printf "%s.provides: a kv_transfer_config selects NIXL's LIBFABRIC backend, but %s does not declare nixl-libfabric (NIXL's LIBFABRIC plugin and libfabric; rayproject/ray-llm has neither). Use the AWS Ray LLM DLC (ray.image.repository public.ecr.aws/deep-learning-containers/ray, tag serve-llm-cuda-v1.0.0, provides [efa, nixl-libfabric]) or the UCX backend (kv_connector_extra_config.backends [UCX]: KV transfer at TCP speed)" $imageKey $shown) }}
{{- end }}
{{- end }}
{{- end }}

{{- if $ray }}
{{- range $key := list "args" "extraArgs" }}
{{- if index $v.engine $key }}
{{- $errors = append $errors (printf "engine.%s: not used by topology %s (Ray Serve takes engine keyword arguments: %s)" $key $topology (ternary "rayServe.engineKwargs" "disaggregated.*.engineKwargs" (eq $topology "ray-serve"))) }}
{{- end }}
{{- end }}
{{- if eq (toString $v.model.source) "s3" }}
{{- $errors = append $errors (printf "model.source: s3 (runai_streamer) is rendered only for single-node and multi-node; with %s use huggingface or pvc" $topology) }}
{{- end }}
{{- $kwargSets := dict }}
{{- if eq $topology "ray-serve" }}
{{- $_ := set $kwargSets "rayServe.engineKwargs" $v.rayServe.engineKwargs }}
{{- $w := $v.rayServe.workers }}
{{- if or (gt (int $w.minReplicas) (int $w.replicas)) (gt (int $w.replicas) (int $w.maxReplicas)) }}
{{- $errors = append $errors (printf "rayServe.workers: need minReplicas (%d) <= replicas (%d) <= maxReplicas (%d)" (int $w.minReplicas) (int $w.replicas) (int $w.maxReplicas)) }}
{{- end }}
{{- $a := $v.rayServe.autoscaling }}
{{- if gt (int $a.minReplicas) (int $a.maxReplicas) }}
{{- $errors = append $errors (printf "rayServe.autoscaling.minReplicas (%d) must be <= maxReplicas (%d)" (int $a.minReplicas) (int $a.maxReplicas)) }}
{{- end }}
{{- if gt (int $a.maxReplicas) (int $w.maxReplicas) }}
{{- $errors = append $errors (printf "rayServe.workers.maxReplicas (%d) must be >= rayServe.autoscaling.maxReplicas (%d): one worker pod per model copy" (int $w.maxReplicas) (int $a.maxReplicas)) }}
{{- end }}
{{- else }}
{{- $_ := set $kwargSets "disaggregated.prefill.engineKwargs" $v.disaggregated.prefill.engineKwargs }}
{{- $_ := set $kwargSets "disaggregated.decode.engineKwargs" $v.disaggregated.decode.engineKwargs }}
{{- end }}
{{- range $path := keys $kwargSets | sortAlpha }}
{{- $kw := get $kwargSets $path }}
{{- range $flag, $from := include "vllm-inference.chartOwnedArgs" $ | fromYaml }}
{{- $owned := trimPrefix "--" $flag | replace "-" "_" }}
{{- if and (hasPrefix "--" $flag) (hasKey $kw $owned) }}
{{- $errors = append $errors (printf "%s.%s: set by the chart from %s" $path $owned $from) }}
{{- end }}
{{- end }}
{{- if eq $topology "disaggregated" }}
{{- $kv := get $kw "kv_transfer_config" }}
{{- if not $kv }}
{{- $errors = append $errors (printf "%s.kv_transfer_config: required: prefill and decode exchange the KV cache through it (NixlConnector)" $path) }}
{{- else if and (kindIs "map" $kv) (eq (int $v.efa.devices) 0) }}
{{- $backends := dig "kv_connector_extra_config" "backends" (list) $kv }}
{{- if has "LIBFABRIC" $backends }}
{{- $errors = append $errors (printf "efa.devices: 0, but %s.kv_transfer_config uses NIXL's LIBFABRIC backend, which needs EFA interfaces" $path) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- /* Secrets never go into values: only references to existing Secrets. The paths are named,
       the values never echoed. */}}
{{- $found := include "vllm-inference.secretPaths" (dict "path" "" "value" $v) | trimSuffix ";" }}
{{- range $path := splitList ";" $found }}
{{- if $path }}
{{- $errors = append $errors (printf "%s: looks like a literal credential (Hugging Face token or AWS access key); put it in a Secret and reference it (model.huggingface.tokenSecret, extraEnv[].valueFrom.secretKeyRef)" (trimPrefix "." $path)) }}
{{- end }}
{{- end }}
{{- $secretEnv := list "HF_TOKEN" "HUGGING_FACE_HUB_TOKEN" "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" "AWS_SESSION_TOKEN" }}
{{- $chartEnv := list "HF_TOKEN" "HF_TOKEN_PATH" "HF_HOME" "VLLM_CACHE_ROOT" "XDG_CACHE_HOME" "XDG_CONFIG_HOME" "HOME" "TMPDIR" }}
{{- range $i, $e := $v.extraEnv }}
{{- if and (has $e.name $secretEnv) (hasKey $e "value") }}
{{- $errors = append $errors (printf "extraEnv[%d].value: %s must come from a Secret (valueFrom.secretKeyRef), not a literal" $i $e.name) }}
{{- else if has $e.name $chartEnv }}
{{- $errors = append $errors (printf "extraEnv[%d].name: %s is set by the chart (cache paths, model.huggingface.tokenSecret)" $i $e.name) }}
{{- end }}
{{- if and (hasKey $e "value") (hasKey $e "valueFrom") }}
{{- $errors = append $errors (printf "extraEnv[%d]: set value or valueFrom, not both" $i) }}
{{- end }}
{{- end }}

{{- /* Arguments the chart renders from their own keys must not be given twice. */}}
{{- $ownedBy := include "vllm-inference.chartOwnedArgs" . | fromYaml }}
{{- range $key := list "args" "extraArgs" }}
{{- range $i, $a := index $v.engine $key }}
{{- $flag := regexReplaceAll "=.*$" (toString $a) "" }}
{{- if hasPrefix "--" $flag }}
{{- $flag = printf "--%s" (trimPrefix "--" $flag | replace "_" "-") }}
{{- end }}
{{- if hasKey $ownedBy $flag }}
{{- $errors = append $errors (printf "engine.%s[%d]: %s is set by the chart from %s" $key $i $flag (get $ownedBy $flag)) }}
{{- end }}
{{- end }}
{{- end }}

{{- /* Graceful drain: preStop sleep, then vLLM's own shutdown timeout, both inside the grace period. */}}
{{- $drain := add (int $v.drain.preStopSeconds) (int $v.drain.shutdownTimeoutSeconds) }}
{{- if gt $drain (int $v.drain.terminationGracePeriodSeconds) }}
{{- $errors = append $errors (printf "drain.terminationGracePeriodSeconds (%d) must be >= drain.preStopSeconds + drain.shutdownTimeoutSeconds (%d)" (int $v.drain.terminationGracePeriodSeconds) $drain) }}
{{- end }}

{{- /* Model source and its settings must agree. */}}
{{- $name := toString $v.model.name }}
{{- if eq (toString $v.model.source) "s3" }}
{{- if not (hasPrefix "s3://" $name) }}
{{- $errors = append $errors (printf "model.name: model.source s3 needs an s3:// URI") }}
{{- end }}
{{- else if hasPrefix "s3://" $name }}
{{- $errors = append $errors (printf "model.name: an s3:// URI needs model.source s3 (got %s)" (toString $v.model.source)) }}
{{- end }}
{{- if eq (toString $v.model.source) "pvc" }}
{{- if not $v.model.pvc.claimName }}
{{- $errors = append $errors "model.pvc.claimName: required when model.source is pvc" }}
{{- end }}
{{- $mount := trimSuffix "/" (toString $v.model.pvc.mountPath) }}
{{- if not (or (eq $name $mount) (hasPrefix (printf "%s/" $mount) $name)) }}
{{- $errors = append $errors (printf "model.name: with model.source pvc it must be a path under model.pvc.mountPath (%s)" $v.model.pvc.mountPath) }}
{{- end }}
{{- end }}

{{- /* A rolling update that may neither add nor remove a pod never progresses. */}}
{{- if eq (toString $v.strategy.type) "RollingUpdate" }}
{{- $surge := toString $v.strategy.rollingUpdate.maxSurge }}
{{- $unavail := toString $v.strategy.rollingUpdate.maxUnavailable }}
{{- if and (has $surge (list "0" "0%")) (has $unavail (list "0" "0%")) }}
{{- $errors = append $errors "strategy.rollingUpdate: maxSurge and maxUnavailable cannot both be 0" }}
{{- end }}
{{- end }}

{{- if and $v.networkPolicy.enabled (not $v.networkPolicy.allowedNamespaces) (not $v.networkPolicy.allowSameNamespace) }}
{{- $errors = append $errors "networkPolicy.allowedNamespaces: empty with allowSameNamespace false would admit no client at all" }}
{{- end }}

{{- if and (not $v.serviceAccount.create) (not $v.serviceAccount.name) }}
{{- $errors = append $errors "serviceAccount.name: required when serviceAccount.create is false" }}
{{- end }}

{{- if and $v.securityContext.runAsNonRoot (hasKey $v.securityContext "runAsUser") }}
{{- if eq (int $v.securityContext.runAsUser) 0 }}
{{- $errors = append $errors "securityContext.runAsUser: 0 (root) contradicts securityContext.runAsNonRoot true" }}
{{- end }}
{{- end }}

{{- if $errors }}
{{- fail (printf "\n\nvllm-inference: invalid values:\n- %s\n" (join "\n- " $errors)) }}
{{- end }}
{{- end }}

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
{{- if eq (toString .Values.topology) "multi-node" }}
--distributed-executor-backend: topology multi-node (vLLM's own multi-node launcher, no Ray)
{{- range $f := list "--nnodes" "-n" "--node-rank" "-r" "--master-addr" "--headless" }}
{{ $f }}: topology multi-node (LWS_GROUP_SIZE, LWS_WORKER_INDEX, LWS_LEADER_ADDRESS)
{{- end }}
--master-port: multiNode.masterPort
{{- end }}
{{- if eq (toString .Values.model.source) "s3" }}
--load-format: model.source s3 (runai_streamer)
{{- end }}
{{- end }}
