#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""interop_tshark_v1: an independent decoder (tshark) reads our bytes.

mkpcap writes captures of a loopback iWARP connection whose MPA, DDP/RDMAP,
RPC-over-RDMA v1 and ONC RPC bytes come from our encoders, plus
EXPECTED.json with the values the encoders were asked to write.  This
script checks, per capture:

  * tshark's rpcordma.* fields equal the encoded values (xid, version,
    credits, message type, list counts, every handle/length/offset,
    positions, segment counts, error code and version range);
  * tshark's rpc.* fields equal the encoded RPC header (xid, type,
    program/version/procedure, AUTH_SYS stamp/name/uid/gid, reply and
    accept state) wherever tshark dissects the RPC message;
  * the DDP/RDMAP headers (untagged, QN 0, MSN, MO 0, Last, Send);
  * the MPA Request/Reply (C bit, revision, RFC 8797 private data) and
    that tshark calls every FPDU CRC good, cross-checked against a CRC-32C
    computed here, in Python, from the captured bytes (sent LSB first);
  * no frame is malformed and no expert info is above "note";
  * rpcrdma-dump --json decodes every message (given as hex) to the same
    values, and to the same values tshark reports;
  * rpcrdma-dump --json on the capture itself finds every message, in
    order, with the same values (also for --stress framing and pcapng).

Exit 0 pass, 1 fail, 77 skip (tshark not installed).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

SEV_NOTE = 0x400000  # expert severities: chat 0x200000, note 0x400000,
                     # warn 0x600000, error 0x800000

FIELDS = [
    "frame.number", "tcp.payload", "_ws.malformed", "_ws.expert.severity",
    "_ws.expert.message",
    "iwarp_mpa.crc_flag", "iwarp_mpa.marker_flag", "iwarp_mpa.rej_flag",
    "iwarp_mpa.rev", "iwarp_mpa.res", "iwarp_mpa.pdlength",
    "iwarp_mpa.privatedata", "iwarp_mpa.ulpdulength", "iwarp_mpa.crc_check",
    "iwarp_ddp.tagged_flag", "iwarp_ddp.last_flag", "iwarp_ddp.dv",
    "iwarp_ddp.qn", "iwarp_ddp.msn", "iwarp_ddp.mo",
    "iwarp_rdma.version", "iwarp_rdma.opcode",
    "rpcordma.xid", "rpcordma.version", "rpcordma.flow_control",
    "rpcordma.msg_type", "rpcordma.reads_count", "rpcordma.writes_count",
    "rpcordma.reply_count", "rpcordma.rdma_handle", "rpcordma.rdma_length",
    "rpcordma.rdma_offset", "rpcordma.position", "rpcordma.segment_count",
    "rpcordma.errcode", "rpcordma.vers_low", "rpcordma.vers_high",
    "rpc.xid", "rpc.msgtyp", "rpc.version", "rpc.program",
    "rpc.programversion", "rpc.procedure", "rpc.auth.flavor",
    "rpc.auth.stamp", "rpc.auth.machinename", "rpc.auth.uid",
    "rpc.auth.gid", "rpc.replystat", "rpc.state_accept",
]


class Checker:
    def __init__(self):
        self.compared = 0
        self.failures = []
        self.notes = []

    def eq(self, where, what, got, want):
        self.compared += 1
        if got != want:
            self.failures.append(f"{where}: {what}: got {got!r}, expected {want!r}")

    def ok(self, where, what, cond, detail=""):
        self.compared += 1
        if not cond:
            self.failures.append(f"{where}: {what} {detail}".rstrip())


def run(cmd, **kw):
    return subprocess.run(cmd, check=False, capture_output=True, text=True, **kw)


def num(v):
    """A tshark field value (decimal, 0x-hex, or True/False) as an int."""
    if v in ("True", "true"):
        return 1
    if v in ("False", "false"):
        return 0
    return int(v, 0)


