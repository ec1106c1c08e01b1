{{/*
Credentials, identity and who may connect: secrets only by reference, non-root pods, a named
ServiceAccount, a NetworkPolicy that admits someone, the API key where vLLM checks it.
*/}}

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

{{/* extraEnv: credentials come from a Secret, and the variables the chart sets are its own. */}}
{{- define "vllm-inference.validateValues.extraEnvNames" -}}
{{- $secretEnv := list "HF_TOKEN" "HUGGING_FACE_HUB_TOKEN" "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" "AWS_SESSION_TOKEN" -}}
{{- $chartEnv := list "HF_TOKEN" "HF_TOKEN_PATH" "HF_HOME" "VLLM_CACHE_ROOT" "XDG_CACHE_HOME" "XDG_CONFIG_HOME" "HOME" "TMPDIR" -}}
{{- $routingEnv := dict -}}
{{- if and .Values.apiKey.existingSecret (not (include "vllm-inference.onRay" .)) -}}
{{- $_ := set $routingEnv "VLLM_API_KEY" "apiKey.existingSecret" -}}
{{- end -}}
{{- if include "vllm-inference.backendKeepAlive" . -}}
{{- $_ := set $routingEnv "VLLM_HTTP_TIMEOUT_KEEP_ALIVE" (ternary "routing.alb.idleTimeoutSeconds" "routing.gateway.upstreamIdleTimeoutSeconds" (eq (toString .Values.routing.mode) "alb")) -}}
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

{{/* An existing ServiceAccount is named. */}}
{{- define "vllm-inference.validateValues.serviceAccountName" -}}
{{- if and (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) -}}
{{- print "serviceAccount.name: required when serviceAccount.create is false\n" -}}
{{- end -}}
{{- end -}}

{{/* The IRSA annotation names an IAM role ARN (arn:PARTITION:iam::ACCOUNT:role/PATH/NAME, the
generator's IAM_ROLE_ARN): a value that is no role ARN cannot be assumed, and the pods would fail
reading S3 only when they load the model. */}}
{{- define "vllm-inference.validateValues.irsaRoleArn" -}}
{{- with (get (.Values.serviceAccount.annotations | default dict) "eks.amazonaws.com/role-arn") -}}
{{- if not (regexMatch "^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$" (toString .)) -}}
{{- printf "serviceAccount.annotations[eks.amazonaws.com/role-arn] (%s): not an IAM role ARN; give arn:aws:iam::ACCOUNT_ID:role/NAME\n" (toString .) -}}
{{- end -}}
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

{{/* Pod Security restricted (the default, securityContext.allowRoot false) admits only these volume
     sources (kubernetes.io/docs/concepts/security/pod-security-standards, "Volume Types"): a
     hostPath or any other extra volume would get every pod rejected by a restricted namespace. */}}
{{- define "vllm-inference.validateValues.restrictedVolumes" -}}
{{- if not .Values.securityContext.allowRoot -}}
{{- $allowed := list "name" "configMap" "csi" "downwardAPI" "emptyDir" "ephemeral" "persistentVolumeClaim" "projected" "secret" -}}
{{- range $i, $v := .Values.extraVolumes -}}
{{- range $source := keys $v | sortAlpha -}}
{{- if not (has $source $allowed) -}}
{{- printf "extraVolumes[%d].%s: not allowed under Pod Security restricted (the chart's default); use configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected or secret, or set securityContext.allowRoot: true to opt out of restricted\n" $i $source -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A NetworkPolicy admits at least one client. */}}
{{- define "vllm-inference.validateValues.networkPolicyClients" -}}
{{- $np := .Values.networkPolicy -}}
{{- if and $np.enabled (not $np.allowedNamespaces) (not $np.allowSameNamespace) -}}
{{- print "networkPolicy.allowedNamespaces: empty with allowSameNamespace false would admit no client at all\n" -}}
{{- end -}}
{{- if and $np.enabled (eq (toString .Values.routing.mode) "alb") (not $np.albSourceCidrs) -}}
{{- print "networkPolicy.albSourceCidrs: required when routing.mode is alb and networkPolicy.enabled (the ALB connects from its ENIs in the VPC's subnets: list the VPC CIDR, e.g. 10.0.0.0/16), or set networkPolicy.enabled false\n" -}}
{{- end -}}
{{- if and $np.enabled (include "vllm-inference.onRay" .) (not $np.rayOperator.namespaces) -}}
{{- printf "networkPolicy.rayOperator.namespaces: empty on topology %s while networkPolicy.enabled (the KubeRay operator deploys the serve config through the Ray dashboard, which only it may reach): list the operator's namespace, e.g. ray-system\n" (toString .Values.topology) -}}
{{- end -}}
{{- end -}}

{{/* KubeRay refuses token authentication below Ray 2.52 (utils/validation.go). */}}
{{- define "vllm-inference.validateValues.rayAuth" -}}
{{- if and (include "vllm-inference.onRay" .) (eq .Values.ray.auth.mode "token") (semverCompare "<2.52.0" (toString .Values.ray.version)) -}}
{{- printf "ray.auth.mode: token needs ray.version 2.52.0 or later (got %s; KubeRay refuses the RayCluster otherwise): use a newer Ray image or set ray.auth.mode disabled\n" (toString .Values.ray.version) -}}
{{- end -}}
{{- end -}}

{{/* The API key is vLLM's own check, which Ray Serve's OpenAI app does not run. */}}
{{- define "vllm-inference.validateValues.apiKey" -}}
{{- if and .Values.apiKey.existingSecret (include "vllm-inference.onRay" .) -}}
{{- printf "apiKey.existingSecret: not supported on topology %s (Ray Serve's OpenAI app does not check vLLM's API key); authenticate at the load balancer instead (routing.mode alb with routing.alb.annotations auth-type oidc or cognito)\n" (toString .Values.topology) -}}
{{- end -}}
{{- end -}}
