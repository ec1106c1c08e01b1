{{/*
vllm-inference.validate: checks the schema cannot express (relations between keys, secrets
anywhere in the values). Collects every problem and fails once, naming each key. It also runs
when a user skips schema validation (helm --skip-schema-validation).
*/}}
{{- define "vllm-inference.validate" -}}
{{- $v := .Values }}
{{- $errors := list }}

{{- /* Topologies other than single-node are designed (see values.yaml) but not rendered yet. */}}
{{- if ne (toString $v.topology) "single-node" }}
{{- $errors = append $errors (printf "topology: %q is not implemented yet (only single-node)" (toString $v.topology)) }}
{{- end }}

{{- /* single-node: one model copy per pod, tensor parallel across that pod's GPUs. */}}
{{- if ne (int $v.gpu.count) (int $v.engine.tensorParallelSize) }}
{{- $errors = append $errors (printf "gpu.count (%d) must equal engine.tensorParallelSize (%d) for topology single-node" (int $v.gpu.count) (int $v.engine.tensorParallelSize)) }}
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
{{- $owned := list "--model" "--served-model-name" "--port" "--tensor-parallel-size" "-tp" "--shutdown-timeout" "--hf-token" }}
{{- $ownedBy := dict "--model" "model.name" "--served-model-name" "model.servedModelName" "--port" "service.port (the container port is fixed)" "--tensor-parallel-size" "engine.tensorParallelSize" "-tp" "engine.tensorParallelSize" "--shutdown-timeout" "drain.shutdownTimeoutSeconds" "--hf-token" "model.huggingface.tokenSecret" }}
{{- if eq (toString $v.model.source) "s3" }}
{{- $owned = append $owned "--load-format" }}
{{- $_ := set $ownedBy "--load-format" "model.source s3 (runai_streamer)" }}
{{- end }}
{{- range $key := list "args" "extraArgs" }}
{{- range $i, $a := index $v.engine $key }}
{{- $flag := regexReplaceAll "=.*$" (toString $a) "" }}
{{- if hasPrefix "--" $flag }}
{{- $flag = printf "--%s" (trimPrefix "--" $flag | replace "_" "-") }}
{{- end }}
{{- if has $flag $owned }}
{{- $errors = append $errors (printf "engine.%s[%d]: %s is set by the chart from %s" $key $i $flag (get $ownedBy $flag)) }}
{{- end }}
{{- /* single-node pods hold a whole model copy: pipeline stages across pods need multi-node. */}}
{{- if has $flag (list "--pipeline-parallel-size" "-pp") }}
{{- $args := index $v.engine $key }}
{{- $pp := "" }}
{{- if contains "=" (toString $a) }}
{{- $pp = regexReplaceAll "^[^=]*=" (toString $a) "" }}
{{- else if lt (add1 $i) (len $args) }}
{{- $pp = toString (index $args (add1 $i)) }}
{{- end }}
{{- if ne $pp "1" }}
{{- $errors = append $errors (printf "engine.%s[%d]: %s %s needs a multi-node topology; single-node runs pipeline parallel size 1" $key $i $flag $pp) }}
{{- end }}
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
