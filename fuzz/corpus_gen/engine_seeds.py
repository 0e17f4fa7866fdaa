"""Encoders shared by the engine fuzzers' seed generators
(gen_engine_recv.py, gen_engine_v2.py): XDR words, u16, and the 'submit a
call' operation, whose operand layout both harnesses read alike
(fuzz/fuzz_engine_recv.c and fuzz_engine_v2.c, submit())."""
import struct


def w(*words):
    return b''.join(struct.pack('>I', x & 0xffffffff) for x in words)


def u16(v):
    return struct.pack('>H', v)


def submit_op(op, s=0, hdr_extra=None, ddp=None, tail=None, results=(),
              reply_max=256, empty_first=False, big_reply=False):
    """Operation byte `op` (each harness numbers its own), then the call's
    shape: flags, header extra, DDP argument length, tail, result
    lengths, reply_max."""
    s |= (16 if hdr_extra is not None else 0) | (1 if ddp is not None else 0) | \
        (2 if tail is not None else 0) | len(results) << 2 | \
        (0x80 if empty_first else 0) | (0x40 if big_reply else 0)
    b = bytes([op, s])
    if hdr_extra is not None:
        b += bytes([hdr_extra])
    if ddp is not None:
        b += u16(ddp)
    if tail is not None:
        b += bytes([tail])
    for r in results:
        b += u16(r)
    return b + u16(reply_max)
