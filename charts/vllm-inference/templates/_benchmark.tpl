{{/* The benchmark sweep (templates/benchmark-job.yaml): checked only when it is rendered. The schema
     holds the single-field rules; these repeat the ones a skipped schema would let through. */}}
{{- define "vllm-inference.validateValues.benchmark" -}}
{{- $b := .Values.benchmark -}}
{{- if $b.enabled -}}
{{- if not $b.concurrencies -}}
{{- print "benchmark.concurrencies: give at least one concurrency level, e.g. [1, 2, 4, 8]\n" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $i, $c := $b.concurrencies -}}
{{- if lt (int $c) 1 -}}
{{- printf "benchmark.concurrencies[%d]: %v is not a positive concurrency\n" $i $c -}}
{{- else if hasKey $seen (toString (int $c)) -}}
{{- printf "benchmark.concurrencies[%d]: %d is listed twice (each level runs once)\n" $i (int $c) -}}
{{- end -}}
{{- $_ := set $seen (toString (int $c)) true -}}
{{- end -}}
{{- range $k := list "inputLen" "outputLen" -}}
{{- if lt (int (index $b.requestShape $k)) 1 -}}
{{- printf "benchmark.requestShape.%s: must be >= 1 tokens, got %v\n" $k (index $b.requestShape $k) -}}
{{- end -}}
{{- end -}}
{{- if and $b.output.claimName $b.output.s3Uri -}}
{{- print "benchmark.output.claimName, benchmark.output.s3Uri: set one of them, not both\n" -}}
{{- end -}}
{{- if and (not $b.tokenizer) (ne (toString .Values.model.source) "huggingface") -}}
{{- printf "benchmark.tokenizer: required with model.source %s (model.name %s is not a Hugging Face model id); give a Hugging Face id or a path in the benchmark image\n" (toString .Values.model.source) .Values.model.name -}}
{{- end -}}
{{- $ds := $b.requestShape.dataset -}}
{{- if and $ds.name (not $ds.path) -}}
{{- printf "benchmark.requestShape.dataset.path: required with dataset.name %s\n" $ds.name -}}
{{- end -}}
{{- if and $ds.path (not $ds.name) -}}
{{- print "benchmark.requestShape.dataset.name: required with dataset.path (custom or sharegpt)\n" -}}
{{- end -}}
{{- if and $ds.claimName (not (hasPrefix "/datasets/" $ds.path)) -}}
{{- printf "benchmark.requestShape.dataset.path: with dataset.claimName the file is under /datasets/, got %q\n" $ds.path -}}
{{- end -}}
{{- end -}}
{{- end -}}
