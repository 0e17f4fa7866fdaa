#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""wireshark_v2_check.py --lua rpcrdma2.lua --dump rpcrdma-dump
                         [--no-send-reassembly] CAPTURE...

The Wireshark dissector we ship for RPC-over-RDMA version 2
(tools/wireshark/rpcrdma2.lua) against rpcrdma-dump, our own decoder, on
the same captures.  Per capture:

  * tshark with the dissector loaded: no malformed frame, and no expert
    info at warning level or above that tshark without it does not also
    report (a Lua error in the dissector is such an expert error);
  * every RPC-over-RDMA v2 message rpcrdma-dump finds is decoded by the
    dissector, in the same frame (the frame holding the message's last
    byte) -- or, for a Send split into several DDP segments, which the
    dissector decodes from its first segment and marks as continued, in
    an earlier frame -- and the dissector finds no message rpcrdma-dump
    does not;
  * field by field, the values are the same: XID, version, credits,
    header type, flags and F_RESPONSE, rdma_inv_handle, every Read
    segment (position, handle, length, offset), every Write chunk and the
    Reply chunk segment by segment, the error code and its body, every
    property (id; value, "default" or opaque data), the header length;
  * after RDMA2_MSG, Wireshark's rpc dissector decoded the RPC message:
    the same XID and message type.

--no-send-reassembly turns Wireshark's own reassembly of Sends split into
DDP segments off (iwarp_ddp_rdmap.reassemble_iwarp_rdma_send): every DDP
segment then reaches the dissector, a split Send as its first segment
(decoded as far as it goes, marked continued).  With it on (the
default), Wireshark 4.0 hands heuristic dissectors only one Send per TCP
segment, so captures with several Sends in one TCP segment are checked
with it off.

