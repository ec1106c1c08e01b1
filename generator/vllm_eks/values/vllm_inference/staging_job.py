"""Values of charts/vllm-inference's staging Job (`staging`): copy one Hugging Face repo revision
once into S3 or a PersistentVolumeClaim with files/staging/stage_weights.py (resumable, progress
lines in the log), and the builder that fills them from the Plan's staging section (--stage).

The image defaults to the server image: vllm/vllm-openai has python3 and huggingface_hub (vLLM
depends on it); target s3 also needs boto3, which the script checks at start (docs/staging.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import bytes_quantity
from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import OPTIONAL_DNS1123_SUBDOMAIN, Int32, OptionalQuantity, ResourceList, ValuesModel
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.benchmark_job import OPTIONAL_S3_URI, BenchmarkImage
from vllm_eks.values.vllm_inference.claims import RWX_CLASS_NEEDED
from vllm_eks.values.vllm_inference.hf_token import TokenSecret

# A relative directory inside the claim: no leading slash, no "." or ".." element.
OPTIONAL_CLAIM_DIR = r"^([^/.\s][^/\s]*(/[^/.\s][^/\s]*)*)?$"
# A Hugging Face repo id (user/name or name) or empty.
OPTIONAL_REPO_ID = r"^([A-Za-z0-9][-A-Za-z0-9_.]*(/[A-Za-z0-9][-A-Za-z0-9_.]*)?)?$"


class StagingImage(BenchmarkImage):
    repository: str = Field("", description=(
        "Image with python3 and huggingface_hub (and boto3 for target s3); empty: the server image "
        "(image.repository, tag and digest)"))


class StagingPvc(ValuesModel):
    claim_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "The claim to copy into: an existing one, or with create the name of the claim the chart creates "
        "(empty: <fullname>-weights)"))
    create: bool = Field(False, description=(
        "Create the claim (size, storageClassName, accessMode below); it is deleted with the release"))
    size: OptionalQuantity = Field("", description=(
        "storage request of the created claim; the generator writes the Plan's weights plus a margin "
        "(staging_claim_bytes in explain); required with create"))
    storage_class_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "storageClassName of the created claim; required with accessMode ReadWriteMany (EKS's default EBS class "
        "cannot provision it: an EFS or FSx for Lustre class); empty with ReadWriteOnce: the cluster's default"))
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany"] = Field("ReadWriteMany", description=(
        "accessModes of the created claim. ReadWriteMany (EFS, FSx for Lustre) lets every server pod mount "
        "the copy; ReadWriteOnce (EBS) suits one server pod on one node"))
    path: str = Field("", pattern=OPTIONAL_CLAIM_DIR, description=(
        "Directory inside the claim the repo is copied into; empty: the repo id (org/name)"))


class StagingResources(ValuesModel):
    requests: ResourceList = Field(
        default_factory=lambda: ResourceList(cpu="1", memory="1Gi", ephemeral_storage="1Gi"),
        description="Requests of the staging container")
    limits: ResourceList = Field(
        default_factory=lambda: ResourceList(cpu="2", memory="2Gi", ephemeral_storage=""),
        description="Limits of the staging container")


class Staging(ValuesModel):
    enabled: bool = Field(False, description=(
        "Render the staging Job: copy staging.repo at staging.revision once into staging.target"))
    target: Literal["pvc", "s3"] = Field("pvc", description=(
        "pvc: into staging.pvc.path on the claim staging.pvc. s3: under staging.s3Uri (boto3 multipart uploads, "
        "credentials from the ServiceAccount's IRSA or Pod Identity)"))
    repo: str = Field("", pattern=OPTIONAL_REPO_ID, description="Hugging Face repo id to copy; required when enabled")
    revision: str = Field("main", min_length=1, pattern=r"^[^\s]+$", description=(
        "Branch, tag or commit; the Job resolves it to one commit and copies every file from that commit"))
    token_secret: TokenSecret = Field(default_factory=TokenSecret, description=(
        "Where the Hugging Face token comes from; optional by default as on the servers, so a public repo "
        "needs no Secret and a gated one fails the copy with a line naming the token"))
    s3_uri: str = Field("", pattern=OPTIONAL_S3_URI, description=(
        "s3://bucket/prefix the files go under (target s3)"))
    pvc: StagingPvc = Field(default_factory=StagingPvc, description="The claim of target pvc")
    wait_in_server: bool = Field(True, description=(
        "Server pods wait in an init container for the Job's marker (.vllm-eks-staged) where they load the model "
        "from: model.source pvc on the staging claim, or model.source s3 at staging.s3Uri. Other sources: no wait"))
    image: StagingImage = Field(default_factory=StagingImage, description="Image of the staging Job")
    workers: Int32 = Field(4, ge=1, le=64, description="Files fetched at a time")
    progress_seconds: Int32 = Field(30, ge=1, description="Seconds between progress lines in the log")
    backoff_limit: Int32 = Field(3, ge=0, description=(
        "backoffLimit: pods retried after a failure (each resumes the copy; a configuration error, exit 78, "
        "fails the Job at once)"))
    active_deadline_seconds: Int32 = Field(7200, ge=60, description=(
        "activeDeadlineSeconds of the Job; the generator writes the expected copy time x 3 plus set-up"))
    ttl_seconds_after_finished: Int32 = Field(86400, ge=0, description=(
        "ttlSecondsAfterFinished: the finished Job and its pod (and log) are deleted after this"))
    scratch_size: OptionalQuantity = Field("", description=(
        "sizeLimit of the /tmp emptyDir; target s3 keeps up to `workers` files there before uploading them, so "
        "it must hold the largest shards; empty: no limit beyond ephemeral-storage"))
    node_selector: dict[str, str] = Field(default_factory=dict, description=(
        "nodeSelector of the Job's pod (it needs no GPU); scheduling.zone is added when set, so a zonal claim "
        "is created in the servers' zone"))
    resources: StagingResources = Field(default_factory=StagingResources, description=(
        "CPU, memory and ephemeral-storage of the staging container"))


def staging_values(plan: Plan, options: ValuesOptions) -> Staging:
    """staging.* from the Plan's staging section; the server reads the copy (model.* from _model)."""
    s = plan.staging
    if options.stage_storage_class and (s is None or s.staging_target != "pvc"):
        raise InvalidOptionError("--stage-storage-class: only with --stage pvc (a claim the chart creates)")
    if s is None:
        return Staging()
    token = TokenSecret(name=options.hf_token_secret or "")
    common = dict(enabled=True, target=s.staging_target, repo=s.staging_repo, revision=s.staging_revision,
                  token_secret=token, active_deadline_seconds=s.staging_deadline_seconds)
    if s.staging_target == "s3":
        return Staging(s3_uri=s.staging_s3_uri or "", **common)
    return Staging(pvc=staging_pvc(plan, options), **common)


