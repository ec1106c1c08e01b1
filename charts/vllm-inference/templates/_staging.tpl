{{/*
The staging Job (staging-job.yaml) and what the server pods share with it: the claim, the
directory, the marker the Job writes last (files/staging/stage_weights.py) and the init container
that waits for it. docs/staging.md.
*/}}

{{/* The claim of target pvc: staging.pvc.claimName, or <fullname>-weights when the chart creates it. */}}
{{- define "vllm-inference.stagingClaimName" -}}
{{- .Values.staging.pvc.claimName | default (printf "%s-weights" (include "vllm-inference.fullname" . | trunc 55 | trimSuffix "-")) -}}
{{- end }}

{{/* Directory inside the claim the repo is copied into: staging.pvc.path, else the repo id. */}}
{{- define "vllm-inference.stagingDir" -}}
{{- .Values.staging.pvc.path | default .Values.staging.repo -}}
{{- end }}

{{/* The file the Job writes once every file is in place (stage_weights.py MARKER). */}}
{{- define "vllm-inference.stagingMarker" -}}
.vllm-eks-staged
{{- end -}}

{{/* The record a failed staging run leaves beside the marker (files/staging/stage_weights.py FAILURE). */}}
{{- define "vllm-inference.stagingFailure" -}}
.vllm-eks-staging-failed
{{- end }}

{{/*
What the server pods wait for: "pvc" when they load model.name from the staging claim, "s3" when
they stream staging.s3Uri; empty when staging is off, staging.waitInServer is false or the servers
load from elsewhere (the validate helper checks that a matching source names the same place).
*/}}
{{- define "vllm-inference.stagingWait" -}}
{{- $s := .Values.staging }}
{{- $m := .Values.model }}
{{- if and $s.enabled $s.waitInServer }}
{{- if and (eq $s.target "pvc") (eq $m.source "pvc") (eq $m.pvc.claimName (include "vllm-inference.stagingClaimName" .)) }}pvc
{{- else if and (eq $s.target "s3") (eq $m.source "s3") (eq (trimSuffix "/" $m.name) (trimSuffix "/" $s.s3Uri)) }}s3
{{- end }}
{{- end }}
{{- end }}

{{/*
initContainers of a server pod (after `spec:`, root context): with staging.waitInServer, one
container that polls for the Job's marker where the server loads the model, so vLLM starts only
on a complete copy (never on half a checkpoint) and the startup probe's budget is not spent
waiting. A failure the Job recorded there stops the wait when it is final (exit 78: the Job fails
at once; the container exits 1 naming it, and the pod shows Init:Error with that line as its
termination message) and is shown while waiting otherwise (the Job retries). It runs the server's own image: sh for the claim, python3 and boto3 for S3 (the S3 source
needs boto3 already: runai_model_streamer_s3 imports it, docs/staging.md).
*/}}
{{- define "vllm-inference.stagingInitContainers" -}}
{{- $wait := include "vllm-inference.stagingWait" . }}
{{- if $wait }}
{{- $v := .Values }}
{{- $image := ternary (include "vllm-inference.rayImage" .) (include "vllm-inference.image" .) (has $v.topology (list "ray-serve" "disaggregated")) -}}
initContainers:
  - name: wait-for-staged-weights
    image: {{ $image | quote }}
    imagePullPolicy: {{ $v.image.pullPolicy }}
    {{- if eq $wait "pvc" }}
    command:
      - /bin/sh
      - -c
      - |
        marker="$0/{{ include "vllm-inference.stagingMarker" . }}"
        failed="$0/{{ include "vllm-inference.stagingFailure" . }}"
        until [ -f "$marker" ]; do
          if [ -f "$failed" ]; then
            why=$(tr -d '\n' < "$failed")
            if grep -q '"final": true' "$failed"; then
              echo "the staging Job failed and will not retry: $why"; exit 1
            fi
            echo "waiting for the staging Job, whose last run failed: $why"
          else
            echo "waiting for the staging Job: no $marker yet"
          fi
          sleep 15
        done
        echo "staged: $(cat "$marker")"
      - {{ $v.model.name | quote }}
    {{- else }}
    command:
      - python3
      - -c
      - |
        import json, sys, time, boto3
        bucket, _, prefix = sys.argv[1][5:].partition("/")
        under = prefix.strip("/") + "/" if prefix.strip("/") else ""
        key, failed = under + sys.argv[2], under + sys.argv[3]
        s3 = boto3.client("s3")
        def read(name):
            try:
                return s3.get_object(Bucket=bucket, Key=name)["Body"].read().decode()
            except s3.exceptions.NoSuchKey:
                return None
        while (staged := read(key)) is None:
            why = read(failed)
            if why is None:
                print(f"waiting for the staging Job: no s3://{bucket}/{key} yet", flush=True)
            elif json.loads(why).get("final"):
                sys.exit("the staging Job failed and will not retry: " + " ".join(why.split()))
            else:
                print("waiting for the staging Job, whose last run failed:", " ".join(why.split()), flush=True)
            time.sleep(15)
        print("staged:", staged, flush=True)
      - {{ trimSuffix "/" $v.model.name | quote }}
      - {{ include "vllm-inference.stagingMarker" . | quote }}
      - {{ include "vllm-inference.stagingFailure" . | quote }}
    env:
      - name: HOME
        value: /tmp
    {{- end }}
    terminationMessagePolicy: FallbackToLogsOnError
    resources:
      requests:
        cpu: 10m
        memory: 64Mi
      limits:
        cpu: 200m
        memory: 256Mi
    securityContext:
      {{- include "vllm-inference.containerSecurityContext" . | nindent 6 }}
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      {{- if eq $wait "pvc" }}
      - name: model
        mountPath: {{ $v.model.pvc.mountPath }}
        readOnly: true
      {{- end }}
{{- end }}
{{- end }}

