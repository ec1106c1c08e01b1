"""`vllm-eks verify DIR...`: the project's checks on values folders, for a fork of values/.

Exit codes: 0 every check ok (a skipped check is printed, and fails only as --require-promtool
says); 1 a check failed; 2 usage or bad input (one line on stderr)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from vllm_eks.core.errors import VllmEksError

EXTRA_HINT = "pip install 'vllm-eks[verify]'"


def _bad_input(message: str) -> None:
    click.echo(f"vllm-eks verify: error: {message}", err=True)
    sys.exit(2)


@click.command("verify")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--charts", "charts", type=click.Path(path_type=Path),
              help="folder holding the gpu-infra, vllm-inference and observability charts (a checkout's "
                   "charts/; default: $VLLM_EKS_CHARTS_DIR, else the charts the installed wheel carries).")
@click.option("--crds", "crds", type=click.Path(path_type=Path),
              help="folder of CRD files that custom resources are validated against (the project pins them "
                   "in tools/crds.lock; default: $VLLM_EKS_CRD_DIR).")
@click.option("--helm", help="helm binary to render with (default: $VLLM_EKS_HELM, else helm on PATH).")
@click.option("--promtool", help="promtool binary for the rule check (default: $VLLM_EKS_PROMTOOL, else "
                                 "promtool on PATH; without one the check is reported as skipped).")
@click.option("--require-promtool", is_flag=True,
              help="fail (exit 1) instead of skipping the rule check when no promtool is found.")
@click.option("--kube-version", default="1.33", show_default=True,
              help="Kubernetes minor whose OpenAPI schemas the built-in kinds are validated against.")
def verify(dirs: tuple[Path, ...], charts: Path | None, crds: Path | None, helm: str | None,
           promtool: str | None, require_promtool: bool, kube_version: str) -> None:
    """Lint and render-test values folders (or trees of them, like values/) with the project's
    own checks: helm lint --strict and helm template of each chart with its values file, strict
    schemas of every rendered object (Kubernetes OpenAPI and the CRDs of --crds), check-fit and
    promtool on the rendered rules. One line per check per folder."""
    try:
        from vllm_eks.verify import crd_schema, k8s_schema
        from vllm_eks.verify.run import FAIL, SKIPPED, Tools, verify_folder
    except ImportError as e:
        _bad_input(f"verify needs the `verify` extra ({e.name} is not installed): {EXTRA_HINT}")
    from vllm_eks.check.charts_source import charts_dir
    from vllm_eks.check.scheduling import helm_binary
    from vllm_eks.verify.folders import values_folders
    from vllm_eks.verify.rules import find_promtool

    try:
        folders = [f for d in dirs for f in values_folders(d)]
        k8s_schema.check_kube_version(kube_version)
        tools = Tools(charts=charts_dir(charts), crds=crd_schema.load_crds(crds), helm=helm_binary(helm),
                      promtool=find_promtool(promtool), require_promtool=require_promtool,
                      kube_version=kube_version)
    except crd_schema.CrdDirError as e:
        _bad_input(f"--crds: {e}" if crds is not None else str(e))
    except (VllmEksError, k8s_schema.KubeVersionError) as e:
        _bad_input(str(e))
    if promtool and tools.promtool is None:
        _bad_input(f"--promtool: {promtool!r} not found or not executable")
    checks = [c for folder in folders for c in verify_folder(folder, tools)]
    for check in checks:
        click.echo(check.line())
    failed = sum(c.status == FAIL for c in checks)
    skipped = sum(c.status == SKIPPED for c in checks)
    click.echo(f"{len(folders)} folder(s), {len(checks)} checks: {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)
