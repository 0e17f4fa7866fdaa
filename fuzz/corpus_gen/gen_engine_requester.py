#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Seed corpus for fuzz/fuzz_engine_requester.c (see its header and
run_input() for the input layout).  Writes
fuzz/corpus/fuzz_engine_requester/seed_*.  Run from anywhere:
    python3 fuzz/corpus_gen/gen_engine_requester.py
Each seed is a client with calls of several shapes outstanding, answered
honestly or not, in v1 and in v2 (opener answered, every RDMA2_ERROR
code followed by a reply to the resent call), with reverse calls and
reconnections.
The cov_NNN files next to the seeds are not generated here: they are the
inputs of a ten-million-execution run (make fuzz-long) kept by
-set_cover_merge=1 -use_counters=0, so the replay (label unit) reaches
what that run reached."""
import os

from engine_seeds import submit_op, u16

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'corpus',
                   'fuzz_engine_requester')

V1, PREFER, V2ONLY = 0, 1, 2


def cfg(vers=V1, remote_inv=True, resend=False, local_inv=True, retries=0,
        autocomplete=True, max_calls=4, credits=2, autoanswer=True,
        short_neg=False, recv_k=4, send_k=4, seed=0):
    b0 = vers | (4 if remote_inv else 0) | (8 if resend else 0) | \
        (0 if local_inv else 0x10) | retries << 5 | \
        (0 if autocomplete else 0x80)
    b1 = (max_calls - 1) | (credits - 1) << 3 | (0x20 if autoanswer else 0) | \
        (0x40 if short_neg else 0)
    b2 = (recv_k - 1) | (send_k - 1) << 2 | seed << 4
    return bytes([b0, b1, b2])


def est(at=0, remote_inv=True):
    # a valid RFC 8797 message (4096 each way) `at` bytes in (§5.2)
    return bytes([0x80 | at << 4 | (0x40 if remote_inv else 0) | 2 | 2 << 2,
                  4])


SUBMIT = 4


def calls_of_every_shape():
    return (submit_op(SUBMIT, results=(1000, 700), reply_max=256) +
            submit_op(SUBMIT, ddp=5000, results=(2000,), reply_max=6000) +
            submit_op(SUBMIT, ddp=11000, tail=200, reply_max=100) +
            submit_op(SUBMIT, results=(0, 500, 900), empty_first=True,
                      reply_max=300, big_reply=True))


def reply(sel, nomsg=False, how=0, nw_sel=0, lens=(), body=4,
          reply_len=None, credit=4, sw=0, reply_flag=0, wr=0):
    """A reply to the sel-th outstanding call: how (2 bits per chunk)
    picks honest / longer / foreign, nw_sel more or fewer chunks."""
    fl = (1 if nomsg else 0) | reply_flag
    b = bytes([0, fl, sel, how, nw_sel])
    for n in lens:
        b += u16(n)
    b += bytes([body])
    if reply_len is not None:
        b += u16(reply_len)
    return b + bytes([wr, credit, sw])


def error(sel, code, v=0, length=0, credit=4, v1_layout=False):
    # the harness reads the code as 1 + byte % 9
    return bytes([3, 1 if v1_layout else 0, sel, code - 1, v, credit]) + \
        u16(length)


def opener(props=0x11 | 1 << 2, credit=8, kind=0):
    return bytes([6, kind, props, credit])


def reverse(fl=0, segs=b''):
    return bytes([7, fl]) + segs


def lose_and_back(at=0):
    return bytes([9, 1, 9, 0]) + est(at)


def tick(n=200):
    return bytes([10]) + u16(n)


def seeds():
    s = {}
    s['v1_honest'] = (cfg() + est() + calls_of_every_shape() +
                      reply(0, lens=(900, 700)) + reply(0, nomsg=True,
                                                        lens=(1500,),
                                                        reply_len=3000) +
                      reply(0, body=20) + reply(0, lens=(0, 400, 800)))
    s['v1_lying'] = (cfg() + est(3) + calls_of_every_shape() +
                     reply(0, how=0x05, lens=(0, 0)) +
                     reply(0, nw_sel=0x81, lens=(10, 10, 10, 10)) +
                     reply(0, how=0x0a, lens=(10, 10)) +
                     reply(0, lens=(10, 10)))
    s['v1_reverse'] = (cfg(credits=4) + est() + calls_of_every_shape() +
                       reverse(1, bytes([1]) + u16(3000) + u16(1)) +
                       reverse(2, bytes([2]) + u16(8000) + u16(2)) +
                       reply(0, lens=(5, 5)))
    s['v1_reconnect'] = (cfg(retries=2) + est() + calls_of_every_shape() +
                         lose_and_back() + reply(0, lens=(1, 1)) +
                         lose_and_back(5) + reply(1, lens=(2,)))
    for code, name in ((4, 'read_chunks'), (5, 'write_chunks'),
                       (6, 'segments'), (7, 'write_resource'),
                       (8, 'reply_resource'), (9, 'system'),
                       (2, 'bad_xdr'), (3, 'inval_htype'), (1, 'vers')):
        for resend in (False, True):
            tag = 'v2_%s%s' % (name, '_resend' if resend else '')
            s[tag] = (cfg(vers=PREFER, resend=resend) + est() + opener() +
                      calls_of_every_shape() +
                      error(0, code, v=0x41, length=2000) +
                      error(1, code, v=0x41, length=9000) +
                      reply(0, lens=(10, 10)) +
                      reply(1, nw_sel=0x81, how=0x0a, lens=(5, 5, 5)) +
                      reply(1, lens=(5,)) +
                      reply(2, nomsg=True, reply_len=50) + reply(3, lens=(1, 1, 1)))
    s['v2_write_chunks_bug'] = (cfg(vers=PREFER) + est() + opener() +
                                submit_op(SUBMIT, results=(1000, 1200),
                                          reply_max=512) +
                                error(0, 5, v=0x10) +
                                reply(0, nw_sel=0x80, how=0x18,
                                      lens=(10, 1200)) +
                                reply(0, lens=(10,)))
    s['v2_linux_fallback'] = (cfg(vers=PREFER) + est() + opener(kind=1) +
                              calls_of_every_shape() + reply(0, lens=(3, 3)))
    s['v2_lost_opener'] = (cfg(vers=PREFER, short_neg=True) + est() +
                           calls_of_every_shape() + tick(50) +
                           reply(0, lens=(3, 3)))
    s['v2_only_refused'] = (cfg(vers=V2ONLY) + est() + calls_of_every_shape() +
                            opener(kind=2))
    s['v2_no_local_inv'] = (cfg(vers=PREFER, local_inv=False, retries=1) +
                            est() + opener() + calls_of_every_shape() +
                            reply(0, lens=(4, 4), sw=1) + lose_and_back() +
                            opener() + reply(0, lens=(4,)))
    return s


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(OUT, 'seed_' + name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
