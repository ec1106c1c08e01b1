{{/*
Pieces of the model-server pod shared by every topology (Deployment, LeaderWorkerSet leader and
workers, Ray head and workers). Each helper renders a YAML fragment at column 0; callers indent it.
*/}}

{{/* Pod template labels: the chart labels plus podLabels. */}}
{{- define "vllm-inference.podLabels" -}}
{{- toYaml (merge (dict) (.Values.podLabels | default dict) (include "vllm-inference.labels" . | fromYaml)) }}
{{- end }}

{{/* Pod template annotations (podAnnotations over annotations), and the vLLM release the
pod's image declares (image.vllmVersion, on Ray ray.image.vllmVersion): the release the
generator's Plan was sized for. */}}
{{- define "vllm-inference.podAnnotations" -}}
{{- $release := ternary .Values.ray.image.vllmVersion .Values.image.vllmVersion (eq (include "vllm-inference.onRay" .) "true") }}
{{- toYaml (merge (dict "vllm-eks.io/vllm-version" (toString $release)) .Values.podAnnotations .Values.annotations) }}
{{- end }}

{{/*
The vLLM release an image declares must be the one it carries where the chart knows it: the
upstream vllm/vllm-openai:vX.Y.Z images carry X.Y.Z; rayproject/ray-llm:2.58.0-* and the AWS Ray
LLM DLC serve-llm-cuda-v1.0.0 carry 0.26.0 (ray[llm]==2.58.0 pins vllm[audio]==0.26.0). Other
images are taken at their word.
*/}}
{{- define "vllm-inference.validateValues.imageVllmVersion" -}}
{{- $v := .Values -}}
{{- if include "vllm-inference.onRay" . -}}
{{- $img := $v.ray.image -}}
{{- $pinned := or (and (eq $img.repository "rayproject/ray-llm") (hasPrefix "2.58.0" (toString $img.tag))) (and (eq $img.repository "public.ecr.aws/deep-learning-containers/ray") (eq (toString $img.tag) "serve-llm-cuda-v1.0.0")) -}}
{{- if and $pinned (not $img.digest) (ne (toString $img.vllmVersion) "0.26.0") -}}
{{- printf "ray.image.vllmVersion: %s:%s carries vLLM 0.26.0 (Ray 2.58.0's llm extra pins vllm[audio]==0.26.0), not %s; set ray.image.repository/tag to an image with vLLM %s, or ray.image.vllmVersion 0.26.0 and plan again without --vllm-version\n" $img.repository $img.tag $img.vllmVersion $img.vllmVersion -}}
{{- end -}}
{{- else -}}
{{- $img := $v.image -}}
{{- $tag := toString ($img.tag | default .Chart.AppVersion) -}}
{{- if and (eq $img.repository "vllm/vllm-openai") (not $img.digest) (regexMatch "^v[0-9]+[.][0-9]+[.][0-9]+$" $tag) (ne (trimPrefix "v" $tag) (toString $img.vllmVersion)) -}}
{{- printf "image.vllmVersion: vllm/vllm-openai:%s carries vLLM %s, not %s; set image.tag to v%s, or image.vllmVersion %s and plan again\n" $tag (trimPrefix "v" $tag) $img.vllmVersion $img.vllmVersion (trimPrefix "v" $tag) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Pod-level securityContext of the model-server and Ray pods: Pod Security "restricted" unless
securityContext.allowRoot opts out (then the image's user applies).
*/}}
{{- define "vllm-inference.podSecurityContext" -}}
{{- $sc := .Values.securityContext -}}
seccompProfile:
  type: RuntimeDefault
{{- if not $sc.allowRoot }}
runAsNonRoot: true
runAsUser: {{ $sc.runAsUser | int }}
runAsGroup: {{ $sc.runAsGroup | int }}
fsGroup: {{ $sc.fsGroup | int }}
{{- end }}
{{- end }}

{{/*
Container securityContext. EFA needs nothing here: the EFA device plugin mounts the
/dev/infiniband devices, and the EKS AMIs run containers with an unlimited memlock limit
(awslabs/amazon-eks-ami#595), so no IPC_LOCK capability and no privilege.
*/}}
{{- define "vllm-inference.containerSecurityContext" -}}
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: {{ .Values.securityContext.readOnlyRootFilesystem }}
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* nodeSelector: the gpu-infra pool (the node label charts/gpu-infra gives a pool's nodes), the
     instance type, the zone, then the user's entries. */}}
{{- define "vllm-inference.nodeSelector" -}}
{{- $v := .Values }}
{{- $nodeSelector := dict }}
{{- with $v.scheduling.pool }}
{{- $_ := set $nodeSelector "vllm-eks.io/pool" . }}
{{- end }}
{{- with $v.scheduling.instanceType }}
{{- $_ := set $nodeSelector "node.kubernetes.io/instance-type" . }}
{{- end }}
{{- with $v.scheduling.zone }}
{{- $_ := set $nodeSelector "topology.kubernetes.io/zone" . }}
{{- end }}
{{- $nodeSelector = merge $nodeSelector $v.scheduling.nodeSelector }}
{{- with $nodeSelector }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* GPU nodes carry the nvidia.com/gpu taint (charts/gpu-infra NodePools, EKS GPU AMIs). */}}
{{- define "vllm-inference.tolerations" -}}
{{- $tolerations := list (dict "key" "nvidia.com/gpu" "operator" "Exists" "effect" "NoSchedule") }}
{{- range .Values.scheduling.tolerations }}
{{- $t := dict "operator" (.operator | default "Equal") }}
{{- with .key }}{{ $_ := set $t "key" . }}{{ end }}
{{- if and .value (ne (toString .operator) "Exists") }}{{ $_ := set $t "value" .value }}{{ end }}
{{- with .effect }}{{ $_ := set $t "effect" . }}{{ end }}
{{- if hasKey . "tolerationSeconds" }}{{ $_ := set $t "tolerationSeconds" (int .tolerationSeconds) }}{{ end }}
{{- $tolerations = append $tolerations $t }}
{{- end }}
{{- toYaml $tolerations }}
{{- end }}

{{/* topologySpreadConstraints; a constraint without labelSelector counts this release's pods. */}}
{{- define "vllm-inference.topologySpreadConstraints" -}}
{{- $constraints := list }}
{{- range .Values.scheduling.topologySpreadConstraints }}
{{- $tsc := deepCopy . }}
{{- if not (hasKey $tsc "labelSelector") }}
{{- $_ := set $tsc "labelSelector" (dict "matchLabels" (include "vllm-inference.selectorLabels" $ | fromYaml)) }}
{{- end }}
{{- $constraints = append $constraints $tsc }}
{{- end }}
{{- with $constraints }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/*
Scheduling and identity keys of every model-server pod spec (after `spec:`), root context.
*/}}
{{- define "vllm-inference.podSpecCommon" -}}
{{- $v := .Values -}}
serviceAccountName: {{ include "vllm-inference.serviceAccountName" . | quote }}
automountServiceAccountToken: {{ $v.serviceAccount.automountToken }}
# Kubernetes would inject <SERVICE>_PORT variables; names starting with VLLM_ collide with
# vLLM's own settings (docs.vllm.ai, "Environment Variables").
enableServiceLinks: false
terminationGracePeriodSeconds: {{ $v.drain.terminationGracePeriodSeconds | int }}
{{- with $v.scheduling.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- include "vllm-inference.podSecurityContext" . | nindent 2 }}
{{- with include "vllm-inference.nodeSelector" . }}
nodeSelector:
  {{- . | nindent 2 }}
{{- end }}
tolerations:
  {{- include "vllm-inference.tolerations" . | nindent 2 }}
{{- with $v.scheduling.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with include "vllm-inference.topologySpreadConstraints" . }}
topologySpreadConstraints:
  {{- . | nindent 2 }}
{{- end }}
{{- with include "vllm-inference.stagingInitContainers" . }}
{{ . }}
{{- end }}
{{- end }}

