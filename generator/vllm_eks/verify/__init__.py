"""`vllm-eks verify`: the project's own checks on a values folder, for a team that keeps a fork
of values/: helm lint and template of every chart, strict schemas of every rendered object
(Kubernetes OpenAPI for built-in kinds, pinned CRDs for custom resources), check-fit, and
promtool on the rendered alert and recording rules.

The schema modules (k8s_schema, crd_schema, objects and their helpers) are also the test
suite's validators; they need the `verify` extra (jsonschema, kubernetes-validate)."""
