# Image contract checks shared by the topology scripts in this folder (POSIX sh, no tools beyond
# what a container image's /bin/sh offers). Each check either returns or prints ONE line naming
# what is missing and which image provides it, then exits 78 (EX_CONFIG): the container stops
# before the engine starts, and with terminationMessagePolicy FallbackToLogsOnError the line is
# the pod's termination message (kubectl describe pod).
#
# Environment:
#   CONTRACT_IMAGE      the image the container runs (set by the chart), named in the message
#   CONTRACT_PYTHON     interpreter for the Python module checks (default: python3)
#   LD_LIBRARY_PATH     where the dynamic loader (and so NCCL and NIXL) finds shared libraries

CONTRACT_TOPOLOGY=unknown
CONTRACT_EXIT=78

contract_begin() {
    CONTRACT_TOPOLOGY="$1"
}

# contract_fail WHAT PROVIDER: one line on stderr, then exit.
contract_fail() {
    echo "image contract ($CONTRACT_TOPOLOGY, image ${CONTRACT_IMAGE:-unknown}): missing $1; $2" >&2
    exit "$CONTRACT_EXIT"
}

# Directories the dynamic loader searches: LD_LIBRARY_PATH, then the ld.so cache.
_loader_has() {
    _lib="$1"
    _ifs="$IFS"; IFS=:
    for _d in ${LD_LIBRARY_PATH:-}; do
        if [ -n "$_d" ] && [ -e "$_d/$_lib" ]; then IFS="$_ifs"; return 0; fi
    done
    IFS="$_ifs"
    if command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q "[[:space:]]$_lib[[:space:]]"; then
        return 0
    fi
    return 1
}

_python() {
    echo "${CONTRACT_PYTHON:-python3}"
}

require_executable() {  # NAME PROVIDER
    command -v "$1" >/dev/null 2>&1 || contract_fail "\`$1\` on PATH" "$2"
}

require_python_module() {  # MODULE PROVIDER
    _py="$(_python)"
    command -v "$_py" >/dev/null 2>&1 || contract_fail "$_py (to import the Python module $1)" "$2"
    "$_py" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('$1') else 1)" \
        >/dev/null 2>&1 || contract_fail "the Python module $1 (for $_py)" "$2"
}

# libfabric, as the loader finds it (EFA installer: /opt/amazon/efa/lib).
require_libfabric() {  # PROVIDER
    _loader_has libfabric.so.1 || contract_fail \
        "libfabric (libfabric.so.1 on LD_LIBRARY_PATH or in the ld.so cache)" "$1"
}

# libfabric's efa provider, asked from libfabric itself. fi_info lists a provider only when its
# devices are there, so this also fails when the pod got no EFA interface.
require_efa_provider() {  # PROVIDER
    _fi_info="$(command -v fi_info 2>/dev/null || true)"
    [ -n "$_fi_info" ] || [ ! -x /opt/amazon/efa/bin/fi_info ] || _fi_info=/opt/amazon/efa/bin/fi_info
    [ -n "$_fi_info" ] || contract_fail \
        "fi_info (libfabric's utility, needed to find the efa provider)" "$1"
    "$_fi_info" -p efa -t FI_EP_RDM 2>/dev/null | grep -q "provider: efa" || contract_fail \
        "libfabric's efa provider (fi_info -p efa lists none: libfabric built without it, or no EFA device in the pod, efa.devices)" "$1"
}

# aws-ofi-nccl: NCCL opens its net plugin with dlopen (libnccl-net-ofi.so, older releases
# libnccl-net.so), so it must be where the loader looks.
require_aws_ofi_nccl() {  # PROVIDER
    _loader_has libnccl-net-ofi.so || _loader_has libnccl-net.so || contract_fail \
        "aws-ofi-nccl (NCCL net plugin libnccl-net-ofi.so or libnccl-net.so on LD_LIBRARY_PATH or in the ld.so cache; NCCL would fall back to TCP sockets)" "$1"
}