{{/*
Environment of every model-server container: writable paths on volumes, the Hugging Face token
from its Secret, the NCCL/libfabric settings of multi-node and EFA pods, then extraEnv.
*/}}
{{- define "vllm-inference.env" -}}
{{- $v := .Values }}
{{- $cache := include "vllm-inference.cacheRoot" . }}
{{- $hfToken := $v.model.huggingface.tokenSecret -}}
# Every path the server, Hugging Face, Triton, FlashInfer, torch and Ray write is on a
# volume (cache and /tmp), so the root filesystem stays read-only and no user needs a home
# directory in the image (vLLM envs.py: VLLM_CACHE_ROOT, VLLM_CONFIG_ROOT under XDG_*).
- name: HOME
  value: {{ $cache }}/home
- name: HF_HOME
  value: {{ $cache }}/huggingface
- name: VLLM_CACHE_ROOT
  value: {{ $cache }}/vllm
- name: XDG_CACHE_HOME
  value: {{ $cache }}/xdg
- name: XDG_CONFIG_HOME
  value: {{ $cache }}/config
- name: TRITON_HOME
  value: {{ $cache }}/triton
- name: TRITON_CACHE_DIR
  value: {{ $cache }}/triton/cache
# FlashInfer keeps its JIT-compiled kernels under <base>/.cache/flashinfer.
- name: FLASHINFER_WORKSPACE_BASE
  value: {{ $cache }}/flashinfer
