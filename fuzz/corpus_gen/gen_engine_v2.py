#!/usr/bin/env python3
"""Seed corpus for fuzz/fuzz_engine_v2.c (see its header and
LLVMFuzzerTestOneInput for the input layout).  Writes
fuzz/corpus/fuzz_engine_v2/*.  Run from anywhere:
    python3 fuzz/corpus_gen/gen_engine_v2.py
Every seed uses xid_seed 0x100: a client's opener carries XID 0x100 and
its calls 0x101, 0x102, ...  FUZZ_ENGINE_DEBUG=1 on a replay prints the
engine counters (fallbacks, recoveries, RDMA2_ERROR codes) a seed reached.
The cov_NN files next to the seeds are not generated here: they are inputs
libFuzzer found (-set_cover_merge=1 -use_counters=0 over a 17-minute run),
which with the seeds cover about 92-94% of engine/*.c lines when replayed."""
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'corpus',
                   'fuzz_engine_v2')

from engine_seeds import submit_op, u16, w

V1_ONLY, V2_ONLY, PREFER_V2 = 0, 1, 2   # (role >> 1) & 3, mod 3

def cfg(client=True, versions=PREFER_V2, peer_v1_only=False, brs=2,
        remote_inv=True, autocomplete=True, max_calls=4, credits=4,
        retries=0, recv_k=4, send_k=4, tmo=0, autoanswer=True,
        callsz=3, chunksz=3, max_read_chunks=None, bigreply=False,
        dl=0, sqd=0):
    role = (1 if client else 0) | versions << 1 | (8 if peer_v1_only else 0) | \
        brs << 4 | (0x40 if remote_inv else 0) | (0 if autocomplete else 0x80)
    mc = (max_calls - 1) | (credits - 1) << 3 | retries << 6
    sz = (recv_k - 1) | (send_k - 1) << 2 | tmo << 5 | \
        (0x80 if autoanswer else 0)
    mrc = 0x40 if max_read_chunks is None else (max_read_chunks & 3) << 4
    lim = callsz | chunksz << 2 | mrc | (0x80 if bigreply else 0)
    return bytes([role, mc, sz, lim, dl, sqd]) + w(0x100)

def est(pdata=False, ord_=4):
    if pdata:
        return bytes([0x80, 3, 3, 1, ord_])
    return bytes([0, ord_])

# --- ops ---------------------------------------------------------------
# pick_xid selectors
X_OUR = 0      # + one byte: index among outstanding calls
X_OPENER = 3
X_SENT = 5     # + one byte
X_RANDOM = 7   # + four bytes

def xid_bytes(sel, k=0, xid=0):
    if sel % 8 <= 2 or sel % 8 == 5:
        return bytes([k])
    if sel % 8 == 7:
        return w(xid)
    return b''

def connprop(props=(), response=True, xsel=X_OPENER | 0x80, credit=4,
             mut=0):
    """props: list of raw prop bytes (+ extra) as v2_message reads them."""
    fl = (1 if response else 0) | len(props) << 1
    b = bytes([0, 0, fl, xsel, credit])
    if xsel & 0x80:
        b += xid_bytes(xsel)
    for p in props:
        b += p
    return b + bytes([mut])

def rbsiz(idx=0, value=None, empty=False):
    if value is not None:
        return bytes([0 | 8 | (4 if empty else 0)]) + w(value)
    return bytes([0 | (4 if empty else 0) | (idx & 15) << 4])

def brs(v, empty=False):
    return bytes([1 | (4 if empty else 0) | v << 4])

def unknown(propid_small=0, dlen=4):
    return bytes([2 | (propid_small & 0) | (dlen & 15) << 4])

def v2_reply(k=0, nomsg=False, payload_words=4, seg_lens=(), mut=0,
             credit=4, response=True):
    kind = 2 if nomsg else 1
    fl = 0 if response else 1
    b = bytes([0, kind, fl, X_OUR, credit, k])
    for l in seg_lens:
        b += u16(l)
    if not nomsg:
        b += bytes([payload_words])
    return b + bytes([mut])

def v2_error(code, k=0, xsel=X_OUR, vb=0x05, chunk_index=0, length=0,
             credit=0, mut=0):
    fl = (chunk_index & 7) << 4
    return bytes([0, 4, fl, xsel, credit]) + xid_bytes(xsel, k) + \
        bytes([(code - 1) % 10, vb]) + u16(length) + bytes([mut])

def v2_call(nomsg=False, payload_words=8, credit=4, mut=0, chunks=0,
            writes=0, reply=False):
    """chunks: further Read chunks (0..4); writes: Write chunks of one
    segment each (0..3); reply: a one-segment Reply chunk."""
    fl = (0x80 if nomsg else 0) | ((0x04 | (chunks - 1) << 3) if chunks else 0)
    b = bytes([0, 3, fl, 0, credit])
    if nomsg:
        b += bytes([0x10]) + u16(400) + u16(1)   # one PZRC segment
    for i in range(chunks):
        b += bytes([1]) + bytes([0x20 + i]) + u16(100) + u16(2 + i)
    b += bytes([writes | (4 if reply else 0)])
    for i in range(writes):
        b += bytes([1, 0x30 + i]) + u16(2000) + u16(8 + i)
    if reply:
        b += bytes([0, 0x40]) + u16(4000) + u16(16)
    if not nomsg:
        b += bytes([payload_words])
    return b + bytes([mut])

def v1_reply(k=0, payload_words=4, credit=4):
    return bytes([2, 0, 0, X_OUR, credit, k, payload_words])

