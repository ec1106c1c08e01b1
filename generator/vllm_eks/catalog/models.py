"""The offline model catalog (data/models.yaml) and `--model` resolution: a catalog id, a
Hugging Face repo id the catalog knows, a local config.json (or a folder holding one), or any
other Hugging Face repo id (`org/name[@revision]`), read from the Hub (hub.py). The catalog and
local files never touch the network."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from vllm_eks.catalog.hub import HubModel, fetch, parse_repo_ref
from vllm_eks.core.errors import ModelConfigError, UnknownModelError
from vllm_eks.model.architecture import Architecture, parse_config


@dataclass(frozen=True)
class CatalogModel:
    id: str
    hf_repo: str
    aliases: tuple[str, ...]
    description: str
    config: dict
    num_parameters: int | None
    config_source: str


@dataclass(frozen=True)
class ResolvedModel:
    id: str            # catalog id, or the config.json path
    source: str        # what vLLM loads by default: the repo id, or the folder of the config
    architecture: Architecture
    entry: CatalogModel | None
    hub: HubModel | None = None  # a Hub repo outside the catalog: its revision and safetensors metadata

    @property
    def hf_repo(self) -> str | None:
        """The Hugging Face repo the servers load by default (catalog or Hub), None for a local file."""
        return self.entry.hf_repo if self.entry else (self.hub.repo if self.hub else None)


@lru_cache(maxsize=1)
def model_catalog() -> dict[str, CatalogModel]:
    data = yaml.safe_load(resources.files(__package__).joinpath("data/models.yaml").read_text())
    out = {}
    for mid, m in (data.get("models") or {}).items():
        out[mid] = CatalogModel(
            id=mid, hf_repo=m["hf_repo"], aliases=tuple(m.get("aliases") or ()),
            description=m.get("description", ""), config=m["config"],
            num_parameters=m.get("num_parameters"), config_source=m.get("config_source", ""))
    return out


def _lookup(name: str) -> CatalogModel | None:
    key = name.lower()
    for m in model_catalog().values():
        if key == m.id or key == m.hf_repo.lower() or key in (a.lower() for a in m.aliases):
            return m
    return None


def load_config_file(path: Path) -> dict:
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ModelConfigError(f"--model {path}: no config.json found there")
    try:
        return json.loads(file.read_text())
    except json.JSONDecodeError as e:
        raise ModelConfigError(f"--model {file}: not valid JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise ModelConfigError(f"--model {file}: JSON nested too deeply to be a config.json") from None
    except ValueError as e:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise ModelConfigError(f"--model {file}: not a usable config.json ({str(e).split(':')[0]})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelConfigError(f"--model {file}: cannot read it ({e})") from None


def _looks_like_path(name: str) -> bool:
    """A path rather than an id: Hugging Face repo ids are `org/name` without a file suffix (a
    revision after @ may hold slashes: refs/pr/1)."""
    name = name.partition("@")[0] if parse_repo_ref(name) is not None else name
    return (name.startswith(("/", "./", "../", "~")) or name.endswith(".json")
            or name.count("/") > 1)


def resolve_model(name: str, hf_token_file: str | None = None) -> ResolvedModel:
    entry = _lookup(name) if name else None
    if entry is not None:
        return _resolve_catalog(entry.id)
    return _resolve(name, hf_token_file)


@lru_cache(maxsize=64)
def _resolve_catalog(mid: str) -> ResolvedModel:
    return _resolve(mid)


def _resolve(name: str, hf_token_file: str | None = None) -> ResolvedModel:
    if not name or not name.strip():
        raise UnknownModelError(
            "--model is empty: give a catalog id, a known Hugging Face repo id or a config.json path")
    entry = _lookup(name)
    if entry is not None:
        return ResolvedModel(entry.id, entry.hf_repo, parse_config(entry.config, f"catalog model {entry.id}"), entry)
    path = Path(name).expanduser()
    try:
        exists = path.exists()
    except OSError as e:  # a name longer than the file system allows, for one
        raise UnknownModelError(f"--model: not a catalog id and not a readable path ({e.strerror})") from None
    if exists:
        cfg = load_config_file(path)
        folder = path if path.is_dir() else path.parent
        return ResolvedModel(str(path), str(folder), parse_config(cfg, f"--model {path}"), None)
    if _looks_like_path(name):
        raise ModelConfigError(f"--model {name}: no such file or folder (a config.json path was expected)")
    if parse_repo_ref(name) is not None:
        return _resolve_hub(name, hf_token_file)
    raise UnknownModelError(
        f"--model '{name}' is not in the catalog (list it with `vllm-eks catalog models`) nor a Hugging Face "
        "repo id (org/name[@revision]); for any other model pass the path of its config.json: "
        "--model /path/to/config.json")


def _resolve_hub(name: str, hf_token_file: str | None) -> ResolvedModel:
    m = fetch(name, hf_token_file)
    return ResolvedModel(m.repo, m.repo, parse_config(m.config, f"--model {m.pinned} config.json"), None, m)