- name: TMPDIR
  value: /tmp
# torch inductor's own cache (FX graphs, kernels) beside vLLM's compile cache
# (VLLM_CACHE_ROOT/torch_compile_cache), on the cache volume so a persistent cache keeps both;
# named, so it does not depend on the user name (default /tmp/torchinductor_<user>).
- name: TORCHINDUCTOR_CACHE_DIR
  value: {{ $cache }}/torchinductor
{{- if include "vllm-inference.onRay" . }}
# Ray's session directory (<RAY_TMPDIR>/ray: logs, sockets, spilled objects).
- name: RAY_TMPDIR
  value: /tmp
{{- end }}
# Named by the image contract check (files/contracts) when the image lacks something.
- name: CONTRACT_IMAGE
  value: {{ ternary (include "vllm-inference.rayImage" .) (include "vllm-inference.image" .) (has $v.topology (list "ray-serve" "disaggregated")) | quote }}
{{- if include "vllm-inference.useToken" . }}
{{ include "vllm-inference.hfTokenEnv" $hfToken }}
{{- end }}
{{- if include "vllm-inference.ncclEnv" . }}
# NCCL/libfabric for aws-ofi-nccl >= 1.7 with libfabric >= 1.18: the plugin selects the efa
# provider and GPUDirect RDMA itself (FI_PROVIDER, FI_EFA_USE_DEVICE_RDMA, FI_EFA_FORK_SAFE are
# not needed: aws/aws-ofi-nccl doc/efa-env-var.md). NCCL's socket bootstrap must skip the EKS
# Pod Identity link-local interface (aws-samples/aws-do-eks#54).
- name: NCCL_SOCKET_IFNAME
  value: {{ $v.nccl.socketIfname | quote }}
{{- with $v.nccl.debug }}
- name: NCCL_DEBUG
  value: {{ . | quote }}
{{- end }}
{{- if and (gt (int $v.efa.devices) 0) (not $v.efa.hugepages2Mi) }}
# The pod requests no hugepages, so libfabric must not try to use them.
- name: FI_EFA_USE_HUGE_PAGE
  value: "0"
{{- end }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* "true" when the pod runs NCCL across nodes or has EFA interfaces. */}}
{{- define "vllm-inference.ncclEnv" -}}
{{- if or (eq .Values.topology "multi-node") (gt (int .Values.efa.devices) 0) }}true{{ end }}
{{- end }}

{{/* The Hugging Face token of a tokenSecret dict (model.huggingface.tokenSecret, staging.tokenSecret):
     HF_TOKEN from the Secret (mountAs env) or HF_TOKEN_PATH at the hf-token volume (mountAs file). */}}
{{- define "vllm-inference.hfTokenEnv" -}}
{{- if eq .mountAs "file" -}}
# huggingface_hub reads the token file named by HF_TOKEN_PATH
# (huggingface.co/docs/huggingface_hub/package_reference/environment_variables).
- name: HF_TOKEN_PATH
  value: /var/run/secrets/huggingface/token
{{- else -}}
- name: HF_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ .key | quote }}
      optional: {{ .optional }}
{{- end }}
{{- end }}

{{/* The hf-token volume of a tokenSecret dict with mountAs file (mounted at /var/run/secrets/huggingface). */}}
{{- define "vllm-inference.hfTokenVolume" -}}
- name: hf-token
  secret:
    secretName: {{ .name | quote }}
    optional: {{ .optional }}
    defaultMode: 0444
    items:
      - key: {{ .key | quote }}
        path: token
{{- end }}

