{{/*
Value rules the schema cannot express (values.schema.json, generated from the pydantic models,
holds every single-field constraint). One helper per cross-key rule, named
vllm-inference.validateValues.<rule>, defined beside the templates of its domain (_model_source,
_ray, _routing, _security, _staging, ...): each prints one line per violation, naming the key, and
nothing when the values follow the rule. vllm-inference.validate calls each once, in this order,
and fails once with every message (templates/validate.yaml). It also runs when a user skips
schema validation (helm --skip-schema-validation).
*/}}
{{- define "vllm-inference.validate" -}}
{{- $out := "" -}}
{{- $out = print $out (include "vllm-inference.validateValues.pipelineParallel" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.groupRollout" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.efaZone" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.imageCapabilities" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.imageVllmVersion" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayEngineArgs" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayModelSource" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayServeReplicas" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.engineKwargsChartOwned" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.kvTransfer" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.kvOffload" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.literalSecrets" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.extraEnvNames" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.extraEnvSource" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.engineArgsChartOwned" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.drainWithinGrace" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.s3ModelName" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.pvcModel" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.s3Buckets" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.cacheVolume" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rolloutProgress" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.networkPolicyClients" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayAuth" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.serviceAccountName" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.irsaRoleArn" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.nonRootUser" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.restrictedVolumes" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.requestsWithinLimits" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.shmWithinMemoryLimit" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.shmHoldsKvOffload" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.metadataKeys" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.routing" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.apiKey" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.rayRequestRouter" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.benchmark" .) -}}
{{- $out = print $out (include "vllm-inference.validateValues.staging" .) -}}
{{- $errors := compact (splitList "\n" $out) -}}
{{- if $errors -}}
{{- fail (printf "\n\nvllm-inference: invalid values:\n- %s\n" (join "\n- " $errors)) -}}
{{- end -}}
{{- end -}}
