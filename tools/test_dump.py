#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""CTest driver for rpcrdma-dump.

  test_dump.py samples DUMP SAMPLES_DIR   (test dump_samples)
      every file in samples/ decodes with --json (exit 0, valid JSON) and
      shows the key fields it was written with; text mode works too.
  test_dump.py bad DUMP                   (test dump_bad_input)
      malformed input exits 1 with "offset N: ..." naming the item.
  test_dump.py summary DUMP SAMPLES_DIR   (test dump_summary)
      a capture is one line per message (known lines of
      samples/iwarp-rpcrdma-v1.pcap), -V gives every field, and the
      filters --xid, --prog and --type select what they say.
"""
import json
import os
import subprocess
import sys

failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


def run(args, stdin=None):
    return subprocess.run(args, input=stdin, capture_output=True)


# Key fields of each sample, as written by hand in samples/*.hex.
SAMPLES = {
    "v1-msg-call-chunks.hex": {
        "kind": "rpcrdma_v1", "rdma_xid": 0x5a5a0001, "rdma_vers": 1,
        "rdma_credit": 128, "rdma_proc": 0,
        "rdma_reads": [{"position": 84, "handle": 0x11223344,
                        "length": 65536, "offset": 0x7f0000001000}],
        "rdma_writes": [[
            {"handle": 0x55667788, "length": 8192, "offset": 0x7f0000200000},
            {"handle": 0x55667789, "length": 8192, "offset": 0x7f0000202000}]],
        "rdma_reply": None, "header_length": 92,
        "rpc": {"xid": 0x5a5a0001, "msg_type": 0, "rpcvers": 2,
                "prog": 100003, "vers": 4, "proc": 1, "header_length": 72,
                "body_length": 12,
                "cred": {"flavor": 1, "length": 32, "stamp": 0xabcd,
                         "machinename": "client1", "uid": 1000,
                         "gid": 1000, "gids": [1000]},
                "verf": {"flavor": 0, "length": 0}},
    },
    "v1-err-vers.hex": {
        "kind": "rpcrdma_v1", "rdma_xid": 0x5a5a0002, "rdma_proc": 4,
        "rdma_err": 1, "rdma_err_name": "ERR_VERS", "rdma_vers_low": 1,
        "rdma_vers_high": 1, "header_length": 28,
    },
    "v2-connprop.hex": {
        "kind": "rpcrdma_v2", "rdma_xid": 0x5a5a0003, "rdma_vers": 2,
        "rdma_credit": 16, "rdma_htype": 5, "rdma_flags": 0,
        "rdma_props": [
            {"rdma_which": 1, "name": "RDMA2_PROPID_RBSIZ", "value": 8192},
            {"rdma_which": 2, "name": "RDMA2_PROPID_BRS", "value": 2},
            {"rdma_which": 99, "name": "unknown", "data": "010203040506"}],
        "header_length": 64,
    },
    "v2-error.hex": {
        "kind": "rpcrdma_v2", "rdma_xid": 0x5a5a0004, "rdma_htype": 4,
        "rdma_flags": 1, "rdma_err": 7, "rdma_chunk_index": 1,
        "rdma_length_needed": 131072,
    },
    # Written by tests/interop/mkpcap --rev 2: TCP handshake, MPA rev 2
    # Request/Reply with RFC 8797 private data, 8 Sends.
    "iwarp-rpcrdma-v1.pcap": {
        "format": "pcap", "frames": 16, "rpcrdma_messages": 8, "errors": 0,
        "incomplete_at_end": 0,
    },
    "cm-private-data.hex": {
        "kind": "cm_private_data", "magic": 0xf6ab0e18, "version": 1,
        "flags": 1, "remote_invalidation": True, "max_send_size": 8192,
        "max_recv_size": 32768,
    },
}


def subset(got, want, path):
    if isinstance(want, dict):
        check(isinstance(got, dict), f"{path}: not an object: {got!r}")
        if isinstance(got, dict):
            for k, v in want.items():
                check(k in got, f"{path}.{k}: missing")
                if k in got:
                    subset(got[k], v, f"{path}.{k}")
    else:
        check(got == want, f"{path}: got {got!r}, expected {want!r}")


def samples(dump, sdir):
    files = sorted(f for f in os.listdir(sdir) if not f.startswith("."))
    check(set(SAMPLES) <= set(files), f"samples missing: {set(SAMPLES) - set(files)}")
    for f in files:
        path = os.path.join(sdir, f)
        r = run([dump, "--json", path])
        check(r.returncode == 0, f"{f}: exit {r.returncode}: {r.stderr.decode()}")
        try:
            d = json.loads(r.stdout)
        except ValueError as e:
            check(False, f"{f}: invalid JSON: {e}")
            continue
        if f in SAMPLES:
            subset(d, SAMPLES[f], f)
        t = run([dump, path])
        check(t.returncode == 0 and t.stdout, f"{f}: text mode failed")
        # The same bytes through stdin and --hex give the same JSON.
        with open(path, "rb") as fh:
            raw = fh.read()
        s = run([dump, "--json", "-"], stdin=raw)
        try:
            ds = json.loads(s.stdout)
        except ValueError:
            ds = None
        if isinstance(ds, dict):
            ds.pop("capture", None)  # the source name: "<stdin>"
            d.pop("capture", None)
        check(ds == d, f"{f}: stdin decode differs")
    # Raw binary input decodes like hex text.
    raw = bytes.fromhex("5a5a0002000000010000000100000004000000010000000100000001")
    r = run([dump, "--json", "-"], stdin=raw)
    check(r.returncode == 0 and json.loads(r.stdout)["rdma_err"] == 1,
          "binary stdin ERR_VERS")


# (hex input, expected offset, phrase in the message)
BAD = [
    ("", 0, "truncated: expected rdma_xid"),
    ("5a5a0001", 4, "truncated: expected rdma_vers"),
    ("5a5a0001 00000003 00000001 00000000", 4, "rdma_vers 3: expected 1 or 2"),
    ("5a5a0001 00000001 00000001", 12, "truncated: expected rdma_proc"),
    ("5a5a0001 00000001 00000001 00000009", 12, "rdma_proc 9"),
    # Read list says an entry follows, then only 8 of its 20 bytes.
    ("5a5a0001 00000001 00000001 00000000 00000001 00000000 11223344", 20,
     "truncated: expected read segment (position,handle,length,offset)"),
    ("5a5a0001 00000001 00000001 00000000 00000002", 16,
     "read list entry discriminator is 2: expected 0 or 1"),
    ("5a5a0001 00000001 00000001 00000000 00000001 00000006 11223344 00000010"
     " 0000000000000000 00000000 00000000 00000000", 20,
     "position 6: expected a multiple of 4"),
    # Write chunk claims 2 segments, carries 1.
    ("5a5a0001 00000001 00000001 00000000 00000000 00000001 00000002"
     " 11223344 00000010 0000000000000000", 44,
     "truncated: expected write chunk 1 segment 2 of 2"),
    ("5a5a0001 00000001 00000001 00000001 00000000 00000000 00000000", 16,
     "RDMA_NOMSG with no chunk list"),
    ("5a5a0001 00000001 00000001 00000004 00000007", 16, "rdma_err 7"),
    ("5a5a0001 00000001 00000001 00000004 00000001 00000001", 24,
     "truncated: expected rdma_vers_high"),
    ("5a5a0001 00000001 00000001 00000002 00000003 00000400 00000000 00000000 00000000",
     16, "rdma_align 3: expected a power of two"),
    # RDMA_MSG whose RPC header stops after the xid.
    ("5a5a0001 00000001 00000001 00000000 00000000 00000000 00000000 5a5a0001",
     32, "truncated: expected RPC msg_type"),
    ("5a5a0001 00000001 00000001 00000000 00000000 00000000 00000000 5a5a0001"
     " 00000000 00000003", 36, "RPC rpcvers 3: expected 2"),
    ("5a5a0001 00000002 00000001 00000004 00000000 00000001", 16,
     "expected RDMA2_F_RESPONSE"),
    ("5a5a0001 00000002 00000001 00000007 00000000", 12, "rdma_htype 7"),
    ("5a5a0001 00000002 00000001 00000005 00000000 00000001 00000001 00000004",
     32, "truncated: expected property 1 rdma_data"),
    ("f6ab0e18 0101", 4, "truncated: expected RFC 8797 version"),
    ("f6ab0e18 02010000", 4, "private data version 2: expected 1"),
]


def bad(dump):
    for hexin, off, phrase in BAD:
        r = run([dump, "--json", "--hex", hexin])
        err = r.stderr.decode()
        check(r.returncode == 1, f"{hexin!r}: exit {r.returncode}, expected 1 ({err.strip()})")
        check(f"offset {off}: " in err, f"{hexin!r}: expected 'offset {off}:' in {err!r}")
        check(phrase in err, f"{hexin!r}: expected {phrase!r} in {err!r}")
        check(r.stdout == b"", f"{hexin!r}: printed output on error")
    r = run([dump, "--hex", "abc"])
    check(r.returncode == 1 and b"odd number" in r.stderr, "odd hex digits")
    r = run([dump, "--no-such-option"])
    check(r.returncode == 2, "unknown option exits 2")
    r = run([dump, "/nonexistent/file"])
    check(r.returncode == 2, "missing file exits 2")


def summary(dump, sdir):
    cap = os.path.join(sdir, "iwarp-rpcrdma-v1.pcap")
    r = run([dump, cap])
    out = r.stdout.decode()
    lines = out.splitlines()
    check(r.returncode == 0, "summary exit %d" % r.returncode)
    # 2 MPA lines, 8 messages, the footer.
    check(len(lines) == 11, "summary: %d lines, want 11" % len(lines))
    want = [
        ("6   0.000500 127.0.0.1:40001 -> 127.0.0.1:20049 v1 MSG      "
         "xid 0x1a2b3c01 cr 32 CALL prog 0x186a0"),
        "vers 2 proc 17 [read 3 segs]",
        ("7   0.000600 127.0.0.1:20049 -> 127.0.0.1:40001 v1 MSG      "
         "xid 0x1a2b3c01 cr 31 REPLY to prog 0x186a0"),
        "v1 NOMSG    xid 0x1a2b3c03 cr 32 CALL (Long Call, in the Read chunk) "
        "[read 2 segs, reply 16384 B]",
        "v1 ERROR    xid 0x1a2b3c02 cr 30 ERR_VERS to prog 0x186a0",
        "MPA Request, RPC-over-RDMA v1 inline send 4096 receive 8192 R",
        "16 frames, 8 RPC-over-RDMA messages, 8 shown, 0 errors",
    ]
    for w in want:
        check(w in out, "summary lacks: " + w)
    # -V: today's detail, the program in hex beside its number.
    r = run([dump, "-V", cap])
    v = r.stdout.decode()
    check(r.returncode == 0 and len(v.splitlines()) > 60,
          "-V gives the detail (%d lines)" % len(v.splitlines()))
    check("prog: 100000 (0x186a0" in v, "-V: program in hex beside it")
    # Filters, in summary and detail alike.
    r = run([dump, "--xid", "0x1a2b3c02", cap])
    msg = [ln for ln in r.stdout.decode().splitlines() if " xid " in ln]
    check(len(msg) == 2 and all("0x1a2b3c02" in ln for ln in msg),
          "--xid: %r" % msg)
    r = run([dump, "-t", "error", cap])
    msg = [ln for ln in r.stdout.decode().splitlines() if " xid " in ln]
    check(len(msg) == 2 and all(" ERROR " in ln for ln in msg),
          "--type error: %r" % msg)
    r = run([dump, "-t", "call", cap])
    msg = [ln for ln in r.stdout.decode().splitlines() if " xid " in ln]
    check(len(msg) == 4 and all("CALL" in ln for ln in msg),
          "--type call: %r" % msg)
    r = run([dump, "-p", "100000", "-t", "reply", cap])
    msg = [ln for ln in r.stdout.decode().splitlines() if " xid " in ln]
    check(len(msg) == 1 and "REPLY to prog 0x186a0" in msg[0],
          "--prog 100000 --type reply: %r" % msg)
    r = run([dump, "-V", "--xid", "0x1a2b3c04", "--json", cap])
    d = json.loads(r.stdout)
    check([m["message"]["rdma_xid"] for m in d["messages"]] == [0x1a2b3c04],
          "--json obeys the filter")
    r = run([dump, "-t", "bogus", cap])
    check(r.returncode == 2 and b"bogus" in r.stderr, "bad --type exits 2")
    for a in (["--version"], ["-h"], ["--help"]):
        r = run([dump] + a)
        check(r.returncode == 0 and r.stdout, "%s exits 0" % a[0])


def main():
    mode, dump = sys.argv[1], sys.argv[2]
    if mode == "samples":
        samples(dump, sys.argv[3])
    elif mode == "summary":
        summary(dump, sys.argv[3])
    else:
        bad(dump)
    for f in failures:
        print("FAIL", f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures or not checks else 0


if __name__ == "__main__":
    sys.exit(main())