def crc32c(data):
    """CRC-32C (Castagnoli), reflected, init/final xor 0xFFFFFFFF: written
    here from the definition so it does not share code with wire/crc32c.c."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def tshark_frames(pcap):
    cmd = ["tshark", "-n", "-r", pcap, "-T", "json"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = run(cmd)
    if r.returncode != 0:
        raise SystemExit(f"tshark failed: {r.stderr}")
    frames = {}
    for pkt in json.loads(r.stdout):
        layers = pkt["_source"]["layers"]
        frames[int(layers["frame.number"][0])] = layers
    return frames


def tshark_crc_verdicts(pcap):
    """Per frame, the CRC verdicts tshark prints in its packet details."""
    r = run(["tshark", "-n", "-r", pcap, "-V"])
    verdicts, frame = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^Frame (\d+):", line)
        if m:
            frame = int(m.group(1))
            continue
        m = re.search(r"CRC check: 0x[0-9a-f]+ \((Good|Bad) CRC32", line)
        if m and frame is not None:
            verdicts.setdefault(frame, []).append(m.group(1))
    return verdicts


def expected_tshark_lists(e):
    """The rpcordma.* repeated fields in tshark's order: Read list, then
    Write list, then Reply chunk."""
    handles, lengths, offsets, positions, segcounts = [], [], [], [], []
    for r in e.get("rdma_reads", []):
        positions.append(r["position"])
        handles.append(r["handle"])
        lengths.append(r["length"])
        offsets.append(r["offset"])
    for chunk in e.get("rdma_writes", []):
        segcounts.append(len(chunk))
        for s in chunk:
            handles.append(s["handle"])
            lengths.append(s["length"])
            offsets.append(s["offset"])
    reply = e.get("rdma_reply")
    if reply is not None:
        segcounts.append(len(reply))
        for s in reply:
            handles.append(s["handle"])
            lengths.append(s["length"])
            offsets.append(s["offset"])
    return handles, lengths, offsets, positions, segcounts


def field_list(layers, name):
    return [num(v) for v in layers.get(name, [])]


def check_frame_sanity(c, frames, where):
    for n, layers in sorted(frames.items()):
        c.ok(f"{where} frame {n}", "not malformed", "_ws.malformed" not in layers,
             str(layers.get("_ws.malformed")))
        sev = [num(v) for v in layers.get("_ws.expert.severity", [])]
        msgs = layers.get("_ws.expert.message", [])
        c.ok(f"{where} frame {n}", "no expert info above note",
             all(s <= SEV_NOTE for s in sev), f"{msgs} {sev}")


def check_mpa(c, frames, verdicts, exp, where):
    for idx, key in ((0, "mpa_request_frame"), (1, "mpa_reply_frame")):
        n = exp[key]
        layers = frames[n]
        w = f"{where} frame {n} (MPA {'Reply' if idx else 'Request'})"
        c.eq(w, "iwarp_mpa.crc_flag", field_list(layers, "iwarp_mpa.crc_flag"), [1])
        c.eq(w, "iwarp_mpa.marker_flag", field_list(layers, "iwarp_mpa.marker_flag"), [0])
        c.eq(w, "iwarp_mpa.rej_flag", field_list(layers, "iwarp_mpa.rej_flag"), [0])
        c.eq(w, "iwarp_mpa.rev", field_list(layers, "iwarp_mpa.rev"), [exp["rev"]])
        pd = exp["mpa_private_data"][idx]
        if exp["rev"] == 2:
            # RFC 6581: S bit (0x10 in the byte tshark calls "Reserved")
            # and the 4-byte IRD/ORD block before the ULP private data.
            c.eq(w, "iwarp_mpa.res (RFC 6581 S bit)",
                 field_list(layers, "iwarp_mpa.res"), [0x10])
            got = layers.get("iwarp_mpa.privatedata", [""])[0].replace(":", "")
            c.eq(w, "iwarp_mpa.privatedata after IRD/ORD", got[8:], pd)
            c.eq(w, "iwarp_mpa.pdlength", field_list(layers, "iwarp_mpa.pdlength"),
                 [4 + len(pd) // 2])
        else:
            c.eq(w, "iwarp_mpa.res", field_list(layers, "iwarp_mpa.res"), [0])
            got = layers.get("iwarp_mpa.privatedata", [""])[0].replace(":", "")
            c.eq(w, "iwarp_mpa.privatedata", got, pd)
            c.eq(w, "iwarp_mpa.pdlength", field_list(layers, "iwarp_mpa.pdlength"),
                 [len(pd) // 2])
    # Every FPDU: tshark's verdict and our own Python CRC over the bytes.
    fpdus = 0
    for m in exp["messages"]:
        n = m["frame"]
        w = f"{where} frame {n}"
        c.eq(w, "tshark CRC verdicts", verdicts.get(n), ["Good"])
        payload = bytes.fromhex(frames[n]["tcp.payload"][0].replace(":", ""))
        body, trailer = payload[:-4], payload[-4:]
        c.eq(w, "CRC-32C (Python, LSB first)", int.from_bytes(trailer, "little"),
             crc32c(body))
        # tshark shows the CRC field as a big-endian read of the 4 wire
        # bytes, i.e. byte-swapped relative to the CRC-32C value.
        c.eq(w, "iwarp_mpa.crc_check (wire bytes read big-endian)",
             field_list(frames[n], "iwarp_mpa.crc_check"),
             [int.from_bytes(crc32c(body).to_bytes(4, "little"), "big")])
        fpdus += 1
    return fpdus


def check_message_tshark(c, frames, m, where):
    n = m["frame"]
    layers = frames[n]
    e = m["expect"]
    w = f"{where} frame {n} (xid {e['rdma_xid']:#x} proc {e['rdma_proc']})"
    # DDP / RDMAP
    c.eq(w, "iwarp_ddp.tagged_flag", field_list(layers, "iwarp_ddp.tagged_flag"), [0])
    c.eq(w, "iwarp_ddp.last_flag", field_list(layers, "iwarp_ddp.last_flag"), [1])
    c.eq(w, "iwarp_ddp.dv", field_list(layers, "iwarp_ddp.dv"), [1])
    c.eq(w, "iwarp_ddp.qn", field_list(layers, "iwarp_ddp.qn"), [0])
    c.eq(w, "iwarp_ddp.msn", field_list(layers, "iwarp_ddp.msn"), [m["msn"]])
    c.eq(w, "iwarp_ddp.mo", field_list(layers, "iwarp_ddp.mo"), [0])
    c.eq(w, "iwarp_rdma.version", field_list(layers, "iwarp_rdma.version"), [1])
    c.eq(w, "iwarp_rdma.opcode", field_list(layers, "iwarp_rdma.opcode"), [3])
    c.eq(w, "iwarp_mpa.ulpdulength", field_list(layers, "iwarp_mpa.ulpdulength"),
         [18 + m["length"]])
    # RPC-over-RDMA
    c.eq(w, "rpcordma.xid", field_list(layers, "rpcordma.xid"), [e["rdma_xid"]])
    c.eq(w, "rpcordma.version", field_list(layers, "rpcordma.version"), [e["rdma_vers"]])
    c.eq(w, "rpcordma.flow_control", field_list(layers, "rpcordma.flow_control"),
         [e["rdma_credit"]])
    c.eq(w, "rpcordma.msg_type", field_list(layers, "rpcordma.msg_type"), [e["rdma_proc"]])
    handles, lengths, offsets, positions, segcounts = expected_tshark_lists(e)
    if "rdma_reads" in e:
        # tshark's "Read list (count)" counts read segments, not chunks.
        c.eq(w, "rpcordma.reads_count", field_list(layers, "rpcordma.reads_count"),
             [len(e["rdma_reads"])])
        c.eq(w, "rpcordma.writes_count", field_list(layers, "rpcordma.writes_count"),
             [len(e["rdma_writes"])])
        c.eq(w, "rpcordma.reply_count", field_list(layers, "rpcordma.reply_count"),
             [0 if e["rdma_reply"] is None else 1])
    c.eq(w, "rpcordma.rdma_handle", field_list(layers, "rpcordma.rdma_handle"), handles)
    c.eq(w, "rpcordma.rdma_length", field_list(layers, "rpcordma.rdma_length"), lengths)
    c.eq(w, "rpcordma.rdma_offset", field_list(layers, "rpcordma.rdma_offset"), offsets)
    c.eq(w, "rpcordma.position", field_list(layers, "rpcordma.position"), positions)
    c.eq(w, "rpcordma.segment_count", field_list(layers, "rpcordma.segment_count"),
         segcounts)
    if "rdma_err" in e:
        c.eq(w, "rpcordma.errcode", field_list(layers, "rpcordma.errcode"), [e["rdma_err"]])
        if "rdma_vers_low" in e:
            c.eq(w, "rpcordma.vers_low", field_list(layers, "rpcordma.vers_low"),
                 [e["rdma_vers_low"]])
            c.eq(w, "rpcordma.vers_high", field_list(layers, "rpcordma.vers_high"),
                 [e["rdma_vers_high"]])
    # ONC RPC.  tshark holds back an RDMA_MSG that has a Read list (it waits
    # for the RDMA Read data to rebuild the message), so there is no rpc
    # layer for it.
    rpc = e.get("rpc")
    if rpc is None or e.get("rdma_reads"):
        c.eq(w, "no rpc.xid", layers.get("rpc.xid"), None)
        return
    c.eq(w, "rpc.xid", field_list(layers, "rpc.xid"), [rpc["xid"]])
    c.eq(w, "rpc.msgtyp", field_list(layers, "rpc.msgtyp"), [rpc["msg_type"]])
    if rpc["msg_type"] == 0:
        cred = rpc["cred"]
        c.eq(w, "rpc.version", field_list(layers, "rpc.version"), [2])
        c.eq(w, "rpc.program", field_list(layers, "rpc.program"), [rpc["prog"]])
        # tshark repeats rpc.programversion (RPC header and program tree).
        pv = field_list(layers, "rpc.programversion")
        c.ok(w, "rpc.programversion", pv and all(v == rpc["vers"] for v in pv), str(pv))
        c.eq(w, "rpc.procedure", field_list(layers, "rpc.procedure"), [rpc["proc"]])
        c.eq(w, "rpc.auth.flavor (cred, verf)", field_list(layers, "rpc.auth.flavor"),
             [cred["flavor"], rpc["verf"]["flavor"]])
        c.eq(w, "rpc.auth.stamp", field_list(layers, "rpc.auth.stamp"), [cred["stamp"]])
        c.eq(w, "rpc.auth.machinename", layers.get("rpc.auth.machinename"),
             [cred["machinename"]])
        c.eq(w, "rpc.auth.uid", field_list(layers, "rpc.auth.uid"), [cred["uid"]])
        c.eq(w, "rpc.auth.gid (gid, gids...)", field_list(layers, "rpc.auth.gid"),
             [cred["gid"]] + cred["gids"])
    else:
        c.eq(w, "rpc.replystat", field_list(layers, "rpc.replystat"), [rpc["reply_stat"]])
        c.eq(w, "rpc.state_accept", field_list(layers, "rpc.state_accept"),
             [rpc["accept_stat"]])


def compare_dump(c, d, e, where):
    """rpcrdma-dump --json output d against expected values e."""
    for k in ("rdma_xid", "rdma_vers", "rdma_credit", "rdma_proc",
              "rdma_reads", "rdma_writes", "rdma_reply", "rdma_err",
              "rdma_vers_low", "rdma_vers_high"):
        if k in e:
            c.eq(where, k, d.get(k), e[k])
    c.eq(where, "kind", d.get("kind"), "rpcrdma_v1")
    rpc = e.get("rpc")
    if rpc is None:
        c.eq(where, "rpc absent", d.get("rpc"), None)
        return
    dr = d.get("rpc") or {}
    for k in ("xid", "msg_type", "body_length"):
        c.eq(where, "rpc." + k, dr.get(k), rpc[k])
    if rpc["msg_type"] == 0:
        for k in ("rpcvers", "prog", "vers", "proc"):
            c.eq(where, "rpc." + k, dr.get(k), rpc[k])
        dc = dr.get("cred") or {}
        for k in ("flavor", "stamp", "machinename", "uid", "gid", "gids"):
            c.eq(where, "rpc.cred." + k, dc.get(k), rpc["cred"][k])
        c.eq(where, "rpc.verf.flavor", (dr.get("verf") or {}).get("flavor"),
             rpc["verf"]["flavor"])
    else:
        for k in ("reply_stat", "accept_stat"):
            c.eq(where, "rpc." + k, dr.get(k), rpc[k])


def compare_dump_tshark(c, d, layers, where):
    """rpcrdma-dump against tshark directly, for the fields both have."""
    c.eq(where, "dump vs tshark xid", [d["rdma_xid"]], field_list(layers, "rpcordma.xid"))
    c.eq(where, "dump vs tshark credit", [d["rdma_credit"]],
         field_list(layers, "rpcordma.flow_control"))
    c.eq(where, "dump vs tshark proc", [d["rdma_proc"]],
         field_list(layers, "rpcordma.msg_type"))
    h, ln, off, pos, seg = expected_tshark_lists(d)
    c.eq(where, "dump vs tshark handles", h, field_list(layers, "rpcordma.rdma_handle"))
    c.eq(where, "dump vs tshark lengths", ln, field_list(layers, "rpcordma.rdma_length"))
    c.eq(where, "dump vs tshark offsets", off, field_list(layers, "rpcordma.rdma_offset"))
    c.eq(where, "dump vs tshark positions", pos, field_list(layers, "rpcordma.position"))
    if "rdma_err" in d:
        c.eq(where, "dump vs tshark errcode", [d["rdma_err"]],
             field_list(layers, "rpcordma.errcode"))
    if "rpc" in d and "rpc.xid" in layers:
        c.eq(where, "dump vs tshark rpc.xid", [d["rpc"]["xid"]],
             field_list(layers, "rpc.xid"))


def dump_json(c, dump, args, where):
    r = run([dump, "--json"] + args)
    if r.returncode != 0:
        c.failures.append(f"{where}: rpcrdma-dump exit {r.returncode}: {r.stderr.strip()}")
        return None
    try:
        return json.loads(r.stdout)
    except ValueError as ex:
        c.failures.append(f"{where}: rpcrdma-dump printed invalid JSON: {ex}")
        return None


def check_dump_capture(c, dump, pcap, exp, where):
    """rpcrdma-dump reading the capture finds every message in order."""
    d = dump_json(c, dump, [pcap], where + " (capture)")
    if d is None:
        return
    msgs = [x for x in d.get("messages", []) if "message" in x]
    c.eq(where, "messages found in capture", len(msgs), len(exp["messages"]))
    # Per direction, the capture order is the send order.
    for direction in ("c2s", "s2c"):
        want = [m for m in exp["messages"] if m["dir"] == direction]
        got = [x for x in msgs if x.get("dir") == direction]
        for i, (g, m) in enumerate(zip(got, want)):
            w = f"{where} capture {direction} message {i + 1}"
            c.eq(w, "msn", g.get("msn"), m["msn"])
            c.eq(w, "length", g["message"].get("length"), m["length"])
            compare_dump(c, g["message"], m["expect"], w)
    errs = [x for x in d.get("messages", []) if "error" in x]
    c.eq(where, "capture errors", errs, [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkpcap", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--no-capture-reader", action="store_true",
                    help="skip rpcrdma-dump's own capture reader")
    a = ap.parse_args()
    if shutil.which("tshark") is None:
        print("SKIP: tshark not installed")
        return 77
    os.makedirs(a.workdir, exist_ok=True)
    c = Checker()
    total_frames = total_msgs = total_fpdus = 0
    variants = [
        ("rev1", ["--rev", "1"], True),
        ("rev2", ["--rev", "2"], True),
        ("stress", ["--rev", "2", "--stress"], False),
        ("pcapng", ["--rev", "1", "--pcapng"], True),
        ("reorder", ["--rev", "1", "--reorder", "--pcapng"], None),
    ]
    for name, opts, per_frame in variants:
        pcap = os.path.join(a.workdir, name + (".pcapng" if "--pcapng" in opts else ".pcap"))
        expf = os.path.join(a.workdir, name + ".json")
        r = run([a.mkpcap] + opts + [pcap, expf])
        if r.returncode != 0:
            print(f"mkpcap {name} failed: {r.stderr}")
            return 1
        with open(expf) as f:
            exp = json.load(f)
        frames = tshark_frames(pcap)
        c.eq(name, "frame count", len(frames), exp["frames"])
        total_frames += len(frames)
        if per_frame is None:
            # Out-of-order and retransmitted TCP segments: tshark rightly
            # warns about them, so only rpcrdma-dump's reader is checked.
            pass
        elif per_frame:
            check_frame_sanity(c, frames, name)
            verdicts = tshark_crc_verdicts(pcap)
            total_fpdus += check_mpa(c, frames, verdicts, exp, name)
            for m in exp["messages"]:
                check_message_tshark(c, frames, m, name)
                w = f"{name} frame {m['frame']} rpcrdma-dump --hex"
                d = dump_json(c, a.dump, ["--hex", m["hex"]], w)
                if d is not None:
                    compare_dump(c, d, m["expect"], w)
                    compare_dump_tshark(c, d, frames[m["frame"]], w)
                total_msgs += 1
        else:
            check_frame_sanity(c, frames, name)
            # Odd TCP segmentation and a multi-segment Send: tshark must
            # see every DDP segment, in order, with the right MSN/MO/Last
            # and ULPDU length.  (It runs rpcordma only on the first FPDU
            # of a TCP segment, so the rpcordma.xid sequence is reported,
            # not asserted.)
            got, xids = [], []
            for n in sorted(frames):
                ly = frames[n]
                for msn, mo, last, ul in zip(field_list(ly, "iwarp_ddp.msn"),
                                             field_list(ly, "iwarp_ddp.mo"),
                                             field_list(ly, "iwarp_ddp.last_flag"),
                                             field_list(ly, "iwarp_mpa.ulpdulength")):
                    got.append((msn, mo, last, ul))
                xids += [num(x) for x in ly.get("rpcordma.xid", [])]
            want = [(m["msn"], s["mo"], int(s["last"]), 18 + s["len"])
                    for m in exp["messages"] for s in m["ddp"]]
            c.eq(name, "tshark DDP segment sequence (msn, mo, last, ulpdu length)",
                 got, want)
            c.notes.append(f"{name}: tshark decoded rpcordma in {len(xids)} of "
                           f"{len(exp['messages'])} messages")
            verdicts = tshark_crc_verdicts(pcap)
            bad = {n: v for n, v in verdicts.items() if any(x != "Good" for x in v)}
            c.eq(name, "frames with a bad CRC", bad, {})
        if not a.no_capture_reader:
            check_dump_capture(c, a.dump, pcap, exp, name)

    print(f"interop_tshark_v1: {len(variants)} captures, {total_frames} frames, "
          f"{total_msgs} RPC-over-RDMA messages and {total_fpdus} FPDU CRCs checked "
          f"frame by frame, {c.compared} comparisons, {len(c.failures)} failures")
    for n in c.notes:
        print("NOTE", n)
    for f in c.failures:
        print("FAIL", f)
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
