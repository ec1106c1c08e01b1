{{/*
The shape of a model copy: tensor parallel inside a pod, pipeline stages across the pods of a
LeaderWorkerSet group.
*/}}

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
