#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Check the RPC-over-RDMA version 2 rules on a decoded capture.

Input: `rpcrdma-dump --json CAPTURE` of the v2 demo.  Each rule names the
section of draft-cel-nfsv4-rpcrdma-version-two-09 it comes from.  Prints
counts, one line per failed rule, and exits 1 if any failed.
"""
import json
import sys
from collections import Counter


def main(path):
    with open(path) as f:
        dump = json.load(f)
    fails = []
    msgs = [m for m in dump["messages"] if "message" in m]
    if dump.get("errors"):
        fails.append("rpcrdma-dump: %d undecodable messages" % dump["errors"])
    if dump.get("incomplete_at_end"):
        fails.append("a stream ends inside a message (segments missing "
                     "from the capture?)")
    kinds = Counter(m["message"].get("kind") for m in msgs)
    if kinds.get("rpcrdma_v1"):
        fails.append("%d version-1 messages in a v2 session" % kinds["rpcrdma_v1"])
    v2 = [m for m in msgs if m["message"].get("kind") == "rpcrdma_v2"]

    # §7, §5.3.4: the client opens with one RDMA2_CONNPROP (<= 1024 bytes,
    # F_RESPONSE clear); the server answers with its own, same XID,
    # F_RESPONSE set; before that answer the client sends nothing else.
    conns = 0
    for i, m in enumerate(v2):
        h = m["message"]
        if h["rdma_htype_name"] != "RDMA2_CONNPROP" or m["dir"] != "c2s":
            continue
        conns += 1
        if h["response"] or h["length"] > 1024:
            fails.append("frame %d: opener with F_RESPONSE or over 1024 bytes" % m["frame"])
        answer = None
        for n in v2[i + 1:]:
            if n["src"] == m["src"] and n["dst"] == m["dst"]:
                fails.append("frame %d: client sent more before the answer" % n["frame"])
                break
            if n["src"] == m["dst"] and n["dst"] == m["src"]:
                answer = n
                break
        a = answer["message"] if answer else {}
        if not answer or a.get("rdma_htype_name") != "RDMA2_CONNPROP" or \
                not a.get("response") or a.get("rdma_xid") != h["rdma_xid"]:
            fails.append("frame %d: opener not answered by the server's CONNPROP" % m["frame"])
    if conns == 0:
        fails.append("no RDMA2_CONNPROP opener")

    # §3.2: F_RESPONSE equals msg_type for messages carrying an RPC
    # message; RDMA2_ERROR always has it.
    shapes = Counter()
    reverse_calls = 0
    for m in v2:
        h = m["message"]
        rpc = h.get("rpc")
        name = h["rdma_htype_name"]
        if rpc is not None and bool(h["response"]) != (rpc["msg_type"] == 1):
            fails.append("frame %d: F_RESPONSE %s but msg_type %d" %
                         (m["frame"], h["response"], rpc["msg_type"]))
        if name == "RDMA2_ERROR" and not h["response"]:
            fails.append("frame %d: RDMA2_ERROR without F_RESPONSE" % m["frame"])
        if rpc is not None and rpc["msg_type"] == 0 and m["dir"] == "s2c":
            reverse_calls += 1
        if name in ("RDMA2_MSG", "RDMA2_NOMSG"):
            if h.get("rdma_reads"):
                shapes["read list"] += 1
            if h.get("rdma_writes"):
                shapes["write list"] += 1
            if h["response"] and any(s["length"] for s in h.get("rdma_reply") or []):
                shapes["reply chunk used"] += 1
            if name == "RDMA2_NOMSG":
                shapes["nomsg"] += 1
            # §3.3: a call's rdma_inv_handle is 0 or one of its handles.
            inv = h.get("rdma_inv_handle", 0)
            if not h["response"] and inv:
                handles = {r["handle"] for r in h.get("rdma_reads") or []}
                for w in h.get("rdma_writes") or []:
                    handles |= {s["handle"] for s in w}
                handles |= {s["handle"] for s in h.get("rdma_reply") or []}
                if inv not in handles:
                    fails.append("frame %d: rdma_inv_handle %d not in the header" %
                                 (m["frame"], inv))
                shapes["inv handle named"] += 1

    for need in ("read list", "write list", "reply chunk used", "nomsg",
                 "inv handle named"):
        if not shapes[need]:
            fails.append("no message with %s" % need)
    if shapes["nomsg"] < 2:
        fails.append("expected RDMA2_NOMSG for a Long Call and a Long Reply")
    if not reverse_calls:
        fails.append("no reverse-direction call")
    print("v2 capture: %d RPC-over-RDMA v2 messages, %d openers answered; %s; "
          "reverse calls %d" % (len(v2), conns,
                                ", ".join("%s %d" % kv for kv in sorted(shapes.items())),
                                reverse_calls))
    for f in fails:
        print("v2 capture: FAIL: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
