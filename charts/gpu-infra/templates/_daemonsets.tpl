{{/*
The node DaemonSets (NVIDIA and EFA device plugins, DCGM exporter): what they share, and the rules
that keep a GPU or EFA node from coming up without its plugin.
*/}}

{{/* Tolerations of the node DaemonSets: the GPU taint, and any NoSchedule/NoExecute taint an
operator adds while draining, so device plugins keep serving until the node goes. */}}
{{- define "gpu-infra.daemonSetTolerations" -}}
- key: {{ include "gpu-infra.gpuTaintKey" . }}
  operator: Exists
  effect: NoSchedule
- key: CriticalAddonsOnly
  operator: Exists
{{- end -}}

{{/* Pod security shared by the DaemonSets: seccomp RuntimeDefault, no service-account token. */}}
{{- define "gpu-infra.podSecurityContext" -}}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Where the DCGM exporter finds the chart's counters file (dcgm-exporter-configmap.yaml). A
directory of its own, so the image's /etc/dcgm-exporter stays as shipped. */}}
{{- define "gpu-infra.dcgmCountersDir" -}}/etc/dcgm-exporter/chart{{- end -}}
{{- define "gpu-infra.dcgmCountersKey" -}}counters.csv{{- end -}}
{{- define "gpu-infra.dcgmCountersPath" -}}
{{- printf "%s/%s" (include "gpu-infra.dcgmCountersDir" .) (include "gpu-infra.dcgmCountersKey" .) -}}
{{- end -}}

{{/* DCGM_EXP_XID_ERRORS_COUNT window: 5 minutes, the exporter's own default at 4.5.3-4.8.2. */}}
{{- define "gpu-infra.dcgmXidCountWindowMs" -}}300000{{- end -}}

{{/* Bottlerocket runs its own NVIDIA device plugin: the chart's must be off. */}}
{{- define "gpu-infra.validateValues.bottlerocketDevicePlugin" -}}
{{- if and (eq .Values.amiFamily "bottlerocket") .Values.nvidiaDevicePlugin.enabled -}}
{{- print "nvidiaDevicePlugin.enabled: must be false with amiFamily: bottlerocket (the Bottlerocket NVIDIA AMI runs its own device plugin; a second one conflicts)\n" -}}
{{- end -}}
{{- end -}}

{{/* A pool with efa: true needs the chart's EFA device plugin (nothing else advertises EFA). */}}
{{- define "gpu-infra.validateValues.efaDevicePlugin" -}}
{{- $anyEfa := false -}}
{{- range (include "gpu-infra.pools" . | fromJson).pools -}}
{{- if .efa -}}
{{- $anyEfa = true -}}
{{- end -}}
{{- end -}}
{{- if and $anyEfa (not .Values.efaDevicePlugin.enabled) -}}
{{- print "efaDevicePlugin.enabled: must be true when a pool has efa: true (nothing else advertises vpc.amazonaws.com/efa)\n" -}}
{{- end -}}
{{- end -}}

{{/*
A Kubernetes quantity (the schema has checked its form) as a float in base units: 1500m -> 1.5,
16Gi -> 17179869184. Used only to compare two quantities.
*/}}
{{- define "gpu-infra.quantityValue" -}}
{{- $q := toString . -}}
{{- $number := regexFind "^[0-9]+([.][0-9]+)?" $q -}}
{{- $scale := dict "" 1.0 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18
    "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0
    "Ei" 1152921504606846976.0 -}}
{{- mulf (float64 $number) (get $scale (trimPrefix $number $q)) -}}
{{- end -}}

{{/* Each DaemonSet's resource requests at most its limits (the API server rejects the pods otherwise). */}}
{{- define "gpu-infra.validateValues.requestsWithinLimits" -}}
{{- range $ds := list "nvidiaDevicePlugin" "efaDevicePlugin" "dcgmExporter" -}}
{{- $r := (index $.Values $ds).resources -}}
{{- range $name := list "cpu" "memory" -}}
{{- $req := get $r.requests $name -}}
{{- $lim := get $r.limits $name -}}
{{- if gt (float64 (include "gpu-infra.quantityValue" $req)) (float64 (include "gpu-infra.quantityValue" $lim)) -}}
{{- printf "%s.resources.requests.%s: %v is above %s.resources.limits.%s %v (a request may not exceed its limit)\n" $ds $name $req $ds $name $lim -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
