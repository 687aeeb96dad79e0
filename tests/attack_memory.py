"""A job as an attacker of the agent's memory (tests/test_installed.sh).

Run as a rank.  `fill N` (its first attempt) fills $RT_WORK_DIR with N empty
files and exits 1, so that whatever cleans up after it as its uid takes a
while.  `scan SECONDS` (its second attempt, the same uid) looks for every
process of its own uid that is not itself or its parent - a clean-up helper,
a rank being started - stops it, reads its writable memory through
/proc/PID/mem and prints every 64-hex-digit string and every rendezvous
"key" it finds there, then lets it go on.  The test greps the output for
the agents' token and the other job's key.
"""
import os
import re
import signal
import sys
import time


def fill(n):
    d = os.environ["RT_WORK_DIR"]
    for i in range(n):
        open(os.path.join(d, "f%06d" % i), "w").close()
    print("filled %d files" % n, flush=True)
    sys.exit(1)


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"^Uid:\s+(\d+)", f.read(), re.M)
    return int(m.group(1)) if m else -1


def read_memory(pid):
    """Every hex token and key in pid's writable mappings; raises OSError when denied."""
    found = set()
    with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps:
            parts = line.split()
            if len(parts) < 2 or "w" not in parts[1]:
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if hi - lo > (256 << 20):
                continue
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            for m in re.finditer(rb"[0-9a-f]{64}", data):
                found.add(m.group(0).decode())
            for m in re.finditer(rb'"key":"([^"]{8,200})"', data):
                found.add("key:" + m.group(1).decode(errors="replace"))
    return found


def scan(seconds):
    me, mine = os.getuid(), {os.getpid(), os.getppid()}
    deadline, seen, tried = time.time() + seconds, set(), 0
    while time.time() < deadline:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in mine or name in seen:
                continue
            pid = int(name)
            try:
                if uid_of(pid) != me:
                    continue
                with open("/proc/%d/comm" % pid) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            seen.add(name)
            tried += 1
            stopped = False
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped = True
            except OSError:
                pass
            try:
                for s in sorted(read_memory(pid)):
                    print("LEAK pid %d (%s): %s" % (pid, comm, s), flush=True)
                print("READ pid %d (%s)" % (pid, comm), flush=True)
            except OSError as e:
                print("DENIED pid %d (%s): %s" % (pid, comm, e.strerror), flush=True)
            finally:
                if stopped:
                    try:
                        os.kill(pid, signal.SIGCONT)
                    except OSError:
                        pass
        time.sleep(0.005)
    print("scanned: %d processes of uid %d besides itself" % (tried, me), flush=True)


if __name__ == "__main__":
    attempt = int(os.environ.get("RT_ATTEMPT", "1"))
    if sys.argv[1] == "auto":  # the first attempt fills, the next scans
        fill(int(sys.argv[2])) if attempt == 1 else scan(float(sys.argv[3]))
    elif sys.argv[1] == "fill":
        fill(int(sys.argv[2]))
    else:
        scan(float(sys.argv[2]))
