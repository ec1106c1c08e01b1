"""model.* of charts/vllm-inference: where the weights come from (a Hugging Face repo, S3, or a
volume: an existing claim, FSx for Lustre, Mountpoint for Amazon S3), the values model of each
source and the builder that fills it from the Plan's `ModelSource` and the volume flags."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from vllm_eks.core.errors import InvalidOptionError, VllmEksError
from vllm_eks.spec.plan import Plan
from vllm_eks.spec.s3 import bucket_problem
from vllm_eks.values.base import OPTIONAL_DNS1123_SUBDOMAIN, SUB_PATH, Quantity, ValuesModel
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.hf_token import TokenSecret
from vllm_eks.values.vllm_inference.staging_job import staging_pvc


class HuggingFace(ValuesModel):
    token_secret: TokenSecret = Field(default_factory=TokenSecret,
                                      description="Where the Hugging Face token comes from")


class Pvc(ValuesModel):
    claim_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "Existing PersistentVolumeClaim holding the model (EBS, EFS, or a claim of your own on any other "
        "volume; sources fsx and mountpointS3 make theirs); required when model.source is pvc"))
    mount_path: str = Field("/models", pattern=r"^/[^:]*$",
                            description="Where the claim is mounted; model.name must be a path under it")
    sub_path: str = Field("", pattern=SUB_PATH, description="Sub-path of the volume to mount (empty: the whole volume)")
    read_only: bool = Field(True, description="Mount the claim read-only")


# FSx for Lustre file system ids (fs- and 8 or 17 hex digits), DNS names, S3 bucket names and
# AWS regions as the AWS APIs spell them; empty allowed (the validate helper requires them with
# their source).
FSX_FILE_SYSTEM_ID = r"^(fs-[0-9a-f]{8}([0-9a-f]{9})?)?$"
DNS_NAME = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"
S3_BUCKET = r"^([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])?$"
AWS_REGION = r"^([a-z]{2}(-[a-z]+)+-[0-9]+)?$"


class Fsx(ValuesModel):
    file_system_id: str = Field("", pattern=FSX_FILE_SYSTEM_ID, description=(
        "File system id (the PersistentVolume's volumeHandle), e.g. fs-0123456789abcdef0; required with source fsx"))
    dns_name: str = Field("", pattern=DNS_NAME, max_length=253, description=(
        "DNS name of the file system (volumeAttributes dnsname), e.g. "
        "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com; required with source fsx"))
    mount_name: str = Field("", pattern=r"^[A-Za-z0-9]*$", max_length=64, description=(
        "Lustre mount name of the file system (volumeAttributes mountname, `aws fsx describe-file-systems` "
        "LustreConfiguration.MountName); required with source fsx"))
    capacity: Quantity = Field("1200Gi", description=(
        "storage written on the PersistentVolume and claim (Kubernetes requires one; a static volume is not "
        "resized): the file system's storage capacity"))
    mount_path: str = Field("/models", pattern=r"^/[^:]*$",
                            description="Where the file system is mounted; model.name must be a path under it")
    read_only: bool = Field(True, description="Mount it read-only (access mode ReadOnlyMany); false: ReadWriteMany")
    mount_options: list[Annotated[str, Field(pattern=r"^[^\s,]+$")]] = Field(
        default_factory=list, description="Lustre client mount options of the PersistentVolume, e.g. [noatime]")


class MountpointS3(ValuesModel):
    bucket: str = Field("", pattern=S3_BUCKET, description=(
        "Bucket name (volumeAttributes bucketName); required with source mountpointS3"))
    prefix: str = Field("", pattern=r"^([^\s]*/)?$", max_length=1024, description=(
        "Key prefix mounted as the root of the volume (Mountpoint's --prefix, ends with /); empty: the whole bucket"))
    region: str = Field("", pattern=AWS_REGION, description=(
        "Region of the bucket (Mountpoint's --region); empty: the driver's (the cluster's) region"))
    mount_path: str = Field("/models", pattern=r"^/[^:]*$",
                            description="Where the bucket is mounted; model.name must be a path under it")
    extra_mount_options: list[Annotated[str, Field(pattern=r"^[^\n]+$")]] = Field(
        default_factory=list, description=(
            "Further Mountpoint options for the PersistentVolume's mountOptions, e.g. [\"max-threads 64\"]; the "
            "chart already sets read-only, allow-other, uid, gid, region, prefix"))


class Model(ValuesModel):
    source: Literal["huggingface", "s3", "pvc", "fsx", "mountpointS3"] = Field("huggingface", description=(
        "Where the weights come from (docs/model-sources.md): `huggingface` (downloaded into the pod's cache "
        "volume), `s3` (single-node, multi-node: streamed with `--load-format runai_streamer`; ray-serve, "
        "disaggregated: Ray Serve LLM downloads the checkpoint to the cache volume first; credentials from IRSA or "
        "EKS Pod Identity on the ServiceAccount), `pvc` (an existing claim mounted at model.pvc.mountPath), `fsx` "
        "(an FSx for Lustre file system: the chart creates a static PersistentVolume for the FSx CSI driver and its "
        "claim), `mountpointS3` (an S3 bucket through the Mountpoint for Amazon S3 CSI driver: static "
        "PersistentVolume and claim)"))
    name: str = Field("Qwen/Qwen2.5-0.5B-Instruct", min_length=1, description=(
        "What vLLM loads (first argument of `vllm serve`): a Hugging Face repo id, an s3:// URI "
        "(source s3) or an absolute path under the mount path of source pvc, fsx or mountpointS3"))
    served_model_name: str = Field("", pattern=r"^[^\s]*$", description=(
        "Model name clients send in requests (--served-model-name); empty means model.name"))
    huggingface: HuggingFace = Field(default_factory=HuggingFace, description="Settings of source huggingface")
    pvc: Pvc = Field(default_factory=Pvc, description="Settings of source pvc")
    fsx: Fsx = Field(default_factory=Fsx, description=(
        "Settings of source fsx: an existing FSx for Lustre file system, mounted through the FSx CSI driver "
        "(fsx.csi.aws.com) with a static PersistentVolume <namespace>-<fullname>-model and the claim "
        "<fullname>-model bound to it by volumeName"))
    mountpoint_s3: MountpointS3 = Field(default_factory=MountpointS3, description=(
        "Settings of source mountpointS3: an S3 bucket mounted read-only through the Mountpoint for Amazon S3 CSI "
        "driver (s3.csi.aws.com), static PersistentVolume <namespace>-<fullname>-model and claim <fullname>-model. "
        "The files are owned by securityContext.runAsUser/runAsGroup"))


# Paths the server container already has a mount at (the caches, /tmp, /dev/shm, the scripts and
# diagnostics, the token and ServiceAccount secrets) or that the kernel provides; the chart's
# vllm-inference.reservedMountPaths holds the same list.
RESERVED_MOUNT_PATHS = ("/tmp", "/dev", "/proc", "/sys", "/var/cache/vllm", "/var/run/secrets", "/opt/vllm-eks")


def mount_collision(mount: str) -> str | None:
    """The reserved path a model volume at `mount` would sit at, under or above, if any."""
    at = mount.rstrip("/")
    for taken in RESERVED_MOUNT_PATHS:
        if at == taken or at.startswith(taken + "/") or taken.startswith(at + "/"):
            return taken
    return None


def model_values(plan: Plan, options: ValuesOptions) -> Model:
    """model.* from the Plan's source (its kind/URI rule checked again on a Plan read back, naming
    the Plan's keys) and the volume flags of its kind."""
    source = plan.source.uri
    kind = plan.source.kind
    if kind == "pvc" and plan.staging is not None and plan.staging.staging_target == "pvc":
        # the servers load the staged copy: the staging claim (--stage pvc[:CLAIM], --pvc-name)
        options = options.model_copy(update={"pvc_name": staging_pvc(plan, options).claim_name})
    _check_source_flags(kind, options)
    mount = options.pvc_mount_path.rstrip("/") or "/"
    if plan.source.mounts_volume and (taken := mount_collision(mount)):
        raise InvalidOptionError(f"--model-mount-path {mount}: collides with {taken}, which the chart or the kernel "
                                 "mounts in the server container; give the model volume a directory of its own, "
                                 "e.g. /models")
    if plan.source.mounts_volume and not (source == mount or source.startswith(mount + "/")):
        raise VllmEksError(f"model source {source!r} must be a path under the volume's mount path {mount!r} "
                           "(--model-mount-path)")
    if kind == "mountpoint-s3" and options.s3_mount_bucket and (problem := bucket_problem(options.s3_mount_bucket)):
        raise InvalidOptionError(f"--s3-mount-bucket {options.s3_mount_bucket}: {problem}")
    pvc, fsx, s3 = Pvc(), Fsx(), MountpointS3()
    if kind == "pvc":
        pvc = Pvc(claim_name=options.pvc_name, mount_path=mount)
    elif kind == "fsx":
        fsx = Fsx(file_system_id=options.fsx_file_system_id, dns_name=options.fsx_dns_name,
                  mount_name=options.fsx_mount_name, mount_path=mount)
    elif kind == "mountpoint-s3":
        s3 = MountpointS3(bucket=options.s3_mount_bucket, prefix=options.s3_mount_prefix or "",
                          region=options.s3_mount_region or "", mount_path=mount)
    token = TokenSecret(name=options.hf_token_secret or "") if kind == "huggingface" else TokenSecret()
    return Model(source="mountpointS3" if kind == "mountpoint-s3" else kind, name=source,
                 served_model_name=plan.served_model_name, huggingface=HuggingFace(token_secret=token),
                 pvc=pvc, fsx=fsx, mountpoint_s3=s3)