{{/* Cross-key rules of staging.* (called by vllm-inference.validate). */}}
{{- define "vllm-inference.validateValues.staging" -}}
{{- $s := .Values.staging -}}
{{- $m := .Values.model -}}
{{- if $s.enabled -}}
{{- if not $s.repo -}}
staging.repo is empty: staging.enabled needs the Hugging Face repo id to copy
{{ end -}}
{{- if and (eq $s.target "s3") (not $s.s3Uri) -}}
staging.s3Uri is empty: staging.target s3 needs the s3://bucket/prefix to copy under
{{ end -}}
{{- if eq $s.target "pvc" -}}
{{- if and (not $s.pvc.create) (not $s.pvc.claimName) -}}
staging.pvc.claimName is empty and staging.pvc.create is false: name an existing claim or let the chart create one
{{ end -}}
{{- if and $s.pvc.create (not $s.pvc.size) -}}
staging.pvc.size is empty: staging.pvc.create needs the claim's size (the generator writes the Plan's weights plus a margin)
{{ end -}}
{{- if and $s.pvc.create $s.pvc.size (include "vllm-inference.zeroQuantity" $s.pvc.size) -}}
staging.pvc.size ({{ $s.pvc.size }}): a created claim must hold the checkpoint (the generator writes the Plan's weights plus a margin)
{{ end -}}
{{- if and $s.pvc.create (eq (toString $s.pvc.accessMode) "ReadWriteMany") (not $s.pvc.storageClassName) -}}
staging.pvc.storageClassName: required when staging.pvc.create makes a ReadWriteMany claim: EKS's default StorageClass (EBS) cannot provision ReadWriteMany, so the claim, the Job and the servers would stay Pending; name an EFS or FSx for Lustre class
{{ end -}}
{{- if and $s.waitInServer (has (toString $m.source) (list "fsx" "mountpointS3")) -}}
staging.target pvc copies into a claim the servers never mount: model.source {{ $m.source }} mounts its own volume; stage with model.source pvc on the staging claim, or set staging.waitInServer false to stage for elsewhere
{{ end -}}
{{- $claim := include "vllm-inference.stagingClaimName" . -}}
{{- if and $s.waitInServer (eq $m.source "pvc") -}}
{{- if ne $m.pvc.claimName $claim -}}
model.pvc.claimName ({{ $m.pvc.claimName }}) is not the staging claim ({{ $claim }}): the servers would not load the staged copy; name the same claim, or set staging.waitInServer false to stage for elsewhere
{{ end -}}
{{- if $m.pvc.subPath -}}
model.pvc.subPath ({{ $m.pvc.subPath }}) must be empty when the servers wait for the staged copy: model.name names the staged directory under model.pvc.mountPath
{{ end -}}
{{- $want := printf "%s/%s" (trimSuffix "/" $m.pvc.mountPath) (include "vllm-inference.stagingDir" .) -}}
{{- if ne (trimSuffix "/" $m.name) $want -}}
model.name ({{ $m.name }}) must be {{ $want }}: the servers load what the staging Job copies to staging.pvc.path ({{ include "vllm-inference.stagingDir" . }}) on claim {{ $claim }}
{{ end -}}
{{- end -}}
{{- end -}}
{{- if and $s.waitInServer (eq $s.target "s3") (eq $m.source "s3") $s.s3Uri (ne (trimSuffix "/" $m.name) (trimSuffix "/" $s.s3Uri)) -}}
model.name ({{ $m.name }}) must be staging.s3Uri ({{ $s.s3Uri }}) when the servers wait for the staged copy (staging.waitInServer); set waitInServer false to stage elsewhere
{{ end -}}
{{- end -}}
{{- end -}}