{{/* "true" when the Hugging Face token Secret is used. */}}
{{- define "vllm-inference.useToken" -}}
{{- if and (eq .Values.model.source "huggingface") .Values.model.huggingface.tokenSecret.name }}true{{ end }}
{{- end }}

{{/* requests/limits of a GPU pod: the values' CPU, memory, disk, GPUs and EFA interfaces. */}}
{{- define "vllm-inference.gpuResources" -}}
{{- $v := .Values }}
{{- $r := $v.resources -}}
requests:
  {{- with $r.requests.cpu }}
  cpu: {{ . | quote }}
  {{- end }}
  {{- with $r.requests.memory }}
  memory: {{ . | quote }}
  {{- end }}
  {{- with $r.requests.ephemeralStorage }}
  ephemeral-storage: {{ . | quote }}
  {{- end }}
  {{- with $v.efa.hugepages2Mi }}
  hugepages-2Mi: {{ . | quote }}
  {{- end }}
limits:
  nvidia.com/gpu: {{ $v.engine.tensorParallelSize | int }}
  {{- if gt (int $v.efa.devices) 0 }}
  vpc.amazonaws.com/efa: {{ $v.efa.devices | int }}
  {{- end }}
  {{- with $v.efa.hugepages2Mi }}
  hugepages-2Mi: {{ . | quote }}
  {{- end }}
  {{- with $r.limits.cpu }}
  cpu: {{ . | quote }}
  {{- end }}
  {{- with $r.limits.memory }}
  memory: {{ . | quote }}
  {{- end }}
  {{- with $r.limits.ephemeralStorage }}
  ephemeral-storage: {{ . | quote }}
  {{- end }}
{{- end }}

{{/* volumeMounts of a model-server container. */}}
{{- define "vllm-inference.volumeMounts" -}}
{{- $v := .Values -}}
- name: shm
  mountPath: /dev/shm
- name: cache
  mountPath: {{ include "vllm-inference.cacheRoot" . }}
- name: tmp
  mountPath: /tmp
{{- if and (include "vllm-inference.useToken" .) (eq $v.model.huggingface.tokenSecret.mountAs "file") }}
- name: hf-token
  mountPath: /var/run/secrets/huggingface
  readOnly: true
{{- end }}
{{- with include "vllm-inference.modelVolume" . | fromJson }}
- name: model
  mountPath: {{ .mountPath }}
  readOnly: {{ .readOnly }}
  {{- with .subPath }}
  subPath: {{ . | quote }}
  {{- end }}
{{- end }}
- name: scripts
  mountPath: {{ include "vllm-inference.scriptsPath" . }}
  readOnly: true
{{- if eq $v.topology "multi-node" }}
- name: diagnostics
  mountPath: {{ include "vllm-inference.diagnosticsPath" . }}
  readOnly: true
{{- end }}
{{- with $v.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* volumes of a model-server pod. */}}
{{- define "vllm-inference.volumes" -}}
{{- $v := .Values }}
{{- $hfToken := $v.model.huggingface.tokenSecret -}}
- name: shm
  emptyDir:
    medium: Memory
    sizeLimit: {{ $v.shm.sizeLimit | quote }}
- name: cache
  {{- if eq $v.cache.type "pvc" }}
  persistentVolumeClaim:
    claimName: {{ include "vllm-inference.cacheClaimName" . | quote }}
  {{- else if $v.cache.sizeLimit }}
  emptyDir:
    sizeLimit: {{ $v.cache.sizeLimit | quote }}
  {{- else }}
  emptyDir: {}
  {{- end }}
- name: tmp
  emptyDir: {}
{{- if and (include "vllm-inference.useToken" .) (eq $hfToken.mountAs "file") }}
{{ include "vllm-inference.hfTokenVolume" $hfToken }}
{{- end }}
{{- with include "vllm-inference.modelVolume" . | fromJson }}
# The model's volume (model.source pvc, fsx or mountpointS3; docs/model-sources.md).
- name: model
  persistentVolumeClaim:
    claimName: {{ .claim | quote }}
    readOnly: {{ .readOnly }}
{{- end }}
- name: scripts
  configMap:
    name: {{ include "vllm-inference.fullname" . }}-scripts
    defaultMode: 0444
{{- if eq $v.topology "multi-node" }}
- name: diagnostics
  configMap:
    name: {{ include "vllm-inference.fullname" . }}-diagnostics
    defaultMode: 0444
{{- end }}
{{- with $v.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Where the diagnostics scripts (files/diagnostics) are mounted in multi-node pods. */}}
{{- define "vllm-inference.diagnosticsPath" -}}
/opt/vllm-eks/diagnostics
{{- end }}

