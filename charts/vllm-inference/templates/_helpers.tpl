{{/*
Names, labels and small shared pieces of vllm-inference.
Numbers never come from here: the generator's Plan puts them into values.
*/}}

{{/*
Selector labels: minimal and stable (a Deployment selector is immutable). charts/observability
selects the Service and pods with exactly these three.
*/}}
{{- define "vllm-inference.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm-inference.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: server
{{- end }}

{{/* The labels the chart sets on every object: selector and Kubernetes recommended labels
(validateValues.metadataKeys keeps the user's labels off these keys). The version label is
the image tag cut to a label value: at most 63 characters, alphanumeric at both ends. */}}
{{- define "vllm-inference.chartLabels" -}}
{{ include "vllm-inference.selectorLabels" . }}
app.kubernetes.io/version: {{ regexReplaceAll "^[^A-Za-z0-9]+|[^A-Za-z0-9]+$" (include "vllm-inference.imageTag" . | trunc 63) "" | quote }}
app.kubernetes.io/part-of: vllm-eks
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "vllm-inference.chart" . }}
{{- end }}

{{/* The chart's labels, then the user's extra labels (validateValues.metadataKeys keeps them apart). */}}
{{- define "vllm-inference.labels" -}}
{{ include "vllm-inference.chartLabels" . }}
{{- with .Values.labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The user's extra annotations for every object (may be empty). */}}
{{- define "vllm-inference.annotations" -}}
{{- with .Values.annotations }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/*
checkov skip annotations: one `checkov.io/skipN: CKV_ID=reason` per entry of the list passed in.
Every entry carries its reason; the render tests check that.
*/}}
{{- define "vllm-inference.checkovSkips" -}}
{{- range $i, $skip := . }}
checkov.io/skip{{ add1 $i }}: {{ $skip | quote }}
{{- end }}
{{- end }}

{{- define "vllm-inference.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "vllm-inference.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "vllm-inference.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* The server image; its tag defaults to the chart's appVersion. */}}
{{- define "vllm-inference.image" -}}
{{- include "vllm-inference.imageRef" (dict "image" .Values.image "defaultTag" .Chart.AppVersion) }}
{{- end }}

{{/* Name clients use in requests (and the helm test sends). */}}
{{- define "vllm-inference.servedModelName" -}}
{{- default .Values.model.name .Values.model.servedModelName }}
{{- end }}

{{/* The port vLLM listens on, defined here only; the Service may expose another. */}}
{{- define "vllm-inference.containerPort" -}}
8000
{{- end }}

{{/* The port of Ray's metrics agent on every Ray pod (KubeRay's default `metrics` port), where
vLLM's metrics leave a RayService; defined here only. */}}
{{- define "vllm-inference.rayMetricsPort" -}}
8080
{{- end }}

{{/* Writable paths: every directory the server writes lives on the "cache" or "tmp" volume. */}}
{{- define "vllm-inference.cacheRoot" -}}
/var/cache/vllm
{{- end }}

{{/*
The model volume of model.source pvc, fsx or mountpointS3 as JSON (claim, mountPath, readOnly,
subPath); "{}" for huggingface and s3, which mount none. fsx and mountpointS3 use the chart's
claim <fullname>-model, bound to its static PersistentVolume.
*/}}
{{- define "vllm-inference.modelVolume" -}}
{{- $m := .Values.model -}}
{{- $src := toString $m.source -}}
{{- if eq $src "pvc" -}}
{{- toJson (dict "claim" $m.pvc.claimName "mountPath" $m.pvc.mountPath "readOnly" $m.pvc.readOnly "subPath" $m.pvc.subPath "key" "model.pvc.mountPath") -}}
{{- else if eq $src "fsx" -}}
{{- toJson (dict "claim" (include "vllm-inference.modelClaimName" .) "mountPath" $m.fsx.mountPath "readOnly" $m.fsx.readOnly "subPath" "" "key" "model.fsx.mountPath") -}}
{{- else if eq $src "mountpointS3" -}}
{{- toJson (dict "claim" (include "vllm-inference.modelClaimName" .) "mountPath" $m.mountpointS3.mountPath "readOnly" true "subPath" "" "key" "model.mountpointS3.mountPath") -}}
{{- else -}}
{}
{{- end -}}
{{- end }}

{{/* The claim and static PersistentVolume the chart creates for model.source fsx and
     mountpointS3. A PersistentVolume is cluster-scoped, so its name carries the namespace. */}}
{{- define "vllm-inference.modelClaimName" -}}
{{- printf "%s-model" (include "vllm-inference.fullname" . | trunc 57 | trimSuffix "-") -}}
{{- end }}

{{- define "vllm-inference.modelVolumeName" -}}
{{- printf "%s-%s" .Release.Namespace (include "vllm-inference.modelClaimName" .) | trunc 253 | trimSuffix "-" -}}
{{- end }}

{{/* "true" when the chart creates the model's PersistentVolume and claim. */}}
{{- define "vllm-inference.createsModelVolume" -}}
{{- if has (toString .Values.model.source) (list "fsx" "mountpointS3") }}true{{ end }}
{{- end }}

{{/* The claim of cache.type pvc: the existing one named, else the chart's <fullname>-cache. */}}
{{- define "vllm-inference.cacheClaimName" -}}
{{- .Values.cache.pvc.claimName | default (printf "%s-cache" (include "vllm-inference.fullname" .)) -}}
{{- end }}

{{/*
Arguments after the container command: the model, then the arguments the chart owns (the
parallel sizes followed by the typed engine settings), then the Plan's other engine arguments,
then the user's extra ones. multi-node: the LeaderWorkerSet template
appends vLLM's multi-node launcher flags per role (vllm-inference.launcherArgs).
*/}}
{{- define "vllm-inference.args" -}}
- {{ .Values.model.name | quote }}
- --served-model-name
- {{ include "vllm-inference.servedModelName" . | quote }}
- --port
- {{ include "vllm-inference.containerPort" . | quote }}
- --tensor-parallel-size
- {{ .Values.engine.tensorParallelSize | int | quote }}
- --pipeline-parallel-size
- {{ .Values.engine.pipelineParallelSize | int | quote }}
- --max-model-len
- {{ .Values.engine.maxModelLen | int | quote }}
- --max-num-seqs
- {{ .Values.engine.maxNumSeqs | int | quote }}
{{- if not (kindIs "invalid" .Values.engine.gpuMemoryUtilization) }}
- --gpu-memory-utilization
- {{ .Values.engine.gpuMemoryUtilization | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.engine.kvOffloadingSize) }}
- --kv-offloading-size
- {{ .Values.engine.kvOffloadingSize | toString | quote }}
{{- end }}
- --shutdown-timeout
- {{ .Values.drain.shutdownTimeoutSeconds | int | quote }}
{{- if eq .Values.model.source "s3" }}
- --load-format
- runai_streamer
{{- end }}
{{- range .Values.engine.args }}
- {{ . | quote }}
{{- end }}
{{- range .Values.engine.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
Name of the Service clients call. multi-node: the LWS controller already creates a headless
Service named like the LeaderWorkerSet (pod hostnames <lws>-<group>.<lws>), so the leaders'
Service takes the -api suffix. ray-serve and disaggregated: the Serve Service KubeRay creates for
a RayService, <name>-serve-svc.
*/}}
{{- define "vllm-inference.serviceName" -}}
{{- $name := include "vllm-inference.fullname" . }}
{{- if eq .Values.topology "multi-node" }}
{{- printf "%s-api" ($name | trunc 59 | trimSuffix "-") }}
{{- else if has .Values.topology (list "ray-serve" "disaggregated") }}
{{- printf "%s-serve-svc" ($name | trunc 53 | trimSuffix "-") }}
{{- else }}
{{- $name }}
{{- end }}
{{- end }}

{{/* Label the LWS controller puts on pods: worker index "0" is the leader of a group. */}}
{{- define "vllm-inference.leaderLabel" -}}
leaderworkerset.sigs.k8s.io/worker-index: "0"
{{- end }}

{{/* The Ray Serve LLM image (no appVersion default: its tag is a Ray release). */}}
{{- define "vllm-inference.rayImage" -}}
{{- include "vllm-inference.imageRef" (dict "image" .Values.ray.image) }}
{{- end }}

{{/* requests/limits of a container without GPUs, from a values Resources object. */}}
{{- define "vllm-inference.plainResources" -}}
{{- $out := dict }}
{{- range $part := list "requests" "limits" }}
{{- $r := index $ $part }}
{{- $q := dict }}
{{- with $r.cpu }}{{ $_ := set $q "cpu" . }}{{ end }}
{{- with $r.memory }}{{ $_ := set $q "memory" . }}{{ end }}
{{- with $r.ephemeralStorage }}{{ $_ := set $q "ephemeral-storage" . }}{{ end }}
{{- $_ := set $out $part $q }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* Labels of helm test objects: never the server's selector labels (component test). */}}
{{- define "vllm-inference.testLabels" -}}
app.kubernetes.io/name: {{ include "vllm-inference.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: test
app.kubernetes.io/part-of: vllm-eks
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "vllm-inference.chart" . }}
{{- with .Values.labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
vLLM's own multi-node launcher flags of a LeaderWorkerSet pod (vLLM 0.32 EngineArgs: --nnodes,
--node-rank, --master-addr, --master-port; `vllm serve --headless` off the leader). The values
come from the environment the LWS controller gives every container (LWS_GROUP_SIZE,
LWS_LEADER_ADDRESS, LWS_WORKER_INDEX), expanded by the kubelet ($(VAR) in args).
Call with (dict "root" $ "leader" true|false).
*/}}
{{- define "vllm-inference.launcherArgs" -}}
- --nnodes
- $(LWS_GROUP_SIZE)
- --node-rank
{{- if .leader }}
- "0"
{{- else }}
- $(LWS_WORKER_INDEX)
{{- end }}
- --master-addr
- $(LWS_LEADER_ADDRESS)
- --master-port
- {{ .root.Values.multiNode.masterPort | int | quote }}
{{- if not .leader }}
- --headless
{{- end }}
{{- end }}

{{/* Where the chart's scripts (files/contracts, files/probes) are mounted in server pods. */}}
{{- define "vllm-inference.scriptsPath" -}}
/opt/vllm-eks/scripts
{{- end }}

{{/*
The NIXL backends a kv_transfer_config selects (kv_connector_extra_config.backends) as a JSON
list; [] when it selects none or is not shaped that way (validateValues.kvTransfer reports it).
*/}}
{{- define "vllm-inference.kvBackends" -}}
{{- $backends := list }}
{{- if kindIs "map" . }}
{{- $extra := get . "kv_connector_extra_config" }}
{{- if and (kindIs "map" $extra) (kindIs "slice" (get $extra "backends")) }}
{{- $backends = get $extra "backends" }}
{{- end }}
{{- end }}
{{- toJson $backends }}
{{- end }}

{{/*
Capabilities the server pods need from their image beyond the topology's own (files/contracts):
"efa" when the pods have EFA interfaces, "nixl-libfabric" when a disaggregated pool selects NIXL's
LIBFABRIC backend. Returns a JSON list.
*/}}
{{- define "vllm-inference.requiredCapabilities" -}}
{{- $v := .Values }}
{{- $caps := list }}
{{- if gt (int $v.efa.devices) 0 }}
{{- $caps = append $caps "efa" }}
{{- end }}
{{- if eq (toString $v.topology) "disaggregated" }}
{{- range $role := list "prefill" "decode" }}
{{- $kv := get (index $v.disaggregated $role).engineKwargs "kv_transfer_config" }}
{{- if has "LIBFABRIC" (include "vllm-inference.kvBackends" $kv | fromJsonArray) }}
{{- if not (has "nixl-libfabric" $caps) }}
{{- $caps = append $caps "nixl-libfabric" }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson $caps }}
{{- end }}

{{/*
The image contract command line of the topology (files/contracts/<topology>.sh plus the
capabilities above), run first thing in every server container; it prints one line naming what
the image lacks and exits 78, or returns.
*/}}
{{- define "vllm-inference.contractCheck" -}}
{{- $caps := include "vllm-inference.requiredCapabilities" . | fromJsonArray }}
{{- /* The model source's own needs, checked at start but not declared in image.provides
     (docs/model-sources.md): vLLM's Run:ai streamer and its S3 backend for s3 on `vllm serve`,
     boto3 for Ray Serve LLM's S3 download on the Ray topologies. */}}
{{- if eq (toString .Values.model.source) "s3" }}
{{- $caps = append $caps (ternary "s3-download" "s3-stream" (eq (include "vllm-inference.onRay" .) "true")) }}
{{- end }}
{{- printf "sh %s/%s.sh" (include "vllm-inference.scriptsPath" .) .Values.topology }}
{{- range $caps }} {{ . }}{{ end }}
{{- end }}

{{/*
Container command of a `vllm serve` container: the image contract check, then exec of
engine.command with the container's args ("$@"), so vLLM is the container's main process.
*/}}
{{- define "vllm-inference.serveCommand" -}}
- /bin/sh
- -ec
- |
  {{ include "vllm-inference.contractCheck" . }}
  exec {{ range .Values.engine.command }}{{ . | squote }} {{ end }}"$@"
- vllm-server
{{- end }}

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
