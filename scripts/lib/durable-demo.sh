# The durable part of the demo (scripts/demo --durable): downloads kept in an SQLite job store survive
# a worker killed with kill -9. Sourced by scripts/demo, which checked swift and libcurl.
#
#   1. serves 12 random files of 2-4 MiB on 127.0.0.1 (scripts/lib/range_server.py: ranges, ETags,
#      1 MiB/s per connection, so that downloads take a few seconds);
#   2. yxdownload enqueue: one job per file into DEMO/jobs.sqlite;
#   3. two yxdownload worker processes (3 downloads each at a time, --lease 3);
#   4. kill -9 of the first one in the middle; the second claims its downloads once their leases
#      expire (3 s at most) and resumes their .part files;
#   5. every file checked with sha256sum against its source.
#
# YXDOWNLOAD=path runs that binary instead of building one (with yxdownload-queue in its folder).
durable_demo() {
    local demo bin port
    # Globals, for the EXIT trap.
    DEMO_PIDS=()
    if [[ -n "${YXDOWNLOAD:-}" ]]; then
        bin="$YXDOWNLOAD"
    else
        echo "== building yxdownload (release)"
        # enqueue, worker and status run in yxdownload-queue, next to yxdownload.
        swift build -c release --product yxdownload >/dev/null
        swift build -c release --product yxdownload-queue >/dev/null
        bin="$(swift build -c release --show-bin-path)/yxdownload"
    fi
    demo="$(mktemp -d "${TMPDIR:-/tmp}/yxdownload-durable-demo.XXXXXX")"
    trap 'kill "${DEMO_PIDS[@]}" 2>/dev/null; true' EXIT
    mkdir -p "$demo/served" "$demo/downloads"

    echo "== 12 files of 2-4 MiB, served on 127.0.0.1 at 1 MiB/s per connection ($demo/served)"
    for i in $(seq -w 1 12); do
        head -c $(( (2 << 20) + RANDOM * 64 )) /dev/urandom > "$demo/served/file-$i.bin"
    done
    python3 scripts/lib/range_server.py "$demo/served" --bytes-per-second $((1 << 20)) > "$demo/port" &
    DEMO_PIDS+=($!)
    for _ in $(seq 50); do [[ -s "$demo/port" ]] && break; sleep 0.1; done
    port="$(cat "$demo/port")"
    for i in $(seq -w 1 12); do
        echo "http://127.0.0.1:$port/file-$i.bin"
        if (( 10#$i > 8 )); then echo "  dir=more"; fi
    done > "$demo/urls.txt"

    cd "$demo"
    echo
    echo "== yxdownload enqueue --queue jobs.sqlite -i urls.txt"
    "$bin" enqueue --queue jobs.sqlite -i urls.txt
    echo "== the same list again (unique key: the destination)"
    "$bin" enqueue --queue jobs.sqlite -i urls.txt

    echo
    echo "== two workers: yxdownload worker --queue jobs.sqlite -d downloads -j 3 --lease 3 --exit-when-empty"
    "$bin" worker --queue jobs.sqlite -d downloads -j 3 --lease 3 --exit-when-empty > worker-a.log 2>&1 &
    local worker_a=$!
    "$bin" worker --queue jobs.sqlite -d downloads -j 3 --lease 3 --exit-when-empty > worker-b.log 2>&1 &
    local worker_b=$!
    DEMO_PIDS+=("$worker_a" "$worker_b")
    echo "worker A: pid $worker_a, worker B: pid $worker_b"
    sleep 2.5
    echo
    echo "== yxdownload status --queue jobs.sqlite (after 2.5 s)"
    "$bin" status --queue jobs.sqlite
    echo
    echo "== kill -9 $worker_a (worker A), in the middle of its downloads"
    kill -9 "$worker_a"
    wait "$worker_a" 2>/dev/null || true
    echo ".part files now (A's, and B's running downloads): $(find downloads -name '*.part' | wc -l)"
    echo
    echo "== worker B goes on, and claims A's downloads once their leases expire (3 s at most)"
    local status=0
    wait "$worker_b" || status=$?
    echo "-- worker B's output (exit status $status):"
    cat worker-b.log
    echo
    echo "== yxdownload status --queue jobs.sqlite (at the end)"
    "$bin" status --queue jobs.sqlite
    echo
    echo "== every file against its source (sha256sum)"
    local good=0 bad=0 file name
    for file in served/*.bin; do
        name="$(basename "$file")"
        local target="downloads/$name"
        [[ -f "$target" ]] || target="downloads/more/$name"
        if [[ -f "$target" && "$(sha256sum < "$file")" == "$(sha256sum < "$target")" ]]; then
            good=$((good + 1))
            printf '  ok   %-26s %s\n' "$target" "$(sha256sum < "$target" | cut -c1-16)…"
        else
            bad=$((bad + 1))
            printf '  BAD  %s\n' "$target"
        fi
    done
    local parts
    parts="$(find downloads -name '*.part*' | wc -l)"
    echo
    if (( bad == 0 && parts == 0 && status == 0 )); then
        echo "Result: all 12 files byte-identical to their sources, no .part left, although worker A was killed with kill -9."
        echo "(Everything is in $demo.)"
        return 0
    fi
    echo "Result: FAILED: $bad bad files, $parts partial files left, worker B exited $status ($demo)."
    return 1
}
