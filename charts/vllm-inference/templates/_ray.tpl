{{/* The Ray topologies (ray-serve, disaggregated: a KubeRay RayService) and their rules. */}}

{{/* Topologies that run on Ray (KubeRay RayService). */}}
{{- define "vllm-inference.onRay" -}}
{{- if has (toString .Values.topology) (list "ray-serve" "disaggregated") }}true{{ end -}}
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

{{/* vLLM's --kv-offloading-size sets kv_transfer_config's connector to OffloadingConnector
     (vllm/config/vllm.py _post_init_kv_transfer_config, v0.26.0 and v0.32.0), which would replace
     the NixlConnector the prefill and decode pools exchange the KV cache through. */}}
{{- define "vllm-inference.validateValues.kvOffload" -}}
{{- if and (eq (toString .Values.topology) "disaggregated") (not (kindIs "invalid" .Values.engine.kvOffloadingSize)) -}}
{{- printf "engine.kvOffloadingSize: not with topology disaggregated (vLLM's KV offloading replaces the NixlConnector of kv_transfer_config); set it to null\n" -}}
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
