"""routing.gateway.picker.resources: requests above limits are refused, compared as quantities."""

import pytest
from pydantic import ValidationError

from vllm_eks.values.vllm_inference.routing_model import PickerResources


@pytest.mark.parametrize(("requests", "limits", "named"), [
    ({"cpu": "1"}, {"cpu": "500m"}, "requests.cpu 1 is above limits.cpu 500m"),
    ({"memory": "1Gi"}, {"memory": "512Mi"}, "requests.memory 1Gi is above limits.memory 512Mi"),
])
def test_requests_above_limits_are_refused(requests, limits, named):
    with pytest.raises(ValidationError, match=named):
        PickerResources.model_validate({"requests": requests, "limits": limits})


def test_requests_within_limits_pass():
    # "500m" < "1" and "512Mi" < "1Gi" only as quantities (as strings they compare the other way)
    r = PickerResources.model_validate({"requests": {"cpu": "500m", "memory": "512Mi"},
                                        "limits": {"cpu": "1", "memory": "1Gi"}})
    assert r.limits.cpu == "1"
