#!/usr/bin/env bash
# Set airbench-nb up on a fresh machine. Called by the Makefile; safe to run again.
#   scripts/setup.sh python   venv at $VENV, torch (CPU wheel) first, then the kit with dev, voxtral, gpu, ray; kernel
#   scripts/setup.sh system   espeak-ng and sox (what the kit needs to run): installed with apt-get when missing
#                             and running as root
#   scripts/setup.sh browser  chromium, the browser tests' browser (only `make test` needs it; `make demo` does not)
#   scripts/setup.sh uv-args  the options uv is given from pip's configuration, one per line (what `python` uses)
set -euo pipefail
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"

# uv_args: pip's own configuration (find-links, constraints, indexes; pip.conf and PIP_* variables) as uv options, so
# that uv installs from the same places with the same caps (e.g. a local CPU torch wheel and a torch cap).
uv_args() {
    "$VENV/bin/python" -m pip config list 2>/dev/null | while IFS= read -r line; do
        local key="${line%%=*}" value="${line#*=}"
        key="${key##*.}"
        value="${value#\'}"
        value="${value%\'}"
        for item in $value; do
            case "$key" in
                find-links) echo "--find-links=$item" ;;
                constraint) [ -f "$item" ] && echo "--constraint=$item" ;;
                index-url) echo "--index-url=$item" ;;
                extra-index-url)
                    # pip skips a file:// index that is not there; uv would stop on it
                    if [[ "$item" != file://* ]] || [ -d "${item#file://}" ]; then echo "--extra-index-url=$item"; fi ;;
            esac
        done
    done
}

# install_packages ARGS...: pip-install ARGS into the venv with uv (seconds, where pip takes a minute and a half to
# resolve and unpack the kit's dependencies), falling back to pip when uv cannot be had or fails.
install_packages() {
    if [ ! -x "$VENV/bin/uv" ]; then
        "$VENV/bin/python" -m pip install --quiet "uv>=0.5" 2>/dev/null || true
    fi
    if [ -x "$VENV/bin/uv" ]; then
        local cert
        cert="$("$VENV/bin/python" -m pip config list 2>/dev/null | sed -n "s/^.*\.cert='\(.*\)'$/\1/p" | head -n 1)"
        mapfile -t options < <(uv_args)
        # unsafe-best-match: like pip, the newest version over every index (uv's default takes each package from
        # the first index that has it: an older local mirror would win over PyPI)
        if SSL_CERT_FILE="${SSL_CERT_FILE:-${cert:-}}" UV_NATIVE_TLS="${UV_NATIVE_TLS:-1}" \
            "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" --index-strategy unsafe-best-match \
            "${options[@]}" "$@"; then
            return 0
        fi
        echo "warning: uv could not install $*; trying pip" >&2
    fi
    "$VENV/bin/python" -m pip install --quiet --no-compile "$@"
}

python_setup() {
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "error: airbench-nb needs Python >= 3.11; '$PYTHON' is $("$PYTHON" --version 2>&1 || echo missing)." >&2
        echo "       Run: make PYTHON=/path/to/python3.11 ..." >&2
        exit 1
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        echo ">> creating virtual environment $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    # torch first: once it is there, nothing else pulls a (multi-GB) CUDA build.
    if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
        echo ">> installing $TORCH_SPEC"
        install_packages "$TORCH_SPEC"
    fi
    # voxtral and gpu are light (mistral-common, accelerate: a few MB): with them every model adapter is tested.
    # ray (Ray's base package, ~200 MB, seconds with uv) runs the Ray grid test on a local cluster.
    echo ">> installing airbench-nb (editable, with the dev, voxtral, gpu and ray extras)"
    install_packages -e ".[dev,voxtral,gpu,ray]"
    # soundfile carries libsndfile only in its platform wheels. Where two indexes hold the same version, uv can take
    # the pure-Python wheel from the first (then "cannot load library 'libsndfile.so'" on a machine without the
    # system library); pip ranks a version's wheels by platform tag and takes the manylinux one.
    if ! "$VENV/bin/python" -c 'import soundfile' 2>/dev/null; then
        echo ">> soundfile has no libsndfile: reinstalling its platform wheel with pip"
        "$VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall \
            "soundfile==$("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("soundfile"))')"
    fi
    # Nothing is byte-compiled ahead (22,000 files: 80 s on 2 cores): each module is compiled when first imported
    # and its .pyc kept. The Makefile unexports PYTHONDONTWRITEBYTECODE, which would keep every process compiling
    # its imports again (the test suite took 50% longer).
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name airbench-nb \
        --display-name "Python (airbench-nb)" >/dev/null
    # pYIN (the DSP baseline, the music builder's checks) compiles librosa's numba functions on first use, about 40 s;
    # numba caches them on disk, so they are compiled here once and every later process loads them
    echo ">> compiling pYIN's numba functions (once per install)"
    "$VENV/bin/python" -c 'from airbench_nb.models.pyin import warm_up; warm_up()'
    echo ">> ready: $VENV ($("$VENV/bin/python" --version))"
}

# install_tools WHAT HINT TOOL...: install the missing TOOLs with apt-get (root on Debian/Ubuntu), else warn.
install_tools() {
    local what="$1" hint="$2"
    shift 2
    local missing=()
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo ">> installing ${missing[*]} with apt-get ($what)"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "warning: ${missing[*]} not found, and this is not a root Debian/Ubuntu shell that could install it." >&2
        echo "         Install it yourself (e.g. 'sudo apt-get install -y ${missing[*]}'$hint)." >&2
    fi
}

system_setup() {
    local hint=", 'brew install espeak-ng sox', or 'conda install -c conda-forge espeak-ng sox'"
    install_tools "the kit's tools" "$hint; speech synthesis needs espeak-ng" espeak-ng sox
}

browser_setup() {
    local hint="; the browser tests (tests/browser) need chromium at /usr/bin/chromium and skip without it"
    install_tools "the browser tests' browser" "$hint" chromium
}

case "${1:-all}" in
    python) python_setup ;;
    system) system_setup ;;
    browser) browser_setup ;;
    uv-args) uv_args ;;
    all) python_setup; system_setup; browser_setup ;;
    *) echo "usage: $0 [python|system|browser|uv-args|all]" >&2; exit 2 ;;
esac
