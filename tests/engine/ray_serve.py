"""The ray-serve scenario's RayService run here: its head container's rendered command starts a
local Ray node (the command KubeRay would generate stands in for $KUBERAY_GEN_RAY_START_CMD), and
its rendered serveConfigV2 is deployed with Ray Serve's own CLI (`serve deploy`), the way the
KubeRay operator submits it to the dashboard's Serve REST API.

Changes to what the chart renders, all made here and listed by `RayApp.changes` (the test prints
them; docs/topologies.md, "Ray Serve LLM run here", sums them up):

The head container
- the scripts mount path (/opt/vllm-eks/scripts) -> a folder holding the rendered ConfigMap's
  files (what the mount holds in the pod); the cache emptyDir mount (/var/cache/vllm) in the
  container's env -> a temporary folder;
- `/bin/bash -lc` -> `/bin/bash -c` for the outer shell: a login shell here reads /etc/profile,
  which resets PATH to the system's; in the image `ray` and its python are on that PATH, here
  they are in the Ray venv, which comes first on PATH;
- `ulimit -n 65536` -> the machine's hard limit of open files when that is lower (20000 here:
  raising the limit past the hard one fails, and the command with it); whether a node's hard
  limit admits 65536 is for a cluster to show;
- $KUBERAY_GEN_RAY_START_CMD: `ray start --head --block` with the rendered rayStartParams, with
  --dashboard-host 127.0.0.1 instead of 0.0.0.0, --num-cpus = this machine's cores, --num-gpus 0
  (as rendered), free loopback ports for GCS, dashboard, dashboard agent, client server and the
  metrics export (KubeRay's defaults 6379, 8265, 52365, 10001, 8080 may be taken here), and a
  short --temp-dir of its own (the default /tmp/ray is shared by every Ray on the machine);
- the GPU worker group is not started: one head node with the machine's CPUs hosts the replica
  (a CPU placement bundle, below) where the cluster schedules it on a GPU worker pod; the custom
  resources the worker groups declare (rayStartParams resources, the disaggregated pools'
  `prefill`/`decode`) go on the head with --resources; --num-cpus can be a logical count above
  the cores (RayApp.num_cpus) where the bundles and the ingress of several pods need more.

serveConfigV2 (everything else reaches Serve as rendered)
- model_loading_config.model_source (a Hugging Face repo id) -> a local random-weight model of
  the same architecture (the Llama stand-in of tests/engine/scripts/write_tiny_models.py);
  model_id, the name clients send, stays as rendered;
- engine_kwargs.tensor_parallel_size N -> 1: one CPU worker, not N GPUs;
- engine_kwargs.block_size stays as rendered (16): vLLM 0.26.0's CPU attention backend pages
  multiples of 16 (vllm/v1/attention/backends/cpu_attn.py get_supported_kernel_block_sizes:
  MultipleOf(16) at v0.26.0; vllm/platforms/cpu.py only warns that it prefers multiples of 32),
  where 0.32's takes multiples of 32 only (tests/engine/cpu.py);
- placement_group_config {bundles: [{CPU: 1}]} added: without it Ray Serve LLM assumes a GPU
  accelerator and asks for one GPU bundle per tensor-parallel rank (Ray 2.58.0,
  ray/llm/_internal/serve/core/configs/accelerators.py infer_hardware_kind_from_bundles: bundles
  without GPU or TPU mean a CPU deployment); a rendered placement_group_config (the
  disaggregated pools') loses the GPU of its bundles only;
- kv_transfer_config (the disaggregated pools): NIXL's LIBFABRIC backend -> UCX (LIBFABRIC runs
  over EFA); kv_buffer_device cpu as rendered (_cpu_kv_transfer says why);
- deployment_config.ray_actor_options {num_cpus: 0} added: Ray Serve LLM adds the replica actor's
  own CPU (1 unless ray_actor_options say otherwise) to the first placement bundle
  (ray/llm/_internal/serve/core/server/llm_server.py get_deployment_options at 2.58.0), and the
  OpenAI ingress replica takes Serve's default of 1 CPU; in the cluster they sit on a GPU worker
  and on the head, here one node of 2 CPUs holds both, so the replica actor asks for none (the
  engine runs in its bundle's CPU, vLLM's multiprocessing executor below the replica);
- http_options.host 127.0.0.1 and http_options.port a free port added (the rendered config sets
  neither: Serve's port 8000, the head's `serve` containerPort); request_timeout_s stays as
  rendered.
The engine's KV cache budget on CPU is VLLM_CPU_KVCACHE_SPACE (GiB) in the Ray node's
environment, which the replica and its engine inherit."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .cpu import SCENARIO_KV_GIB
from .engine_env import EngineVenv, base_env, run_script
from .multinode import SCRIPTS_MOUNT, GroupProcess, scripts_configmap
from .report import REPORT
from .server import free_port
from .server import http_text as http

SCENARIO = "llama-3.1-70b-g6e-12xlarge-rayservice"
CACHE_MOUNT = "/var/cache/vllm"
START_TIMEOUT_S = 120
RUNNING_TIMEOUT_S = 420
CPU_0_26_BLOCK_MULTIPLE = 16  # vllm/v1/attention/backends/cpu_attn.py at v0.26.0


def rayservice(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (rs,) = [o for o in objects if o.get("kind") == "RayService"]
    return rs


def serve_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    raw = rayservice(objects)["spec"]["serveConfigV2"]
    return yaml.safe_load(raw) if isinstance(raw, str) else copy.deepcopy(raw)


# The LLM configs of an application's args: build_openai_app takes a list, build_pd_openai_app
# one per pool (ray/llm/_internal/serve/serving_patterns/prefill_decode/builder.py PDServingArgs
# at ray-2.58.0).
PD_CONFIG_KEYS = ("prefill_config", "decode_config")


def app_llm_configs(app: dict[str, Any]) -> list[dict[str, Any]]:
    args = app["args"]
    if "llm_configs" in args:
        return list(args["llm_configs"])
    return [args[k] for k in PD_CONFIG_KEYS]


def llm_configs(config: dict[str, Any]) -> list[dict[str, Any]]:
    return [llm for app in config["applications"] for llm in app_llm_configs(app)]


def _where(app: dict[str, Any], llm: dict[str, Any]) -> str:
    pool = next((k for k in PD_CONFIG_KEYS if app["args"].get(k) is llm), None)
    return (f"applications[{app['name']}] " + (f"{pool} " if pool else "llm_config ")
            + str(llm["model_loading_config"].get("model_id")))


def _cpu_placement(llm: dict[str, Any], where: str, changes: list[str]) -> None:
    """A CPU placement bundle: without GPU or TPU in its bundles Ray Serve LLM deploys on CPU
    (module docstring). A rendered placement_group_config keeps its CPU, its custom resources
    (the pool's worker group label) and its strategy; only the GPU goes."""
    pg = llm.get("placement_group_config")
    if pg is None:
        llm["placement_group_config"] = {"bundles": [{"CPU": 1}]}
        changes.append(f"{where}: placement_group_config {{bundles: [{{CPU: 1}}]}} added "
                       "(Serve LLM's default: one GPU bundle per tensor-parallel rank)")
        return
    for i, bundle in enumerate(pg["bundles"]):
        if "GPU" in bundle:
            changes.append(f"{where}: placement_group_config.bundles[{i}] GPU {bundle.pop('GPU')} dropped, "
                           f"the rest as rendered ({bundle}, strategy {pg.get('strategy')})")


# The rendered NIXL backends that need hardware this machine lacks: LIBFABRIC runs over EFA here
# (its image contract asks for libfabric's efa provider, charts/vllm-inference scripts lib.sh).
NIXL_CLUSTER_ONLY_BACKENDS = {"LIBFABRIC"}


def _cpu_kv_transfer(kw: dict[str, Any], where: str, changes: list[str]) -> None:
    """NIXL's UCX backend for the rendered LIBFABRIC one (UCX moves host memory between two
    processes of one machine over its shared-memory and TCP transports); the KV buffer device
    stays as rendered (cpu): vLLM 0.26.0's NixlConnector accepts only a cpu buffer on the CPU
    platform and registers the KV cache itself as DRAM, no host staging copy
    (vllm/distributed/kv_transfer/kv_connector/v1/nixl/utils.py _NIXL_SUPPORTED_DEVICE,
    nixl/base_worker.py use_host_buffer False on cpu, at v0.26.0)."""
    kv = kw.get("kv_transfer_config")
    if not kv or kv.get("kv_connector") != "NixlConnector":
        return
    assert kv.get("kv_buffer_device", "cpu") == "cpu", kv
    extra = kv.setdefault("kv_connector_extra_config", {})
    backends = extra.get("backends") or ["UCX"]
    here = [b for b in backends if b not in NIXL_CLUSTER_ONLY_BACKENDS] or ["UCX"]
    if here != backends:
        extra["backends"] = here
        changes.append(f"{where}: kv_transfer_config.kv_connector_extra_config.backends {backends} -> {here} "
                       "(LIBFABRIC needs EFA); kv_buffer_device cpu as rendered")


def cpu_serve_config(rendered: dict[str, Any], *, model_path: str, http_port: int,
                     changes: list[str]) -> dict[str, Any]:
    """The rendered serveConfigV2 with the CPU changes of the module docstring, each one
    appended to `changes`."""
    config = copy.deepcopy(rendered)
    for app in config["applications"]:
        for llm in app_llm_configs(app):
            where = _where(app, llm)
            loading = llm["model_loading_config"]
            changes.append(f"{where}: model_source {loading['model_source']} -> {model_path}")
            loading["model_source"] = model_path
            kw = llm["engine_kwargs"]
            if kw.get("tensor_parallel_size", 1) != 1:
                changes.append(f"{where}: engine_kwargs.tensor_parallel_size {kw['tensor_parallel_size']} -> 1")
                kw["tensor_parallel_size"] = 1
            # block_size: as rendered (module docstring); a size 0.26's CPU kernel cannot page
            # would fail at start-up, which the test reports
            assert int(kw.get("block_size", 16)) % CPU_0_26_BLOCK_MULTIPLE == 0, kw
            _cpu_placement(llm, where, changes)
            _cpu_kv_transfer(kw, where, changes)
            dep = llm["deployment_config"]
            assert "ray_actor_options" not in dep, dep
            dep["ray_actor_options"] = {"num_cpus": 0}
            changes.append(f"{where}: deployment_config.ray_actor_options {{num_cpus: 0}} added (the replica "
                           "actor's own CPU, 1 by default, added to the engine's bundle; one node of "
                           f"{os.cpu_count()} cores holds the engine bundle(s) and the OpenAI ingress, Serve's "
                           "default 1 CPU)")
    opts = config.setdefault("http_options", {})
    assert "host" not in opts and "port" not in opts, opts
    opts.update({"host": "127.0.0.1", "port": http_port})
    changes.append(f"http_options host 127.0.0.1, port {http_port} added")
    return config


def local_scripts_mount(config: dict[str, Any], mount: Path, changes: list[str]) -> None:
    """The scripts mount path in the LLM configs' runtime_env env_vars (PYTHONPATH, for the
    chart's engine class) -> the local folder holding the rendered ConfigMap's files."""
    for llm in [c for app in config["applications"] for k, v in app["args"].items()
                for c in (v if k == "llm_configs" else [v] if k in ("prefill_config", "decode_config") else [])]:
        env_vars = (llm.get("runtime_env") or {}).get("env_vars") or {}
        for key, value in env_vars.items():
            if SCRIPTS_MOUNT in str(value):
                env_vars[key] = str(value).replace(SCRIPTS_MOUNT, str(mount))
                changes.append(f"runtime_env env_vars {key}: {SCRIPTS_MOUNT} -> {mount}")


@dataclass
class RayApp:
    """A local Ray node started by the head container's rendered command, with the scenario's
    serveConfigV2 deployed on it."""

    venv: EngineVenv
    workdir: Path
    objects: list[dict[str, Any]]
    model_path: str
    # Ray's CPU count is logical: more than the cores when the deployments' bundles and the
    # ingress that the cluster spreads over several pods ask for more (None: the cores)
    num_cpus: int | None = None
    rendered: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    head: GroupProcess | None = None
    temp_dir: Path | None = None
    started_s: float = 0.0
    running_s: float = 0.0

    @property
    def dashboard(self) -> str:
        return f"http://127.0.0.1:{self.ports['dashboard']}"

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.ports['serve']}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['metrics']}/metrics"

    # -- the head node -------------------------------------------------------------------------

    def _start_command(self, head: dict[str, Any]) -> str:
        params = dict(head["rayStartParams"])
        if params.get("dashboard-host") == "0.0.0.0":
            params["dashboard-host"] = "127.0.0.1"
            self.changes.append("rayStartParams dashboard-host 0.0.0.0 -> 127.0.0.1")
        ray = self.venv.bin("ray")
        num_cpus = self.num_cpus or os.cpu_count()
        words = [str(ray), "start", "--head", "--block", f"--num-cpus={num_cpus}",
                 f"--port={self.ports['gcs']}", f"--dashboard-port={self.ports['dashboard']}",
                 f"--dashboard-agent-listen-port={self.ports['agent']}",
                 f"--ray-client-server-port={self.ports['client']}",
                 f"--metrics-export-port={self.ports['metrics']}",
                 f"--temp-dir={self.temp_dir}", "--disable-usage-stats"]
        words += [f"--{k}={v}" for k, v in params.items()]
        resources = worker_group_resources(rayservice(self.objects))
        if resources:
            assert "resources" not in params, params
            words.append(f"--resources={json.dumps(resources)}")
            self.changes.append(f"--resources={json.dumps(resources)} on the head: the worker groups' custom "
                                "resources (rayStartParams resources), which their placement bundles ask for; "
                                "the worker groups are not started")
        cpus = "this machine's cores" if num_cpus == os.cpu_count() else \
            f"logical, on {os.cpu_count()} cores: the bundles and the ingress of pods the cluster spreads"
        self.changes.append(f"$KUBERAY_GEN_RAY_START_CMD -> ray start --head --block with the rendered "
                            f"rayStartParams, --num-cpus={num_cpus} ({cpus}), free loopback ports "
                            f"{self.ports}, --temp-dir {self.temp_dir}")
        # the inner `bash -lc` of the rendered args reads /etc/profile too: PATH again first
        return f"export PATH={shlex.quote(str(self.venv.root / 'bin'))}:$PATH; exec {shlex.join(words)}"

    def start_head(self) -> None:
        rs = rayservice(self.objects)
        head_group = rs["spec"]["rayClusterConfig"]["headGroupSpec"]
        (container,) = head_group["template"]["spec"]["containers"]
        for name in ("gcs", "dashboard", "agent", "client", "metrics", "serve"):
            self.ports[name] = free_port()
        self.temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # sockets: short paths
        mount = self.workdir / "scripts"
        mount.mkdir(parents=True, exist_ok=True)
        for fname, text in scripts_configmap(self.objects).items():
            (mount / fname).write_text(text)
        cache = self.workdir / "cache"
        self.changes.append(f"scripts mount {SCRIPTS_MOUNT} -> {mount} (the rendered ConfigMap's files); "
                            f"cache mount {CACHE_MOUNT} -> {cache}")
        env = base_env()
        for e in container.get("env") or []:
            if "value" in e:
                env[e["name"]] = str(e["value"]).replace(CACHE_MOUNT, str(cache))
        for key in ("HOME", "HF_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "VLLM_CACHE_ROOT"):
            Path(env[key]).mkdir(parents=True, exist_ok=True)
        env.update({"PATH": f"{self.venv.root / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                    "VLLM_CPU_KVCACHE_SPACE": str(SCENARIO_KV_GIB), "RAY_USAGE_STATS_ENABLED": "0",
                    "KUBERAY_GEN_RAY_START_CMD": self._start_command(head_group)})
        self.changes.append(f"KV cache budget VLLM_CPU_KVCACHE_SPACE={SCENARIO_KV_GIB} GiB in the node's env")
        command = [w.replace(SCRIPTS_MOUNT, str(mount)) for w in container["command"]]
        assert command[:2] == ["/bin/bash", "-lc"], command
        command[1] = "-c"
        self.changes.append("outer shell /bin/bash -lc -> -c (/etc/profile here resets PATH to the system's)")
        args = [w.replace(SCRIPTS_MOUNT, str(mount)) for w in container["args"]]
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        wanted = re.search(r"ulimit -n (\d+)", args[0])
        if wanted and hard != resource.RLIM_INFINITY and int(wanted[1]) > hard:
            args[0] = args[0].replace(wanted[0], f"ulimit -n {hard}")
            self.changes.append(f"`{wanted[0]}` -> `ulimit -n {hard}`: this machine's hard limit of open "
                                f"files is {hard}; raising it past that is refused (EPERM)")
        self.head = GroupProcess("ray-head", command + args, env, self.workdir / "logs" / "ray-head.log")
        t0 = time.monotonic()
        self.head.start()
        deadline = t0 + START_TIMEOUT_S
        while True:
            assert self.head.alive(), f"ray head exited {self.head.proc.returncode}:\n{self.head.log_text()[-4000:]}"
            try:
                # the Serve REST API answers once the dashboard's ServeHead module is up
                if http(f"{self.dashboard}/api/serve/applications/", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, \
                f"no Serve REST API in {START_TIMEOUT_S} s:\n{self.head.log_text()[-4000:]}"
            time.sleep(1)
        self.started_s = time.monotonic() - t0

    def start_head_once_more_on_start_race(self) -> str | None:
        """start_head; when the node fails before its API answers because a component timed
        out waiting for the raylet to register (`ray start --block` then stops the node: seen here
        with the 2 cores loaded by other work, the Ray client server's 30 s wait for node info,
        ray/_private/services.py get_node_with_retry), once more on fresh ports. Returns that
        reason, or None when the first start succeeded; any other failure fails."""
        try:
            self.start_head()
            return None
        except AssertionError:
            text = self.head.log_text() if self.head else ""
            if "Timed out waiting for node info" not in text:
                raise
            self.stop()
            self.changes.clear()
            self.start_head()
            return "the first start stopped: Ray client server timed out waiting for the raylet's node info"

    # -- Serve ---------------------------------------------------------------------------------

    def deploy(self) -> None:
        self.rendered = serve_config(self.objects)
        self.config = cpu_serve_config(self.rendered, model_path=self.model_path,
                                       http_port=self.ports["serve"], changes=self.changes)
        local_scripts_mount(self.config, self.workdir / "scripts", self.changes)
        path = self.workdir / "serve-config.yaml"
        path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        t0 = time.monotonic()
        proc = subprocess.run([str(self.venv.bin("serve")), "deploy", str(path), "--address", self.dashboard],
                              capture_output=True, text=True, timeout=120, env=self.head.env)
        assert proc.returncode == 0, f"serve deploy failed:\n{proc.stdout}\n{proc.stderr}"
        deadline = t0 + RUNNING_TIMEOUT_S
        status = None
        while time.monotonic() < deadline:
            assert self.head.alive(), f"ray head exited:\n{self.head.log_text()[-4000:]}"
            apps = self.applications()
            status = {n: a.get("status") for n, a in apps.items()}
            if status and all(s == "RUNNING" for s in status.values()):
                self.running_s = time.monotonic() - t0
                return
            failed = {n: a.get("message") for n, a in apps.items() if a.get("status") == "DEPLOY_FAILED"}
            assert not failed, f"deploy failed: {failed}\n{self.log_excerpt()}"
            time.sleep(2)
        raise AssertionError(f"not RUNNING in {RUNNING_TIMEOUT_S} s: {status}\n{self.log_excerpt()}")

    def applications(self) -> dict[str, Any]:
        status, body = http(f"{self.dashboard}/api/serve/applications/", timeout=10)
        assert status == 200, body
        return json.loads(body).get("applications") or {}

    # -- logs ----------------------------------------------------------------------------------

    def log_files(self) -> list[Path]:
        if self.temp_dir is None:
            return []
        return sorted(p for p in self.temp_dir.glob("session_*/logs/**/*") if p.is_file())

    def grep_logs(self, pattern: re.Pattern[str]) -> list[tuple[Path, re.Match[str]]]:
        out = []
        for p in self.log_files():
            try:
                text = p.read_text(errors="replace")
            except OSError:
                continue
            out += [(p, m) for m in pattern.finditer(text)]
        return out

    def log_excerpt(self, lines: int = 60) -> str:
        parts = []
        for p in self.log_files():
            if re.search(r"(serve/(replica|controller)_|worker-.*\.(err|out)$)", str(p)):
                text = p.read_text(errors="replace").splitlines()
                if any("Error" in t or "Traceback" in t for t in text):
                    parts.append(f"== {p}\n" + "\n".join(text[-lines:]))
        if parts:
            return "\n".join(parts[-4:])
        return self.head.log_text()[-4000:] if self.head else ""

    # -- stop ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """SIGKILL to the node's whole process tree (ray start, GCS, raylet, the replicas and the
        engine processes they spawned), snapshotted first so that nothing reparented escapes;
        then whatever of this node's processes (their command lines name its temp dir) is left.
        No `serve shutdown`: its graceful drains (each deployment's graceful_shutdown_timeout_s,
        one after the other) took minutes and no test reads their outcome; the drain of a vLLM
        server is the engine tier's test_drain.py."""
        if self.head is None:
            return
        for pid, _ in self.head.descendants():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.head.stop()
        if self.temp_dir is not None:
            kill_matching(str(self.temp_dir))
            # the session's logs stay with the test's folder; the short temp dir goes
            for session in self.temp_dir.glob("session_2*"):
                shutil.copytree(session / "logs", self.workdir / "ray-logs" / session.name,
                                dirs_exist_ok=True, ignore_dangling_symlinks=True)
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def worker_group_resources(rs: dict[str, Any]) -> dict[str, float]:
    """The custom resources the worker groups' rayStartParams declare (`resources` is a JSON
    object, quoted once more for the ray start command line KubeRay builds)."""
    out: dict[str, float] = {}
    for group in rs["spec"]["rayClusterConfig"].get("workerGroupSpecs") or []:
        raw = (group.get("rayStartParams") or {}).get("resources")
        if raw:
            for name, count in json.loads(raw.strip().strip("'\"").replace('\\"', '"')).items():
                out[name] = out.get(name, 0) + count * int(group.get("replicas", 1))
    return out


def write_stand_in(venv: EngineVenv, workdir: Path, name: str) -> dict[str, Any]:
    """One random-weight model of tests/engine/scripts/write_tiny_models.py, written by the Ray
    venv's transformers: {"path", "architecture", "config"}."""
    proc = run_script("write_tiny_models.py", str(workdir / "ray-models"), name, venv=venv, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)[name]


@contextlib.contextmanager
def deployed(app: RayApp, label: str, running: str = "application RUNNING") -> Iterator[RayApp]:
    """The head started and the config deployed, with the times and the changes in the engine
    tier's report; the node stopped afterwards, whatever happened."""
    t0 = time.monotonic()
    try:
        retried = app.start_head_once_more_on_start_race()
        REPORT.note(f"{label}: Ray head up (Serve REST API answers) after {app.started_s:.0f} s"
                    + (f" (started twice: {retried})" if retried else ""))
        app.deploy()
        REPORT.server(f"{label}: serve deploy -> {running}", app.running_s)
        REPORT.note(f"{label}: changes: " + "; ".join(app.changes))
        yield app
    finally:
        app.stop()
        REPORT.note(f"{label}: module wall time {time.monotonic() - t0:.0f} s (head start, deploy, tests, shutdown)")


def kill_matching(needle: str) -> None:
    """SIGKILL every process (but this one) whose command line contains `needle`: a Ray node's
    processes all name its temp dir, so this stops one node and leaves other Ray clusters alone."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(d.name), signal.SIGKILL)
