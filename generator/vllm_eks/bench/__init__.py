"""Concurrency sweeps with `vllm bench serve`: run them, load their result files, find the knee,
turn throughput into cost per million tokens, plot, compare with the Plan and recommend engine
and autoscaling settings.

One module per concern: results (the result file model and loading), knee (the knee and the SLO
limit), cost, plots, compare (Plan estimates against measurements), sweep_settings (the
recommended engine and autoscaling settings), analyze (the report), runner (the sweep) and
feedback (`--from-benchmark`: the recommendations into the Plan).

For other parts of the project (a values --from-benchmark, a chart benchmark Job):
- `analyze.analyze(paths, plan=...) -> Analysis` (with `results.load_sweep(paths)` to load once):
  `Analysis.recommendation.max_num_seqs` / `.keda_queue_threshold` (with their reasons),
  `.knee`, `.slo`, `.costs`, `.comparison`; `analyze.to_json` is the `--json` form.
- `runner.bench_args(...)` is the `vllm bench serve` argument list of one level, and
  `runner.result_name(c)` its result file name; `cost.cost_per_million_tokens(usd_per_hour,
  tokens_per_s)` the cost formula."""
