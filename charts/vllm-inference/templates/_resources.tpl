{{/*
Resource quantities the API server compares: requests within limits, /dev/shm within the memory
limit.
*/}}

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
     server container, on the Ray topologies the head container, with routing.mode gateway the
     endpoint picker, and the staging and benchmark Jobs when they are enabled. */}}
{{- define "vllm-inference.validateValues.requestsWithinLimits" -}}
{{- $sets := dict "resources" .Values.resources -}}
{{- if eq (include "vllm-inference.onRay" .) "true" -}}
{{- $_ := set $sets "ray.head.resources" .Values.ray.head.resources -}}
{{- end -}}
{{- if eq (toString .Values.routing.mode) "gateway" -}}
{{- $_ := set $sets "routing.gateway.picker.resources" .Values.routing.gateway.picker.resources -}}
{{- end -}}
{{- if .Values.staging.enabled -}}
{{- $_ := set $sets "staging.resources" .Values.staging.resources -}}
{{- end -}}
{{- if .Values.benchmark.enabled -}}
{{- $_ := set $sets "benchmark.resources" .Values.benchmark.resources -}}
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
{{- $limits := dict "resources.limits.memory" (list .Values.resources.limits.memory .Values.shm.sizeLimit) -}}
{{- if eq (include "vllm-inference.onRay" .) "true" -}}
{{- $_ := set $limits "ray.head.resources.limits.memory" (list .Values.ray.head.resources.limits.memory (include "vllm-inference.headShmSizeLimit" .)) -}}
{{- end -}}
{{- range $path := keys $limits | sortAlpha -}}
{{- $lim := index (get $limits $path) 0 -}}
{{- $shm := index (get $limits $path) 1 -}}
{{- if and $lim $shm -}}
{{- if gt (float64 (include "vllm-inference.quantityValue" $shm)) (float64 (include "vllm-inference.quantityValue" $lim)) -}}
{{- printf "shm.sizeLimit: %v is above %s %v; /dev/shm is memory-backed and counts against that limit\n" $shm $path $lim -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The KV offload buffer (engine.kvOffloadingSize GiB) is a file vLLM creates in /dev/shm after
     checking its free space (vllm/v1/kv_offload/cpu/shared_offload_region.py): shm.sizeLimit
     must be larger. */}}
{{- define "vllm-inference.validateValues.shmHoldsKvOffload" -}}
{{- $gib := .Values.engine.kvOffloadingSize -}}
{{- if and (not (kindIs "invalid" $gib)) .Values.shm.sizeLimit -}}
{{- if le (float64 (include "vllm-inference.quantityValue" .Values.shm.sizeLimit)) (mulf (float64 $gib) 1073741824.0) -}}
{{- printf "shm.sizeLimit: %v does not hold engine.kvOffloadingSize %v GiB (vLLM creates the KV offload buffer in /dev/shm); raise it above the buffer\n" .Values.shm.sizeLimit $gib -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* /dev/shm of the Ray head, which runs no engine: shm.sizeLimit without the KV offload buffer
     (bytes), else shm.sizeLimit. */}}
{{- define "vllm-inference.headShmSizeLimit" -}}
{{- $gib := .Values.engine.kvOffloadingSize -}}
{{- $shm := .Values.shm.sizeLimit -}}
{{- if and (not (kindIs "invalid" $gib)) $shm -}}
{{- $rest := subf (float64 (include "vllm-inference.quantityValue" $shm)) (mulf (float64 $gib) 1073741824.0) -}}
{{- if gt $rest 0.0 }}{{ int64 $rest }}{{ else }}{{ $shm }}{{ end -}}
{{- else -}}
{{- $shm -}}
{{- end -}}
{{- end -}}
