"""Run a process the way the chart's pod runs its server container, as far as this machine can
without a container engine: a private mount namespace (util-linux `unshare --mount`) in which
every mount of the root filesystem is read-only except the writable volumes the rendered
container mounts (fresh directories standing in for the emptyDirs, a fresh tmpfs for the
memory-backed /dev/shm), and the process runs as the pod's runAsUser/runAsGroup with fsGroup as
its only supplementary group (`setpriv`), a numeric id with no /etc/passwd entry, as in the pod.

Needs root (to create the namespace and switch ids); the test errors otherwise. Two things are
not the pod's: the image's filesystem is this machine's (the engine venv, its interpreter and the
engine tier's scripts, bound read-only at their own paths and made reachable for that id even
under a 0700 folder or a path a volume covers), and the model is a local stand-in bound
read-only at MODEL_MOUNT.
Nothing outside the namespace changes: remounts there do not propagate (`--propagation private`)."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Where the stand-in model is bound read-only inside the sandbox.
MODEL_MOUNT = "/var/cache/vllm-eks-model"
# Mount points left as they are: the kernel's and the devices' (the container runtime gives the
# pod its own, not the image's root filesystem).
KERNEL_MOUNTS = ("/proc", "/sys", "/dev")


class SandboxUnavailable(AssertionError):
    """This machine cannot build the sandbox (not root, or no unshare/setpriv)."""


@dataclass
class PodSandbox:
    """The sandbox of one rendered container. `volumes` maps each writable mount path of the
    container to the host directory that stands in for it."""

    workdir: Path
    uid: int
    gid: int
    fs_group: int
    volumes: dict[str, Path] = field(default_factory=dict)
    shm: bool = False
    readonly_binds: dict[str, Path] = field(default_factory=dict)  # sandbox path -> host path

    @classmethod
    def for_container(cls, pod_spec: dict[str, Any], container: dict[str, Any], workdir: Path,
                      claims: dict[str, Path] | None = None) -> "PodSandbox":
        """`claims` maps a PersistentVolumeClaim name to the host folder standing in for its
        volume: a writable claim the container mounts is bound from there, so two sandboxes given
        the same folder see one persistent volume (a pod replaced, its claim attached again)."""
        if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")):
            raise SandboxUnavailable("the pod sandbox needs root, unshare and setpriv (util-linux)")
        sc = pod_spec.get("securityContext") or {}
        missing = [k for k in ("runAsUser", "runAsGroup", "fsGroup") if k not in sc]
        assert not missing, f"the pod's securityContext has no {missing}"
        box = cls(workdir, int(sc["runAsUser"]), int(sc["runAsGroup"]), int(sc["fsGroup"]))
        volumes = {v["name"]: v for v in pod_spec.get("volumes") or []}
        for m in container.get("volumeMounts") or []:
            vol = volumes[m["name"]]
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and not m.get("readOnly") and claims and claim in claims:
                host = claims[claim]
                host.mkdir(parents=True, exist_ok=True)
                host.chmod(0o777)  # stands in for a volume the pod's fsGroup may write
                box.volumes[m["mountPath"].rstrip("/")] = host
                continue
            if m.get("readOnly") or "emptyDir" not in vol:
                continue  # ConfigMaps, Secrets and read-only claims: nothing is written there
            if (vol["emptyDir"] or {}).get("medium") == "Memory":
                assert m["mountPath"] == "/dev/shm", m
                box.shm = True
                continue
            host = workdir / "volumes" / m["name"]
            host.mkdir(parents=True, exist_ok=True)
            host.chmod(0o777)  # an emptyDir is world-writable (kubelet creates it 0777)
            box.volumes[m["mountPath"].rstrip("/")] = host
        return box

    def bind_model(self, host_model: Path) -> str:
        """A copy of the stand-in model any id can read, bound read-only at MODEL_MOUNT."""
        copy = self.workdir / "model"
        if not copy.exists():
            shutil.copytree(host_model, copy)
        for p in [copy, *copy.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        self.readonly_binds[MODEL_MOUNT] = copy
        return MODEL_MOUNT

    def wrapper(self, image_paths: list[Path]) -> list[str]:
        """argv prefix: builds the namespace, then execs the command as the pod's ids.
        `image_paths` are host paths the process reads as if its image held them (the engine
        venv, its interpreter, the engine tier's scripts). Each is bound read-only at its own
        path, reachable for the pod's id wherever it lives: under a folder that id cannot
        traverse (/root, a 0700 mktemp folder) or under a path a volume covers (/tmp)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        q = shlex.quote
        lines = ["set -eu", "mount --make-rprivate /"]
        stage = self.workdir / "stage"
        images = [Path(os.path.realpath(p)) for p in image_paths]
        for i, p in enumerate(images):
            lines += [f"mkdir -p {q(str(stage / str(i)))}", f"mount --bind {q(str(p))} {q(str(stage / str(i)))}"]
        under_volume = {i for i, p in enumerate(images) if any(str(p).startswith(t + "/") for t in self.volumes)}
        # 1. A tmpfs over each folder the pod's id cannot traverse, then every image path that no
        #    volume covers bound back read-only at its own path (while the stage is still visible).
        for folder in sorted({f for i, p in enumerate(images)
                              if i not in under_volume and (f := _untraversable_ancestor(p))}):
            if str(self.workdir).startswith(str(folder) + "/"):
                raise SandboxUnavailable(f"{folder} holds the sandbox workdir and is not traversable for uid {self.uid}")
            lines.append(f"mount -t tmpfs -o mode=0755 sandbox-hidden {q(str(folder))}")
        for i, p in enumerate(images):
            if i not in under_volume:
                lines += [f"mkdir -p {q(str(p))}", f"mount --bind {q(str(stage / str(i)))} {q(str(p))}",
                          f"mount -o remount,bind,ro {q(str(p))}"]
        # 2. Mount points that do not exist on this machine: a tmpfs over each missing parent.
        targets = list(self.volumes) + list(self.readonly_binds)
        made: set[str] = set()
        for t in targets:
            parent = Path(t).parent
            while not parent.exists():
                parent = parent.parent
            if not Path(t).exists() and str(parent) not in made and str(parent) not in ("/", "/tmp"):
                lines.append(f"mount -t tmpfs -o mode=0755 sandbox-dirs {q(str(parent))}")
                made.add(str(parent))
        for t, host in self.readonly_binds.items():
            lines += [f"mkdir -p {q(t)}", f"mount --bind {q(str(host))} {q(t)}", f"mount -o remount,bind,ro {q(t)}"]
        # 3. The volumes. An image path under a volume's mount path (the venv under /tmp) is bound
        #    into the volume's host folder first and carried along by --rbind, as an image file
        #    under an emptyDir would not be: the command could not start otherwise. A volume over
        #    the folder holding the stand-ins (/tmp) is bound last, so the others find their sources.
        ordered = sorted(self.volumes.items(), key=lambda kv: str(self.workdir).startswith(kv[0] + "/"))
        for t, host in ordered:
            for i, p in enumerate(images):
                if str(p).startswith(t + "/"):
                    inside = host / p.relative_to(t)
                    lines += [f"mkdir -p {q(str(inside))}", f"mount --bind {q(str(stage / str(i)))} {q(str(inside))}",
                              f"mount -o remount,bind,ro {q(str(inside))}"]
            lines += [f"mkdir -p {q(t)}", f"mount --rbind {q(str(host))} {q(t)}"]
        if self.shm:
            lines.append("mount -t tmpfs -o mode=1777 sandbox-shm /dev/shm")
        # 4. Everything else read-only: every mount that is not a volume, the kernel's or a device's.
        keep = " ".join(q(t) for t in self.volumes)
        lines.append(
            "awk '{print $2}' /proc/self/mounts | sort -u | while read -r m; do "
            "[ -e \"$m\" ] || continue; "  # a mount hidden under a volume bound over it
            f"case \"$m\" in {'|'.join(f'{k}|{k}/*' for k in KERNEL_MOUNTS)}) continue;; esac; "
            f"for v in {keep or '__none__'}; do [ \"$m\" = \"$v\" ] && continue 2; done; "
            "mount -o remount,bind,ro \"$m\"; done")
        # the container's securityContext: no new privileges (allowPrivilegeEscalation false),
        # every capability dropped (drop ALL), fsGroup the only supplementary group
        lines.append(f"exec setpriv --reuid={self.uid} --regid={self.gid} --groups={self.fs_group} "
                     "--no-new-privs --inh-caps=-all --bounding-set=-all -- \"$@\"")
        return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines), "pod-sandbox"]

    def files_written(self) -> dict[str, list[str]]:
        """Mount path -> files now in its volume (paths as the pod sees them)."""
        out: dict[str, list[str]] = {}
        for mount, host in self.volumes.items():
            out[mount] = sorted(f"{mount}/{p.relative_to(host)}" for p in host.rglob("*") if p.is_file())
        return out


def _untraversable_ancestor(path: Path) -> Path | None:
    """The outermost folder above `path` that other users may not enter (no o+x), if any."""
    for folder in reversed(path.parents):
        if folder != Path("/") and not folder.stat().st_mode & 0o001:
            return folder
    return None
