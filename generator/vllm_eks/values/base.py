"""What every chart's values model shares: camelCase keys in values.yaml (snake_case in
Python), unknown keys rejected, and the Kubernetes quantity types the schemas check."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from vllm_eks.core.units import OPTIONAL_QUANTITY_PATTERN, QUANTITY_PATTERN

# Every integer of the charts' values: the Kubernetes fields they reach are int32 (replicas, probe
# and grace seconds, ports, ...), and a larger one rendered an object the API server refuses
# (Helm also holds numbers as float64, exact only up to 2^53).
INT32_MAX = 2**31 - 1
Int32 = Annotated[int, Field(le=INT32_MAX)]

Quantity = Annotated[str, Field(pattern=QUANTITY_PATTERN)]
OptionalQuantity = Annotated[str, Field(pattern=OPTIONAL_QUANTITY_PATTERN)]

# Kubernetes names: a DNS-1123 label (namespaces, Helm releases, label-like names) and a
# DNS-1123 subdomain (most object names).
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
OPTIONAL_DNS1123_LABEL = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$"
# A Service name (DNS-1035 label: a letter first), or empty.
OPTIONAL_DNS1035_LABEL = r"^([a-z]([-a-z0-9]*[a-z0-9])?)?$"
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
OPTIONAL_DNS1123_SUBDOMAIN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"
# A volumeMount subPath the API server accepts: a relative path, no element "..".
_PATH_ELEMENT = r"(\.|[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+)"
SUB_PATH = rf"^({_PATH_ELEMENT}(/{_PATH_ELEMENT})*)?$"
# A label value: at most 63 characters (the schema sets maxLength), alphanumerics at both ends.
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
# A map of Kubernetes labels: the schema checks each value. Keys (an optional DNS-subdomain
# prefix and '/', then a name) are checked by each chart's validateValues.metadataKeys helper,
# because Helm 4 reports a propertyNames failure without the path of the map.
LabelMap = dict[str, Annotated[str, Field(pattern=LABEL_VALUE, max_length=63)]]
# A map of annotations: any string value; keys are checked like LabelMap's.
AnnotationMap = dict[str, str]

# An image tag (the OCI distribution reference grammar: a word character, then at most 127 of
# word characters, '.' and '-'), or empty.
IMAGE_TAG = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
OPTIONAL_IMAGE_TAG = r"^([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$"
# One command-line word without control characters: a newline inside a container argument splits
# the flag in the rendered shell line or log and is never what a vLLM flag means.
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"

# AWS names the charts pass on: an availability zone (us-east-1a; local zones us-west-2-lax-1a),
# an EKS cluster name (CreateCluster: 1-100 characters, alphanumeric first), an IAM role ARN
# (aws, aws-cn and aws-us-gov partitions) and an On-Demand Capacity Reservation id.
AVAILABILITY_ZONE = r"^[a-z]{2}(-[a-z]+)+-[0-9]+([a-z]|-[a-z]+-[0-9]+[a-z])$"
OPTIONAL_AVAILABILITY_ZONE = r"^([a-z]{2}(-[a-z]+)+-[0-9]+([a-z]|-[a-z]+-[0-9]+[a-z]))?$"
EKS_CLUSTER_NAME = r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$"
IAM_ROLE_ARN = r"^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$"
CAPACITY_RESERVATION_ID = r"^cr-[0-9a-z]+$"
# An ACM certificate ARN (the ALB's HTTPS listener; aws, aws-cn and aws-us-gov partitions).
_ACM_CERTIFICATE_ARN = r"arn:aws(-cn|-us-gov)?:acm:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:certificate/[A-Za-z0-9-]{1,128}"
ACM_CERTIFICATE_ARN = rf"^{_ACM_CERTIFICATE_ARN}$"
OPTIONAL_ACM_CERTIFICATE_ARN = rf"^({_ACM_CERTIFICATE_ARN})?$"

# Karpenter's capacity types (karpenter.sh/capacity-type); pools default to on-demand.
CapacityType = Literal["on-demand", "spot", "reserved"]


def on_demand() -> list[CapacityType]:
    return ["on-demand"]


class KubernetesObject(BaseModel):
    """A Kubernetes object the chart passes on as written (the API server checks the rest): only the
    keys it cannot be without are declared, any other key is kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel,
                              protected_namespaces=())


class ValuesModel(BaseModel):
    """camelCase keys in values.yaml, snake_case in Python; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel,
                              protected_namespaces=())


class NameOverrides(ValuesModel):
    """nameOverride and fullnameOverride, read by the names helper every chart shares
    (tools/chart-templates/names.tpl); empty: the chart name and `<release>-<chart>`."""

    name_override: str = Field("", pattern=OPTIONAL_DNS1123_LABEL, max_length=63, description=(
        "Replaces the chart name in object names and the app.kubernetes.io/name label"))
    fullname_override: str = Field("", pattern=OPTIONAL_DNS1035_LABEL, max_length=63, description=(
        "Replaces the full object name prefix (also of Service names: a letter first)"))


# A chart version as Chart.yaml writes it (semver 2, no leading v), or empty.
OPTIONAL_CHART_VERSION = r"^((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?)?$"


class ChartValues(NameOverrides):
    """What every chart's values have at the top: the name overrides and the chart version the
    values were written for."""

    written_for_chart_version: str = Field("", pattern=OPTIONAL_CHART_VERSION, description=(
        "Chart version `vllm-eks values` wrote these values for (its Chart.yaml `version`). When it differs "
        "from the installed chart's version, the release notes print a one-line warning and `vllm-eks check-fit` "
        "prints one too: write the values again with the vllm-eks that matches the chart. Empty: not checked"))


class ResourceList(ValuesModel):
    """Kubernetes requests or limits; an empty quantity is left out."""

    cpu: OptionalQuantity = Field("", description="CPU quantity; empty: not set")
    memory: OptionalQuantity = Field("", description="Memory quantity; empty: not set")
    ephemeral_storage: OptionalQuantity = Field("", description="ephemeral-storage quantity; empty: not set")


class ContainerImage(ValuesModel):
    """A container image: repository and tag (each chart's subclass gives the defaults), or a digest."""

    repository: str = Field(min_length=1, description="Image repository")
    tag: str = Field("", pattern=OPTIONAL_IMAGE_TAG, description="Image tag")
    digest: str = Field("", pattern=r"^(sha256:[a-f0-9]{64})?$", description=(
        "Image digest (sha256:...). When set the image is pulled by digest and the tag is ignored"))
    pull_policy: Literal["IfNotPresent", "Always", "Never"] = Field(
        "IfNotPresent", description="imagePullPolicy of the container")