Exit 0 pass, 1 fail, 77 skip (tshark not installed).
"""
import argparse
import collections
import json
import shutil
import subprocess
import sys


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (cmd[0], r.returncode, r.stderr[-2000:]))
    return r.stdout


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def num(v):
    return int(v, 0)


def segs(tree, prefix):
    """Segments of one chunk subtree: [(handle, length, offset)]."""
    hs = as_list(tree.get(prefix + ".handle"))
    ls = as_list(tree.get(prefix + ".length"))
    os_ = as_list(tree.get(prefix + ".offset"))
    return [(num(h), num(l), num(o)) for h, l, o in zip(hs, ls, os_)]


def from_tshark(m):
    """One rpcrdma2 tree (tshark -T json) as comparable values."""
    flags_tree = m.get("rpcrdma2.flags_tree", {})
    v = {
        "xid": num(m["rpcrdma2.xid"]),
        "vers": num(m["rpcrdma2.vers"]),
        "credit": num(m["rpcrdma2.credit"]),
        "htype": num(m["rpcrdma2.htype"]),
        "flags": num(m["rpcrdma2.flags"]),
        "response": num(flags_tree["rpcrdma2.flags.response"]) == 1,
    }
    if "rpcrdma2.header_length" in m:
        v["header_length"] = num(m["rpcrdma2.header_length"])
    if v["htype"] in (0, 1):
        v["inv_handle"] = num(m["rpcrdma2.inv_handle"])
        reads = []
        rl = m.get("rpcrdma2.read_list", {})
        for s in as_list(rl.get("rpcrdma2.read_segment")):
            reads.append((num(s["rpcrdma2.read.position"]),) + segs(s, "rpcrdma2.read")[0])
        v["reads"] = reads
        wl = m.get("rpcrdma2.write_list", {})
        v["writes"] = [segs(c, "rpcrdma2.write")
                       for c in as_list(wl.get("rpcrdma2.write_chunk"))]
        rc = m.get("rpcrdma2.reply_chunk")
        v["reply"] = segs(rc, "rpcrdma2.reply") if rc is not None else None
    elif v["htype"] == 4:
        v["err"] = num(m["rpcrdma2.err"])
        for k in ("vers_low", "vers_high", "max_chunks", "max_segments",
                  "chunk_index", "length_needed"):
            if "rpcrdma2.err." + k in m:
                v[k] = num(m["rpcrdma2.err." + k])
    elif v["htype"] == 5:
        props = []
        for p in as_list(m.get("rpcrdma2.prop")):
            which = num(p["rpcrdma2.prop.id"])
            if "rpcrdma2.prop.default" in p:
                val = "default"
            elif "rpcrdma2.prop.rbsiz" in p:
                val = ("rbsiz", num(p["rpcrdma2.prop.rbsiz"]))
            elif "rpcrdma2.prop.brs" in p:
                val = ("brs", num(p["rpcrdma2.prop.brs"]))
            else:
                val = p.get("rpcrdma2.prop.data", "").replace(":", "")
            props.append((which, val))
        v["props"] = props
    return v


def from_dump(h):
    """One rpcrdma-dump --json message as the same comparable values."""
    v = {
        "xid": h["rdma_xid"], "vers": h["rdma_vers"], "credit": h["rdma_credit"],
        "htype": h["rdma_htype"], "flags": h["rdma_flags"],
        "response": bool(h["response"]), "header_length": h["header_length"],
    }
    if v["htype"] in (0, 1):
        v["inv_handle"] = h["rdma_inv_handle"]
        v["reads"] = [(r["position"], r["handle"], r["length"], r["offset"])
                      for r in h["rdma_reads"]]
        v["writes"] = [[(s["handle"], s["length"], s["offset"]) for s in c]
                       for c in h["rdma_writes"]]
        v["reply"] = None if h["rdma_reply"] is None else \
            [(s["handle"], s["length"], s["offset"]) for s in h["rdma_reply"]]
    elif v["htype"] == 4:
        v["err"] = h["rdma_err"]
        for k in ("vers_low", "vers_high", "max_chunks", "max_segments",
                  "chunk_index", "length_needed"):
            if "rdma_" + k in h:
                v[k] = h["rdma_" + k]
    elif v["htype"] == 5:
        kind = {1: "rbsiz", 2: "brs"}
        v["props"] = [(p["rdma_which"],
                       p["data"] if "value" not in p else
                       p["value"] if p["value"] == "default" else
                       (kind[p["rdma_which"]], p["value"]))
                      for p in h["rdma_props"]]
    return v


def expert_counts(pcap, lua, opts):
    cmd = ["tshark", "-n", "-r", pcap] + opts + ["-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=|", "-e", "_ws.expert.severity", "-e", "_ws.expert.message"]
    if lua:
        cmd[1:1] = ["-X", "lua_script:" + lua]
    c = collections.Counter()
    for line in run(cmd).splitlines():
        sev, _, msg = line.partition("\t")
        for s, m in zip(sev.split("|"), msg.split("|")):
            if s and int(s) >= 0x600000:  # warn and error
                c[m] += 1
    return c


def check(pcap, lua, dump, opts, fails):
    d = json.loads(run([dump, "--json", pcap]))
    want = [m for m in d["messages"]
            if m.get("message", {}).get("kind") == "rpcrdma_v2"]

    out = run(["tshark", "-n", "-r", pcap, "-X", "lua_script:" + lua] + opts + [
               "-o", "rpc.dissect_unknown_programs:TRUE", "--no-duplicate-keys",
               "-T", "json", "-J", "frame rpcrdma2 rpc _ws.malformed"])
    frames = json.loads(out) if out.strip() else []
    got = []          # (frame, values, continued)
    rpc_by_frame = {}
    malformed = 0
    for pkt in frames:
        ly = pkt["_source"]["layers"]
        fno = int(ly["frame"]["frame.number"])
        if "_ws.malformed" in ly:
            malformed += 1
        for m in as_list(ly.get("rpcrdma2")):
            got.append((fno, from_tshark(m), "rpcrdma2.continued" in m))
        rpc_by_frame[fno] = as_list(ly.get("rpc"))
    if malformed:
        fails.append("%s: %d malformed frames with the dissector" % (pcap, malformed))

    extra = expert_counts(pcap, lua, opts) - expert_counts(pcap, None, opts)
    for msg, n in extra.items():
        fails.append("%s: %d x expert warning/error only with the dissector: %s" % (pcap, n, msg))

    if len(got) != len(want):
        fails.append("%s: the dissector decoded %d v2 messages, rpcrdma-dump %d"
                     % (pcap, len(got), len(want)))
    compared = 0
    rpc_seen = collections.Counter()
    for i, (w, g) in enumerate(zip(want, got)):
        wframe, wv = w["frame"], from_dump(w["message"])
        gframe, gv, continued = g
        where = "%s: message %d (frame %d)" % (pcap, i + 1, wframe)
        if gframe != wframe and not (continued and gframe < wframe):
            fails.append("%s: decoded in frame %s" % (where, gframe))
        if continued:
            # Decoded from the first DDP segment only: no header length
            # claim to compare.
            wv.pop("header_length", None)
            gv.pop("header_length", None)
        for k in sorted(set(wv) | set(gv)):
            compared += 1
            if wv.get(k) != gv.get(k):
                fails.append("%s: %s: dissector %r, rpcrdma-dump %r"
                             % (where, k, gv.get(k), wv.get(k)))
        rpc = w["message"].get("rpc")
        if rpc is not None and not continued:
            n = rpc_seen[gframe]
            rpc_seen[gframe] += 1
            rs = rpc_by_frame.get(gframe, [])
            r = rs[n] if n < len(rs) else None
            if not isinstance(r, dict):
                fails.append("%s: Wireshark's rpc dissector did not decode the RPC message" % where)
                continue
            compared += 2
            if num(r.get("rpc.xid", "-1")) != rpc["xid"] or \
                    num(r.get("rpc.msgtyp", "-1")) != rpc["msg_type"]:
                fails.append("%s: rpc.xid/msgtyp %s/%s, rpcrdma-dump %d/%d"
                             % (where, r.get("rpc.xid"), r.get("rpc.msgtyp"),
                                rpc["xid"], rpc["msg_type"]))
    kinds = collections.Counter(v["htype"] for _, v, _ in got)
    print("wireshark v2: %s: %d frames, %d v2 messages (MSG %d, NOMSG %d, ERROR %d, "
          "CONNPROP %d), %d continued; %d values compared, malformed %d"
          % (pcap, len(frames), len(got), kinds[0], kinds[1], kinds[4], kinds[5],
             sum(1 for g in got if g[2]), compared, malformed))
    if not want:
        fails.append("%s: rpcrdma-dump found no v2 message" % pcap)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lua", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--no-send-reassembly", action="store_true")
    ap.add_argument("captures", nargs="+")
    a = ap.parse_args()
    if not shutil.which("tshark"):
        print("tshark not installed: skip")
        return 77
    opts = ["-o", "iwarp_ddp_rdmap.reassemble_iwarp_rdma_send:FALSE"] \
        if a.no_send_reassembly else []
    fails = []
    for pcap in a.captures:
        check(pcap, a.lua, a.dump, opts, fails)
    for f in fails[:60]:
        print("wireshark v2: FAIL: " + f)
    if len(fails) > 60:
        print("wireshark v2: ... %d more" % (len(fails) - 60))
    if not fails:
        print("wireshark v2: PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
