"""vllm-eks: size vLLM deployments on Amazon EKS by arithmetic and write Helm values for them.

The subpackages are the stages of one pipeline; each imports only from itself and the stages
above it in this drawing (tests/unit/test_layers.py enforces it):

    core        errors, units, derivation lines, topology kinds, other projects' API names
    spec        PlanRequest (what the user asks), the Plan and its sections, engine settings
    model       config.json -> Architecture; attention backend, hybrid state, weight bytes
    catalog     --model / --instance -> a model config (catalog, Hub, path) and Hardware (CSV, EC2)
    memory      Architecture x Hardware x layout -> the per-GPU budget (weights, KV, overheads)
    planning    PlanRequest -> Plan: decisions (TP/PP, context, batch), then one module per section
    bench       `vllm bench serve` sweeps -> knee, cost per million tokens, Plan feedback
    recommend   a model -> catalog instance types ranked by cost (`vllm-eks recommend`)
    values      Plan -> per-chart values models (the source of every values.schema.json)
    output      Plan + values -> scenario folder, commented values files, the report
    check       rendered workloads -> scheduling fit on the GPU pools; memory model vs real logs
    verify      values folders -> helm lint, strict schemas (Kubernetes, CRDs), check-fit, promtool
    cli         the `vllm-eks` commands

Data flows top to bottom: `vllm-eks values` resolves the model and instance (catalog), sizes the
memory (memory), makes the Plan (planning), builds each chart's values (values) and writes the
folder (output).
"""

__version__ = "0.1.0"