# The flags each volume source needs, and the source they belong to.
_SOURCE_FLAGS = {
    "pvc": (("--pvc-name", "pvc_name"),),
    "fsx": (("--fsx-file-system-id", "fsx_file_system_id"), ("--fsx-dns-name", "fsx_dns_name"),
            ("--fsx-mount-name", "fsx_mount_name")),
    "mountpoint-s3": (("--s3-mount-bucket", "s3_mount_bucket"),),
}
_OPTIONAL_FLAGS = {
    "mountpoint-s3": (("--s3-mount-prefix", "s3_mount_prefix"), ("--s3-mount-region", "s3_mount_region")),
}


def _check_source_flags(kind: str, options: ValuesOptions) -> None:
    """A volume source needs its flags, and no flag of another source is given."""
    missing = [flag for flag, field in _SOURCE_FLAGS.get(kind, ()) if not getattr(options, field)]
    if missing:
        raise InvalidOptionError(f"--model-source-kind {kind} needs {', '.join(missing)}")
    stray = [flag for other, flags in (*_SOURCE_FLAGS.items(), *_OPTIONAL_FLAGS.items()) if other != kind
             for flag, field in flags if getattr(options, field)]
    if stray:
        raise InvalidOptionError(f"{', '.join(stray)}: not used with --model-source-kind {kind}")
