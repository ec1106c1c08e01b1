"""The image contract scripts of charts/vllm-inference (files/contracts), run as the containers
run them (`sh <topology>.sh [capability...]`) in sandboxes that have or lack each piece: the
`vllm` and `ray` executables, the vllm / ray / nixl Python modules, libfabric, its efa provider
(asked through fi_info), aws-ofi-nccl and NIXL's LIBFABRIC plugin. A missing piece must stop the
script with exit 78 and exactly one line naming it and the image that provides it; a complete
sandbox passes. The same files are what the chart mounts (checked in tests/render)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.harness.paths import CHARTS

CONTRACTS = CHARTS / "vllm-inference" / "files" / "contracts"
EX_CONFIG = 78
PIECES = ("vllm-cli", "vllm-module", "ray-cli", "ray-module", "python3", "libfabric", "fi_info",
          "efa-provider", "aws-ofi-nccl", "nixl-module", "nixl-plugin", "runai-module", "runai-s3-module",
          "boto3-module")


@dataclass
class Sandbox:
    """A container stand-in: PATH, LD_LIBRARY_PATH and a Python whose only third-party modules
    are the ones put there."""

    root: Path
    have: set[str] = field(default_factory=lambda: set(PIECES))
    env_extra: dict[str, str] = field(default_factory=dict)

    def build(self) -> dict[str, str]:
        bin_, lib, site = self.root / "bin", self.root / "lib", self.root / "site"
        for d in (bin_, lib, site):
            d.mkdir(parents=True, exist_ok=True)
        for tool in ("grep", "dirname"):  # what the scripts use besides sh builtins
            os.symlink(shutil.which(tool), bin_ / tool)

        def script(name: str, body: str) -> None:
            path = bin_ / name
            path.write_text("#!/bin/sh\n" + body + "\n")
            path.chmod(0o755)

        if "python3" in self.have:
            # -S: no site-packages of the machine; only the sandbox's modules (PYTHONPATH) exist
            script("python3", f'exec {sys.executable} -S "$@"')
        if "vllm-cli" in self.have:
            script("vllm", "exit 0")
        if "ray-cli" in self.have:
            script("ray", "exit 0")
        for piece, module in (("vllm-module", "vllm"), ("ray-module", "ray"), ("nixl-module", "nixl"),
                              ("runai-module", "runai_model_streamer"), ("runai-s3-module", "runai_model_streamer_s3"),
                              ("boto3-module", "boto3")):
            if piece in self.have:
                (site / module).mkdir()
                (site / module / "__init__.py").write_text("")
        if "nixl-plugin" in self.have:  # where the nixl wheels keep their plugins
            plugins = site / ".nixl_cu12.mesonpy.libs" / "plugins"
            plugins.mkdir(parents=True)
            (plugins / "libplugin_LIBFABRIC.so").write_bytes(b"\x7fELF")
            (plugins / "libplugin_UCX.so").write_bytes(b"\x7fELF")
        if "libfabric" in self.have:
            (lib / "libfabric.so.1").write_bytes(b"\x7fELF")
        if "aws-ofi-nccl" in self.have:
            (lib / "libnccl-net-ofi.so").write_bytes(b"\x7fELF")
        if "fi_info" in self.have:
            if "efa-provider" in self.have:
                script("fi_info", 'echo "provider: efa"; echo "    fabric: efa"; echo "    type: FI_EP_RDM"')
            else:  # libfabric without the efa provider (or no EFA device): fi_info finds nothing
                script("fi_info", 'echo "fi_getinfo: -61 (No data available)" >&2; exit 1')
        env = {"PATH": str(bin_), "LD_LIBRARY_PATH": str(lib), "PYTHONPATH": str(site),
               "CONTRACT_IMAGE": "example.invalid/image:tag", "HOME": str(self.root)}
        env.update(self.env_extra)
        return env


def run_contract(tmp_path: Path, topology: str, *caps: str, lack: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    box = Sandbox(tmp_path / "box", have=set(PIECES) - set(lack), env_extra=env or {})
    return subprocess.run(["/bin/sh", str(CONTRACTS / f"{topology}.sh"), *caps], env=box.build(),
                          capture_output=True, text=True, timeout=60)


def one_line_failure(proc: subprocess.CompletedProcess[str], topology: str) -> str:
    assert proc.returncode == EX_CONFIG, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, f"expected one line, got {lines}"
    assert lines[0].startswith(f"image contract ({topology}, image example.invalid/image:tag): missing "), lines[0]
    return lines[0]


VLLM_IMG = "the vllm/vllm-openai images provide it"
EFA_IMG = "images/vllm-efa (EFA installer and aws-ofi-nccl on vllm/vllm-openai) provides it"
RAY_IMG = "the Ray LLM images provide it (ray.image"
DLC_IMG = "the AWS Ray LLM DLC (public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0) provides it"
RUNAI = "vLLM's runai extra provides it (pip install 'vllm[runai]'"
BOTO3 = "Ray Serve LLM downloads an s3:// model_source with boto3, which ray[llm] does not install"

FAILURES = [
    # topology, capabilities, missing pieces, fragments of the one line
    ("single-node", (), ("vllm-cli",), ["`vllm` on PATH", VLLM_IMG]),
    ("single-node", (), ("vllm-module",), ["the Python module vllm (for python3)", VLLM_IMG]),
    ("single-node", (), ("python3",), ["python3 (to import the Python module vllm)", VLLM_IMG]),
    ("multi-node", (), ("vllm-cli",), ["`vllm` on PATH", VLLM_IMG]),
    ("multi-node", (), ("vllm-module",), ["the Python module vllm", VLLM_IMG]),
    ("multi-node", ("efa",), ("libfabric",), ["libfabric (libfabric.so.1", EFA_IMG]),
    ("multi-node", ("efa",), ("fi_info",), ["fi_info (libfabric's utility", EFA_IMG]),
    ("multi-node", ("efa",), ("efa-provider",), ["libfabric's efa provider", "efa.devices", EFA_IMG]),
    ("multi-node", ("efa",), ("aws-ofi-nccl",), ["aws-ofi-nccl (NCCL net plugin libnccl-net-ofi.so",
                                                 "TCP sockets", EFA_IMG]),
    ("ray-serve", (), ("ray-cli",), ["`ray` on PATH", RAY_IMG]),
    ("ray-serve", (), ("ray-module",), ["the Python module ray", RAY_IMG]),
    ("ray-serve", (), ("vllm-module",), ["the Python module vllm", RAY_IMG]),
    ("disaggregated", (), ("ray-cli",), ["`ray` on PATH", RAY_IMG]),
    ("disaggregated", ("efa", "nixl-libfabric"), ("libfabric",), ["libfabric (libfabric.so.1", DLC_IMG]),
    ("disaggregated", ("efa", "nixl-libfabric"), ("aws-ofi-nccl",), ["aws-ofi-nccl", DLC_IMG]),
    ("disaggregated", ("nixl-libfabric",), ("nixl-module",), ["the Python module nixl", DLC_IMG]),
    ("disaggregated", ("nixl-libfabric",), ("nixl-plugin",),
     ["NIXL's LIBFABRIC plugin (libplugin_LIBFABRIC.so next to the nixl Python package)", DLC_IMG]),
    ("disaggregated", ("nixl-libfabric",), ("libfabric",), ["libfabric (libfabric.so.1", DLC_IMG]),
    # model.source s3: the Run:ai streamer and its S3 backend on vllm serve, boto3 on Ray
    ("single-node", ("s3-stream",), ("runai-module",), ["the Python module runai_model_streamer ", RUNAI]),
    ("multi-node", ("efa", "s3-stream"), ("runai-s3-module",), ["the Python module runai_model_streamer_s3", RUNAI]),
    ("ray-serve", ("s3-download",), ("boto3-module",), ["the Python module boto3", BOTO3]),
    ("disaggregated", ("efa", "nixl-libfabric", "s3-download"), ("boto3-module",), ["the Python module boto3", BOTO3]),
]


@pytest.mark.parametrize("topology,caps,lack,fragments", FAILURES,
                         ids=[f"{t}-{'+'.join(c) or 'base'}-no-{'+'.join(l)}" for t, c, l, _ in FAILURES])
def test_missing_piece_is_named_in_one_line(tmp_path: Path, topology: str, caps: tuple[str, ...],
                                            lack: tuple[str, ...], fragments: list[str]) -> None:
    line = one_line_failure(run_contract(tmp_path, topology, *caps, lack=lack), topology)
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"


@pytest.mark.parametrize("topology,caps", [
    ("single-node", ()), ("single-node", ("efa",)), ("multi-node", ()), ("multi-node", ("efa",)),
    ("ray-serve", ()), ("ray-serve", ("efa",)), ("disaggregated", ()),
    ("disaggregated", ("efa", "nixl-libfabric")), ("single-node", ("s3-stream",)), ("multi-node", ("efa", "s3-stream")),
    ("ray-serve", ("s3-download",)), ("disaggregated", ("efa", "nixl-libfabric", "s3-download")),
])
def test_complete_image_passes(tmp_path: Path, topology: str, caps: tuple[str, ...]) -> None:
    proc = run_contract(tmp_path, topology, *caps)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"image contract ({topology}): ok"


@pytest.mark.parametrize("topology,caps,lack", [
    # what the base contract of a topology does not ask for may be absent
    ("multi-node", (), ("libfabric", "fi_info", "aws-ofi-nccl", "ray-cli", "ray-module", "nixl-module",
                        "runai-module", "runai-s3-module", "boto3-module")),
    ("disaggregated", (), ("libfabric", "fi_info", "aws-ofi-nccl", "nixl-module", "nixl-plugin", "vllm-cli",
                           "boto3-module")),
    # the S3 stream needs no boto3 of the image's own, the Ray download no streamer
    ("single-node", ("s3-stream",), ("boto3-module", "ray-cli", "ray-module")),
    ("ray-serve", ("s3-download",), ("runai-module", "runai-s3-module")),
])
def test_only_what_the_topology_needs_is_required(tmp_path: Path, topology: str, caps: tuple[str, ...],
                                                  lack: tuple[str, ...]) -> None:
    proc = run_contract(tmp_path, topology, *caps, lack=lack)
    assert proc.returncode == 0, proc.stderr


def test_nixl_plugin_dir_is_honoured(tmp_path: Path) -> None:
    empty = tmp_path / "plugins"
    empty.mkdir()
    line = one_line_failure(run_contract(tmp_path, "disaggregated", "nixl-libfabric",
                                         env={"NIXL_PLUGIN_DIR": str(empty)}), "disaggregated")
    assert f"libplugin_LIBFABRIC.so in NIXL_PLUGIN_DIR={empty}" in line
    (empty / "libplugin_LIBFABRIC.so").write_bytes(b"\x7fELF")
    assert run_contract(tmp_path / "again", "disaggregated", "nixl-libfabric",
                        env={"NIXL_PLUGIN_DIR": str(empty)}).returncode == 0


def test_plugin_found_through_the_loader_cache_only_when_listed(tmp_path: Path) -> None:
    """aws-ofi-nccl present on disk but outside LD_LIBRARY_PATH and the ld.so cache is missing
    for NCCL's dlopen, so it is missing for the contract too."""
    box = Sandbox(tmp_path / "box")
    env = box.build()
    elsewhere = tmp_path / "opt-amazon-ofi-nccl-lib"
    elsewhere.mkdir()
    (box.root / "lib" / "libnccl-net-ofi.so").rename(elsewhere / "libnccl-net-ofi.so")
    proc = subprocess.run(["/bin/sh", str(CONTRACTS / "multi-node.sh"), "efa"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "aws-ofi-nccl" in one_line_failure(proc, "multi-node")
    env["LD_LIBRARY_PATH"] += os.pathsep + str(elsewhere)
    proc = subprocess.run(["/bin/sh", str(CONTRACTS / "multi-node.sh"), "efa"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_unknown_capability_argument_is_an_error(tmp_path: Path) -> None:
    line = one_line_failure(run_contract(tmp_path, "multi-node", "infiniband"), "multi-node")
    assert "a check named 'infiniband' (valid: efa, s3-stream)" in line
    # each topology accepts only its own source check: a vllm serve pod never downloads with boto3
    line = one_line_failure(run_contract(tmp_path / "s3", "single-node", "s3-download"), "single-node")
    assert "a check named 's3-download' (valid: efa, s3-stream)" in line
