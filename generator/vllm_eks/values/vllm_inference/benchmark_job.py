"""Values of charts/vllm-inference's benchmark Job (`benchmark`): `vllm bench serve` once per
concurrency level against the release's Service, with the arguments `vllm-eks bench run` uses
(bench/runner.py), one JSON result per level on stdout (lines starting `VLLM_EKS_BENCH_RESULT `)
and, optionally, on a PVC or in S3.

The image defaults to the server image (vllm/vllm-openai has `vllm bench serve`). The API key,
when apiKey.existingSecret is set, goes in OPENAI_API_KEY: vLLM 0.32's benchmark client sends it
as `Authorization: Bearer` (vllm/benchmarks/lib/endpoint_request_func.py, `_get_headers`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from vllm_eks.bench.runner import MIN_PROMPTS, PROMPTS_PER_SLOT
from vllm_eks.values.base import OPTIONAL_DNS1123_SUBDOMAIN, OPTIONAL_IMAGE_TAG, Int32, ResourceList, ValuesModel

# An S3 prefix the results are copied under (s3://bucket[/prefix]), or empty.
OPTIONAL_S3_URI = r"^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?)?$"
OPTIONAL_ABSOLUTE_PATH = r"^(/[^:\s]*)?$"
Concurrency = Annotated[int, Field(ge=1, le=100_000)]


class BenchmarkImage(ValuesModel):
    repository: str = Field("", description=(
        "Image with `vllm` (and python3 with boto3 when output.s3Uri is set); empty: the server image "
        "(image.repository, tag and digest)"))
    tag: str = Field("", pattern=OPTIONAL_IMAGE_TAG, description="Image tag (with repository)")
    digest: str = Field("", pattern=r"^(sha256:[a-f0-9]{64})?$", description=(
        "Image digest (sha256:...), with repository; overrides the tag"))
    pull_policy: Literal["IfNotPresent", "Always", "Never"] = Field(
        "IfNotPresent", description="imagePullPolicy of the container")


class BenchmarkDataset(ValuesModel):
    name: Literal["", "custom", "sharegpt"] = Field("", description=(
        "vllm bench serve --dataset-name of a dataset file (custom: JSONL with a prompt field; sharegpt: "
        "ShareGPT JSON); empty: random prompts of requestShape.inputLen and outputLen tokens"))
    path: str = Field("", pattern=OPTIONAL_ABSOLUTE_PATH, description=(
        "Absolute path of the dataset file in the container (--dataset-path); with claimName it is "
        "a path under /datasets"))
    claim_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "PersistentVolumeClaim holding the dataset, mounted read-only at /datasets; empty: none"))


class RequestShape(ValuesModel):
    input_len: Int32 = Field(256, ge=1, description="Random prompt length in tokens (--random-input-len)")
    output_len: Int32 = Field(128, ge=1, description="Random output length in tokens (--random-output-len)")
    num_prompts: Int32 = Field(0, ge=0, description=(
        "Requests per level (--num-prompts); 0: max(minPrompts, promptsPerConcurrency x concurrency)"))
    prompts_per_concurrency: Int32 = Field(PROMPTS_PER_SLOT, ge=1, description=(
        "Requests per unit of concurrency when numPrompts is 0"))
    min_prompts: Int32 = Field(MIN_PROMPTS, ge=1, description="Fewest requests of a level when numPrompts is 0")
    dataset: BenchmarkDataset = Field(default_factory=BenchmarkDataset, description=(
        "A dataset file instead of random prompts"))


class BenchmarkOutput(ValuesModel):
    claim_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "PersistentVolumeClaim the result files are copied to, under <release>-<UTC time>/; empty: none"))
    s3_uri: str = Field("", pattern=OPTIONAL_S3_URI, description=(
        "s3://bucket/prefix the result files are uploaded under (<prefix>/<release>-<UTC time>/) with "
        "python3 and boto3 of the image, credentials from the pod's ServiceAccount (IRSA or Pod "
        "Identity); the script fails at start when boto3 is missing. One of claimName and s3Uri"))


class BenchmarkResources(ValuesModel):
    requests: ResourceList = Field(
        default_factory=lambda: ResourceList(cpu="1", memory="2Gi", ephemeral_storage="1Gi"),
        description="Requests of the benchmark container (the client tokenizes every prompt)")
    limits: ResourceList = Field(
        default_factory=lambda: ResourceList(cpu="2", memory="4Gi", ephemeral_storage="4Gi"),
        description=(
            "Limits of the benchmark container; ephemeralStorage also sizes the /work emptyDir (results, tokenizer "
            "download)"))


class Benchmark(ValuesModel):
    enabled: bool = Field(False, description=(
        "Render the benchmark: `vllm bench serve` per concurrency level against the release's Service, "
        "or against baseUrl"))
    as_helm_test: bool = Field(False, description=(
        "Render it as a `helm.sh/hook: test` Pod (run by `helm test`) instead of a Job"))
    image: BenchmarkImage = Field(default_factory=BenchmarkImage, description="Image of the benchmark")
    tokenizer: str = Field("", pattern=r"^[^\s]*$", description=(
        "Tokenizer name or path (--tokenizer); empty: model.name, which must then be a Hugging Face "
        "model (model.source huggingface). The Hugging Face token of model.huggingface.tokenSecret "
        "is passed when set"))
    base_url: str = Field("", pattern=r"^(https?://[^\s/?#]+(/[^\s?#]*)?)?$", max_length=2048, description=(
        "Where the requests go: the URL users call, e.g. the Gateway's or the ALB's (https://llm.example.com), "
        "so the sweep measures through the routing layer they use. Empty: the release's Service, which "
        "balances per connection and bypasses the gateway's endpoint picker. Each result file records which "
        "(vllm_eks_target: route or service, vllm_eks_base_url)"))
    concurrencies: list[Concurrency] = Field(default_factory=lambda: [1, 2, 4, 8, 16, 32], min_length=1,
                                             description="Concurrency levels (--max-concurrency), one run each")
    request_shape: RequestShape = Field(default_factory=RequestShape, description="Requests of each level")
    output: BenchmarkOutput = Field(default_factory=BenchmarkOutput, description=(
        "Where the result files go besides stdout"))
    resources: BenchmarkResources = Field(default_factory=BenchmarkResources, description=(
        "CPU, memory and ephemeral-storage of the benchmark container"))
    timeout_seconds: Int32 = Field(3600, ge=60, description=(
        "activeDeadlineSeconds of the benchmark pod: the whole sweep must finish within it"))
