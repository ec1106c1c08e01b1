"""The aws tier's fixtures: moto's server (EC2) from the tier's venv on 127.0.0.1, and the CLI of
that venv (the generator with boto3) run with an environment that holds only what a test gives
it: no AWS variable, profile or credentials file of the machine, and no instance metadata lookup,
so nothing can reach AWS."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.harness.paths import ROOT

# Catalog types the tests read through moto's EC2 instead (and compare with their catalog rows).
UNCATALOGUED = ("g6e.2xlarge", "p5.4xlarge", "g6.2xlarge", "g6e.4xlarge", "g4dn.xlarge")


class AwsVenvMissing(RuntimeError):
    pass


def aws_venv() -> Path:
    root = Path(os.environ.get("VLLM_EKS_AWS_VENV") or ROOT / ".venv-aws")
    for tool in ("moto_server", "vllm-eks"):
        if not (root / "bin" / tool).exists():
            raise AwsVenvMissing(f"{root}/bin/{tool} missing: run make aws-setup")
    return root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _moto_server(log_dir: Path, **env: str):
    """A moto server on a free 127.0.0.1 port (extra environment `env`); yields its URL."""
    port = _free_port()
    log = (log_dir / "moto.log").open("w")
    proc = subprocess.Popen([str(aws_venv() / "bin" / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start on 127.0.0.1:{port} (log: {log.name})") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def moto_ec2(tmp_path_factory) -> str:
    """URL of a moto server (all of moto's services; the tests use its EC2), no IAM checks."""
    with _moto_server(tmp_path_factory.mktemp("moto")) as url:
        yield url


@pytest.fixture(scope="session")
def moto_ec2_iam(tmp_path_factory) -> tuple[str, dict[str, str]]:
    """A moto server that checks IAM (after the two calls that create a user without policies),
    and that user's keys: (url, {AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY})."""
    with _moto_server(tmp_path_factory.mktemp("moto-iam"), INITIAL_NO_AUTH_ACTION_COUNT="2") as url:
        script = ("import boto3, sys; iam = boto3.client('iam', endpoint_url=sys.argv[1], region_name='us-east-1', "
                  "aws_access_key_id='testing', aws_secret_access_key='testing'); "
                  "iam.create_user(UserName='no-policies'); "
                  "k = iam.create_access_key(UserName='no-policies')['AccessKey']; "
                  "print(k['AccessKeyId'], k['SecretAccessKey'])")
        out = subprocess.run([str(aws_venv() / "bin" / "python"), "-c", script, url], capture_output=True, text=True,
                             timeout=60, check=True, env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")})
        key, secret = out.stdout.split()
        yield url, {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}


@pytest.fixture
def aws_cli(tmp_path):
    """aws_cli(*args, env={...}) -> CompletedProcess of the aws venv's `vllm-eks`, with the types
    the tests read through EC2 (UNCATALOGUED) out of the catalog (cli_hiding.py). The base
    environment has no AWS settings at all; `env` adds the test's (None removes a variable)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "VLLM_EKS_CACHE_DIR"}
    base.update({"XDG_CACHE_HOME": str(tmp_path / "cache"),  # EC2 answers kept per test (ec2_instances.cache_dir)
                 "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
                 "AWS_CONFIG_FILE": str(tmp_path / "no-config"), "AWS_EC2_METADATA_DISABLED": "true",
                 "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
                 "VLLM_EKS_TEST_UNCATALOGUED": ",".join(UNCATALOGUED), "PYTHONPATH": str(ROOT)})
    command = [str(aws_venv() / "bin" / "python"), str(Path(__file__).with_name("cli_hiding.py"))]

    def run(*args: str, env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess:
        full = dict(base)
        for k, v in (env or {}).items():
            if v is None:
                full.pop(k, None)
            else:
                full[k] = v
        return subprocess.run([*command, *args], env=full, capture_output=True, text=True, timeout=120)
    return run
