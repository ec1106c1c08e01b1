{{/*
The `vllm serve` arguments the chart owns, and the rule that engine.args/extraArgs leave them to
it.
*/}}

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
--max-model-len: engine.maxModelLen
{{- if eq (toString .Values.topology) "disaggregated" }}
--max-num-seqs: disaggregated.prefill.maxNumSeqs / disaggregated.decode.maxNumSeqs (else engine.maxNumSeqs)
{{- else }}
--max-num-seqs: engine.maxNumSeqs
{{- end }}
--gpu-memory-utilization: engine.gpuMemoryUtilization (null when the KV cache is sized by --kv-cache-memory-bytes)
--kv-offloading-size: engine.kvOffloadingSize
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