{{/* The three probes of the vLLM server container (leader only in multi-node). */}}
{{- define "vllm-inference.probes" -}}
{{- $p := .Values.probes -}}
startupProbe:
  httpGet:
    path: /health
    port: http
  periodSeconds: {{ $p.startup.periodSeconds | int }}
  failureThreshold: {{ $p.startup.failureThreshold | int }}
  timeoutSeconds: {{ $p.startup.timeoutSeconds | int }}
readinessProbe:
  httpGet:
    path: /health
    port: http
  periodSeconds: {{ $p.readiness.periodSeconds | int }}
  failureThreshold: {{ $p.readiness.failureThreshold | int }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds | int }}
{{- /* /health stays 200 while the engine core hangs (stopped, deadlocked, or a multi-node group
       that lost a worker): liveness asks for engine progress instead, token counters moving when
       busy, one token when idle (files/probes/engine_alive.py; docs/topologies.md, "Probes"). */}}
{{- if eq .Values.topology "multi-node" }}
{{ include "vllm-inference.livenessProbe" (dict "root" . "timing" .Values.multiNode.livenessProbe) }}
{{- else }}
{{ include "vllm-inference.livenessProbe" (dict "root" . "timing" .Values.probes.liveness) }}
{{- end }}
{{- end }}

{{/* The engine-progress liveness check; "timing" holds periodSeconds, failureThreshold and
timeoutSeconds. The script gets a second less than the kubelet, so it reports why it failed. */}}
{{- define "vllm-inference.livenessProbe" -}}
{{- $root := .root -}}
livenessProbe:
  exec:
    command:
      - python3
      - {{ include "vllm-inference.scriptsPath" $root }}/engine_alive.py
      - --port
      - {{ include "vllm-inference.containerPort" $root | quote }}
      - --model
      - {{ include "vllm-inference.servedModelName" $root | quote }}
      - --timeout
      - {{ sub (int .timing.timeoutSeconds) 1 | max 1 | quote }}
  periodSeconds: {{ .timing.periodSeconds | int }}
  failureThreshold: {{ .timing.failureThreshold | int }}
  timeoutSeconds: {{ .timing.timeoutSeconds | int }}
{{- end }}

{{/* preStop sleep, so endpoints stop routing before SIGTERM starts vLLM's own drain. */}}
{{- define "vllm-inference.lifecycle" -}}
{{- if gt (int .Values.drain.preStopSeconds) 0 -}}
lifecycle:
  # Endpoints drop the pod while it sleeps; then SIGTERM starts vLLM's own drain
  # (--shutdown-timeout), all inside terminationGracePeriodSeconds.
  preStop:
    sleep:
      seconds: {{ .Values.drain.preStopSeconds | int }}
{{- end }}
{{- end }}

