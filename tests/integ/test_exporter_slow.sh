#!/bin/sh
# tests/integ/test_exporter_slow.sh — slow clients cannot deny the scrape
# (gpumem-exporter on a loopback port; the whole of 127/8 is this machine,
# so clients bound to 127.0.0.2 are another address to the server):
#   - 16 connections from 127.0.0.2 that send "GET /metrics HTTP/1.1" and
#     never finish their headers: 4 are taken (the per-address limit), the
#     other 12 are closed at once without an answer;
#   - while those 4 trickle one header line a second (never silent long
#     enough for the idle timeout), GET /metrics from 127.0.0.1 answers,
#     and so does a request from 127.0.0.3 whose headers take 3 s;
#   - each of the 4 is closed 10 s after it connected (the request
#     deadline), well before it would ever finish;
#   - one kept-alive connection from 127.0.0.1 is answered 5 times, 3 s
#     apart, 12 s in all: the deadline is per request, not per connection;
#   - the server's messages about refused and cut connections (40 more
#     opened at once from 127.0.0.4) stop at 20 a minute, then one line
#     says so.
# Its own prefix (no segments); the server is stopped by its pid on every
# exit. Exit 0 pass, 1 fail, 77 skip (no python3, no gpumem-exporter, or
# no address of 127/8 but 127.0.0.1 can be bound).
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
[ -x "$B/gpumem-exporter" ] || { echo "gpumem-exporter not built"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-expslow.XXXXXX") || exit 1
SRV=""
cleanup() {
    if [ -n "$SRV" ]; then
        kill -TERM "$SRV" 2>/dev/null
        wait "$SRV" 2>/dev/null
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

GPUMEM_SHM_PREFIX=gmslow$$ "$B/gpumem-exporter" --listen 127.0.0.1:0 \
    2>"$T/srv.err" &
SRV=$!
n=0
until grep -q 'serving http://127.0.0.1:[0-9]*/metrics' "$T/srv.err"; do
    n=$((n + 1))
    [ $n -lt 100 ] || { echo "FAIL: server did not start: $(cat "$T/srv.err")"; exit 1; }
    sleep 0.05
done
port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/srv.err")

python3 - "$port" <<'EOF'
import http.client, select, socket, sys, threading, time
port = int(sys.argv[1])
fails = []

def slow(src):
    s = socket.socket()
    try:
        s.bind((src, 0))
    except OSError as e:
        print("cannot bind %s (%s): skipped" % (src, e))
        sys.exit(77)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    return s

def closed(s):
    """Whether the server closed s (readable, then EOF or reset)."""
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        return False
    try:
        return s.recv(4096) == b""
    except ConnectionError:
        return True

def scrape(host_src, what):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                   source_address=(host_src, 0))
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read().decode()
        if r.status != 200 or "gpumem_scrape_segments" not in body:
            fails.append("%s: status %d" % (what, r.status))
    except OSError as e:
        fails.append("%s: %r" % (what, e))
    finally:
        c.close()

# A client that connects in a loop: refused past 4, and the server's
# messages about it (one per connection) stop at 20 a minute.
burst = [slow("127.0.0.4") for _ in range(40)]
for s in burst:
    s.close()

t0 = time.monotonic()
held = [slow("127.0.0.2") for _ in range(16)]
gone = []
while len(gone) < 12 and time.monotonic() - t0 < 3:
    time.sleep(0.1)
    gone += [s for s in held if s not in gone and closed(s)]
held = [s for s in held if s not in gone]
if len(held) != 4 or len(gone) != 12:
    fails.append("from one address: %d held, %d refused (4 and 12 expected)"
                 % (len(held), len(gone)))

# The slow ones' headers trickle (never 10 s of silence) while others ask.
stop = False
def trickle():
    i = 0
    while not stop:
        for s in held:
            try:
                s.sendall(b"X-Slow-%d: 1\r\n" % i)
            except OSError:
                pass
        i += 1
        time.sleep(1)
tr = threading.Thread(target=trickle)
tr.start()

scrape("127.0.0.1", "a scrape while one address holds its connections")

def slow_but_whole():
    s = slow("127.0.0.3")
    data = b""
    try:
        for i in range(3):
            time.sleep(1)
            s.sendall(b"X-Slow-%d: 1\r\n" % i)
        s.sendall(b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
        s.settimeout(10)
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError as e:
        fails.append("a request whose headers take 3 s: %r" % e)
    if not data.startswith(b"HTTP/1.1 200"):
        fails.append("a request whose headers take 3 s: %r" % data[:40])
    s.close()
sw = threading.Thread(target=slow_but_whole)
sw.start()

def kept_alive():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for i in range(5):
            if i:
                time.sleep(3)
            c.request("GET", "/metrics")
            r = c.getresponse()
            r.read()
            if r.status != 200:
                fails.append("kept-alive request %d: status %d" % (i, r.status))
            if r.getheader("Connection", "").lower() == "close":
                fails.append("kept-alive request %d: closed" % i)
                break
    except OSError as e:
        fails.append("kept-alive connection: %r" % e)
    finally:
        c.close()
ka = threading.Thread(target=kept_alive)
ka.start()

# The trickling ones: closed by the deadline, 10 s after they connected.
when = {}
while len(when) < len(held) and time.monotonic() - t0 < 20:
    for s in held:
        if s not in when and closed(s):
            when[s] = time.monotonic() - t0
    time.sleep(0.1)
stop = True
tr.join()
sw.join()
ka.join()
if len(when) < len(held):
    fails.append("%d of %d trickling connections still open after 20 s"
                 % (len(held) - len(when), len(held)))
for t in when.values():
    if not 9 <= t <= 13:
        fails.append("a trickling connection closed after %.1f s "
                     "(10 s deadline)" % t)
for s in held + gone:
    s.close()
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
EOF
rc=$?
[ $rc -eq 77 ] && exit 77
kill -0 "$SRV" 2>/dev/null || { echo "FAIL: the server died: $(cat "$T/srv.err")"; exit 1; }
kill -TERM "$SRV"
wait "$SRV"
src=$?
SRV=""
[ $src -eq 0 ] || { echo "FAIL: server exit status $src after SIGTERM"; exit 1; }
lines=$(grep -vc 'serving http' "$T/srv.err")
if [ "$lines" -ne 21 ] || ! tail -n 1 "$T/srv.err" | grep -q 'more messages of the HTTP library this minute are not printed'; then
    echo "FAIL: $lines messages from the server, 20 and one that says the rest are not printed expected:"
    cat "$T/srv.err"
    exit 1
fi
[ $rc -eq 0 ] || exit 1
echo "exporter_slow: all checks passed"
exit 0