# NIXL's LIBFABRIC backend plugin: in NIXL_PLUGIN_DIR when set, else inside the installed NIXL
# Python distribution (wheels keep it in a *nixl*.libs or .nixl*.mesonpy.libs folder).
require_nixl_libfabric_plugin() {  # PROVIDER
    require_python_module nixl "$1"
    if [ -n "${NIXL_PLUGIN_DIR:-}" ]; then
        [ -e "$NIXL_PLUGIN_DIR/libplugin_LIBFABRIC.so" ] || contract_fail \
            "NIXL's LIBFABRIC plugin (libplugin_LIBFABRIC.so in NIXL_PLUGIN_DIR=$NIXL_PLUGIN_DIR)" "$1"
        return 0
    fi
    "$(_python)" - >/dev/null 2>&1 <<'PY' || contract_fail "NIXL's LIBFABRIC plugin (libplugin_LIBFABRIC.so next to the nixl Python package)" "$1"
import os, sys
for root in dict.fromkeys(p for p in sys.path if p and os.path.isdir(p)):
    for entry in os.listdir(root):
        if "nixl" not in entry.lower() or not os.path.isdir(os.path.join(root, entry)):
            continue
        for base, _dirs, files in os.walk(os.path.join(root, entry)):
            if "libplugin_LIBFABRIC.so" in files:
                sys.exit(0)
sys.exit(1)
PY
}

contract_ok() {
    echo "image contract ($CONTRACT_TOPOLOGY): ok" >&2
}

# Where the missing pieces come from, named in the messages.
VLLM_IMAGES="the vllm/vllm-openai images provide it (image.repository, image.tag)"
VLLM_EFA_IMAGES="images/vllm-efa (EFA installer and aws-ofi-nccl on vllm/vllm-openai) provides it: set image.repository/image.tag to your build of it"
RAY_IMAGES="the Ray LLM images provide it (ray.image: rayproject/ray-llm, or the AWS Ray LLM DLC public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0)"
RAY_DLC="the AWS Ray LLM DLC (public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0) provides it: set ray.image"
VLLM_RUNAI="vLLM's runai extra provides it (pip install 'vllm[runai]': runai-model-streamer with its s3 backend), needed by --load-format runai_streamer (model.source s3)"
RAY_BOTO3="Ray Serve LLM downloads an s3:// model_source with boto3, which ray[llm] does not install: add boto3 to ray.image (model.source s3)"

# require_optional HINT "VALID..." CHECK...: the checks a pod asks for beyond its topology's
# base, among VALID (efa: libfabric with its efa provider and aws-ofi-nccl; nixl-libfabric:
# NIXL's libfabric plugin and libfabric), each naming HINT as where to get what is missing; and
# the model source's (s3-stream: the Run:ai streamer and its S3 backend for vLLM's runai_streamer
# loader; s3-download: boto3 for Ray Serve LLM's S3 download), which name their own provider.
require_optional() {
    _hint="$1"; _valid="$2"; shift 2
    for _want in "$@"; do
        case " $_valid " in
            *" $_want "*) ;;
            *) _list=""
               for _v in $_valid; do _list="${_list:+$_list, }$_v"; done
               contract_fail "a check named '$_want' (valid: $_list)" "fix the chart's contract arguments" ;;
        esac
        case "$_want" in
            efa) require_libfabric "$_hint"; require_efa_provider "$_hint"; require_aws_ofi_nccl "$_hint" ;;
            nixl-libfabric) require_nixl_libfabric_plugin "$_hint"; require_libfabric "$_hint" ;;
            s3-stream) require_python_module runai_model_streamer "$VLLM_RUNAI"
                       require_python_module runai_model_streamer_s3 "$VLLM_RUNAI" ;;
            s3-download) require_python_module boto3 "$RAY_BOTO3" ;;
        esac
    done
}

# vllm_server_contract TOPOLOGY "VALID..." CHECK...: a pod that runs `vllm serve` itself.
vllm_server_contract() {
    contract_begin "$1"; _valid="$2"; shift 2
    require_executable vllm "$VLLM_IMAGES"
    require_python_module vllm "$VLLM_IMAGES"
    require_optional "$VLLM_EFA_IMAGES" "$_valid" "$@"
    contract_ok
}

# ray_llm_contract TOPOLOGY "VALID..." CHECK...: a Ray pod that runs vLLM through Ray Serve LLM.
ray_llm_contract() {
    contract_begin "$1"; _valid="$2"; shift 2
    require_executable ray "$RAY_IMAGES"
    require_python_module ray "$RAY_IMAGES"
    require_python_module vllm "$RAY_IMAGES"
    require_optional "$RAY_DLC" "$_valid" "$@"
    contract_ok
}