{{/*
checkov skips shared by every model-server pod template, each with the reason it cannot pass
with the chosen values. Returns a JSON list (fromJsonArray by the caller).
*/}}
{{- define "vllm-inference.serverCheckovSkips" -}}
{{- $v := .Values }}
{{- $skips := list }}
{{- if not $v.image.digest }}
{{- $skips = append $skips "CKV_K8S_43=the image is pinned by release tag (appVersion); set image.digest to pin by digest" }}
{{- end }}
{{- if ne $v.image.pullPolicy "Always" }}
{{- $skips = append $skips "CKV_K8S_15=IfNotPresent on purpose: the vLLM image is ~10 GB and pinned, re-pulling on every start delays recovery; set image.pullPolicy Always to change" }}
{{- end }}
{{- if not $v.resources.limits.cpu }}
{{- $skips = append $skips "CKV_K8S_11=no CPU limit on purpose: CFS throttling stalls vLLM's scheduler and tokenizer threads; the CPU request reserves the cores" }}
{{- end }}
{{- if $v.securityContext.allowRoot }}
{{- $skips = append $skips "CKV_K8S_23=securityContext.allowRoot opts out of the non-root default: the pods run as the image's user" }}
{{- end }}
{{- if or $v.securityContext.allowRoot (lt (int $v.securityContext.runAsUser) 10000) }}
{{- $skips = append $skips "CKV_K8S_40=securityContext.runAsUser below 10000 (or allowRoot) chosen in the values" }}
{{- end }}
{{- if not $v.networkPolicy.enabled }}
{{- $skips = append $skips "CKV2_K8S_6=networkPolicy.enabled is false: off by default so clients in other namespaces (gateway, Prometheus) are not cut off on install; enable it and list them in networkPolicy.allowedNamespaces" }}
{{- end }}
{{- $secretEnv := and (include "vllm-inference.useToken" .) (eq $v.model.huggingface.tokenSecret.mountAs "env") }}
{{- if and $v.apiKey.existingSecret (not (include "vllm-inference.onRay" .)) }}{{ $secretEnv = true }}{{ end }}
{{- range $v.extraEnv }}
{{- if and .valueFrom (hasKey .valueFrom "secretKeyRef") }}{{ $secretEnv = true }}{{ end }}
{{- end }}
{{- if $secretEnv }}
{{- $skips = append $skips "CKV_K8S_35=secret environment variables come only from existing Secrets via secretKeyRef, never literals (the validate helper rejects those); mount them as files (model.huggingface.tokenSecret.mountAs file, extraVolumes) to clear this" }}
{{- end }}
{{- toJson $skips }}
{{- end }}

{{/*
The vLLM server container, one list item at column 0, of a Deployment pod (role "single") or a
LeaderWorkerSet leader or worker (roles "leader", "worker"): one definition, so the three cannot
drift. Only the leader of a group adds the master port; a headless worker serves no HTTP, so it
has no http port, API-server env or probes.
Usage: include "vllm-inference.serverContainer" (dict "root" $ "role" "single")
*/}}
{{- define "vllm-inference.serverContainer" -}}
{{- $root := .root }}
{{- $v := $root.Values }}
{{- $role := .role }}
{{- if not (has $role (list "single" "leader" "worker")) }}
{{- fail (printf "vllm-inference.serverContainer: role %q is not single, leader or worker" $role) }}
{{- end }}
{{- $serves := ne $role "worker" -}}
- name: vllm
  image: {{ include "vllm-inference.image" $root | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if eq $role "single" }}
  # The image contract (files/contracts/single-node.sh) first, then exec engine.command
  # with the args below as "$@".
  {{- else if eq $role "worker" }}
  # No probes: a headless worker serves no HTTP. Its vLLM process is the container's
  # main process, so the container ends when the worker's engine does, and the
  # restart recreates the group (docs/topologies.md, "Failure handling").
  {{- end }}
  command:
    {{- include "vllm-inference.serveCommand" $root | nindent 4 }}
  args:
    {{- include "vllm-inference.args" $root | nindent 4 }}
    {{- if ne $role "single" }}
    {{- include "vllm-inference.launcherArgs" (dict "root" $root "leader" (eq $role "leader")) | nindent 4 }}
    {{- end }}
  {{- if $serves }}
  ports:
    - name: http
      containerPort: {{ include "vllm-inference.containerPort" $root }}
      protocol: TCP
    {{- if eq $role "leader" }}
    - name: vllm-master
      containerPort: {{ $v.multiNode.masterPort | int }}
      protocol: TCP
    {{- end }}
  {{- end }}
  env:
    {{- include "vllm-inference.env" $root | nindent 4 }}
    {{- if $serves }}
    {{- with include "vllm-inference.apiServerEnv" $root }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- end }}
  resources:
    {{- include "vllm-inference.gpuResources" $root | nindent 4 }}
  {{- if $serves }}
  {{- include "vllm-inference.probes" $root | nindent 2 }}
  {{- include "vllm-inference.lifecycle" $root | nindent 2 }}
  {{- end }}
  {{- if eq $role "single" }}
  # A failed image contract leaves its one line as the termination message.
  {{- end }}
  terminationMessagePolicy: FallbackToLogsOnError
  securityContext:
    {{- include "vllm-inference.containerSecurityContext" $root | nindent 4 }}
  volumeMounts:
    {{- include "vllm-inference.volumeMounts" $root | nindent 4 }}
{{- end }}
