{{/*
Names, labels and pieces of the routing objects (routing.mode gateway and alb) and of the API key.
Upstream sources: kubernetes-sigs/gateway-api-inference-extension@v1.5.0 (the Endpoint Picker:
config/charts/epplib/templates/_deployment.yaml, pkg/epp/server/options.go), the pinned
InferencePool v1 and HTTPRoute v1 CRDs, and the AWS Load Balancer Controller's
docs/guide/ingress/annotations.md.
*/}}

{{/* Name of the Endpoint Picker's Deployment, Service, ServiceAccount, ConfigMap, Role and
     NetworkPolicy: <fullname>-epp, at most 63 characters (a Service name). */}}
{{- define "vllm-inference.pickerName" -}}
{{- printf "%s-epp" (include "vllm-inference.fullname" . | trunc 59 | trimSuffix "-") }}
{{- end }}

{{/* Selector labels of the picker pods: never the servers' (component endpoint-picker). */}}
{{- define "vllm-inference.pickerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm-inference.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: endpoint-picker
{{- end }}

{{/* Labels of every picker object: the chart's labels with component endpoint-picker and the
     picker's own version, then the user's extra labels. */}}
{{- define "vllm-inference.pickerLabels" -}}
{{- $labels := include "vllm-inference.labels" . | fromYaml }}
{{- $_ := set $labels "app.kubernetes.io/component" "endpoint-picker" }}
{{- $_ := set $labels "app.kubernetes.io/version" (regexReplaceAll "^[^A-Za-z0-9]+|[^A-Za-z0-9]+$" (.Values.routing.gateway.picker.image.tag | trunc 63) "") }}
{{- toYaml $labels }}
{{- end }}

{{/* The InferencePool's pod selector: the servers' selector labels; multi-node: leaders only
     (only the leader of a group serves HTTP). */}}
{{- define "vllm-inference.poolSelector" -}}
{{ include "vllm-inference.selectorLabels" . }}
{{- if eq .Values.topology "multi-node" }}
{{ include "vllm-inference.leaderLabel" . }}
{{- end }}
{{- end }}

{{/* The gRPC ports of the picker (pkg/epp/server/options.go defaults, GIE v1.5.0). */}}
{{- define "vllm-inference.pickerGrpcPort" -}}
9002
{{- end }}
{{- define "vllm-inference.pickerHealthPort" -}}
9003
{{- end }}
{{- define "vllm-inference.pickerMetricsPort" -}}
9090
{{- end }}

{{/* "true" when the Endpoint Picker and its objects are rendered. */}}
{{- define "vllm-inference.gatewayMode" -}}
{{- if and (eq (toString .Values.routing.mode) "gateway") (not (include "vllm-inference.onRay" .)) }}true{{ end }}
{{- end }}

{{/* Namespaces of the Gateways the HTTPRoute attaches to (the release namespace for a parentRef
     without one), as a JSON list without repeats. */}}
{{- define "vllm-inference.gatewayNamespaces" -}}
{{- $out := list }}
{{- range .Values.routing.gateway.parentRefs }}
{{- $out = append $out (default $.Release.Namespace .namespace) }}
{{- end }}
{{- toJson (uniq $out) }}
{{- end }}

{{/* Keep-alive of the servers behind a load balancer or gateway: 5 s above its idle timeout
     for connections to the servers (routing.alb.idleTimeoutSeconds,
     routing.gateway.upstreamIdleTimeoutSeconds), so it never sends a request on a connection the
     server is closing (AWS recommends a backend keep-alive larger than the load balancer's idle
     timeout; Envoy's upstream connections idle for up to an hour by default). Empty for
     routing.mode service. */}}
{{- define "vllm-inference.backendKeepAlive" -}}
{{- $mode := toString .Values.routing.mode -}}
{{- if eq $mode "alb" }}{{ add (int .Values.routing.alb.idleTimeoutSeconds) 5 }}
{{- else if eq $mode "gateway" }}{{ add (int .Values.routing.gateway.upstreamIdleTimeoutSeconds) 5 }}{{ end }}
{{- end }}

{{/*
Environment of the container that serves the OpenAI API (single-node server, multi-node leader):
the API key from its Secret and, behind an ALB or a gateway, the HTTP keep-alive. May be empty.
- VLLM_API_KEY: read when --api-key is absent (vLLM 0.32.0 vllm/entrypoints/serve/middleware/
  register.py; envs.py); it guards /v1, /v2, /inference and /cohere paths only.
- VLLM_HTTP_TIMEOUT_KEEP_ALIVE: uvicorn's timeout_keep_alive of the API server, default 5 s, far
  below an ALB's or Envoy's idle timeout (vLLM 0.32.0 wheel: vllm/envs.py L1143,
  vllm/entrypoints/launchers/api_server/entry.py L153).
*/}}
{{- define "vllm-inference.apiServerEnv" -}}
{{- with .Values.apiKey.existingSecret }}
- name: VLLM_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $.Values.apiKey.secretKey | quote }}
{{- end }}
{{- with include "vllm-inference.backendKeepAlive" . }}
- name: VLLM_HTTP_TIMEOUT_KEEP_ALIVE
  value: {{ . | quote }}
{{- end }}
{{- end }}

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
{{- /* the same Gateway listener twice: an empty namespace is the release's */ -}}
{{- $seen := dict -}}
{{- range $i, $p := $r.gateway.parentRefs -}}
{{- $ref := printf "%s/%s/%s" (default $.Release.Namespace $p.namespace) $p.name (default "" $p.sectionName) -}}
{{- if hasKey $seen $ref -}}
{{- printf "routing.gateway.parentRefs[%d]: %s (namespace/name/sectionName) repeats parentRefs[%v]; give each Gateway listener once\n" $i $ref (get $seen $ref) -}}
{{- else -}}
{{- $_ := set $seen $ref $i -}}
{{- end -}}
{{- end -}}
{{- $w := $r.gateway.picker.scorers -}}
{{- if and (eq (int $w.queue) 0) (eq (int $w.kvCacheUtilization) 0) (eq (int $w.prefixCache) 0) -}}
{{- print "routing.gateway.picker.scorers: every weight is 0, so the picker would choose pods at random; give queue, kvCacheUtilization or prefixCache a weight above 0\n" -}}
{{- end -}}
{{- else if eq $mode "alb" -}}
{{- if not $r.alb.certificateArn -}}
{{- print "routing.alb.certificateArn: required when routing.mode is alb (an ACM certificate ARN: the ALB listens on HTTPS 443 only)\n" -}}
{{- end -}}
{{- $edgeAuth := hasKey $r.alb.annotations "alb.ingress.kubernetes.io/auth-type" -}}
{{- $keyed := and .Values.apiKey.existingSecret (not (include "vllm-inference.onRay" .)) -}}
{{- if and (eq (toString $r.alb.scheme) "internet-facing") (not $keyed) (not $edgeAuth) -}}
{{- if include "vllm-inference.onRay" . -}}
{{- printf "routing.alb.scheme: internet-facing would publish topology %s's API without authentication (Ray Serve checks no API key): add the ALB's authentication (routing.alb.annotations alb.ingress.kubernetes.io/auth-type cognito or oidc, with its auth-idp-* annotation) or use scheme internal\n" (toString .Values.topology) -}}
{{- else -}}
{{- print "routing.alb.scheme: internet-facing would publish the API without authentication: set apiKey.existingSecret (vLLM's API key), or the ALB's authentication (routing.alb.annotations alb.ingress.kubernetes.io/auth-type), or use scheme internal\n" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The paths the edge (HTTPRoute, Ingress) publishes: the OpenAI API under /v1, which is what
     vLLM's API key guards (vLLM 0.32 entrypoints/serve/middleware/authenticate.py GUARDED_PREFIX
     /v1 /v2 /inference /cohere). Its other routes stay inside the cluster: POST /invocations
     (SageMaker's, the same inference without the key), /tokenize, /metrics, /load,
     /server_info, /scale_elastic_ep. Ray Serve's OpenAI app serves under /v1 too. Health checks
     reach the targets directly (the ALB's health check, the kubelet's probes), not through it. */}}
{{- define "vllm-inference.edgePathPrefix" -}}
/v1
{{- end -}}
