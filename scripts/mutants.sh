#!/usr/bin/env bash
# Mutation testing (cargo-mutants) of Engram's core: the privacy scope filters, the forget and
# authorization rules, the day-summary budget, fusion and ranking, token budgeting,
# capture/forget parsing, the cache keys and what a question asks of time ('when'). Each
# mutant (a function body replaced, an operator flipped) must make some test fail; a survivor
# is a behaviour no test pins down.
#
#   scripts/mutants.sh                       # every core file (hours on 2 cores)
#   scripts/mutants.sh src/router.rs ...     # only these core files
#   scripts/mutants.sh --changed origin/main # only the core files changed since a commit
#   scripts/mutants.sh --iterate [FILE...]   # again, only what the last run did not catch
#
# Each file runs against the library's unit tests and the integration test modules that exercise
# it (the table below), in the mutants profile (no debug info). Survivors that cannot matter are
# excluded in .cargo/mutants.toml, each with its reason. Results go to mutants.out/<file>/
# (caught.txt, missed.txt, unviable.txt, timeout.txt); a summary line per file is printed,
# and the exit status is non-zero when a mutant was missed or timed out.
#
# cargo-mutants works in place (a copy would rebuild every dependency): it edits src/ while it
# runs and puts each file back, so src/ must have no uncommitted changes.
# PostgreSQL tests are not run here (they are ignored without ENGRAM_TEST_POSTGRES=1): the
# rules under test live above the store, and SQLite runs them faster.
set -euo pipefail
cd "$(dirname "$0")/.."

# file → the integration test modules that cover it (filters on the one `it` test binary;
# the library's unit tests always run too).
declare -A TESTS=(
    [src/domain/mod.rs]="privacy:: retrieval::"
    [src/memory/forgetting.rs]="forgetting::"
    [src/memory/summaries.rs]="transient:: privacy::"
    [src/retrieval/fusion.rs]="retrieval::"
    [src/store/terms.rs]="retrieval::"
    [src/memory/tokens.rs]=""
    [src/responder/prompt.rs]="transient::"
    [src/router.rs]="memory_entries::"
    [src/memory/cache.rs]="transient::"
    [src/retrieval/time.rs]="retrieval::"
)
# file → the functions that are the core there (a cargo-mutants --re on "file:line: replace
# … in FUNCTION"); files not listed are mutated whole.
declare -A FOCUS=(
    [src/domain/mod.rs]='(Place::|Scope::privacy)'
    [src/memory/forgetting.rs]='(forget_reach|place_scopes|Reach::scopes|ForgetTarget::|is_forgotten|quotable|quoted_in)'
    [src/memory/summaries.rs]='(offline_day_map|history_summary|hour_bucket)'
    [src/store/terms.rs]='(Bm25::term_score|Bm25::idf)'
    [src/responder/prompt.rs]='(pack_notes|pack_recalled|in take)'
    [src/router.rs]='(parse_command|fact_subject|about_clause|after|subject_word)'
    [src/retrieval/time.rs]='(asks_when|told_time)'
)
CORE=(src/memory/cache.rs src/memory/tokens.rs src/domain/mod.rs src/router.rs src/memory/forgetting.rs
    src/memory/summaries.rs src/retrieval/fusion.rs src/responder/prompt.rs src/store/terms.rs
    src/retrieval/time.rs)

# Options in any order: --iterate (test again only what the last run in mutants.out did not
# catch), --changed <commit> (the core files changed since its merge base), core files.
ITERATE=""
base=""
files=()
while [ $# -gt 0 ]; do
    case "$1" in
        --iterate) ITERATE="--iterate" ;;
        --changed)
            base=${2:?--changed needs a commit}
            shift
            ;;
        *)
            if [ -z "${TESTS[$1]+set}" ]; then
                echo "$1 is not a core file; core files: ${CORE[*]}" >&2
                exit 2
            fi
            files+=("$1")
            ;;
    esac
    shift
done
if [ -n "$base" ]; then
    changed=$(git diff --name-only "$base"...HEAD -- src)
    for f in "${CORE[@]}"; do
        if grep -qxF "$f" <<<"$changed"; then files+=("$f"); fi
    done
    if [ ${#files[@]} -eq 0 ]; then
        echo "no core file changed since $base: nothing to mutate"
        exit 0
    fi
elif [ ${#files[@]} -eq 0 ]; then
    files=("${CORE[@]}")
fi
# The PostgreSQL tests stay out (see above), whatever this shell exported.
unset ENGRAM_TEST_POSTGRES ENGRAM_TEST_POSTGRES_URL

if ! git diff --quiet HEAD -- src; then
    echo "src/ has uncommitted changes: commit or stash them first (mutants edits src/ in place)" >&2
    exit 2
fi
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
missed_any=0
for f in "${files[@]}"; do
    out="mutants.out/${f//\//_}"
    if [ -z "$ITERATE" ]; then rm -rf "$out"; fi
    mkdir -p "$out"
    focus=()
    if [ -n "${FOCUS[$f]+set}" ]; then focus=(--re "${FOCUS[$f]}"); else focus=(--re .); fi
    # The library's unit tests all live in `mod tests` blocks: `tests::` picks every one of
    # them (a test-name filter applies to both binaries), the file's modules pick its
    # integration tests.
    targets=(--lib)
    if [ -n "${TESTS[$f]}" ]; then targets+=(--test it); fi
    # shellcheck disable=SC2086 # the filters are separate words
    if cargo mutants --in-place --profile mutants --file "$f" "${focus[@]}" --output "$out" \
        --timeout 60 $ITERATE -- "${targets[@]}" -- tests:: ${TESTS[$f]} >"$out/log.txt" 2>&1; then
        :
    else
        status=$?
        # 2: some mutants were missed; 3: some timed out. Anything else is a failure.
        if [ $status -ne 2 ] && [ $status -ne 3 ]; then
            tail -20 "$out/log.txt" >&2
            exit $status
        fi
        missed_any=1
    fi
    dir="$out/mutants.out"
    count() { [ -f "$dir/$1.txt" ] && wc -l <"$dir/$1.txt" || echo 0; }
    printf '%-28s caught %3d  missed %3d  unviable %3d  timeout %3d\n' "$f" \
        "$(count caught)" "$(count missed)" "$(count unviable)" "$(count timeout)"
    if [ -s "$dir/missed.txt" ]; then sed 's/^/    missed: /' "$dir/missed.txt"; fi
done
exit $missed_any
