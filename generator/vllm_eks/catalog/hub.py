"""Models from the Hugging Face Hub: `--model ORG/NAME[@REVISION]` that is not a catalog id.

What is read (docs/hub-models.md): the revision's commit sha (model_info), `config.json`, and the
safetensors metadata (`model.safetensors.index.json` and each shard's header, by ranged reads),
from which the checkpoint's exact bytes per dtype follow. What was read is kept on disk, one
JSON file per repo and commit, so a second plan of the same repo needs no network, and
`HF_HUB_OFFLINE=1` reads only that cache.

The environment is read when a model is resolved, not when huggingface_hub is imported:
`HF_ENDPOINT` (a mirror, or the tests' stand-in), `HF_TOKEN` (gated repos; `--hf-token-file`
instead), `HF_HUB_OFFLINE`, and `VLLM_EKS_HUB_CACHE` / `HF_HOME` for where the cache lives."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from vllm_eks.core.errors import HubModelError

DEFAULT_ENDPOINT = "https://huggingface.co"
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
# bump when the cached form changes: older entries are then fetched again
CACHE_FORMAT = 1
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Checkpoint:
    """What the safetensors headers of one revision say: per dtype, the tensors' bytes (the
    difference of each tensor's data offsets, so packed formats count as stored) and elements."""

    bytes_by_dtype: tuple[tuple[str, int], ...]
    elements_by_dtype: tuple[tuple[str, int], ...]
    tensors: int
    files: int

    @property
    def total_bytes(self) -> int:
        return sum(b for _, b in self.bytes_by_dtype)

    @classmethod
    def of(cls, tensors: dict[str, tuple[str, tuple[int, ...], int]], files: int) -> Checkpoint:
        """From tensor name -> (dtype, shape, bytes)."""
        by: dict[str, int] = {}
        el: dict[str, int] = {}
        for dtype, shape, nbytes in tensors.values():
            by[dtype] = by.get(dtype, 0) + nbytes
            n = 1
            for d in shape:
                n *= d
            el[dtype] = el.get(dtype, 0) + n
        order = sorted(by, key=lambda k: (-by[k], k))
        return cls(tuple((k, by[k]) for k in order), tuple((k, el[k]) for k in order), len(tensors), files)


@dataclass(frozen=True)
class HubModel:
    repo: str
    revision: str            # what was asked for: a branch, tag or commit
    sha: str                 # the commit it resolved to: what was sized and what the servers load
    config: dict = field(hash=False, compare=False)
    checkpoint: Checkpoint | None = None   # None: no safetensors files (weights from config.json)
    from_cache: bool = False

    @property
    def pinned(self) -> str:
        return f"{self.repo}@{self.sha}"


def parse_repo_ref(name: str) -> tuple[str, str] | None:
    """`org/name` or `org/name@revision` -> (repo, revision); None when `name` is not of that form."""
    repo, _, rev = name.partition("@")
    if not REPO_ID.fullmatch(repo) or repo.endswith(".json") or (_ and not rev):
        return None
    return repo, rev or "main"