def v1_call(payload_words=8, credit=4):
    return bytes([2, 3, 0, 0, credit, 0, payload_words])

def v1_err_vers(xsel=X_OPENER):
    return bytes([2, 2, 1 | 1 << 1 | 1 << 3, xsel, 0]) + xid_bytes(xsel)

def linux_err_vers(xsel=X_OPENER, b=0):
    return bytes([3, xsel, b]) + xid_bytes(xsel)

def submit(**kw):
    return submit_op(7, **kw)

def complete_all():
    return bytes([13])

LOST = bytes([10])
def reest(**kw):
    return bytes([11]) + est(**kw)
def tick(b):
    return bytes([12, b])
TIMEOUT = tick(8)  # now += neg_timeout_ms

def raw(msg, fl=0):
    return bytes([4]) + u16(len(msg)) + bytes([fl]) + msg

SEEDS = {}

# Client negotiation success: opener answered by RDMA2_CONNPROP (response),
# then a short call answered in v2.
SEEDS['neg_ok'] = cfg() + est() + submit() + \
    connprop([rbsiz(10), brs(2)]) + v2_reply()
# ... with private data, unknown and empty properties, a chunked call
SEEDS['neg_ok_props'] = cfg(send_k=1) + est(pdata=True) + \
    submit(ddp=3000, results=(2000,), reply_max=3000) + \
    connprop([rbsiz(empty=True), unknown(dlen=5), brs(1, empty=True),
              rbsiz(value=2048)]) + v2_reply(seg_lens=(1000, 100)) + \
    submit(big_reply=True, reply_max=100) + v2_reply(nomsg=True, seg_lens=(3000,))
# Bad RBSIZ values (0, 1, tiny, huge)
SEEDS['neg_bad_rbsiz'] = cfg() + est() + submit() + \
    connprop([rbsiz(0)]) + submit() + v2_reply() + v2_reply(k=0)
SEEDS['neg_rbsiz_huge'] = cfg() + est() + submit(ddp=5000) + \
    connprop([rbsiz(value=0xffffffff)]) + v2_reply()
# ERR_VERS fallbacks: Linux 7-word v1 layout echoing rdma_vers 2; a real
# RDMA2_ERR_VERS; a v1 ERR_VERS; then the call goes in v1.
SEEDS['errvers_linux'] = cfg() + est() + submit() + linux_err_vers() + \
    v1_reply() + LOST + reest() + submit() + v1_reply()
SEEDS['errvers_v2'] = cfg() + est() + submit() + \
    v2_error(1, xsel=X_OPENER, vb=0x05) + v1_reply()
SEEDS['errvers_v1'] = cfg() + est() + submit() + v1_err_vers() + v1_reply()
SEEDS['errvers_v2only'] = cfg(versions=V2_ONLY) + est() + submit() + \
    linux_err_vers()
# Timeout fallback
SEEDS['neg_timeout'] = cfg() + est() + submit() + tick(2) + TIMEOUT + \
    v1_reply()
SEEDS['neg_timeout_v2only'] = cfg(versions=V2_ONLY, tmo=3) + est() + \
    submit() + TIMEOUT + LOST + reest() + submit()
SEEDS['neg_lost'] = cfg(retries=2) + est() + submit() + LOST + reest() + \
    v1_reply()

# Requester recoveries (resend with the same XID), then a reply.
def recover(code, call, err_kw, reply=None, **ckw):
    return cfg(send_k=1, **ckw) + est() + call + connprop([rbsiz(6)]) + \
        v2_error(code, **err_kw) + (reply if reply is not None else v2_reply())
SEEDS['rec_read_chunks'] = recover(4, submit(ddp=3000), {})
SEEDS['rec_write_chunks'] = recover(5, submit(results=(500, 600), reply_max=2000),
                                    {'vb': 0x15}, v2_reply(seg_lens=(100,)))
SEEDS['rec_segments'] = recover(6, submit(ddp=3000), {'vb': 0x15})
SEEDS['rec_write_resource'] = recover(7, submit(results=(700,), reply_max=2000),
                                      {'chunk_index': 1}, v2_reply())
SEEDS['rec_reply_resource'] = recover(8, submit(reply_max=600),
                                      {'length': 500}, v2_reply(nomsg=True, seg_lens=(400,)))
SEEDS['err_system'] = recover(9, submit(), {})
SEEDS['err_bad_xdr_inval'] = recover(2, submit(), {}, v2_error(3, k=0)) + \
    submit() + v2_error(10, k=0)

# Server: a client's v2 opener, then v2 calls (short and Long), answered.
SEEDS['server_v2'] = cfg(client=False) + est() + \
    connprop([rbsiz(10), brs(2)], response=False, xsel=0) + \
    v2_call() + v2_call(nomsg=True, writes=1, reply=True) + \
    v2_call(writes=2) + complete_all()
SEEDS['server_v1'] = cfg(client=False) + est() + v1_call() + v1_call()
SEEDS['server_v2only_v1'] = cfg(client=False, versions=V2_ONLY) + est() + \
    v1_call() + v2_call()
SEEDS['server_read_chunks'] = cfg(client=False, max_read_chunks=1) + est() + \
    v2_call(chunks=2) + v2_call(chunks=1) + raw(w(5, 2, 1, 9, 0, 0, 0, 0, 0, 0))

def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)
    print('wrote %d seeds to %s' % (len(SEEDS), os.path.normpath(OUT)))

if __name__ == '__main__':
    main()