def staging_pvc(plan: Plan, options: ValuesOptions) -> StagingPvc:
    """The claim of --stage pvc[:CLAIM]: the servers mount the same one (model.pvc.claimName) and load
    --model-source, a directory under --pvc-mount-path, which is where the Job copies to."""
    s = plan.staging
    assert s is not None
    claim = s.staging_claim_name
    if claim and options.pvc_name and options.pvc_name != claim:
        raise InvalidOptionError(f"--stage pvc:{claim} and --pvc-name {options.pvc_name} name two claims: the servers "
                                 "load the staged copy, so give one claim (or leave --pvc-name out)")
    mount = options.pvc_mount_path.rstrip("/") or "/"
    source = plan.model_source
    if not source.startswith(mount.rstrip("/") + "/"):
        raise InvalidOptionError(f"--stage {'pvc:' + claim if claim else 'pvc'} copies into a directory of the claim: "
                                 f"--model-source ({source}) must be a directory under --pvc-mount-path ({mount})")
    path = source[len(mount.rstrip("/")) + 1:].strip("/")
    if claim:
        if options.stage_storage_class:
            raise InvalidOptionError(f"--stage-storage-class: only with --stage pvc (a claim the chart creates); "
                                     f"--stage pvc:{claim} copies into an existing claim")
        return StagingPvc(claim_name=claim, path=path)
    if options.pvc_name:
        # the chart would try to create a claim that already exists
        raise InvalidOptionError(f"--stage pvc creates a new claim, and --pvc-name {options.pvc_name} names an "
                                 f"existing one: give --stage pvc:{options.pvc_name} to copy into it, or leave "
                                 "--pvc-name out")
    if not options.stage_storage_class:
        raise InvalidOptionError(RWX_CLASS_NEEDED.format(what="--stage pvc", flag="--stage-storage-class",
                                                         existing="--stage pvc:CLAIM with an existing ReadWriteMany "
                                                                  "claim"))
    assert s.staging_claim_bytes is not None
    return StagingPvc(claim_name=f"{options.release}-weights", create=True,
                      size=bytes_quantity(s.staging_claim_bytes), storage_class_name=options.stage_storage_class,
                      path=path)