def cache_dir() -> Path:
    explicit = os.environ.get("VLLM_EKS_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    hf_home = os.environ.get("HF_HOME")
    if hf_home:
        return Path(hf_home).expanduser() / "vllm-eks"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "vllm-eks" / "hub"


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _token(token_file: str | None) -> str | None:
    if token_file:
        try:
            token = Path(token_file).expanduser().read_text().strip()
        except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
            raise HubModelError(f"--hf-token-file {token_file!r}: cannot read it "
                                f"({getattr(e, 'strerror', None) or e})") from None
        if not token:
            raise HubModelError(f"--hf-token-file {token_file}: the file is empty")
        return token
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def _repo_dir(repo: str) -> Path:
    return cache_dir() / repo.replace("/", "--")


def _read_cache(repo: str, revision: str) -> HubModel | None:
    d = _repo_dir(repo)
    sha = revision if SHA.fullmatch(revision) else None
    if sha is None:
        ref = d / "refs" / revision.replace("/", "--")
        if not ref.is_file():
            return None
        sha = ref.read_text().strip()
    file = d / f"{sha}.json"
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if data.get("format") != CACHE_FORMAT:
        return None
    ckpt = None
    if data.get("checkpoint") is not None:
        c = data["checkpoint"]
        ckpt = Checkpoint(tuple((k, int(v)) for k, v in c["bytes_by_dtype"]),
                          tuple((k, int(v)) for k, v in c["elements_by_dtype"]), int(c["tensors"]), int(c["files"]))
    return HubModel(repo, revision, sha, data["config"], ckpt, from_cache=True)


def _write_cache(m: HubModel) -> None:
    d = _repo_dir(m.repo)
    try:
        (d / "refs").mkdir(parents=True, exist_ok=True)
        c = m.checkpoint
        data = {"format": CACHE_FORMAT, "repo": m.repo, "sha": m.sha, "config": m.config,
                "checkpoint": None if c is None else
                {"bytes_by_dtype": [list(x) for x in c.bytes_by_dtype],
                 "elements_by_dtype": [list(x) for x in c.elements_by_dtype],
                 "tensors": c.tensors, "files": c.files}}
        tmp = d / f".{m.sha}.json.tmp"
        tmp.write_text(json.dumps(data, separators=(",", ":")))
        tmp.replace(d / f"{m.sha}.json")
        if m.revision != m.sha:
            (d / "refs" / m.revision.replace("/", "--")).write_text(m.sha)
    except OSError:
        pass  # a cache that cannot be written only costs the next plan a fetch


def _no_network(repo: str, why: str) -> HubModelError:
    return HubModelError(
        f"--model {repo}: cannot reach the Hugging Face Hub ({why}) and nothing of it is cached in {cache_dir()}: "
        "plan once with network access (or set HF_ENDPOINT to a mirror; later plans, and HF_HUB_OFFLINE=1, read "
        f"the cache), or size it from a local file with --model ./config.json --model-source {repo}")


# what this process already resolved, per name and environment: a command that plans many
# variants of one model (recommend, check-fit) asks the Hub once
_RESOLVED: dict[tuple, HubModel] = {}


def fetch(name: str, token_file: str | None = None) -> HubModel:
    """The repo and revision `name` names, from the cache or the Hub; errors are one line naming
    the repo and the way out."""
    key = (name, token_file, os.environ.get("HF_ENDPOINT"), _offline(), str(cache_dir()),
           bool(os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")))
    if key not in _RESOLVED:
        _RESOLVED[key] = _fetch(name, token_file)
    return _RESOLVED[key]


def _fetch(name: str, token_file: str | None) -> HubModel:
    ref = parse_repo_ref(name)
    if ref is None:
        raise HubModelError(f"--model {name}: not a Hugging Face repo id (org/name or org/name@revision)")
    repo, revision = ref
    cached = _read_cache(repo, revision)
    if _offline():
        if cached is None:
            raise HubModelError(
                f"--model {name}: HF_HUB_OFFLINE is set and nothing of {repo}@{revision} is cached in {cache_dir()}: "
                f"unset HF_HUB_OFFLINE to fetch it once, or size it from a local file with --model ./config.json "
                f"--model-source {repo}")
        return cached
    if cached is not None and SHA.fullmatch(revision):
        return cached  # a commit never changes: no need to ask the Hub
    try:
        model = _fetch_remote(repo, revision, _token(token_file))
    except _Unreachable as e:
        if cached is not None:
            return cached
        raise _no_network(repo, str(e)) from None
    _write_cache(model)
    return model


class _Unreachable(Exception):
    pass


def _fetch_remote(repo: str, revision: str, token: str | None) -> HubModel:
    import httpx2
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    # huggingface_hub reads HF_HUB_OFFLINE once, at import; this process decided from the
    # environment as it is now (fetch), so the library follows that decision
    constants.HF_HUB_OFFLINE = False
    endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    api = HfApi(endpoint=endpoint, token=token)
    files_dir = cache_dir() / "files"
    gated = (f"--model {repo} is a gated repo: accept its licence on {endpoint}/{repo} and give a token of that "
             "account with HF_TOKEN=... or --hf-token-file FILE")
    try:
        info = api.model_info(repo, revision=revision, token=token)
        sha = info.sha or revision
        names = {s.rfilename for s in (info.siblings or [])}
        if "config.json" not in names:
            raise HubModelError(
                f"--model {repo}@{revision}: the repo has no config.json, so it is not a transformers model vLLM can "
                f"serve (a GGUF, adapter or dataset repo?); give a repo with one, or --model ./config.json "
                f"--model-source {repo}")
        config_path = api.hf_hub_download(repo, "config.json", revision=sha, cache_dir=files_dir, token=token)
        config = json.loads(Path(config_path).read_text())
        checkpoint = _checkpoint(api, repo, sha, names, files_dir, token)
    except GatedRepoError:
        raise HubModelError(gated) from None
    except RevisionNotFoundError:
        raise HubModelError(
            f"--model {repo}@{revision}: the repo has no revision '{revision}': give a branch, tag or commit sha of it "
            f"(see {endpoint}/{repo}/commits/main), or drop @{revision} for main") from None
    except RepositoryNotFoundError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status == 401 and not token:
            raise HubModelError(
                f"--model {repo}: the Hub refused it without a token (401): a private or gated repo needs "
                f"HF_TOKEN=... or --hf-token-file FILE of an account that accepted its licence; otherwise check "
                f"the id (not found on {endpoint}, not in the catalog: `vllm-eks catalog models`)") from None
        raise HubModelError(
            f"--model {repo}: no such repo on {endpoint} and not in the catalog (`vllm-eks catalog models`): check "
            "the org/name spelling, or pass a local config.json: "
            "--model ./config.json --model-source ORG/NAME") from None
    except EntryNotFoundError as e:
        raise HubModelError(f"--model {repo}@{revision}: a file the repo lists is missing on the Hub ({e})") from None
    except (OfflineModeIsEnabled, LocalEntryNotFoundError, httpx2.TransportError) as e:
        raise _Unreachable(type(e).__name__ + (f": {e}" if str(e) else "")) from None
    except HfHubHTTPError as e:
        raise HubModelError(f"--model {repo}@{revision}: the Hub answered {e.response.status_code} "
                            f"({str(e).splitlines()[0]}); try again or set HF_ENDPOINT") from None
    except json.JSONDecodeError as e:
        raise HubModelError(f"--model {repo}@{revision}: its config.json is not valid JSON ({e.msg})") from None
    except ValueError as e:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise HubModelError(
            f"--model {repo}@{revision}: its config.json is not usable ({str(e).split(':')[0]})") from None
    return HubModel(repo, revision, sha, config, checkpoint)


def _checkpoint(api, repo: str, sha: str, names: set[str], files_dir: Path, token: str | None) -> Checkpoint | None:
    """Every tensor's dtype, shape and byte length from the safetensors headers (ranged reads of
    the first bytes of each file, as huggingface_hub's parse_safetensors_file_metadata does)."""
    if SINGLE_FILE in names:
        shards = [SINGLE_FILE]
    elif INDEX_FILE in names:
        index = json.loads(Path(api.hf_hub_download(repo, INDEX_FILE, revision=sha, cache_dir=files_dir,
                                                    token=token)).read_text())
        shards = sorted(set((index.get("weight_map") or {}).values()))
    else:
        shards = sorted(n for n in names if n.endswith(".safetensors") and "/" not in n)
    if not shards:
        return None
    tensors: dict[str, tuple[str, tuple[int, ...], int]] = {}
    for shard in shards:
        meta = api.parse_safetensors_file_metadata(repo, shard, revision=sha, token=token)
        for tname, t in meta.tensors.items():
            begin, end = t.data_offsets
            tensors[tname] = (t.dtype, tuple(t.shape), end - begin)
    return Checkpoint.of(tensors, len(shards))


def describe_weights(m: HubModel) -> str:
    """How `explain` says where the checkpoint total came from."""
    if m.checkpoint is None:
        return f"from config.json of {m.pinned} (the repo has no safetensors files)"
    by = ", ".join(f"{dt} {b:,} B" for dt, b in m.checkpoint.bytes_by_dtype)
    return (f"from safetensors metadata of {m.pinned}: {m.checkpoint.tensors:,} tensors in "
            f"{m.checkpoint.files} file(s), {by}")
