#!/usr/bin/env python3
"""Seed corpus for fuzz/fuzz_engine_recv.c (see its header for the input
layout).  Writes fuzz/corpus/fuzz_engine_recv/*.  Run from anywhere:
    python3 fuzz/corpus_gen/gen_engine_recv.py
Every seed uses xid_seed 0x100, so our calls carry XIDs 0x100, 0x101, ...
The cov_NN files next to them are not generated here: they are inputs
libFuzzer found, picked greedily for engine/ edge coverage (the seeds and
they together cover about 94% of engine/ lines when replayed)."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'corpus',
                   'fuzz_engine_recv')

from engine_seeds import submit_op, u16, w

# config: max_calls-1, credits-1, sz, lim, xid_seed, flags, faults
AUTOCOMPLETE, AUTOANSWER, PLAUSIBLE, ABRUPT, BIGREPLY, LAZY = 1, 2, 4, 8, 16, 32

def cfg(max_calls=4, credits=4, recv_k=4, send_k=4, remote_inv=True,
        retries=0, lim=0x0f, flags=AUTOCOMPLETE, faults=0):
    sz = (recv_k - 1) | (send_k - 1) << 2 | (16 if remote_inv else 0) | retries << 5
    return bytes([max_calls - 1, credits - 1, sz, lim]) + w(0x100) + \
        bytes([flags, faults])

def est(send_k=4, recv_k=4, inv=True, ord_=4, raw=None):
    if raw is not None:
        return bytes([len(raw) & 15]) + raw + bytes([ord_])
    return bytes([0x80, send_k - 1, recv_k - 1, 1 if inv else 0, ord_])

# ops
def recv(msg, pick=0, patch_payload=False, with_inv=False, kidx=0, cq=False):
    fl = (1 if with_inv else 0) | pick << 1 | (0x10 if patch_payload else 0)
    return bytes([1 if cq else 0]) + u16(len(msg)) + bytes([fl, kidx]) + msg

def complete(n):
    return bytes([2, (n - 1) & 7])

def fail_completion(st=3):
    return bytes([3, st])

def submit(**kw):
    return submit_op(4, **kw)

def answer(idx=0, nddp=0, lens=(), inline=None):
    shape = nddp | (4 if inline is not None else 0)
    b = bytes([5, idx, shape])
    for l in lens:
        b += u16(l)
    if inline is not None:
        b += u16(inline)
    return b

LOST = bytes([6])
def reest(**kw):
    return bytes([7]) + est(**kw)
def stale(k=0, st=0):
    return bytes([8, k, st])
ALL = bytes([9])
def garbage(wr_id):
    return bytes([10]) + struct.pack('>Q', wr_id)
def faults(again=0, fail=0):
    return bytes([11, again | fail << 4])
POLL = bytes([12])
def gen(kind, fl, credit, *rest):
    # structured peer message (op 13); rest: the operand bytes in order
    b = bytes([13, kind, fl, credit])
    for r in rest:
        b += r if isinstance(r, bytes) else bytes([r])
    return b

# message builders (RFC 8166 §4.1.2 XDR)
def seg(h, l, o):
    return w(h, l, o >> 32, o)

def read_list(reads):  # [(pos, h, l, o)]
    b = b''
    for p, h, l, o in reads:
        b += w(1, p) + seg(h, l, o)
    return b + w(0)

def write_list(chunks):  # [[(h,l,o), ...], ...]
    b = b''
    for c in chunks:
        b += w(1, len(c)) + b''.join(seg(*s) for s in c)
    return b + w(0)

def reply_chunk(c):
    if c is None:
        return w(0)
    return w(1, len(c)) + b''.join(seg(*s) for s in c)

def hdr(xid, proc, credit=8, reads=(), writes=(), reply=None, vers=1):
    return w(xid, vers, credit, proc) + read_list(reads) + write_list(writes) + \
        reply_chunk(reply)

def rpc_call(xid, body=0):
    return w(xid, 0, 2, 100003, 3, 1, 0, 0, 0, 0) + b'\0' * body

def rpc_reply(xid, body=0):
    return w(xid, 1, 0, 0, 0, 0) + b'\0' * body

def err(xid, code, credit=8, low=1, high=1):
    return w(xid, 1, credit, 4, code) + (w(low, high) if code == 1 else b'')

seeds = {}
X0 = 0x100
# Our call, inline reply; credit grant 0 (counts as 1) then a big one.
seeds['call_reply'] = cfg() + est() + submit(reply_max=512) + ALL + \
    recv(hdr(X0, 0, credit=0) + rpc_reply(X0, 8)) + submit() + ALL + \
    recv(hdr(X0 + 1, 0, credit=1000) + rpc_reply(X0 + 1))
# The same with the XID patched in by the harness.
seeds['call_reply_patched'] = cfg() + est() + submit() + ALL + \
    recv(hdr(0, 0) + rpc_reply(0), pick=1, patch_payload=True)
# Reply to a call with Write chunks: returned lengths, unused chunk, With Inv.
seeds['write_chunks_reply'] = cfg() + est() + \
    submit(results=(100, 200), reply_max=300) + ALL + \
    recv(hdr(X0, 0, writes=[[(0x1001, 100, 0)], [(0x1002, 0, 0)]]) +
         rpc_reply(X0), with_inv=True, cq=True)
# Empty Write chunk offered (§4.3.2.3), returned empty.
seeds['empty_write_chunk'] = cfg() + est() + \
    submit(results=(0, 50), empty_first=True) + ALL + \
    recv(hdr(X0, 0, writes=[[], [(0x1001, 50, 0)]]) + rpc_reply(X0))
# Long Reply into our Reply chunk (RDMA_NOMSG).
seeds['long_reply'] = cfg() + est() + submit(reply_max=9000) + ALL + \
    recv(hdr(X0, 1, reply=[(0x1001, 6000, 0)]))
# Long Reply bigger than offered: must be discarded.
seeds['long_reply_too_big'] = cfg() + est() + submit(reply_max=9000) + ALL + \
    recv(hdr(X0, 1, reply=[(0x1001, 9001, 0)])) + \
    recv(hdr(X0, 1, reply=[(0x1001, 9000, 0)]))
# RDMA_ERROR replies: ERR_VERS and ERR_CHUNK (20 bytes).
seeds['rdma_error'] = cfg() + est() + submit() + submit() + ALL + \
    recv(err(X0, 1, low=2, high=3)) + ALL + recv(err(X0 + 1, 2)) + ALL
# Chunked call (DDP argument in a Read chunk) and a Long Call (PZRC).
seeds['chunked_long_calls'] = cfg(send_k=1) + est(send_k=1, recv_k=1) + \
    submit(ddp=3000, tail=4) + ALL + recv(hdr(X0, 0) + rpc_reply(X0)) + \
    submit(hdr_extra=60) + ALL + recv(hdr(X0 + 1, 0) + rpc_reply(X0 + 1))
# Incoming RDMA_MSG call with Write chunks and a Reply chunk; answered with
# DDP results (RDMA Writes) and Send With Invalidate.
seeds['incoming_msg_call'] = cfg() + est() + \
    recv(hdr(0x777, 0, writes=[[(0x51, 4096, 0x10000)], [(0x52, 64, 0x20000)]],
             reply=[(0x53, 8192, 0x30000)]) + rpc_call(0x777, 8)) + \
    answer(0, 2, (1000, 10))
# Long Reply from our side through the peer's Reply chunk.
seeds['incoming_long_reply'] = cfg(flags=AUTOCOMPLETE | AUTOANSWER | BIGREPLY) + \
    est() + recv(hdr(0x778, 0, reply=[(0x53, 4000, 0x30000), (0x54, 4000, 0x40000)])
                 + rpc_call(0x778))
# Reply too big for the offered Write chunk / no Reply chunk -> ERR_CHUNK.
seeds['incoming_err_chunk'] = cfg() + est() + \
    recv(hdr(0x779, 0, writes=[[(0x51, 10, 0x10000)]]) + rpc_call(0x779)) + \
    answer(0, 1, (500,)) + \
    recv(hdr(0x77a, 0) + rpc_call(0x77a)) + answer(0, 0, (), 6000)
# Incoming Long Call: RDMA_NOMSG with a Position-Zero Read chunk.
seeds['incoming_nomsg_pzrc'] = cfg(flags=AUTOCOMPLETE | AUTOANSWER | PLAUSIBLE) + \
    est() + recv(hdr(0x780, 1, reads=[(0, 0x61, 100, 0x1000), (0, 0x62, 60, 0x2000)],
                     writes=[[(0x63, 100, 0x3000)]]))
# Long Call with a further Read chunk at position 40 (spread around).
seeds['incoming_nomsg_inserts'] = cfg(flags=AUTOCOMPLETE | AUTOANSWER | PLAUSIBLE) + \
    est() + recv(hdr(0x781, 1, reads=[(0, 0x61, 48, 0x1000), (40, 0x62, 13, 0x2000)]))
# Chunked incoming call: RDMA_MSG with a Read chunk at position 40.
seeds['incoming_msg_read_chunk'] = cfg(flags=AUTOCOMPLETE | AUTOANSWER) + est() + \
    recv(hdr(0x782, 0, reads=[(40, 0x61, 1000, 0x1000), (40, 0x62, 3, 0x2000)])
         + rpc_call(0x782, 8))
# Big segment counts: 64 read segments, 8 Write chunks of 32 segments.
many_reads = [(0, 0x100 + i, 16, 0x1000 * i) for i in range(64)]
seeds['many_read_segments'] = cfg(recv_k=4, flags=AUTOCOMPLETE | AUTOANSWER | PLAUSIBLE) + \
    est(ord_=2) + recv(hdr(0x790, 1, reads=many_reads))
many_writes = [[(0x200 + 32 * c + s, 8, 0x100000 * c + 16 * s) for s in range(32)]
               for c in range(3)]
seeds["many_write_segments"] = cfg(flags=AUTOCOMPLETE) + est() + \
    recv(hdr(0x791, 0, writes=many_writes, reply=[(0x300 + i, 64, 0x900000 + 64 * i)
                                                  for i in range(32)]) +
         rpc_call(0x791)) + answer(0, 3, (200, 256, 100), 2000)
# Too many segments for our limits (65 read segments) -> ERR_CHUNK.
seeds['too_many_segments'] = cfg() + est() + \
    recv(hdr(0x792, 1, reads=[(0, 1, 4, 0)] * 65))
# Segment count word huge but message short.
seeds['huge_count'] = cfg() + est() + \
    recv(w(0x793, 1, 8, 0, 0, 1, 0xffffffff, 1, 2, 3, 4))
# Wrong version: ERR_VERS with low = high = 1.
seeds['bad_version'] = cfg() + est() + recv(w(0x794, 2, 8, 0, 0, 0, 0, 0x794, 0)) + \
    recv(w(0x795, 7, 8, 4, 1, 1, 1))
# RDMA_MSGP / RDMA_DONE / short / unknown proc.
seeds['reserved_procs'] = cfg() + est() + \
    recv(w(0x796, 1, 8, 2, 64, 1024, 0, 0, 0) + rpc_call(0x796)) + \
    recv(w(0x797, 1, 8, 3, 0, 0, 0)) + recv(w(0x798, 1, 8, 0)) + \
    recv(w(0x799, 1, 8, 9, 0, 0, 0))
# Invalid private data -> 1024-byte thresholds; reconnect with retries.
seeds['bad_pdata_retry'] = cfg(retries=2) + est(raw=b'\x01\x02\x03\x04\x05\x06\x07\x08') + \
    submit(reply_max=2000) + LOST + reest() + ALL + \
    recv(hdr(X0, 0, credit=2) + rpc_reply(X0)) + stale(0, 3)
# Errors: failed completion, flushes, garbage wr_ids, registration faults.
seeds['faults'] = cfg(flags=0, faults=0x13) + est() + submit(results=(64,)) + \
    submit(ddp=5000) + complete(1) + fail_completion(4) + ALL + \
    garbage(0x0001020300000005) + LOST + faults(2, 1) + reest() + submit() + ALL
# Abrupt destroy with everything in flight.
seeds['abrupt'] = cfg(flags=ABRUPT) + est() + submit(results=(10,)) + \
    recv(hdr(0x7a0, 1, reads=[(0, 0x61, 100, 0x1000)]))
# Tiny sq_depth: a reply needing many Writes.
seeds['small_sq'] = cfg(max_calls=1, credits=1, lim=0x1f,
                        flags=AUTOCOMPLETE) + est() + \
    recv(hdr(0x7b0, 0, writes=[[(0x200 + s, 8, 16 * s) for s in range(20)]]) +
         rpc_call(0x7b0)) + answer(0, 1, (160,))

# The reply overtakes our Send's completion; then the connection dies.
seeds['reply_before_send_done'] = cfg(flags=0) + est() + \
    submit(results=(64,)) + recv(hdr(X0, 0) + rpc_reply(X0)) + complete(1) + \
    submit() + recv(hdr(X0 + 1, 0) + rpc_reply(X0 + 1)) + LOST
# Events left unpolled across connections (CLOSE twice, stale calls).
seeds['lazy_events'] = cfg(max_calls=1, credits=1, flags=LAZY) + est() + \
    recv(hdr(0x7c0, 0) + rpc_call(0x7c0)) + recv(hdr(0x7c1, 0) + rpc_call(0x7c1)) + \
    submit() + fail_completion(4) + LOST + reest() + \
    recv(hdr(0x7c2, 0, writes=[[(5, 8, 0)]]) + rpc_call(0x7c2)) + POLL + \
    answer(0) + answer(0) + POLL
# Responder short of send queue space: replies wait, then go.
seeds['responder_sq_stall'] = cfg(max_calls=1, credits=2, lim=0x3f, flags=0) + est() + \
    recv(hdr(0x7d0, 0, writes=[[(0x200 + s, 8, 16 * s) for s in range(6)]]) +
         rpc_call(0x7d0)) + \
    recv(hdr(0x7d1, 0, writes=[[(0x300 + s, 8, 16 * s) for s in range(6)]]) +
         rpc_call(0x7d1)) + answer(0, 1, (48,)) + answer(0, 1, (48,)) + \
    complete(3) + ALL + ALL
# Registration failures while building a reply and a call.
seeds['reply_reg_fail'] = cfg(flags=AUTOCOMPLETE) + est() + \
    recv(hdr(0x7e0, 0, writes=[[(0x51, 100, 0)]], reply=[(0x52, 9000, 0)]) +
         rpc_call(0x7e0)) + faults(0, 1) + answer(0, 1, (50,), 6000) + \
    faults(3, 0) + submit(results=(10, 10)) + ALL + \
    recv(hdr(X0, 0) + rpc_reply(X0), pick=1, patch_payload=True)
# Regression: a call whose worst-case send queue need (pieces x 2 +
# results + 2 = 11) exceeds the whole queue (8) but really needs 8.
seeds['call_loose_sq_bound'] = cfg(max_calls=1, credits=1, lim=0x1f, flags=AUTOCOMPLETE) + \
    est() + submit(ddp=100, tail=4, results=(10, 10, 10)) + \
    recv(hdr(X0, 0, writes=[[(1, 10, 0)], [(2, 0, 0)], [(3, 0, 0)]]) + rpc_reply(X0))
# Structured messages: replies mirroring our chunks, peer calls with
# Read/Write/Reply chunks, errors.
seeds['structured_replies'] = cfg(flags=AUTOCOMPLETE) + est() + \
    submit(results=(100, 0, 50), reply_max=9000, big_reply=True) + \
    submit(results=(10,)) + submit() + \
    gen(0, 0, 4, 0, u16(100), u16(20), u16(3), 5) + \
    gen(0, 1, 4, 1, u16(7), u16(9)) + \
    gen(1, 1, 2, 2, 7) + gen(4, 0x80, 3, 0, 1)
seeds['structured_calls'] = cfg(flags=AUTOCOMPLETE | AUTOANSWER | PLAUSIBLE | BIGREPLY) + \
    est() + \
    gen(2, 0x54, 8, 1, 10, 12, 1, u16(300), u16(2), 2, 5, u16(4000), u16(1),
        7, u16(100), u16(3)) + \
    gen(3, 0x65, 8, 2, 1, u16(40), u16(1), 2, u16(100), u16(2), 11, 3,
        u16(700), u16(4), 1, 9, u16(8000), u16(5)) + \
    gen(7, 0x47, 8, 3, 1, u16(48), u16(1), 2, u16(48), u16(2), 3, u16(48), u16(3),
        4, u16(48), u16(4), 10, 5, u16(13), u16(6), 0, 6, u16(9000), u16(7),
        7, u16(9000), u16(8), 8, u16(9000), u16(9))

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(data)
print('wrote %d seeds to %s' % (len(seeds), os.path.normpath(OUT)))
