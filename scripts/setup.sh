#!/usr/bin/env bash
# Set airbench-nb up on a fresh machine. Called by the Makefile; safe to run again.
#   scripts/setup.sh python   venv at $VENV, torch (CPU wheel) first, then the kit with dev, voxtral, gpu; kernel
#   scripts/setup.sh system   espeak-ng and sox (what the kit needs to run): installed with apt-get when missing
#                             and running as root
#   scripts/setup.sh browser  chromium, the browser tests' browser (only `make test` needs it; `make demo` does not)
set -euo pipefail
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"

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
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    # torch first: once it is there, nothing else pulls a (multi-GB) CUDA build. pip would byte-compile what it
    # installs one file at a time (a minute or two on 2 cores): it installs without, and compileall compiles
    # site-packages on every core afterwards. The .pyc files must exist: with PYTHONDONTWRITEBYTECODE=1 in the shell,
    # every process would otherwise compile its imports again (the test suite took 50% longer).
    if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
        echo ">> installing $TORCH_SPEC"
        "$VENV/bin/python" -m pip install --quiet --no-compile "$TORCH_SPEC"
    fi
    # voxtral and gpu are light (mistral-common, accelerate: a few MB): with them every model adapter is tested.
    echo ">> installing airbench-nb (editable, with the dev, voxtral and gpu extras)"
    "$VENV/bin/python" -m pip install --quiet --no-compile -e ".[dev,voxtral,gpu]"
    local site
    site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo ">> byte-compiling $site on every core"
    # a few files of some packages are not Python 3 (test data): compileall reports them and goes on
    "$VENV/bin/python" -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name airbench-nb \
        --display-name "Python (airbench-nb)" >/dev/null
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
    all) python_setup; system_setup; browser_setup ;;
    *) echo "usage: $0 [python|system|browser|all]" >&2; exit 2 ;;
esac
